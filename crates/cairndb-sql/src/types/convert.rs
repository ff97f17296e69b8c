//! Conversion of values to a column's type before they are stored, with
//! MySQL's strict-mode errors (out of range 1264, too long 1406, bad value
//! 1366/1292, no ENUM/SET member 1265) and the values INSERT IGNORE keeps
//! instead, and the parsing of date and TIME strings.

use crate::error::{SqlError, SqlResult};
use crate::expr::{str_to_f64, to_i64};
use crate::row::ColumnDef;
use crate::types::{pack_date, pack_datetime, ColumnType, StrKind, Value, TIME_MAX_MICROS};

/// Parses `YYYY-MM-DD` (also `YYYYMMDD`) into a packed date.
pub fn parse_date_str(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?.trim();
    let date = t.split([' ', 'T']).next()?;
    let (y, m, d) = if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) {
        (
            date.get(0..4)?.parse().ok()?,
            date.get(4..6)?.parse().ok()?,
            date.get(6..8)?.parse().ok()?,
        )
    } else {
        let mut it = date.split(['-', '/', '.']);
        (
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
        )
    };
    valid_date(y, m, d).then(|| pack_date(y, m, d))
}

fn valid_date(y: u32, m: u32, d: u32) -> bool {
    if y == 0 && m == 0 && d == 0 {
        return true; // the zero date
    }
    if !(1..=12).contains(&m) || d == 0 || y > 9999 {
        return false;
    }
    let leap = (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= days
}

/// Parses `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` into a packed date-time.
pub fn parse_datetime_str(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?.trim();
    let date = pack_date_of(t)?;
    let time = t.split_once([' ', 'T']).map(|(_, tm)| tm.trim());
    let (h, mi, sec, us) = match time {
        None | Some("") => (0, 0, 0, 0),
        Some(tm) => {
            let (hms, frac) = tm.split_once('.').unwrap_or((tm, ""));
            let mut it = hms.split(':');
            let h: u32 = it.next()?.parse().ok()?;
            let mi: u32 = it.next().unwrap_or("0").parse().ok()?;
            let sec: u32 = it.next().unwrap_or("0").parse().ok()?;
            if h > 23 || mi > 59 || sec > 59 {
                return None;
            }
            let frac6 = format!("{:0<6}", frac.get(..frac.len().min(6)).unwrap_or(""));
            let us: u32 = if frac.is_empty() {
                0
            } else {
                frac6.parse().ok()?
            };
            (h, mi, sec, us)
        }
    };
    Some(pack_datetime(date, h, mi, sec, us))
}

fn pack_date_of(t: &str) -> Option<i64> {
    parse_date_str(t.as_bytes())
}

/// Converts `v` for storage in `col` (row number `row` for messages):
/// NULL checks, integer ranges, string lengths, dates.
pub fn to_column(v: Value, col: &ColumnDef, row: u64) -> SqlResult<Value> {
    if v.is_null() {
        if !col.nullable {
            return Err(SqlError::null_not_allowed(&col.name));
        }
        return Ok(Value::Null);
    }
    let name = &col.name;
    // A JSON value stored into another type: a number as itself, a date
    // or time from its unquoted text, a string column gets its text.
    let v = match (&v, col.ty) {
        (Value::Json(_), ColumnType::Json) => v,
        (
            Value::Json(b),
            ColumnType::Str { .. } | ColumnType::Enum { .. } | ColumnType::Set { .. },
        ) => Value::Str(crate::json::binary_text(b).into_bytes()),
        (
            Value::Json(b),
            ColumnType::Date
            | ColumnType::DateTime { .. }
            | ColumnType::Timestamp { .. }
            | ColumnType::Time { .. },
        ) => Value::Str(crate::json::unquoted_text(b).into_bytes()),
        (Value::Json(b), _) => crate::json::to_number(b),
        _ => v,
    };
    Ok(match col.ty {
        ColumnType::Json => crate::json::to_column(&v, name)?,
        ColumnType::Int { bytes, unsigned } => {
            let (lo, hi) = ColumnType::int_range(bytes, unsigned);
            let n: i128 = match &v {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                Value::Str(s) => {
                    let t = String::from_utf8_lossy(s);
                    let t = t.trim();
                    match t.parse::<i128>() {
                        Ok(n) => n,
                        Err(_) => {
                            let f = str_to_f64(s);
                            if t.is_empty() || (f == 0.0 && !t.starts_with(['0', '.', '-', '+'])) {
                                return Err(SqlError::incorrect_value("integer", t, name, row));
                            }
                            f.round() as i128
                        }
                    }
                }
                other => i128::from(to_i64(other).unwrap_or(0)),
            };
            if n < lo || n > hi {
                return Err(SqlError::out_of_range(name, row));
            }
            if unsigned {
                Value::UInt(n as u64)
            } else {
                Value::Int(n as i64)
            }
        }
        ColumnType::Decimal { precision, scale } => {
            let d = match &v {
                Value::Decimal(d, s) => rescale(*d, *s, scale),
                Value::Int(i) => Some(i128::from(*i) * 10i128.pow(u32::from(scale))),
                Value::UInt(u) => Some(i128::from(*u) * 10i128.pow(u32::from(scale))),
                Value::Double(f) => Some((f * 10f64.powi(i32::from(scale))).round() as i128),
                Value::Str(s) => match crate::expr::parse_number(String::from_utf8_lossy(s).trim())
                {
                    Ok(Value::Decimal(d, s)) => rescale(d, s, scale),
                    Ok(Value::Int(i)) => Some(i128::from(i) * 10i128.pow(u32::from(scale))),
                    _ => Some((str_to_f64(s) * 10f64.powi(i32::from(scale))).round() as i128),
                },
                _ => None,
            };
            let d = d.ok_or_else(|| SqlError::out_of_range(name, row))?;
            let max = 10i128.pow(u32::from(precision)) - 1;
            if d.abs() > max {
                return Err(SqlError::out_of_range(name, row));
            }
            Value::Decimal(d, scale)
        }
        ColumnType::Float | ColumnType::Double => {
            let f = match &v {
                Value::Int(i) => *i as f64,
                Value::UInt(u) => *u as f64,
                Value::Double(f) => *f,
                Value::Decimal(d, s) => *d as f64 / 10f64.powi(i32::from(*s)),
                Value::Str(s) => str_to_f64(s),
                _ => 0.0,
            };
            let f = if col.ty == ColumnType::Float {
                f as f32 as f64
            } else {
                f
            };
            Value::Double(f)
        }
        ColumnType::Str { kind, max_len, .. } => {
            let s = match v {
                Value::Str(s) => s,
                other => other.to_string().into_bytes(),
            };
            let len = if matches!(kind, StrKind::Binary | StrKind::VarBinary | StrKind::Blob) {
                s.len()
            } else {
                String::from_utf8_lossy(&s).chars().count()
            };
            if len as u64 > u64::from(max_len) {
                return Err(SqlError::data_too_long(name, row));
            }
            if kind != StrKind::Binary
                && kind != StrKind::VarBinary
                && kind != StrKind::Blob
                && std::str::from_utf8(&s).is_err()
            {
                return Err(SqlError::incorrect_value(
                    "string",
                    &String::from_utf8_lossy(&s),
                    name,
                    row,
                ));
            }
            let mut s = s;
            if kind == StrKind::Binary {
                // BINARY(n) holds exactly n bytes: right-padded with 0x00.
                s.resize(s.len().max(max_len as usize), 0);
            }
            Value::Str(s)
        }
        ColumnType::Date => match &v {
            Value::Date(d) => Value::Date(*d),
            Value::DateTime(t) => Value::Date(crate::types::unpack_datetime(*t).0),
            Value::Str(s) => {
                Value::Date(parse_date_str(s).ok_or_else(|| bad_time("date", s, name, row))?)
            }
            other => Value::Date(
                parse_date_str(other.to_string().as_bytes())
                    .ok_or_else(|| bad_time("date", other.to_string().as_bytes(), name, row))?,
            ),
        },
        ColumnType::Enum { count, collation } => {
            let n = match &v {
                Value::Member(_, s) | Value::Str(s) => {
                    match col
                        .elements
                        .iter()
                        .position(|e| collation.cmp(e.as_bytes(), s) == std::cmp::Ordering::Equal)
                    {
                        Some(i) => i as u64 + 1,
                        None => match std::str::from_utf8(s).ok().map(str::trim) {
                            Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                                t.parse::<u64>().unwrap_or(u64::MAX)
                            }
                            _ => return Err(truncated(name, row)),
                        },
                    }
                }
                other => match to_i64(other) {
                    Some(i) if i > 0 => i as u64,
                    _ => return Err(truncated(name, row)),
                },
            };
            if n == 0 || n > u64::from(count) {
                return Err(truncated(name, row));
            }
            col.member(n)
        }
        ColumnType::Set { count, .. } => {
            let (mask, bad) = set_mask(&v, col);
            let all = if count >= 64 {
                u64::MAX
            } else {
                (1u64 << count) - 1
            };
            if bad || mask & !all != 0 {
                return Err(truncated(name, row));
            }
            col.member(mask)
        }
        ColumnType::Year => {
            let y = match &v {
                Value::Date(d) => i64::from(crate::types::unpack_date(*d).0),
                Value::DateTime(t) => {
                    i64::from(crate::types::unpack_date(crate::types::unpack_datetime(*t).0).0)
                }
                Value::Str(s) | Value::Member(_, s) => {
                    let t = String::from_utf8_lossy(s);
                    let t = t.trim();
                    let Ok(n) = t.parse::<i64>() else {
                        let f = str_to_f64(s);
                        if t.is_empty() || (f == 0.0 && !t.starts_with(['0', '.', '-', '+'])) {
                            return Err(SqlError::incorrect_value("integer", t, name, row));
                        }
                        return to_column(Value::Int(f.round() as i64), col, row);
                    };
                    // A one- or two-digit string: '0'..'69' are 2000..2069.
                    if t.len() <= 2 && (0..70).contains(&n) {
                        2000 + n
                    } else {
                        year_of_number(n).ok_or_else(|| SqlError::out_of_range(name, row))?
                    }
                }
                other => to_i64(other).unwrap_or(-1),
            };
            let y = match &v {
                Value::Str(_) | Value::Member(..) => y,
                _ => year_of_number(y).ok_or_else(|| SqlError::out_of_range(name, row))?,
            };
            Value::Int(y)
        }
        ColumnType::Time { fsp } => {
            let us = time_of_value(&v)
                .ok_or_else(|| bad_time("time", v.to_string().as_bytes(), name, row))?;
            let us = round_micros(us, fsp);
            if us.abs() > TIME_MAX_MICROS {
                return Err(bad_time("time", v.to_string().as_bytes(), name, row));
            }
            Value::Time(us)
        }
        ColumnType::Bit { bits } => {
            let n = match &v {
                Value::Str(s) | Value::Member(_, s) => {
                    if s.len() > 8 {
                        return Err(SqlError::data_too_long(name, row));
                    }
                    s.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
                }
                Value::UInt(u) => *u,
                other => match to_i64(other) {
                    Some(i) if i >= 0 => i as u64,
                    _ => return Err(SqlError::data_too_long(name, row)),
                },
            };
            if bits < 64 && n >> bits != 0 {
                return Err(SqlError::data_too_long(name, row));
            }
            Value::UInt(n)
        }
        ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => match &v {
            Value::DateTime(t) => Value::DateTime(*t),
            Value::Date(d) => Value::DateTime(pack_datetime(*d, 0, 0, 0, 0)),
            Value::Str(s) => Value::DateTime(
                parse_datetime_str(s).ok_or_else(|| bad_time("datetime", s, name, row))?,
            ),
            other => {
                return Err(bad_time(
                    "datetime",
                    other.to_string().as_bytes(),
                    name,
                    row,
                ))
            }
        },
    })
}

