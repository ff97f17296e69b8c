//! Scalar functions (CONCAT, SUBSTRING, IFNULL, ROUND, NOW, DATABASE,
//! ...), with MySQL's NULL handling: most return NULL when an argument is.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{SqlError, SqlResult};
use crate::expr::{compare, text_of, to_i64, truth, Env, Expr, Func};
use crate::types::{Collation, Value};

/// Evaluates `f(args)`; `ev` evaluates an argument.
pub fn call(
    f: Func,
    args: &[Expr],
    ev: &dyn Fn(&Expr) -> SqlResult<Value>,
    env: &dyn Env,
) -> SqlResult<Value> {
    let arg = |i: usize| -> SqlResult<Value> {
        match args.get(i) {
            Some(a) => ev(a),
            None => Ok(Value::Null),
        }
    };
    Ok(match f {
        Func::Concat => {
            let mut parts = Vec::with_capacity(args.len());
            for a in args {
                match ev(a)? {
                    Value::Null => return Ok(Value::Null),
                    v => parts.push(text_of(&v)),
                }
            }
            let size: u128 = parts.iter().map(|p| p.len() as u128).sum();
            if !crate::strfuncs::fits(env, "concat", size) {
                return Ok(Value::Null);
            }
            Value::Str(parts.concat())
        }
        Func::TrimLeading | Func::TrimTrailing | Func::TrimBoth => {
            let (s, what) = (arg(0)?, arg(1)?);
            if s.is_null() || what.is_null() {
                return Ok(Value::Null);
            }
            let (mut s, what) = (text_of(&s), text_of(&what));
            if !what.is_empty() {
                if f != Func::TrimTrailing {
                    while s.starts_with(&what) {
                        s.drain(..what.len());
                    }
                }
                if f != Func::TrimLeading {
                    while s.ends_with(&what) {
                        s.truncate(s.len() - what.len());
                    }
                }
            }
            Value::Str(s)
        }
        Func::Replace
        | Func::Locate
        | Func::Instr
        | Func::Lpad
        | Func::Rpad
        | Func::Left
        | Func::Right
        | Func::Repeat
        | Func::Space
        | Func::Reverse
        | Func::ConcatWs
        | Func::SubstringIndex
        | Func::Hex
        | Func::Unhex
        | Func::Field
        | Func::FindInSet
        | Func::Elt
        | Func::Ascii
        | Func::Ord
        | Func::Ltrim
        | Func::Rtrim
        | Func::Strcmp
        | Func::Insert
        | Func::Md5
        | Func::Sha1
        | Func::Sha2
        | Func::Crc32
        | Func::Char
        | Func::Format
        | Func::Quote
        | Func::RegexpLike
        | Func::RegexpReplace
        | Func::RegexpSubstr
        | Func::RegexpInstr => {
            let vals = args.iter().map(ev).collect::<SqlResult<Vec<_>>>()?;
            return crate::strfuncs::call(f, vals, env);
        }
        Func::Length => match arg(0)? {
            Value::Null => Value::Null,
            v => Value::Int(text_of(&v).len() as i64),
        },
        Func::CharLength => match arg(0)? {
            Value::Null => Value::Null,
            v => Value::Int(String::from_utf8_lossy(&text_of(&v)).chars().count() as i64),
        },
        Func::Upper | Func::Lower => match arg(0)? {
            Value::Null => Value::Null,
            v => {
                let s = String::from_utf8_lossy(&text_of(&v)).into_owned();
                Value::Str(
                    if f == Func::Upper {
                        s.to_uppercase()
                    } else {
                        s.to_lowercase()
                    }
                    .into_bytes(),
                )
            }
        },
        Func::Trim => match arg(0)? {
            Value::Null => Value::Null,
            v => {
                let s = String::from_utf8_lossy(&text_of(&v)).into_owned();
                Value::Str(s.trim_matches(' ').as_bytes().to_vec())
            }
        },
        Func::Substring => {
            let (s, pos) = (arg(0)?, arg(1)?);
            let len = if args.len() > 2 { Some(arg(2)?) } else { None };
            if s.is_null() || pos.is_null() || len.as_ref().is_some_and(Value::is_null) {
                return Ok(Value::Null);
            }
            let chars: Vec<char> = String::from_utf8_lossy(&text_of(&s)).chars().collect();
            let pos = to_i64(&pos).unwrap_or(0);
            let n = chars.len() as i64;
            let start = if pos > 0 {
                pos - 1
            } else if pos < 0 {
                n + pos
            } else {
                return Ok(Value::Str(Vec::new()));
            };
            if start < 0 || start >= n {
                return Ok(Value::Str(Vec::new()));
            }
            let take = match len {
                Some(l) => to_i64(&l).unwrap_or(0).max(0),
                None => n,
            };
            let end = (start + take).min(n);
            let out: String = chars
                .get(start as usize..end as usize)
                .unwrap_or_default()
                .iter()
                .collect();
            Value::Str(out.into_bytes())
        }
        Func::IfNull => match arg(0)? {
            Value::Null => arg(1)?,
            v => v,
        },
        Func::Coalesce => {
            for a in args {
                let v = ev(a)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Func::If => {
            if truth(&arg(0)?) == Some(true) {
                arg(1)?
            } else {
                arg(2)?
            }
        }
        Func::NullIf => {
            let (a, b) = (arg(0)?, arg(1)?);
            if compare(&a, &b, Collation::Utf8mb4GeneralCi) == Some(std::cmp::Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::Abs => match arg(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(i.checked_abs().ok_or_else(|| {
                SqlError::new(1690, "22003", "BIGINT value is out of range in 'abs'")
            })?),
            Value::UInt(u) => Value::UInt(u),
            Value::Decimal(d, s) => Value::Decimal(d.abs(), s),
            Value::Double(x) => Value::Double(x.abs()),
            v => Value::Double(crate::expr::str_to_f64(&text_of(&v)).abs()),
        },
        Func::Round | Func::Floor | Func::Ceil => {
            let v = arg(0)?;
            let digits = if args.len() > 1 {
                to_i64(&arg(1)?).unwrap_or(0).clamp(-30, 30)
            } else {
                0
            };
            round(v, f, digits)
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for a in args {
                let v = ev(a)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = compare(&v, &b, Collation::Utf8mb4GeneralCi);
                        let take = match f {
                            Func::Greatest => o == Some(std::cmp::Ordering::Greater),
                            _ => o == Some(std::cmp::Ordering::Less),
                        };
                        if take {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Value::Null)
        }
        Func::Database => env
            .database()
            .map_or(Value::Null, |d| Value::Str(d.into_bytes())),
        Func::Version => Value::Str(crate::SERVER_VERSION.as_bytes().to_vec()),
        Func::ConnectionId => Value::Int(env.connection_id() as i64),
        // Waits, asking for KILL QUERY and the time limit every 10 ms
        // (interrupted: error 1317 / 3024); NULL or a negative or
        // non-numeric number of seconds does not wait. Returns 0.
        Func::Sleep => {
            let secs = crate::expr::eval::num_f64(&arg(0)?).unwrap_or(0.0);
            if secs > 0.0 && secs.is_finite() {
                let start = std::time::Instant::now();
                let total = std::time::Duration::from_secs_f64(secs.min(1e9));
                loop {
                    env.check_interrupt()?;
                    let left = total.saturating_sub(start.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(std::time::Duration::from_millis(10)));
                }
            }
            Value::Int(0)
        }
        Func::LastInsertId => Value::Int(env.last_insert_id() as i64),
        Func::User => Value::Str(env.user().into_bytes()),
        Func::CurrentUser => Value::Str(env.current_user().into_bytes()),
        Func::FoundRows => Value::Int(env.found_rows() as i64),
        Func::RowCount => Value::Int(env.row_count()),
        Func::Now => {
            let fsp = match args.first() {
                Some(a) => to_i64(&ev(a)?).unwrap_or(0),
                None => 0,
            };
            if !(0..=6).contains(&fsp) {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too-big precision {fsp} specified for 'now'. Maximum is 6."),
                ));
            }
            crate::datefuncs::now_value(fsp as u32)
        }
        Func::CurDate => crate::datefuncs::today_value(),
        Func::UnixTimestamp => match args.first() {
            Some(a) => crate::datefuncs::unix_timestamp(&ev(a)?, env),
            None => Value::Int(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs() as i64,
            ),
        },
        Func::Dt(d) => {
            let vals = args.iter().map(ev).collect::<SqlResult<Vec<_>>>()?;
            return crate::datefuncs::call(d, vals, env);
        }
        Func::Math(m) => {
            let vals = args.iter().map(ev).collect::<SqlResult<Vec<_>>>()?;
            return crate::mathfuncs::call(m, vals, env);
        }
        Func::Json(j) => {
            let vals = args.iter().map(ev).collect::<SqlResult<Vec<_>>>()?;
            return crate::json::call(j, vals, env);
        }
    })
}

fn round(v: Value, f: Func, digits: i64) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Int(i) if digits >= 0 => Value::Int(i),
        Value::UInt(u) if digits >= 0 => Value::UInt(u),
        Value::Decimal(d, s) => {
            let target = digits.clamp(0, i64::from(s)) as u8;
            if target >= s {
                return Value::Decimal(d, s);
            }
            let p = 10i128.pow(u32::from(s - target));
            let q = d.div_euclid(p);
            let r = d.rem_euclid(p);
            let q = match f {
                Func::Floor => q,
                Func::Ceil => {
                    if r > 0 {
                        q + 1
                    } else {
                        q
                    }
                }
                _ => {
                    // Half away from zero.
                    let tq = d / p;
                    let tr = d % p;
                    if tr.abs() * 2 >= p {
                        tq + d.signum()
                    } else {
                        tq
                    }
                }
            };
            if f == Func::Round {
                Value::Decimal(q, target)
            } else {
                i64::try_from(q).map_or(Value::Decimal(q, 0), Value::Int)
            }
        }
        other => {
            let x = match other {
                Value::Double(x) => x,
                Value::Int(i) => i as f64,
                Value::UInt(u) => u as f64,
                v => crate::expr::str_to_f64(&text_of(&v)),
            };
            let p = 10f64.powi(digits as i32);
            let y = match f {
                Func::Floor => (x * p).floor() / p,
                Func::Ceil => (x * p).ceil() / p,
                _ => (x * p).round() / p,
            };
            if f != Func::Round && y.abs() < 9.2e18 {
                Value::Int(y as i64)
            } else {
                Value::Double(y)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_of_decimals_and_doubles() {
        assert_eq!(
            round(Value::Decimal(12345, 3), Func::Round, 2),
            Value::Decimal(1235, 2)
        );
        assert_eq!(
            round(Value::Decimal(-12345, 3), Func::Round, 2),
            Value::Decimal(-1235, 2)
        );
        assert_eq!(
            round(Value::Decimal(-15, 1), Func::Floor, 0),
            Value::Int(-2)
        );
        assert_eq!(
            round(Value::Double(2.5), Func::Round, 0),
            Value::Double(3.0)
        );
    }
}
