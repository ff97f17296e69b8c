//! Math functions (POW, SQRT, EXP, LN, LOG, trigonometry, SIGN, PI,
//! TRUNCATE, RAND, CONV, BIN, OCT) with MySQL 8.0's semantics: NULL in
//! gives NULL out; a logarithm of a number out of its domain is NULL with
//! warning 3020; SQRT, ASIN and ACOS out of their domain are NULL; a
//! result that is not a finite double is error 1690. Arguments are
//! evaluated first. No locks, no I/O; RAND() keeps a per-thread state.

use std::cell::Cell;

use crate::error::{SqlError, SqlResult};
use crate::expr::{num_f64, text_of, to_i64, Env};
use crate::output::OutType;
use crate::types::Value;

/// The math functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFn {
    /// POW / POWER
    Pow,
    /// SQRT
    Sqrt,
    /// EXP
    Exp,
    /// LN
    Ln,
    /// LOG(x) / LOG(b, x)
    Log,
    /// LOG2
    Log2,
    /// LOG10
    Log10,
    /// SIGN
    Sign,
    /// PI
    Pi,
    /// TRUNCATE(x, d)
    Truncate,
    /// SIN
    Sin,
    /// COS
    Cos,
    /// TAN
    Tan,
    /// ASIN
    Asin,
    /// ACOS
    Acos,
    /// ATAN(x) / ATAN(y, x)
    Atan,
    /// ATAN2(y, x)
    Atan2,
    /// COT
    Cot,
    /// DEGREES
    Degrees,
    /// RADIANS
    Radians,
    /// RAND()
    Rand,
    /// CONV(n, from, to)
    Conv,
    /// BIN
    Bin,
    /// OCT
    Oct,
}

/// The function called `name` (lower-case).
pub fn by_name(name: &str) -> Option<MathFn> {
    Some(match name {
        "pow" | "power" => MathFn::Pow,
        "sqrt" => MathFn::Sqrt,
        "exp" => MathFn::Exp,
        "ln" => MathFn::Ln,
        "log" => MathFn::Log,
        "log2" => MathFn::Log2,
        "log10" => MathFn::Log10,
        "sign" => MathFn::Sign,
        "pi" => MathFn::Pi,
        "truncate" => MathFn::Truncate,
        "sin" => MathFn::Sin,
        "cos" => MathFn::Cos,
        "tan" => MathFn::Tan,
        "asin" => MathFn::Asin,
        "acos" => MathFn::Acos,
        "atan" => MathFn::Atan,
        "atan2" => MathFn::Atan2,
        "cot" => MathFn::Cot,
        "degrees" => MathFn::Degrees,
        "radians" => MathFn::Radians,
        "rand" => MathFn::Rand,
        "conv" => MathFn::Conv,
        "bin" => MathFn::Bin,
        "oct" => MathFn::Oct,
        _ => return None,
    })
}

/// Whether `f` takes `n` arguments. RAND(seed) is not among them: MySQL
/// carries a seeded generator from row to row, which this evaluator has
/// no state for, so it is refused at compile time.
pub fn arity_ok(f: MathFn, n: usize) -> bool {
    match f {
        MathFn::Pi | MathFn::Rand => n == 0,
        MathFn::Pow | MathFn::Truncate | MathFn::Atan2 => n == 2,
        MathFn::Log | MathFn::Atan => (1..=2).contains(&n),
        MathFn::Conv => n == 3,
        _ => n == 1,
    }
}

/// The type MySQL reports for `f`'s result (`arg(i)`: argument types).
pub fn out_type(f: MathFn, arg: &dyn Fn(usize) -> OutType) -> OutType {
    match f {
        MathFn::Sign => OutType::LongLong,
        MathFn::Conv | MathFn::Bin | MathFn::Oct => OutType::VarString,
        MathFn::Truncate => match arg(0) {
            OutType::Tiny | OutType::Short | OutType::Int24 | OutType::Long | OutType::LongLong => {
                OutType::LongLong
            }
            OutType::NewDecimal => OutType::NewDecimal,
            OutType::Null => OutType::Null,
            _ => OutType::Double,
        },
        _ => OutType::Double,
    }
}

fn out_of_range(what: String) -> SqlError {
    SqlError::new(
        1690,
        "22003",
        format!("DOUBLE value is out of range in '{what}'"),
    )
}