/// [`to_column`] under INSERT IGNORE: what strict mode rejects is stored
/// adjusted, as MySQL does, and `warn` gets MySQL's warning: a string too
/// long is cut to the column's length (1265), a number out of range is
/// clamped to the nearest end (1264), a NULL for a NOT NULL column is the
/// type's implicit default (1048). Other errors stay errors.
pub fn to_column_ignoring(
    v: Value,
    col: &ColumnDef,
    row: u64,
    warn: &mut dyn FnMut(u16, String),
) -> SqlResult<Value> {
    let keep = v.clone();
    let e = match to_column(v, col, row) {
        Ok(x) => return Ok(x),
        Err(e) => e,
    };
    let negative = match &keep {
        Value::Int(i) => *i < 0,
        Value::Double(f) => *f < 0.0,
        Value::Decimal(d, _) => *d < 0,
        Value::Str(s) => str_to_f64(s) < 0.0,
        _ => false,
    };
    let fixed = match (e.code, col.ty) {
        (1406, ColumnType::Str { kind, max_len, .. }) => {
            let s = match keep {
                Value::Str(s) => s,
                other => other.to_string().into_bytes(),
            };
            let max = max_len as usize;
            let cut = if matches!(kind, StrKind::Binary | StrKind::VarBinary | StrKind::Blob) {
                s.get(..max).unwrap_or(&s).to_vec()
            } else {
                String::from_utf8_lossy(&s)
                    .chars()
                    .take(max)
                    .collect::<String>()
                    .into_bytes()
            };
            warn(
                1265,
                format!("Data truncated for column '{}' at row {row}", col.name),
            );
            Value::Str(cut)
        }
        (1264, ColumnType::Int { bytes, unsigned }) => {
            let (lo, hi) = ColumnType::int_range(bytes, unsigned);
            let n = if negative { lo } else { hi };
            warn(1264, e.message);
            if unsigned {
                Value::UInt(n as u64)
            } else {
                Value::Int(n as i64)
            }
        }
        (1264, ColumnType::Decimal { precision, scale }) => {
            let max = 10i128.pow(u32::from(precision)) - 1;
            warn(1264, e.message);
            Value::Decimal(if negative { -max } else { max }, scale)
        }
        (1048, _) => {
            warn(1048, e.message);
            implicit_default_of(col)
        }
        (1265, ColumnType::Enum { .. }) => {
            warn(1265, e.message);
            Value::Member(0, Vec::new())
        }
        (1265, ColumnType::Set { count, .. }) => {
            warn(1265, e.message);
            let all = if count >= 64 {
                u64::MAX
            } else {
                (1u64 << count) - 1
            };
            col.member(set_mask(&keep, col).0 & all)
        }
        (1264, ColumnType::Year) => {
            warn(1264, e.message);
            Value::Int(0)
        }
        (1292, ColumnType::Time { fsp }) => {
            warn(1292, e.message);
            let us = time_of_value(&keep).map_or(0, |us| round_micros(us, fsp));
            Value::Time(us.clamp(-TIME_MAX_MICROS, TIME_MAX_MICROS))
        }
        (1406, ColumnType::Bit { bits }) => {
            warn(
                1264,
                format!("Out of range value for column '{}' at row {row}", col.name),
            );
            Value::UInt(if bits >= 64 || negative {
                if negative {
                    0
                } else {
                    u64::MAX
                }
            } else {
                (1u64 << bits) - 1
            })
        }
        _ => return Err(e),
    };
    Ok(fixed)
}

