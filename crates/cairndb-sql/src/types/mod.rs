//! SQL column types and values.
//!
//! A [`Value`] is what the executor computes with; a [`ColumnType`] says
//! how a column stores one (range, width, collation). Dates and times are
//! kept packed in integers whose order is their chronological order, so
//! they compare, hash and encode as integers. No locks, no I/O.

//!
//! Submodule: `convert` (a value converted to a column's type, with
//! MySQL's strict-mode errors).

pub(crate) mod convert;

use std::cmp::Ordering;
use std::fmt;

/// How a string column compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Collation {
    /// Bytes (BINARY, VARBINARY, BLOB).
    Binary,
    /// `utf8mb4_general_ci` (MySQL id 45): case- and accent-insensitive,
    /// trailing spaces ignored. The default for text.
    Utf8mb4GeneralCi,
    /// `utf8mb4_bin` (MySQL id 46): by code point, trailing spaces ignored.
    Utf8mb4Bin,
}

impl Collation {
    /// MySQL's collation id (sent in column definitions).
    pub fn id(self) -> u16 {
        match self {
            Collation::Binary => 63,
            Collation::Utf8mb4GeneralCi => 45,
            Collation::Utf8mb4Bin => 46,
        }
    }

    /// MySQL's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Collation::Binary => "binary",
            Collation::Utf8mb4GeneralCi => "utf8mb4_general_ci",
            Collation::Utf8mb4Bin => "utf8mb4_bin",
        }
    }

    /// Compares two strings under this collation.
    pub fn cmp(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Collation::Binary => a.cmp(b),
            Collation::Utf8mb4GeneralCi => crate::keys::general_ci_cmp(a, b),
            Collation::Utf8mb4Bin => trim_spaces(a).cmp(trim_spaces(b)),
        }
    }
}

impl Collation {
    /// Appends the equality key of string `s` under this collation: a
    /// 4-byte big-endian length, then general_ci weights, the bytes
    /// without trailing spaces (utf8mb4_bin: PAD SPACE) or the bytes as
    /// they are (binary). Two keys are equal exactly when the strings
    /// compare equal; keys only hash and compare for equality.
    pub(crate) fn put_key(self, s: &[u8], out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[0u8; 4]);
        match self {
            Collation::Utf8mb4GeneralCi => crate::keys::general_ci_weights(s, out),
            Collation::Utf8mb4Bin => out.extend_from_slice(trim_spaces(s)),
            Collation::Binary => out.extend_from_slice(s),
        }
        let n = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
        if let Some(len) = out.get_mut(at..at + 4) {
            len.copy_from_slice(&n.to_be_bytes());
        }
    }
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    let mut end = s.len();
    while end > 0 && s.get(end - 1) == Some(&b' ') {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// The string column kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum StrKind {
    /// CHAR(n): trailing spaces are removed when read.
    Char,
    /// VARCHAR(n).
    VarChar,
    /// TINYTEXT, TEXT, MEDIUMTEXT, LONGTEXT.
    Text,
    /// BINARY(n).
    Binary,
    /// VARBINARY(n).
    VarBinary,
    /// TINYBLOB .. LONGBLOB.
    Blob,
}

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ColumnType {
    /// TINYINT (1), SMALLINT (2), MEDIUMINT (3), INT (4), BIGINT (8).
    Int {
        /// Bytes of storage.
        bytes: u8,
        /// UNSIGNED.
        unsigned: bool,
    },
    /// DECIMAL(precision, scale), precision <= 38.
    Decimal {
        /// Total digits.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// FLOAT (single precision).
    Float,
    /// DOUBLE.
    Double,
    /// Character and byte strings.
    Str {
        /// Which kind.
        kind: StrKind,
        /// Maximum length in characters (bytes for binary kinds).
        max_len: u32,
        /// How values compare.
        collation: Collation,
    },
    /// DATE.
    Date,
    /// DATETIME(fsp).
    DateTime {
        /// Fractional-second digits (0..=6).
        fsp: u8,
    },
    /// TIMESTAMP(fsp), stored like DATETIME in the session's time zone.
    Timestamp {
        /// Fractional-second digits (0..=6).
        fsp: u8,
    },
    /// ENUM('a', ...): a value is its 1-based member index (0: the empty
    /// string of an invalid value). The members' strings are the
    /// column's [`crate::row::ColumnDef::elements`].
    Enum {
        /// Number of members (1..=65535).
        count: u16,
        /// How members compare as strings.
        collation: Collation,
    },
    /// SET('a', ...): a value is a bitmask of members (bit i: member
    /// i + 1), strings in [`crate::row::ColumnDef::elements`].
    Set {
        /// Number of members (1..=64).
        count: u8,
        /// How members compare as strings.
        collation: Collation,
    },
    /// YEAR: 1901..=2155, or 0 (`0000`).
    Year,
    /// TIME(fsp): a signed duration in microseconds, within
    /// +-838:59:59.999999.
    Time {
        /// Fractional-second digits (0..=6).
        fsp: u8,
    },
    /// BIT(n): an unsigned integer of `bits` bits (1..=64).
    Bit {
        /// Width in bits.
        bits: u8,
    },
    /// JSON: a document in its binary form (`docs/format/json.md`).
    Json,
}

impl ColumnType {
    /// The range of an integer type.
    pub fn int_range(bytes: u8, unsigned: bool) -> (i128, i128) {
        let bits = u32::from(bytes) * 8;
        if unsigned {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        }
    }

    /// The collation of a string type (Binary for the rest).
    pub fn collation(&self) -> Collation {
        match self {
            ColumnType::Str { collation, .. }
            | ColumnType::Enum { collation, .. }
            | ColumnType::Set { collation, .. } => *collation,
            _ => Collation::Binary,
        }
    }

    /// True for the text kinds (those with a character collation).
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            ColumnType::Str {
                kind: StrKind::Char | StrKind::VarChar | StrKind::Text,
                ..
            }
        )
    }

    /// The SQL spelling, as SHOW CREATE TABLE prints it.
    pub fn sql(&self) -> String {
        match *self {
            ColumnType::Int { bytes, unsigned } => {
                let n = match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                };
                if unsigned {
                    format!("{n} unsigned")
                } else {
                    n.to_string()
                }
            }
            ColumnType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            ColumnType::Float => "float".into(),
            ColumnType::Double => "double".into(),
            ColumnType::Str { kind, max_len, .. } => match kind {
                StrKind::Char => format!("char({max_len})"),
                StrKind::VarChar => format!("varchar({max_len})"),
                StrKind::Binary => format!("binary({max_len})"),
                StrKind::VarBinary => format!("varbinary({max_len})"),
                StrKind::Text => text_name(max_len, "text").into(),
                StrKind::Blob => text_name(max_len, "blob").into(),
            },
            ColumnType::Date => "date".into(),
            ColumnType::DateTime { fsp: 0 } => "datetime".into(),
            ColumnType::DateTime { fsp } => format!("datetime({fsp})"),
            ColumnType::Timestamp { fsp: 0 } => "timestamp".into(),
            ColumnType::Timestamp { fsp } => format!("timestamp({fsp})"),
            // The members come from the column (`ColumnDef::type_sql`).
            ColumnType::Enum { .. } => "enum".into(),
            ColumnType::Set { .. } => "set".into(),
            ColumnType::Year => "year".into(),
            ColumnType::Time { fsp: 0 } => "time".into(),
            ColumnType::Time { fsp } => format!("time({fsp})"),
            ColumnType::Bit { bits } => format!("bit({bits})"),
            ColumnType::Json => "json".into(),
        }
    }
}