fn finite(x: f64, what: impl FnOnce() -> String) -> SqlResult<Value> {
    if x.is_finite() {
        Ok(Value::Double(x))
    } else {
        Err(out_of_range(what()))
    }
}

fn log_warning(env: &dyn Env) -> Value {
    env.warn(3020, "Invalid argument for logarithm".into());
    Value::Null
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A double in [0, 1) from a per-thread xorshift generator seeded from
/// the clock.
fn random() -> f64 {
    RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            x = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
                | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// MySQL's CONV: `s` read in base `from` (signed when negative) up to
/// the first character that is not a digit of it, written in base `to`
/// (signed when negative); None for a base out of 2..=36.
pub fn conv(s: &[u8], from: i64, to: i64) -> Option<String> {
    let (fa, ta) = (from.unsigned_abs(), to.unsigned_abs());
    if !(2..=36).contains(&fa) || !(2..=36).contains(&ta) {
        return None;
    }
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: u64 = 0;
    let mut overflow = false;
    for c in digits.chars() {
        let Some(d) = c.to_digit(36).filter(|&d| u64::from(d) < fa) else {
            break;
        };
        match v.checked_mul(fa).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => {
                overflow = true;
                break;
            }
        }
    }
    let bits: u64 = if from < 0 {
        // Signed: saturate at the i64 range.
        if overflow || v > i64::MAX as u64 + u64::from(neg) {
            if neg {
                i64::MIN as u64
            } else {
                i64::MAX as u64
            }
        } else if neg {
            (v as i64).wrapping_neg() as u64
        } else {
            v
        }
    } else if overflow {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    };
    let (neg_out, mut mag) = if to < 0 && (bits as i64) < 0 {
        (true, (bits as i64).unsigned_abs())
    } else {
        (false, bits)
    };
    let mut out = Vec::new();
    loop {
        let d = (mag % ta) as u32;
        out.push(
            std::char::from_digit(d, 36)
                .unwrap_or('0')
                .to_ascii_uppercase(),
        );
        mag /= ta;
        if mag == 0 {
            break;
        }
    }
    if neg_out {
        out.push('-');
    }
    Some(out.into_iter().rev().collect())
}

/// TRUNCATE(x, d): `x` cut (toward zero) to `d` digits after the point
/// (before it when `d` is negative), keeping `x`'s kind.
fn truncate(x: &Value, d: i64) -> Value {
    let d = d.clamp(-60, 60);
    match x {
        Value::Int(i) if d >= 0 => Value::Int(*i),
        Value::UInt(u) if d >= 0 => Value::UInt(*u),
        Value::Int(i) => {
            let p = 10i128.checked_pow((-d) as u32).unwrap_or(i128::MAX);
            Value::Int((i128::from(*i) / p * p) as i64)
        }
        Value::UInt(u) => {
            let p = 10i128.checked_pow((-d) as u32).unwrap_or(i128::MAX);
            let r = i128::from(*u) / p * p;
            if r <= i128::from(i64::MAX) {
                Value::Int(r as i64)
            } else {
                Value::UInt(r as u64)
            }
        }
        Value::Decimal(v, s) => {
            let s = i64::from(*s);
            if d >= s {
                return Value::Decimal(*v, s as u8);
            }
            let cut = (s - d) as u32;
            let p = 10i128.checked_pow(cut).unwrap_or(i128::MAX);
            let t = *v / p;
            if d >= 0 {
                Value::Decimal(t, d as u8)
            } else {
                let back = 10i128.checked_pow((-d) as u32).unwrap_or(0);
                Value::Decimal(t.saturating_mul(back), 0)
            }
        }
        other => {
            let f = num_f64(other).unwrap_or(0.0);
            let p = 10f64.powi(d as i32);
            let r = (f * p).trunc() / p;
            Value::Double(if r.is_finite() { r } else { f })
        }
    }
}

/// Evaluates the math function `f` over evaluated `a`.
pub fn call(f: MathFn, a: Vec<Value>, env: &dyn Env) -> SqlResult<Value> {
    match f {
        MathFn::Pi => return Ok(Value::Double(std::f64::consts::PI)),
        MathFn::Rand => return Ok(Value::Double(random())),
        _ => {}
    }
    if a.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let x = a.first().and_then(num_f64).unwrap_or(0.0);
    let y = a.get(1).and_then(num_f64).unwrap_or(0.0);
    let name = |n: &str| format!("{n}({x})");
    Ok(match f {
        MathFn::Pow => return finite(x.powf(y), || format!("pow({x},{y})")),
        MathFn::Sqrt if x < 0.0 => Value::Null,
        MathFn::Sqrt => Value::Double(x.sqrt()),
        MathFn::Exp => return finite(x.exp(), || name("exp")),
        MathFn::Ln | MathFn::Log2 | MathFn::Log10 if x <= 0.0 => log_warning(env),
        MathFn::Ln => Value::Double(x.ln()),
        MathFn::Log2 => Value::Double(x.log2()),
        MathFn::Log10 => Value::Double(x.log10()),
        MathFn::Log if x <= 0.0 => log_warning(env),
        MathFn::Log if a.len() == 1 => Value::Double(x.ln()),
        MathFn::Log if y <= 0.0 || x == 1.0 => log_warning(env),
        MathFn::Log => Value::Double(y.ln() / x.ln()),
        MathFn::Sign => Value::Int(match a.first() {
            Some(Value::Int(i)) => i.signum(),
            Some(Value::UInt(u)) => i64::from(*u > 0),
            Some(Value::Decimal(d, _)) => d.signum() as i64,
            _ if x > 0.0 => 1,
            _ if x < 0.0 => -1,
            _ => 0,
        }),
        MathFn::Truncate => truncate(
            a.first().unwrap_or(&Value::Null),
            a.get(1).and_then(to_i64).unwrap_or(0),
        ),
        MathFn::Sin => Value::Double(x.sin()),
        MathFn::Cos => Value::Double(x.cos()),
        MathFn::Tan => return finite(x.tan(), || name("tan")),
        MathFn::Asin | MathFn::Acos if !(-1.0..=1.0).contains(&x) => Value::Null,
        MathFn::Asin => Value::Double(x.asin()),
        MathFn::Acos => Value::Double(x.acos()),
        MathFn::Atan if a.len() == 1 => Value::Double(x.atan()),
        MathFn::Atan | MathFn::Atan2 => Value::Double(x.atan2(y)),
        MathFn::Cot => {
            let t = x.tan();
            if t == 0.0 {
                return Err(out_of_range(name("cot")));
            }
            return finite(1.0 / t, || name("cot"));
        }
        MathFn::Degrees => Value::Double(x.to_degrees()),
        MathFn::Radians => Value::Double(x.to_radians()),
        MathFn::Conv | MathFn::Bin | MathFn::Oct => {
            let (s, from, to) = match f {
                MathFn::Conv => (
                    text_of(&a[0]),
                    a.get(1).and_then(to_i64).unwrap_or(0),
                    a.get(2).and_then(to_i64).unwrap_or(0),
                ),
                // BIN(n) / OCT(n): n as a BIGINT, in base 2 / 8.
                _ => (
                    to_i64(&a[0]).unwrap_or(0).to_string().into_bytes(),
                    10,
                    if f == MathFn::Bin { 2 } else { 8 },
                ),
            };
            conv(&s, from, to).map_or(Value::Null, |t| Value::Str(t.into_bytes()))
        }
        MathFn::Pi | MathFn::Rand => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_follows_mysql_examples() {
        assert_eq!(conv(b"a", 16, 2).as_deref(), Some("1010"));
        assert_eq!(conv(b"6E", 18, 8).as_deref(), Some("172"));
        assert_eq!(conv(b"-17", 10, -18).as_deref(), Some("-H"));
        assert_eq!(conv(b"40", 10, 10).as_deref(), Some("40"));
        assert_eq!(conv(b"-1", 10, 2).map(|s| s.len()), Some(64));
        assert_eq!(conv(b"1", 1, 10), None);
    }

    #[test]
    fn truncate_keeps_the_kind() {
        assert_eq!(truncate(&Value::Decimal(1223, 3), 1), Value::Decimal(12, 1));
        assert_eq!(truncate(&Value::Int(122), -2), Value::Int(100));
        assert_eq!(
            truncate(&Value::Decimal(-1999, 3), 1),
            Value::Decimal(-19, 1)
        );
    }
}