/// A type's implicit default, MySQL's value for a NOT NULL column that
/// gets none: zero, the empty string, the zero date.
pub fn implicit_default(ty: ColumnType) -> Value {
    match ty {
        ColumnType::Int { unsigned: true, .. } => Value::UInt(0),
        ColumnType::Int { .. } => Value::Int(0),
        ColumnType::Decimal { scale, .. } => Value::Decimal(0, scale),
        ColumnType::Float | ColumnType::Double => Value::Double(0.0),
        ColumnType::Str { .. } => Value::Str(Vec::new()),
        ColumnType::Date => Value::Date(pack_date(0, 0, 0)),
        ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => {
            Value::DateTime(pack_datetime(pack_date(0, 0, 0), 0, 0, 0, 0))
        }
        // An ENUM NOT NULL without a default takes its first member; the
        // caller that has the column fills the string in.
        ColumnType::Enum { .. } => Value::Member(1, Vec::new()),
        ColumnType::Set { .. } => Value::Member(0, Vec::new()),
        ColumnType::Year => Value::Int(0),
        ColumnType::Time { .. } => Value::Time(0),
        ColumnType::Bit { .. } => Value::UInt(0),
        ColumnType::Json => crate::json::null_document(),
    }
}

/// A column's implicit default with an ENUM's first member's string.
pub fn implicit_default_of(col: &ColumnDef) -> Value {
    let mut v = implicit_default(col.ty);
    crate::row::fill_member(col, &mut v);
    v
}