fn text_name(max_len: u32, base: &'static str) -> &'static str {
    match (max_len, base) {
        (0..=255, "text") => "tinytext",
        (256..=65_535, "text") => "text",
        (65_536..=16_777_215, "text") => "mediumtext",
        (_, "text") => "longtext",
        (0..=255, _) => "tinyblob",
        (256..=65_535, _) => "blob",
        (65_536..=16_777_215, _) => "mediumblob",
        _ => "longblob",
    }
}

/// A packed date: `year * 512 + month * 32 + day` (order-preserving).
pub fn pack_date(year: u32, month: u32, day: u32) -> i64 {
    i64::from(year) * 512 + i64::from(month) * 32 + i64::from(day)
}

/// The parts of a packed date.
pub fn unpack_date(d: i64) -> (u32, u32, u32) {
    ((d / 512) as u32, ((d / 32) % 16) as u32, (d % 32) as u32)
}

/// A packed date-time: microseconds within a day-numbering that keeps the
/// packed date's order: `((packed_date * 24 + h) * 60 + m) * 60 + s`
/// seconds, times 10^6, plus microseconds.
pub fn pack_datetime(date: i64, h: u32, mi: u32, s: u32, micros: u32) -> i64 {
    (((date * 24 + i64::from(h)) * 60 + i64::from(mi)) * 60 + i64::from(s)) * 1_000_000
        + i64::from(micros)
}

/// The parts of a packed date-time: (packed date, hour, minute, second,
/// microsecond).
pub fn unpack_datetime(v: i64) -> (i64, u32, u32, u32, u32) {
    let micros = (v % 1_000_000) as u32;
    let secs = v / 1_000_000;
    let s = (secs % 60) as u32;
    let mins = secs / 60;
    let mi = (mins % 60) as u32;
    let hours = mins / 60;
    let h = (hours % 24) as u32;
    (hours / 24, h, mi, s, micros)
}

/// A value the executor computes with.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A signed integer.
    Int(i64),
    /// An unsigned integer above `i64::MAX` or from an UNSIGNED column.
    UInt(u64),
    /// A double.
    Double(f64),
    /// An exact decimal: `digits / 10^scale`.
    Decimal(i128, u8),
    /// A string or byte string (text is UTF-8).
    Str(Vec<u8>),
    /// A packed date ([`pack_date`]).
    Date(i64),
    /// A packed date-time ([`pack_datetime`]).
    DateTime(i64),
    /// A TIME: signed microseconds.
    Time(i64),
    /// A value of an ENUM or SET column: its index or bitmask (what it
    /// is in numeric context and how it sorts), and its string.
    Member(u64, Vec<u8>),
    /// A JSON value in its binary form (`docs/format/json.md`); always
    /// well-formed (checked where it enters: parsed text, a row read).
    Json(Vec<u8>),
}

