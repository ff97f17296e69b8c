//! Evaluating compiled expressions with MySQL's semantics: three-valued
//! logic, NULL propagation, numeric comparison of mixed types, string
//! comparison and LIKE under a collation, integer overflow as an error,
//! and CAST.
//!
//! No locks, no I/O; evaluation allocates only for string results.

use super::*;

// ------------------------------------------------------------ evaluation

/// A numeric view of a value for arithmetic and comparison.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    UInt(u64),
    Dec(i128, u8),
    Dbl(f64),
}

/// The leading number of a string, as MySQL converts strings in numeric
/// context ("12abc" is 12, "abc" is 0).
pub fn str_to_f64(s: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(s);
    let t = s.trim_start();
    let mut end = 0;
    let b = t.as_bytes();
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_e = false;
    while end < b.len() {
        let c = b.get(end).copied().unwrap_or(0);
        let ok = match c {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'+' | b'-' => end == 0 || matches!(b.get(end - 1), Some(b'e' | b'E')),
            b'.' if !seen_dot && !seen_e => {
                seen_dot = true;
                true
            }
            b'e' | b'E' if seen_digit && !seen_e => {
                seen_e = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    let mut cand = t.get(..end).unwrap_or("");
    while !cand.is_empty() {
        if let Ok(v) = cand.parse::<f64>() {
            return v;
        }
        cand = cand.get(..cand.len() - 1).unwrap_or("");
    }
    0.0
}

fn num(v: &Value) -> Option<Num> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => Num::Int(*i),
        Value::UInt(u) => Num::UInt(*u),
        Value::Decimal(d, s) => Num::Dec(*d, *s),
        Value::Double(f) => Num::Dbl(*f),
        Value::Str(s) => {
            let t = String::from_utf8_lossy(s);
            let t = t.trim();
            match t.parse::<i64>() {
                Ok(i) => Num::Int(i),
                Err(_) => Num::Dbl(str_to_f64(s)),
            }
        }
        Value::Date(d) => {
            let (y, m, dd) = crate::types::unpack_date(*d);
            Num::Int(i64::from(y) * 10_000 + i64::from(m) * 100 + i64::from(dd))
        }
        Value::DateTime(t) => {
            let (d, h, mi, s, _) = crate::types::unpack_datetime(*t);
            let (y, m, dd) = crate::types::unpack_date(d);
            Num::Int(
                ((i64::from(y) * 100 + i64::from(m)) * 100 + i64::from(dd)) * 1_000_000
                    + i64::from(h) * 10_000
                    + i64::from(mi) * 100
                    + i64::from(s),
            )
        }
        // A TIME in numeric context is [-]HHMMSS[.ffffff].
        Value::Time(us) => {
            let a = us.unsigned_abs();
            let secs = (a / 1_000_000) as i64;
            let hms = (secs / 3600) * 10_000 + ((secs / 60) % 60) * 100 + secs % 60;
            let sign = if *us < 0 { -1 } else { 1 };
            let frac = (a % 1_000_000) as i128;
            if frac == 0 {
                Num::Int(sign * hms)
            } else {
                Num::Dec(i128::from(sign) * (i128::from(hms) * 1_000_000 + frac), 6)
            }
        }
        // An ENUM or SET in numeric context is its index or bitmask.
        Value::Member(n, _) => Num::UInt(*n),
        Value::Json(b) => return num(&crate::json::to_number(b)),
    })
}

fn to_f64(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::UInt(u) => u as f64,
        Num::Dec(d, s) => d as f64 / 10f64.powi(i32::from(s)),
        Num::Dbl(f) => f,
    }
}

fn to_dec(n: Num, scale: u8) -> Option<i128> {
    let p = 10i128.checked_pow(u32::from(scale))?;
    match n {
        Num::Int(i) => i128::from(i).checked_mul(p),
        Num::UInt(u) => i128::from(u).checked_mul(p),
        Num::Dec(d, s) if s <= scale => d.checked_mul(10i128.checked_pow(u32::from(scale - s))?),
        Num::Dec(d, s) => Some(d / 10i128.checked_pow(u32::from(s - scale))?),
        Num::Dbl(f) => Some((f * p as f64).round() as i128),
    }
}

/// The value as a signed integer (MySQL rounding for decimals and
/// doubles); None for NULL.
/// `v` as a double, if it is a number (or a string that reads as one).
pub(crate) fn num_f64(v: &Value) -> Option<f64> {
    num(v).map(to_f64)
}

