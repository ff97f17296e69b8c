//! Decoding of client payloads: a bounds-checked cursor ([`Cur`]) and the
//! parameters of COM_STMT_EXECUTE (NULL bitmap, new-params-bound flag,
//! types, values in the binary protocol).
//!
//! Invariants: nothing here indexes, unwraps or panics on input; a
//! parameter value borrows the packet (or the statement's long data) and
//! is never copied. Parameter types sent with new-params-bound = 1 are
//! kept by the caller for later executions that send none. No locking.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use mysql_common::constants::ColumnType;

use crate::api::{DateTime, SqlError, Time, Value};

/// A bounds-checked reader over a payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cur<'a>(pub(crate) &'a [u8]);

impl<'a> Cur<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        let (&a, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(a)
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let (a, rest) = self.0.split_first_chunk::<2>()?;
        self.0 = rest;
        Some(u16::from_le_bytes(*a))
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let (a, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*a))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let (a, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*a))
    }
    /// A length-encoded integer (0xFB and 0xFF are not integers).
    pub(crate) fn lenenc(&mut self) -> Option<u64> {
        match self.u8()? {
            x @ 0..=0xFA => Some(u64::from(x)),
            0xFC => self.u16().map(u64::from),
            0xFD => {
                let b = self.take(3)?;
                match b {
                    [a, b, c] => Some(u64::from(u32::from_le_bytes([*a, *b, *c, 0]))),
                    _ => None,
                }
            }
            0xFE => self.u64(),
            _ => None,
        }
    }
    pub(crate) fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.lenenc()?).ok()?;
        self.take(n)
    }
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

/// Why parameters could not be decoded.
#[derive(Debug)]
pub(crate) enum ParamError {
    /// The packet is cut short or inconsistent: the connection closes.
    Malformed,
    /// A well-formed request the server refuses (ERR, connection kept).
    Refused(SqlError),
}

/// Decodes `n` parameters from `body` (the execute payload after the
/// iteration count). `types` holds the types bound by an earlier execute
/// (two bytes each: type, flags) and is replaced when the client binds new
/// ones; `long[i]` is parameter i's COM_STMT_SEND_LONG_DATA bytes.
pub(crate) fn decode<'a>(
    body: &'a [u8],
    n: usize,
    types: &mut Vec<u8>,
    long: &'a [Option<Vec<u8>>],
    out: &mut Vec<Value<'a>>,
) -> Result<(), ParamError> {
    out.clear();
    if n == 0 {
        return Ok(());
    }
    let mut c = Cur(body);
    let bitmap = c.take(n.div_ceil(8)).ok_or(ParamError::Malformed)?;
    let bound = c.u8().ok_or(ParamError::Malformed)?;
    if bound == 1 {
        let t = c.take(2 * n).ok_or(ParamError::Malformed)?;
        types.clear();
        types.extend_from_slice(t);
    } else if types.len() != 2 * n {
        return Err(ParamError::Refused(SqlError::wrong_arguments(
            "mysqld_stmt_execute",
        )));
    }
    for i in 0..n {
        if let Some(Some(data)) = long.get(i) {
            out.push(Value::Bytes(data));
            continue;
        }
        let is_null = bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
        let (ty, flags) = match types.get(2 * i..2 * i + 2) {
            Some(&[t, f]) => (t, f),
            _ => return Err(ParamError::Malformed),
        };
        if is_null {
            out.push(Value::Null);
            continue;
        }
        out.push(value(&mut c, ty, flags & 0x80 != 0)?);
    }
    Ok(())
}

fn value<'a>(c: &mut Cur<'a>, ty: u8, unsigned: bool) -> Result<Value<'a>, ParamError> {
    use ColumnType::*;
    let m = ParamError::Malformed;
    let Ok(t) = ColumnType::try_from(ty) else {
        return Err(ParamError::Refused(SqlError::wrong_arguments(
            "mysqld_stmt_execute",
        )));
    };
    let int = |u: u64, i: i64| {
        if unsigned {
            Value::UInt(u)
        } else {
            Value::Int(i)
        }
    };
    Ok(match t {
        MYSQL_TYPE_NULL => Value::Null,
        MYSQL_TYPE_TINY => {
            let b = c.u8().ok_or(m)?;
            int(u64::from(b), i64::from(b as i8))
        }
        MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => {
            let b = c.u16().ok_or(m)?;
            int(u64::from(b), i64::from(b as i16))
        }
        MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => {
            let b = c.u32().ok_or(m)?;
            int(u64::from(b), i64::from(b as i32))
        }
        MYSQL_TYPE_LONGLONG => {
            let b = c.u64().ok_or(m)?;
            int(b, b as i64)
        }
        MYSQL_TYPE_FLOAT => Value::Float(f32::from_bits(c.u32().ok_or(m)?)),
        MYSQL_TYPE_DOUBLE => Value::Double(f64::from_bits(c.u64().ok_or(m)?)),
        MYSQL_TYPE_DATE
        | MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_NEWDATE
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP2 => {
            let len = c.u8().ok_or(ParamError::Malformed)?;
            let b = c.take(usize::from(len)).ok_or(ParamError::Malformed)?;
            Value::DateTime(datetime(b).ok_or(ParamError::Malformed)?)
        }
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => {
            let len = c.u8().ok_or(ParamError::Malformed)?;
            let b = c.take(usize::from(len)).ok_or(ParamError::Malformed)?;
            Value::Time(time(b).ok_or(ParamError::Malformed)?)
        }
        _ => Value::Bytes(c.lenenc_bytes().ok_or(m)?),
    })
}