/// 1265: a value that is no member of an ENUM or SET (strict mode).
fn truncated(col: &str, row: u64) -> SqlError {
    SqlError::new(
        1265,
        "01000",
        format!("Data truncated for column '{col}' at row {row}"),
    )
}

/// A SET's bitmask of `v` (a comma list of members in any order, or a
/// number), and whether some part was no member.
fn set_mask(v: &Value, col: &ColumnDef) -> (u64, bool) {
    let coll = col.ty.collation();
    match v {
        Value::Str(s) | Value::Member(_, s) => {
            if s.is_empty() {
                return (0, false);
            }
            let mut mask = 0u64;
            let mut bad = false;
            for part in s.split(|b| *b == b',') {
                match col
                    .elements
                    .iter()
                    .position(|e| coll.cmp(e.as_bytes(), part) == std::cmp::Ordering::Equal)
                {
                    Some(i) if i < 64 => mask |= 1u64 << i,
                    _ => bad = true,
                }
            }
            if bad {
                // A number written as a string is a bitmask.
                if let Some(n) = std::str::from_utf8(s)
                    .ok()
                    .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|t| t.parse::<u64>().ok())
                {
                    return (n, false);
                }
            }
            (mask, bad)
        }
        Value::UInt(u) => (*u, false),
        other => match to_i64(other) {
            Some(i) if i >= 0 => (i as u64, false),
            _ => (0, true),
        },
    }
}