/// `v` as a signed integer, if it is a number (or a string that reads as one).
pub fn to_i64(v: &Value) -> Option<i64> {
    Some(match num(v)? {
        Num::Int(i) => i,
        Num::UInt(u) => u as i64,
        Num::Dec(d, s) => {
            let p = 10i128.pow(u32::from(s));
            let q = d / p;
            let r = d % p;
            let q = if r.abs() * 2 >= p { q + d.signum() } else { q };
            q.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        }
        Num::Dbl(f) => f.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64,
    })
}

/// Truthiness: NULL is unknown (None); numbers are true when non-zero;
/// strings by their leading number.
pub fn truth(v: &Value) -> Option<bool> {
    Some(match num(v)? {
        Num::Int(i) => i != 0,
        Num::UInt(u) => u != 0,
        Num::Dec(d, _) => d != 0,
        Num::Dbl(f) => f != 0.0,
    })
}

fn overflow(what: &str) -> SqlError {
    SqlError::new(
        1690,
        "22003",
        format!("BIGINT value is out of range in '{what}'"),
    )
}

fn arith(op: BinOp, a: &Value, b: &Value) -> SqlResult<Value> {
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return Ok(Value::Null);
    };
    let any_dbl = matches!(x, Num::Dbl(_)) || matches!(y, Num::Dbl(_));
    let any_dec = matches!(x, Num::Dec(..)) || matches!(y, Num::Dec(..));
    if op == BinOp::Div {
        let d = to_f64(y);
        if d == 0.0 {
            return Ok(Value::Null);
        }
        if any_dbl {
            return Ok(Value::Double(to_f64(x) / d));
        }
        // Decimal division: the dividend's scale plus 4.
        let sx = match x {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let scale = (sx + 4).min(30);
        let sy = match y {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let (Some(nx), Some(ny)) = (to_dec(x, scale + sy), to_dec(y, sy)) else {
            return Ok(Value::Double(to_f64(x) / d));
        };
        if ny == 0 {
            return Ok(Value::Null);
        }
        // Round half away from zero.
        let q = nx / ny;
        let r = nx % ny;
        let q = if r.abs() * 2 >= ny.abs() {
            q + nx.signum() * ny.signum()
        } else {
            q
        };
        return Ok(Value::Decimal(q, scale));
    }
    if op == BinOp::IntDiv {
        return int_div(x, y);
    }
    if any_dbl {
        let (p, q) = (to_f64(x), to_f64(y));
        return Ok(match op {
            BinOp::Add => Value::Double(p + q),
            BinOp::Sub => Value::Double(p - q),
            BinOp::Mul => Value::Double(p * q),
            BinOp::Mod if q == 0.0 => Value::Null,
            BinOp::Mod => Value::Double(p % q),
            _ => Value::Null,
        });
    }
    if any_dec {
        let sx = match x {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let sy = match y {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let ovf = || overflow("decimal arithmetic");
        return Ok(match op {
            BinOp::Add | BinOp::Sub | BinOp::Mod => {
                let s = sx.max(sy);
                let (p, q) = (to_dec(x, s).ok_or_else(ovf)?, to_dec(y, s).ok_or_else(ovf)?);
                match op {
                    BinOp::Add => Value::Decimal(p.checked_add(q).ok_or_else(ovf)?, s),
                    BinOp::Sub => Value::Decimal(p.checked_sub(q).ok_or_else(ovf)?, s),
                    _ if q == 0 => Value::Null,
                    _ => Value::Decimal(p % q, s),
                }
            }
            BinOp::Mul => {
                let s = (sx + sy).min(30);
                let p = to_dec(x, sx).ok_or_else(ovf)?;
                let q = to_dec(y, sy).ok_or_else(ovf)?;
                Value::Decimal(p.checked_mul(q).ok_or_else(ovf)?, s)
            }
            _ => Value::Null,
        });
    }
    // Integers: signed unless an unsigned operand forces unsigned.
    let unsigned = matches!(x, Num::UInt(_)) || matches!(y, Num::UInt(_));
    let xi = match x {
        Num::Int(i) => i128::from(i),
        Num::UInt(u) => i128::from(u),
        _ => 0,
    };
    let yi = match y {
        Num::Int(i) => i128::from(i),
        Num::UInt(u) => i128::from(u),
        _ => 0,
    };
    let r = match op {
        BinOp::Add => xi + yi,
        BinOp::Sub => xi - yi,
        BinOp::Mul => xi
            .checked_mul(yi)
            .ok_or_else(|| overflow("multiplication"))?,
        BinOp::Mod if yi == 0 => return Ok(Value::Null),
        BinOp::Mod => xi % yi,
        _ => return Ok(Value::Null),
    };
    if unsigned {
        if (0..=i128::from(u64::MAX)).contains(&r) {
            return Ok(if r <= i128::from(i64::MAX) {
                Value::Int(r as i64)
            } else {
                Value::UInt(r as u64)
            });
        }
        return Err(overflow("unsigned arithmetic"));
    }
    i64::try_from(r)
        .map(Value::Int)
        .map_err(|_| overflow("integer arithmetic"))
}

/// `x DIV y`: the quotient truncated toward zero, computed exactly for
/// integers and decimals (in doubles only when an operand is one); NULL
/// for a zero divisor; a quotient outside BIGINT (BIGINT UNSIGNED when an
/// operand is unsigned) is error 1690.
fn int_div(x: Num, y: Num) -> SqlResult<Value> {
    let scale_of = |n: Num| match n {
        Num::Dec(_, s) => s,
        _ => 0,
    };
    let q: i128 = match (x, y) {
        (Num::Dbl(_), _) | (_, Num::Dbl(_)) => {
            let d = to_f64(y);
            if d == 0.0 {
                return Ok(Value::Null);
            }
            let q = (to_f64(x) / d).trunc();
            if !(-1.9e19..1.9e19).contains(&q) {
                return Err(overflow("DIV"));
            }
            q as i128
        }
        _ => {
            let s = scale_of(x).max(scale_of(y));
            let (Some(a), Some(b)) = (to_dec(x, s), to_dec(y, s)) else {
                return Err(overflow("DIV"));
            };
            if b == 0 {
                return Ok(Value::Null);
            }
            a.checked_div(b).ok_or_else(|| overflow("DIV"))?
        }
    };
    let unsigned = matches!(x, Num::UInt(_)) || matches!(y, Num::UInt(_));
    if let Ok(i) = i64::try_from(q) {
        if !(unsigned && i < 0) {
            return Ok(Value::Int(i));
        }
    } else if unsigned {
        if let Ok(u) = u64::try_from(q) {
            return Ok(Value::UInt(u));
        }
    }
    Err(overflow("DIV"))
}

/// Compares two non-NULL values the way MySQL does: numbers numerically,
/// strings under `coll`, a number and a string as doubles, dates by their
/// packed value.
pub fn compare(a: &Value, b: &Value, coll: Collation) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Str(x), Value::Str(y)) => Some(coll.cmp(x, y)),
        // With JSON on either side, the other side is read as a JSON
        // scalar (a string as a JSON string) and MySQL's JSON order holds.
        (Value::Json(_), _) | (_, Value::Json(_)) => crate::json::compare_values(a, b),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::UInt(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::UInt(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Date(x) | Value::DateTime(x), Value::Date(y) | Value::DateTime(y))
            if std::mem::discriminant(a) == std::mem::discriminant(b) =>
        {
            Some(x.cmp(y))
        }
        (Value::Date(_) | Value::DateTime(_), Value::Str(s)) => {
            let parsed = crate::convert::parse_datetime_str(s)?;
            let lhs = match a {
                Value::Date(d) => crate::types::pack_datetime(*d, 0, 0, 0, 0),
                Value::DateTime(t) => *t,
                _ => return None,
            };
            Some(lhs.cmp(&parsed))
        }
        (Value::Str(_), Value::Date(_) | Value::DateTime(_)) => {
            compare(b, a, coll).map(Ordering::reverse)
        }
        (Value::Date(d), Value::DateTime(t)) => {
            Some(crate::types::pack_datetime(*d, 0, 0, 0, 0).cmp(t))
        }
        (Value::DateTime(t), Value::Date(d)) => {
            Some(t.cmp(&crate::types::pack_datetime(*d, 0, 0, 0, 0)))
        }
        (Value::Time(x), Value::Time(y)) => Some(x.cmp(y)),
        (Value::Time(x), Value::Str(s)) => Some(x.cmp(&crate::convert::parse_time_str(s)?)),
        (Value::Str(_), Value::Time(_)) => compare(b, a, coll).map(Ordering::reverse),
        // ENUM and SET values sort by index / bitmask, and compare with a
        // string as strings.
        (Value::Member(x, _), Value::Member(y, _)) => Some(x.cmp(y)),
        (Value::Member(_, x), Value::Str(y)) | (Value::Str(x), Value::Member(_, y)) => {
            Some(coll.cmp(x, y))
        }
        _ => {
            let (x, y) = (num(a)?, num(b)?);
            match (x, y) {
                (
                    Num::Dec(..) | Num::Int(_) | Num::UInt(_),
                    Num::Dec(..) | Num::Int(_) | Num::UInt(_),
                ) => {
                    let s = match (x, y) {
                        (Num::Dec(_, s1), Num::Dec(_, s2)) => s1.max(s2),
                        (Num::Dec(_, s), _) | (_, Num::Dec(_, s)) => s,
                        _ => 0,
                    };
                    match (to_dec(x, s), to_dec(y, s)) {
                        (Some(p), Some(q)) => Some(p.cmp(&q)),
                        _ => to_f64(x).partial_cmp(&to_f64(y)),
                    }
                }
                _ => to_f64(x).partial_cmp(&to_f64(y)),
            }
        }
    }
}

/// The collation an expression's strings compare under: a column's own,
/// else `utf8mb4_general_ci`.
pub fn collation_of(e: &Expr, scope_types: &[Option<ColumnType>]) -> Collation {
    use crate::json::JsonFn;
    match e {
        // JSON's text functions give utf8mb4_bin strings, as MySQL's.
        Expr::Func(
            Func::Json(JsonFn::Unquote | JsonFn::Quote | JsonFn::Type | JsonFn::Pretty),
            _,
        ) => Collation::Utf8mb4Bin,
        Expr::Column(i) => {
            scope_types
                .get(*i)
                .and_then(|t| t.as_ref())
                .map_or(Collation::Utf8mb4GeneralCi, |t| {
                    if matches!(
                        t,
                        ColumnType::Str { .. } | ColumnType::Enum { .. } | ColumnType::Set { .. }
                    ) {
                        t.collation()
                    } else {
                        Collation::Utf8mb4GeneralCi
                    }
                })
        }
        _ => Collation::Utf8mb4GeneralCi,
    }
}

/// `s LIKE pattern` with `%`, `_` and `\` escapes, under `coll`.
pub fn like(s: &[u8], pat: &[u8], coll: Collation) -> bool {
    like_escape(s, pat, coll, Some('\\'))
}

/// `s LIKE pattern ESCAPE esc` under `coll` (`esc` None: no escape
/// character).
pub fn like_escape(s: &[u8], pat: &[u8], coll: Collation, esc: Option<char>) -> bool {
    let fold = |c: char| -> char {
        if coll == Collation::Utf8mb4GeneralCi {
            c.to_uppercase().next().unwrap_or(c)
        } else {
            c
        }
    };
    let s: Vec<char> = String::from_utf8_lossy(s).chars().map(fold).collect();
    let p: Vec<char> = String::from_utf8_lossy(pat).chars().collect();
    // Iterative matcher with backtracking to the last `%`.
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let pc = p.get(pi).copied();
        match pc {
            Some('%') => {
                star = Some((pi, si));
                pi += 1;
                continue;
            }
            Some('_') => {
                si += 1;
                pi += 1;
                continue;
            }
            Some(e)
                if Some(e) == esc
                    && p.get(pi + 1).is_some()
                    && p.get(pi + 1).map(|c| fold(*c)) == s.get(si).copied() =>
            {
                si += 1;
                pi += 2;
                continue;
            }
            Some(e) if Some(e) == esc && p.get(pi + 1).is_some() => {}
            Some(c) if Some(fold(c)) == s.get(si).copied() => {
                si += 1;
                pi += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, ss)) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    while p.get(pi) == Some(&'%') {
        pi += 1;
    }
    pi == p.len()
}

/// Evaluates `e` over `row`; `aggs` holds aggregate results in a grouped
/// query; `types` are the scope's column types (for collations).
pub fn eval(
    e: &Expr,
    row: &[Value],
    aggs: &[Value],
    types: &[Option<ColumnType>],
    env: &dyn Env,
) -> SqlResult<Value> {
    let ev = |x: &Expr| eval(x, row, aggs, types, env);
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
        Expr::Outer(up, slot) => env.outer(*up, *slot)?,
        Expr::Param(i) => env.params().get(*i).cloned().ok_or_else(|| {
            SqlError::new(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
        })?,
        Expr::SysVar(n) => env.sys_var(n)?,
        Expr::UserVar(n) => env.user_var(n),
        Expr::Agg(i) => aggs.get(*i).cloned().unwrap_or(Value::Null),
        Expr::Not(x) => match truth(&ev(x)?) {
            None => Value::Null,
            Some(b) => Value::Int(i64::from(!b)),
        },
        Expr::Neg(x) => match ev(x)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| overflow("negation"))?),
            Value::UInt(u) if u <= 1 << 63 => Value::Int((u as i64).wrapping_neg()),
            Value::Decimal(d, s) => Value::Decimal(-d, s),
            v => Value::Double(-to_f64(num(&v).unwrap_or(Num::Int(0)))),
        },
        Expr::Binary(op, l, r) => match op {
            BinOp::And => {
                let a = truth(&ev(l)?);
                if a == Some(false) {
                    return Ok(Value::Int(0));
                }
                let b = truth(&ev(r)?);
                match (a, b) {
                    (_, Some(false)) => Value::Int(0),
                    (Some(true), Some(true)) => Value::Int(1),
                    _ => Value::Null,
                }
            }
            BinOp::Or => {
                let a = truth(&ev(l)?);
                if a == Some(true) {
                    return Ok(Value::Int(1));
                }
                let b = truth(&ev(r)?);
                match (a, b) {
                    (_, Some(true)) => Value::Int(1),
                    (Some(false), Some(false)) => Value::Int(0),
                    _ => Value::Null,
                }
            }
            BinOp::Xor => match (truth(&ev(l)?), truth(&ev(r)?)) {
                (Some(a), Some(b)) => Value::Int(i64::from(a ^ b)),
                _ => Value::Null,
            },
            BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::NullSafeEq => {
                let (a, b) = (ev(l)?, ev(r)?);
                let coll = match collation_of(l, types) {
                    Collation::Utf8mb4GeneralCi => collation_of(r, types),
                    c => c,
                };
                if *op == BinOp::NullSafeEq {
                    return Ok(Value::Int(i64::from(match (&a, &b) {
                        (Value::Null, Value::Null) => true,
                        (Value::Null, _) | (_, Value::Null) => false,
                        _ => compare(&a, &b, coll) == Some(Ordering::Equal),
                    })));
                }
                match compare(&a, &b, coll) {
                    None => Value::Null,
                    Some(o) => Value::Int(i64::from(match op {
                        BinOp::Eq => o == Ordering::Equal,
                        BinOp::Ne => o != Ordering::Equal,
                        BinOp::Lt => o == Ordering::Less,
                        BinOp::Le => o != Ordering::Greater,
                        BinOp::Gt => o == Ordering::Greater,
                        _ => o != Ordering::Less,
                    })),
                }
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                let (a, b) = (ev(l)?, ev(r)?);
                match (to_i64(&a), to_i64(&b)) {
                    (Some(x), Some(y)) => {
                        // BIGINT UNSIGNED operands; a shift by 64 or more
                        // (a negative count among them) gives 0.
                        let (x, y) = (x as u64, y as u64);
                        let v = match op {
                            BinOp::BitAnd => x & y,
                            BinOp::BitOr => x | y,
                            BinOp::Shl => u32::try_from(y)
                                .ok()
                                .and_then(|n| x.checked_shl(n))
                                .unwrap_or(0),
                            BinOp::Shr => u32::try_from(y)
                                .ok()
                                .and_then(|n| x.checked_shr(n))
                                .unwrap_or(0),
                            _ => x ^ y,
                        };
                        if v <= i64::MAX as u64 {
                            Value::Int(v as i64)
                        } else {
                            Value::UInt(v)
                        }
                    }
                    _ => Value::Null,
                }
            }
            _ => arith(*op, &ev(l)?, &ev(r)?)?,
        },
        Expr::IsNull(x, negated) => Value::Int(i64::from(ev(x)?.is_null() != *negated)),
        Expr::InList(x, list, negated) => {
            let v = ev(x)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let coll = collation_of(x, types);
            let mut saw_null = false;
            for item in list {
                let w = ev(item)?;
                match compare(&v, &w, coll) {
                    Some(Ordering::Equal) => return Ok(Value::Int(i64::from(!*negated))),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Int(i64::from(*negated))
            }
        }
        Expr::Between(x, lo, hi, negated) => {
            let (v, a, b) = (ev(x)?, ev(lo)?, ev(hi)?);
            let coll = collation_of(x, types);
            match (compare(&v, &a, coll), compare(&v, &b, coll)) {
                (Some(p), Some(q)) => {
                    let inside = p != Ordering::Less && q != Ordering::Greater;
                    Value::Int(i64::from(inside != *negated))
                }
                _ => Value::Null,
            }
        }
        Expr::Like(x, p, negated, esc) => {
            let (v, pat) = (ev(x)?, ev(p)?);
            match (&v, &pat) {
                (Value::Null, _) | (_, Value::Null) => Value::Null,
                _ => {
                    let s = text_of(&v);
                    let ps = text_of(&pat);
                    let hit = like_escape(&s, &ps, collation_of(x, types), *esc);
                    Value::Int(i64::from(hit != *negated))
                }
            }
        }
        Expr::Case(operand, arms, els) => {
            let op = match operand {
                Some(o) => Some(ev(o)?),
                None => None,
            };
            for (w, t) in arms {
                let hit = match &op {
                    Some(o) => {
                        compare(o, &ev(w)?, Collation::Utf8mb4GeneralCi) == Some(Ordering::Equal)
                    }
                    None => truth(&ev(w)?) == Some(true),
                };
                if hit {
                    return ev(t);
                }
            }
            match els {
                Some(x) => ev(x)?,
                None => Value::Null,
            }
        }
        Expr::Cast(x, to) => cast(&ev(x)?, *to, env)?,
        Expr::Func(f, args) => crate::funcs::call(*f, args, &ev, env)?,
        Expr::Subquery(Some(x), sq) if matches!(**x, Expr::Row(_)) => {
            let Expr::Row(items) = &**x else {
                return Err(SqlError::internal("row subquery"));
            };
            let l = items
                .iter()
                .map(|i| Ok((ev(i)?, collation_of(i, types))))
                .collect::<SqlResult<Vec<_>>>()?;
            env.row_subquery(sq, &l, row)?
        }
        Expr::Subquery(x, sq) => {
            let x = match x {
                Some(x) => Some((ev(x)?, collation_of(x, types))),
                None => None,
            };
            env.subquery(sq, x, row)?
        }
        Expr::Row(_) => return Err(operand_columns(1)),
        Expr::InRows(items, test, set) => {
            let l = items
                .iter()
                .map(|i| Ok((ev(i)?, collation_of(i, types))))
                .collect::<SqlResult<Vec<_>>>()?;
            set.test(*test, &l)?
        }
        Expr::InSet(x, op, all, set) => {
            // Over no values ANY is false and ALL true, whatever `x`.
            if set.vals.is_empty() && !set.has_null {
                return Ok(Value::Int(i64::from(*all)));
            }
            let v = ev(x)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let coll = collation_of(x, types);
            if matches!((op, all), (BinOp::Eq, false) | (BinOp::Ne, true)) {
                if let Some(found) = set.lookup(&v, coll) {
                    return Ok(if found {
                        Value::Int(i64::from(!*all))
                    } else if set.has_null {
                        Value::Null
                    } else {
                        Value::Int(i64::from(*all))
                    });
                }
            }
            let mut unknown = set.has_null;
            for w in &set.vals {
                match compare(&v, w, coll) {
                    None => unknown = true,
                    Some(o) => {
                        let holds = holds(*op, o);
                        // ANY decides at the first true, ALL at the
                        // first false.
                        if holds != *all {
                            return Ok(Value::Int(i64::from(holds)));
                        }
                    }
                }
            }
            if unknown {
                Value::Null
            } else {
                Value::Int(i64::from(*all))
            }
        }
    })
}