fn datetime(b: &[u8]) -> Option<DateTime> {
    let mut d = DateTime::default();
    let mut c = Cur(b);
    match b.len() {
        0 => {}
        4 | 7 | 11 => {
            d.year = c.u16()?;
            d.month = c.u8()?;
            d.day = c.u8()?;
            if b.len() >= 7 {
                d.hour = c.u8()?;
                d.minute = c.u8()?;
                d.second = c.u8()?;
            }
            if b.len() == 11 {
                d.micros = c.u32()?;
            }
        }
        _ => return None,
    }
    Some(d)
}

fn time(b: &[u8]) -> Option<Time> {
    let mut t = Time::default();
    let mut c = Cur(b);
    match b.len() {
        0 => {}
        8 | 12 => {
            t.negative = c.u8()? != 0;
            t.days = c.u32()?;
            t.hours = c.u8()?;
            t.minutes = c.u8()?;
            t.seconds = c.u8()?;
            if b.len() == 12 {
                t.micros = c.u32()?;
            }
        }
        _ => return None,
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn every_type_and_null_and_remembered_types() {
        let mut body = vec![0b0000_0010u8, 1];
        // types: longlong unsigned, string (null), tiny signed, double, datetime, time
        body.extend([8, 0x80, 253, 0, 1, 0, 5, 0, 12, 0, 11, 0]);
        body.extend(u64::MAX.to_le_bytes());
        body.push(0xFF); // tiny -1
        body.extend(2.5f64.to_le_bytes());
        body.extend([4, 0xE8, 0x07, 1, 2]);
        body.extend([8, 1, 0, 0, 0, 0, 3, 4, 5]);
        let mut types = Vec::new();
        let mut out = Vec::new();
        decode(&body, 6, &mut types, &[], &mut out).unwrap();
        assert_eq!(out[0], Value::UInt(u64::MAX));
        assert_eq!(out[1], Value::Null);
        assert_eq!(out[2], Value::Int(-1));
        assert_eq!(out[3], Value::Double(2.5));
        assert_eq!(
            out[4],
            Value::DateTime(DateTime {
                year: 2024,
                month: 1,
                day: 2,
                ..Default::default()
            })
        );
        assert!(matches!(
            out[5],
            Value::Time(Time {
                negative: true,
                hours: 3,
                ..
            })
        ));
        assert_eq!(types.len(), 12);

        // Second execute: no types sent, the first ones apply; long data
        // for parameter 1 replaces its value.
        let mut body2 = vec![0b0011_1000u8, 0];
        body2.extend(7u64.to_le_bytes());
        body2.push(2);
        let long = vec![None, Some(b"LONG".to_vec())];
        decode(&body2, 6, &mut types, &long, &mut out).unwrap();
        assert_eq!(out[0], Value::UInt(7));
        assert_eq!(out[1], Value::Bytes(b"LONG"));
        assert_eq!(out[2], Value::Int(2));
        assert_eq!(out[3], Value::Null);
    }

    #[test]
    fn truncated_or_unbound_is_refused() {
        let mut types = Vec::new();
        let mut out = Vec::new();
        assert!(matches!(
            decode(&[0, 0], 1, &mut types, &[], &mut out),
            Err(ParamError::Refused(_))
        ));
        assert!(matches!(
            decode(&[0, 1, 8, 0, 1, 2], 1, &mut types, &[], &mut out),
            Err(ParamError::Malformed)
        ));
        assert!(matches!(
            decode(&[0, 1, 253, 0, 0xFC, 9], 1, &mut types, &[], &mut out),
            Err(ParamError::Malformed)
        ));
        assert!(matches!(
            decode(&[0, 1, 10, 0, 3, 1, 2, 3], 1, &mut types, &[], &mut out),
            Err(ParamError::Malformed)
        ));
    }
}