/// A YEAR from a number: 0 is 0000, 1..=69 are 2001..=2069, 70..=99 are
/// 1970..=1999, 1901..=2155 are themselves; None for the rest.
pub(crate) fn year_of_number(n: i64) -> Option<i64> {
    match n {
        0 => Some(0),
        1..=69 => Some(2000 + n),
        70..=99 => Some(1900 + n),
        1901..=2155 => Some(n),
        _ => None,
    }
}

/// A constant compared with a YEAR column, read as a YEAR the way a
/// stored value is (`'24'` and `24` are 2024, `'0'` is 2000, `0` is
/// 0000), as MySQL converts it; any other value (not a number, out of
/// range) is left as it is.
pub(crate) fn year_constant(v: Value) -> Value {
    let n = match &v {
        Value::Str(s) => {
            let t = String::from_utf8_lossy(s);
            let t = t.trim();
            let Ok(n) = t.parse::<i64>() else {
                return v;
            };
            if t.len() <= 2 && (0..70).contains(&n) {
                return Value::Int(2000 + n);
            }
            n
        }
        Value::Int(_) | Value::UInt(_) | Value::Decimal(..) | Value::Double(_) => {
            match &v {
                Value::Double(f) if f.fract() != 0.0 => return v,
                Value::Decimal(d, s) if d % 10i128.pow(u32::from(*s)) != 0 => return v,
                _ => {}
            }
            match to_i64(&v) {
                Some(n) => n,
                None => return v,
            }
        }
        _ => return v,
    };
    year_of_number(n).map_or(v, Value::Int)
}