/// The largest TIME magnitude, 838:59:59.000000, in microseconds.
pub const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * 1_000_000;

/// Writes a TIME (signed microseconds) as `[-]HH:MM:SS`, with `fsp`
/// fractional digits (None: six when there is a fraction, else none).
pub fn format_time(us: i64, fsp: Option<u8>) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let a = us.unsigned_abs();
    let micros = a % 1_000_000;
    let secs = a / 1_000_000;
    let mut s = format!(
        "{sign}{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    let digits = match fsp {
        Some(d) => u32::from(d.min(6)),
        None if micros != 0 => 6,
        None => 0,
    };
    if digits > 0 {
        let v = micros / 10u64.pow(6 - digits);
        s.push_str(&format!(".{v:0width$}", width = digits as usize));
    }
    s
}

impl Value {
    /// True for NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{v}"),
            Value::Decimal(d, s) => f.write_str(&format_decimal(*d, *s)),
            Value::Str(b) => write!(f, "{}", String::from_utf8_lossy(b)),
            Value::Date(d) => {
                let (y, m, dd) = unpack_date(*d);
                write!(f, "{y:04}-{m:02}-{dd:02}")
            }
            Value::DateTime(v) => {
                let (d, h, mi, s, us) = unpack_datetime(*v);
                let (y, m, dd) = unpack_date(d);
                write!(f, "{y:04}-{m:02}-{dd:02} {h:02}:{mi:02}:{s:02}")?;
                if us > 0 {
                    write!(f, ".{us:06}")?;
                }
                Ok(())
            }
            Value::Time(us) => f.write_str(&format_time(*us, None)),
            Value::Member(_, s) => write!(f, "{}", String::from_utf8_lossy(s)),
            Value::Json(b) => f.write_str(&crate::json::binary_text(b)),
        }
    }
}

/// A decimal as text: `digits / 10^scale` with exactly `scale` digits
/// after the point.
pub fn format_decimal(digits: i128, scale: u8) -> String {
    let neg = digits < 0;
    let abs = digits.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let s = if scale == 0 {
        abs
    } else {
        let padded = format!("{abs:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        format!("{int}.{frac}")
    };
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_pack_in_order_and_round_trip() {
        let a = pack_date(2024, 2, 29);
        let b = pack_date(2024, 3, 1);
        assert!(a < b);
        assert_eq!(unpack_date(a), (2024, 2, 29));
        let t = pack_datetime(b, 23, 59, 58, 123_456);
        assert_eq!(unpack_datetime(t), (b, 23, 59, 58, 123_456));
        assert!(pack_datetime(a, 23, 59, 59, 999_999) < pack_datetime(b, 0, 0, 0, 0));
        assert_eq!(Value::DateTime(t).to_string(), "2024-03-01 23:59:58.123456");
    }

    #[test]
    fn decimals_format_with_their_scale() {
        assert_eq!(format_decimal(12345, 2), "123.45");
        assert_eq!(format_decimal(-5, 3), "-0.005");
        assert_eq!(format_decimal(7, 0), "7");
    }

    #[test]
    fn collations_compare_as_mysql() {
        use std::cmp::Ordering::*;
        assert_eq!(Collation::Utf8mb4GeneralCi.cmp(b"Abc ", b"aBC"), Equal);
        assert_eq!(Collation::Utf8mb4Bin.cmp(b"Abc ", b"Abc"), Equal);
        assert_eq!(Collation::Utf8mb4Bin.cmp(b"abc", b"Abc"), Greater);
        assert_eq!(Collation::Binary.cmp(b"a ", b"a"), Greater);
        assert_eq!(ColumnType::int_range(1, false), (-128, 127));
        assert_eq!(ColumnType::int_range(4, true), (0, 4_294_967_295));
    }
}