/// Whether comparison `op` holds for the ordering `o` of its operands.
pub(crate) fn holds(op: BinOp, o: Ordering) -> bool {
    match op {
        BinOp::Eq | BinOp::NullSafeEq => o == Ordering::Equal,
        BinOp::Ne => o != Ordering::Equal,
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

/// The text form of a value (strings as they are).
pub fn text_of(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) | Value::Member(_, s) => s.clone(),
        Value::Json(b) => crate::json::binary_text(b).into_bytes(),
        Value::Null => Vec::new(),
        other => other.to_string().into_bytes(),
    }
}

fn cast(v: &Value, to: CastTo, env: &dyn Env) -> SqlResult<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    // A string that is not wholly a number of the target kind is read up
    // to where it stops being one, with MySQL's warning 1292.
    if let Value::Str(s) = v {
        let t = String::from_utf8_lossy(s);
        let t = t.trim();
        let (whole, kind) = match to {
            CastTo::Signed | CastTo::Unsigned => (t.parse::<i128>().is_ok(), "INTEGER"),
            CastTo::Double => (t.parse::<f64>().is_ok(), "DOUBLE"),
            CastTo::Decimal(_) => (parse_number(t).is_ok(), "DECIMAL"),
            CastTo::Char | CastTo::Time(_) | CastTo::Json | CastTo::Date | CastTo::DateTime(_) => {
                (true, "")
            }
        };
        if !whole {
            env.warn(
                1292,
                format!(
                    "Truncated incorrect {kind} value: '{}'",
                    String::from_utf8_lossy(s)
                ),
            );
        }
    }
    Ok(match to {
        CastTo::Signed => to_i64(v).map_or(Value::Null, Value::Int),
        CastTo::Unsigned => to_i64(v).map_or(Value::Null, |i| {
            if i >= 0 {
                Value::Int(i)
            } else {
                Value::UInt(i as u64)
            }
        }),
        CastTo::Char => Value::Str(text_of(v)),
        // These read strings themselves, and can fail.
        CastTo::Json => crate::json::cast(v)?,
        CastTo::Date => crate::datefuncs::call(crate::datefuncs::DtFn::Date, vec![v.clone()], env)?,
        CastTo::DateTime(fsp) => crate::datefuncs::call(
            crate::datefuncs::DtFn::CastDateTime(fsp),
            vec![v.clone()],
            env,
        )?,
        CastTo::Double => num(v).map_or(Value::Null, |n| Value::Double(to_f64(n))),
        CastTo::Decimal(s) => num(v)
            .and_then(|n| to_dec(n, s))
            .map_or(Value::Null, |d| Value::Decimal(d, s)),
        CastTo::Time(fsp) => match crate::convert::time_of_value(v) {
            Some(us) => {
                let max = crate::types::TIME_MAX_MICROS;
                let us = crate::convert::round_micros(us, fsp);
                if us.abs() > max {
                    env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
                }
                Value::Time(us.clamp(-max, max))
            }
            None => {
                env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
                Value::Null
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_mysql_patterns() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert!(like(b"Hello", b"h%", ci));
        assert!(like(b"Hello", b"%LL%", ci));
        assert!(like(b"Hello", b"H_llo", ci));
        assert!(!like(b"Hello", b"H_lo", ci));
        assert!(like(b"50%", b"50\\%", ci));
        assert!(!like(b"500", b"50\\%", ci));
        assert!(like(b"", b"%", ci));
        assert!(!like(b"abc", b"ab", ci));
        assert!(!like(b"Hello", b"h%", Collation::Utf8mb4Bin));
    }

    #[test]
    fn numbers_parse_as_mysql_literals() {
        assert_eq!(parse_number("42").ok(), Some(Value::Int(42)));
        assert_eq!(parse_number("1.50").ok(), Some(Value::Decimal(150, 2)));
        assert_eq!(parse_number("1e3").ok(), Some(Value::Double(1000.0)));
        assert_eq!(
            parse_number("18446744073709551615").ok(),
            Some(Value::UInt(u64::MAX))
        );
    }

    #[test]
    fn arithmetic_overflows_are_errors_and_division_is_decimal() {
        assert!(arith(BinOp::Add, &Value::Int(i64::MAX), &Value::Int(1)).is_err());
        assert_eq!(
            arith(BinOp::Div, &Value::Int(1), &Value::Int(3)).ok(),
            Some(Value::Decimal(3333, 4))
        );
        assert_eq!(
            arith(BinOp::Div, &Value::Int(1), &Value::Int(0)).ok(),
            Some(Value::Null)
        );
        assert_eq!(
            arith(BinOp::Add, &Value::Decimal(150, 2), &Value::Int(1)).ok(),
            Some(Value::Decimal(250, 2))
        );
    }

    #[test]
    fn mixed_comparisons_follow_mysql() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(
            compare(&Value::Int(10), &Value::Str(b"9".to_vec()), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Value::Str(b"a".to_vec()), &Value::Str(b"A ".to_vec()), ci),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&Value::Decimal(150, 2), &Value::Int(1), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(&Value::Null, &Value::Int(1), ci), None);
    }
}