/// Rounds signed microseconds to `fsp` fractional digits.
pub fn round_micros(us: i64, fsp: u8) -> i64 {
    if fsp >= 6 {
        return us;
    }
    let p = 10i64.pow(6 - u32::from(fsp));
    let q = us.abs() / p;
    let r = us.abs() % p;
    let q = if r * 2 >= p { q + 1 } else { q };
    us.signum() * q * p
}

/// A TIME (signed microseconds, not clamped) from a value: a TIME, the
/// time of a DATETIME, `[-][D ]HH:MM[:SS[.frac]]`, `[-]HHMMSS[.frac]`,
/// or a number read as HHMMSS. None for what is no time.
pub fn time_of_value(v: &Value) -> Option<i64> {
    match v {
        Value::Time(us) => Some(*us),
        Value::DateTime(t) => {
            let (_, h, mi, s, us) = crate::types::unpack_datetime(*t);
            Some(
                (i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s)) * 1_000_000
                    + i64::from(us),
            )
        }
        Value::Date(_) => Some(0),
        Value::Str(s) | Value::Member(_, s) => parse_time_str(s),
        Value::Json(b) => parse_time_str(crate::json::unquoted_text(b).as_bytes()),
        Value::Int(i) => hhmmss(i.unsigned_abs(), 0, *i < 0),
        Value::UInt(u) => hhmmss(*u, 0, false),
        Value::Decimal(d, sc) => {
            let p = 10i128.pow(u32::from(*sc));
            let int = (d.abs() / p) as u64;
            let frac = d.abs() % p;
            let us = (frac * 1_000_000 / p) as i64;
            hhmmss(int, us, *d < 0)
        }
        Value::Double(f) => {
            let a = f.abs();
            let int = a.trunc() as u64;
            let us = ((a - a.trunc()) * 1e6).round() as i64;
            hhmmss(int, us, *f < 0.0)
        }
        Value::Null => None,
    }
}

fn hhmmss(n: u64, us: i64, neg: bool) -> Option<i64> {
    let (h, m, s) = (n / 10_000, (n / 100) % 100, n % 100);
    if m > 59 || s > 59 {
        return None;
    }
    let t = (i64::try_from(h).ok()?.min(1_000_000) * 3600 + (m * 60 + s) as i64) * 1_000_000 + us;
    Some(if neg { -t } else { t })
}

