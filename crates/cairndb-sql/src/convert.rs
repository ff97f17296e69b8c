//! Conversion of values to a column's type before they are stored, with
//! MySQL's strict-mode errors (out of range 1264, too long 1406, bad value
//! 1366/1292), and the parsing of date and time strings.

use crate::error::{SqlError, SqlResult};
use crate::expr::{str_to_f64, to_i64};
use crate::row::ColumnDef;
use crate::types::{pack_date, pack_datetime, ColumnType, StrKind, Value};

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
    Ok(match col.ty {
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
        (1048, ty) => {
            warn(1048, e.message);
            implicit_default(ty)
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
    }
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