/// Parses a TIME string: `[-][D ]HH:MM[:SS[.frac]]` or
/// `[-]HHMMSS[.frac]` (also `MMSS`, `SS`); a DATETIME string gives its
/// time. Signed microseconds, not clamped.
pub fn parse_time_str(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?.trim();
    if t.is_empty() {
        return None;
    }
    if t.len() >= 10 && t.as_bytes().get(4) == Some(&b'-') {
        let dt = parse_datetime_str(t.as_bytes())?;
        return time_of_value(&Value::DateTime(dt));
    }
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim_start()),
        None => (false, t),
    };
    let (main, frac) = t.split_once('.').unwrap_or((t, ""));
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let us: i64 = if frac.is_empty() {
        0
    } else {
        let f6: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
        // Seven digits: round the sixth.
        let n: i64 = f6.parse().ok()?;
        (n + 5) / 10
    };
    let (days, hms) = match main.split_once(' ') {
        Some((d, rest)) => (d.trim().parse::<i64>().ok()?, rest.trim()),
        None => (0, main),
    };
    let total = if hms.contains(':') {
        let mut it = hms.split(':');
        let h: i64 = it.next()?.parse().ok()?;
        let m: i64 = it.next()?.parse().ok()?;
        let s: i64 = it.next().unwrap_or("0").parse().ok()?;
        if it.next().is_some()
            || !(0..=59).contains(&m)
            || !(0..=59).contains(&s)
            || h < 0
            || days < 0
        {
            return None;
        }
        let hours = days.saturating_mul(24).saturating_add(h).min(1_000_000);
        (hours * 3600 + m * 60 + s) * 1_000_000 + us
    } else {
        if days != 0 || !hms.bytes().all(|b| b.is_ascii_digit()) || hms.is_empty() {
            return None;
        }
        hhmmss(hms.parse().ok()?, us, false)?
    };
    Some(if neg { -total } else { total })
}

fn bad_time(kind: &str, s: &[u8], col: &str, row: u64) -> SqlError {
    SqlError::new(
        1292,
        "22007",
        format!(
            "Incorrect {kind} value: '{}' for column '{col}' at row {row}",
            String::from_utf8_lossy(s)
        ),
    )
}

fn rescale(d: i128, from: u8, to: u8) -> Option<i128> {
    if from <= to {
        d.checked_mul(10i128.checked_pow(u32::from(to - from))?)
    } else {
        let p = 10i128.checked_pow(u32::from(from - to))?;
        let q = d / p;
        let r = d % p;
        Some(if r.abs() * 2 >= p { q + d.signum() } else { q })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Collation;

    fn col(ty: ColumnType) -> ColumnDef {
        ColumnDef {
            name: "c".into(),
            ty,
            nullable: false,
            default: None,
            auto_increment: false,
            display_width: None,
            comment: String::new(),
            elements: Vec::new(),
        }
    }

    #[test]
    fn strict_mode_rejects_out_of_range_and_too_long() {
        let tiny = col(ColumnType::Int {
            bytes: 1,
            unsigned: false,
        });
        assert_eq!(
            to_column(Value::Int(127), &tiny, 1).unwrap(),
            Value::Int(127)
        );
        assert_eq!(to_column(Value::Int(128), &tiny, 1).unwrap_err().code, 1264);
        assert_eq!(to_column(Value::Null, &tiny, 1).unwrap_err().code, 1048);
        let vc = col(ColumnType::Str {
            kind: StrKind::VarChar,
            max_len: 3,
            collation: Collation::Utf8mb4GeneralCi,
        });
        assert!(to_column(Value::Str("héé".as_bytes().to_vec()), &vc, 1).is_ok());
        assert_eq!(
            to_column(Value::Str(b"abcd".to_vec()), &vc, 2)
                .unwrap_err()
                .code,
            1406
        );
        let dec = col(ColumnType::Decimal {
            precision: 5,
            scale: 2,
        });
        assert_eq!(
            to_column(Value::Str(b"12.345".to_vec()), &dec, 1).unwrap(),
            Value::Decimal(1235, 2)
        );
        assert_eq!(to_column(Value::Int(1000), &dec, 1).unwrap_err().code, 1264);
    }

    #[test]
    fn dates_parse_and_reject_impossible_days() {
        assert_eq!(parse_date_str(b"2024-02-29"), Some(pack_date(2024, 2, 29)));
        assert_eq!(parse_date_str(b"2023-02-29"), None);
        assert_eq!(
            parse_datetime_str(b"2024-01-02 03:04:05.5"),
            Some(pack_datetime(pack_date(2024, 1, 2), 3, 4, 5, 500_000))
        );
        assert_eq!(parse_datetime_str(b"2024-01-02 24:00:00"), None);
    }
}
