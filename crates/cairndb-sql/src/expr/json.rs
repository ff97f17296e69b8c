//! JSON documents: the `JSON` column type's values, their binary form
//! (`docs/format/json.md`), path expressions, and the JSON_* functions,
//! with MySQL 8.0's semantics.
//!
//! A JSON value travels through the executor as [`Value::Json`] holding
//! the binary form; functions decode it into a [`Json`] tree, work on
//! the tree and encode the result. Invariants of a tree: an object's keys
//! are distinct and kept in MySQL's order (length, then bytes); nesting
//! is at most [`MAX_DEPTH`]. Text that enters is parsed by `serde_json`
//! and checked against both. No locks, no I/O.

use std::cmp::Ordering;

use crate::error::{SqlError, SqlResult};
use crate::expr::{like_escape, Env};
use crate::output::OutType;
use crate::types::{format_decimal, format_time, unpack_date, unpack_datetime, Collation, Value};

/// The deepest nesting a document may have (MySQL's limit).
pub(crate) const MAX_DEPTH: usize = 100;

/// The binary form's version byte (docs/format/json.md).
const VERSION: u8 = 0x01;

/// Tags of the binary form (docs/format/json.md).
mod tag {
    pub const NULL: u8 = 0x00;
    pub const FALSE: u8 = 0x01;
    pub const TRUE: u8 = 0x02;
    pub const INT: u8 = 0x03;
    pub const UINT: u8 = 0x04;
    pub const DOUBLE: u8 = 0x05;
    pub const DECIMAL: u8 = 0x06;
    pub const STRING: u8 = 0x07;
    pub const ARRAY: u8 = 0x08;
    pub const OBJECT: u8 = 0x09;
}

/// A decoded JSON value.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Json {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer within i64.
    Int(i64),
    /// An integer above i64::MAX.
    UInt(u64),
    /// A double (finite).
    Double(f64),
    /// An exact decimal `digits / 10^scale` (from a SQL DECIMAL).
    Decimal(i128, u8),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object: distinct keys in [`key_order`].
    Object(Vec<(String, Json)>),
}

/// MySQL's order of object keys: shorter first, then by bytes.
fn key_order(a: &str, b: &str) -> Ordering {
    key_order_bytes(a.as_bytes(), b.as_bytes())
}

fn find_key(m: &[(String, Json)], k: &str) -> Result<usize, usize> {
    m.binary_search_by(|(x, _)| key_order(x, k))
}

fn obj_get<'a>(m: &'a [(String, Json)], k: &str) -> Option<&'a Json> {
    find_key(m, k).ok().and_then(|i| m.get(i)).map(|(_, v)| v)
}

/// Puts `k: v` into an object, replacing an equal key's value.
fn obj_put(m: &mut Vec<(String, Json)>, k: String, v: Json) {
    match find_key(m, &k) {
        Ok(i) => {
            if let Some(slot) = m.get_mut(i) {
                slot.1 = v;
            }
        }
        Err(i) => m.insert(i, (k, v)),
    }
}

// ---------------------------------------------------------------------
// Text in.

/// The message of a text nested deeper than [`MAX_DEPTH`].
const DEPTH_MSG: &str = "The JSON document exceeds the maximum depth";

/// Why a text is not a JSON document: the message and the byte offset.
#[derive(Debug)]
pub(crate) struct TextError {
    msg: String,
    pos: usize,
}

/// Parses a JSON text.
pub(crate) fn parse(text: &[u8]) -> Result<Json, TextError> {
    let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
        let full = e.to_string();
        let msg = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(m, _)| m)
            .to_string();
        // serde_json counts lines and columns; MySQL reports an offset.
        let line = e.line().max(1);
        let mut pos = 0usize;
        for (i, l) in text.split(|&b| b == b'\n').enumerate() {
            if i + 1 == line {
                pos += e.column().saturating_sub(1).min(l.len());
                break;
            }
            pos += l.len() + 1;
        }
        let msg = if msg.contains("recursion limit") {
            DEPTH_MSG.to_string()
        } else {
            msg
        };
        TextError {
            msg,
            pos: pos.min(text.len()),
        }
    })?;
    from_serde(v, 0).ok_or_else(|| TextError {
        msg: DEPTH_MSG.into(),
        pos: 0,
    })
}

fn from_serde(v: serde_json::Value, depth: usize) -> Option<Json> {
    use serde_json::Value as S;
    // `depth` is how many containers enclose `v`: the document's depth
    // (JSON_DEPTH) is at least one more.
    if depth >= MAX_DEPTH {
        return None;
    }
    Some(match v {
        S::Null => Json::Null,
        S::Bool(b) => Json::Bool(b),
        S::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::Int(i)
            } else if let Some(u) = n.as_u64() {
                Json::UInt(u)
            } else {
                Json::Double(n.as_f64().unwrap_or(0.0))
            }
        }
        S::String(s) => Json::Str(s),
        S::Array(a) => Json::Array(
            a.into_iter()
                .map(|x| from_serde(x, depth + 1))
                .collect::<Option<Vec<_>>>()?,
        ),
        S::Object(m) => {
            let mut out: Vec<(String, Json)> = Vec::with_capacity(m.len());
            for (k, x) in m {
                out.push((k, from_serde(x, depth + 1)?));
            }
            out.sort_by(|a, b| key_order(&a.0, &b.0));
            out.dedup_by(|b, a| a.0 == b.0);
            Json::Object(out)
        }
    })
}

/// The depth of a tree (a scalar or an empty container: 1).
fn depth(j: &Json) -> usize {
    match j {
        Json::Array(a) if !a.is_empty() => 1 + a.iter().map(depth).max().unwrap_or(0),
        Json::Object(m) if !m.is_empty() => 1 + m.iter().map(|(_, v)| depth(v)).max().unwrap_or(0),
        _ => 1,
    }
}

// ---------------------------------------------------------------------
// The binary form.

/// Encodes a tree (docs/format/json.md).
pub(crate) fn encode(j: &Json) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.push(VERSION);
    put(j, &mut out);
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put(j: &Json, out: &mut Vec<u8>) {
    match j {
        Json::Null => out.push(tag::NULL),
        Json::Bool(false) => out.push(tag::FALSE),
        Json::Bool(true) => out.push(tag::TRUE),
        Json::Int(i) => {
            out.push(tag::INT);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Json::UInt(u) => {
            out.push(tag::UINT);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Json::Double(f) => {
            out.push(tag::DOUBLE);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Json::Decimal(d, s) => {
            out.push(tag::DECIMAL);
            out.push(*s);
            out.extend_from_slice(&d.to_le_bytes());
        }
        Json::Str(s) => {
            out.push(tag::STRING);
            put_u32(out, s.len());
            out.extend_from_slice(s.as_bytes());
        }
        Json::Array(a) => {
            out.push(tag::ARRAY);
            put_u32(out, a.len());
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            for x in a {
                put(x, out);
            }
            patch_size(out, at);
        }
        Json::Object(m) => {
            out.push(tag::OBJECT);
            put_u32(out, m.len());
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            for (k, v) in m {
                put_u32(out, k.len());
                out.extend_from_slice(k.as_bytes());
                put(v, out);
            }
            patch_size(out, at);
        }
    }
}

fn patch_size(out: &mut [u8], at: usize) {
    let size = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&size.to_le_bytes());
    }
}

/// Decodes the binary form; None when it is not a well-formed document.
pub(crate) fn decode(b: &[u8]) -> Option<Json> {
    let (&v, mut rest) = b.split_first()?;
    if v != VERSION {
        return None;
    }
    let j = get(&mut rest, 0)?;
    rest.is_empty().then_some(j)
}

/// True when `b` is a well-formed binary document (checked without
/// building it: a row read checks every document it hands on).
pub(crate) fn is_valid_binary(b: &[u8]) -> bool {
    match b.split_first() {
        Some((&VERSION, mut rest)) => check(&mut rest, 0).is_some() && rest.is_empty(),
        _ => false,
    }
}

/// Steps over one value, checking what [`get`] checks.
fn check(input: &mut &[u8], depth: usize) -> Option<()> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let (&t, rest) = input.split_first()?;
    *input = rest;
    match t {
        tag::NULL | tag::FALSE | tag::TRUE => {}
        tag::INT | tag::UINT => {
            take(input, 8)?;
        }
        tag::DOUBLE => {
            let b: [u8; 8] = take(input, 8)?.try_into().ok()?;
            if !f64::from_le_bytes(b).is_finite() {
                return None;
            }
        }
        tag::DECIMAL => {
            if *take(input, 17)?.first()? > 30 {
                return None;
            }
        }
        tag::STRING => {
            let n = take_u32(input)?;
            std::str::from_utf8(take(input, n)?).ok()?;
        }
        tag::ARRAY | tag::OBJECT => {
            let n = take_u32(input)?;
            let size = take_u32(input)?;
            let mut body = take(input, size)?;
            let mut prev: Option<&[u8]> = None;
            for _ in 0..n {
                if t == tag::OBJECT {
                    let klen = take_u32(&mut body)?;
                    let k = take(&mut body, klen)?;
                    std::str::from_utf8(k).ok()?;
                    if prev.is_some_and(|p| key_order_bytes(p, k) != Ordering::Less) {
                        return None;
                    }
                    prev = Some(k);
                }
                check(&mut body, depth + 1)?;
            }
            if !body.is_empty() {
                return None;
            }
        }
        _ => return None,
    }
    Some(())
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = input.split_at_checked(n)?;
    *input = rest;
    Some(head)
}

fn take_u32(input: &mut &[u8]) -> Option<usize> {
    let b: [u8; 4] = take(input, 4)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(b)).ok()
}

fn take_str(input: &mut &[u8]) -> Option<String> {
    let n = take_u32(input)?;
    String::from_utf8(take(input, n)?.to_vec()).ok()
}

fn get(input: &mut &[u8], depth: usize) -> Option<Json> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let (&t, rest) = input.split_first()?;
    *input = rest;
    let b8 = |input: &mut &[u8]| -> Option<[u8; 8]> { take(input, 8)?.try_into().ok() };
    Some(match t {
        tag::NULL => Json::Null,
        tag::FALSE => Json::Bool(false),
        tag::TRUE => Json::Bool(true),
        tag::INT => Json::Int(i64::from_le_bytes(b8(input)?)),
        tag::UINT => Json::UInt(u64::from_le_bytes(b8(input)?)),
        tag::DOUBLE => {
            let f = f64::from_le_bytes(b8(input)?);
            if !f.is_finite() {
                return None;
            }
            Json::Double(f)
        }
        tag::DECIMAL => {
            let s = *take(input, 1)?.first()?;
            let d: [u8; 16] = take(input, 16)?.try_into().ok()?;
            if s > 30 {
                return None;
            }
            Json::Decimal(i128::from_le_bytes(d), s)
        }
        tag::STRING => Json::Str(take_str(input)?),
        tag::ARRAY => {
            let n = take_u32(input)?;
            let size = take_u32(input)?;
            let mut body = take(input, size)?;
            let mut a = Vec::with_capacity(n.min(body.len()));
            for _ in 0..n {
                a.push(get(&mut body, depth + 1)?);
            }
            if !body.is_empty() {
                return None;
            }
            Json::Array(a)
        }
        tag::OBJECT => {
            let n = take_u32(input)?;
            let size = take_u32(input)?;
            let mut body = take(input, size)?;
            let mut m: Vec<(String, Json)> = Vec::with_capacity(n.min(body.len()));
            for _ in 0..n {
                let k = take_str(&mut body)?;
                if m.last()
                    .is_some_and(|(p, _)| key_order(p, &k) != Ordering::Less)
                {
                    return None;
                }
                let v = get(&mut body, depth + 1)?;
                m.push((k, v));
            }
            if !body.is_empty() {
                return None;
            }
            Json::Object(m)
        }
        _ => return None,
    })
}

/// The bytes (tag and payload) of one value, stepping over it; None
/// when they run past the input or the tag is unknown.
fn value_bytes<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let start = *input;
    let (&t, mut rest) = input.split_first()?;
    let payload = match t {
        tag::NULL | tag::FALSE | tag::TRUE => 0,
        tag::INT | tag::UINT | tag::DOUBLE => 8,
        tag::DECIMAL => 17,
        tag::STRING => 4 + take_u32(&mut rest)?,
        tag::ARRAY | tag::OBJECT => {
            take_u32(&mut rest)?;
            8 + take_u32(&mut rest)?
        }
        _ => return None,
    };
    let len = payload.checked_add(1)?;
    let v = start.get(..len)?;
    *input = start.get(len..)?;
    Some(v)
}

/// The bytes of the value a path without wildcards names in the binary
/// value `v` (no version byte), reading only the headers on the way:
/// Some(None) when the path names nothing, None when the headers run
/// past the bytes (the value as a whole was checked where it entered).
fn seek<'a>(v: &'a [u8], path: &[Leg]) -> Option<Option<&'a [u8]>> {
    // The root's sizes must cover exactly its bytes.
    let mut whole = v;
    value_bytes(&mut whole)?;
    if !whole.is_empty() {
        return None;
    }
    let mut cur = v;
    for leg in path {
        let (&t, rest) = cur.split_first()?;
        let mut body = rest;
        let next = match (leg, t) {
            (Leg::Key(k), tag::OBJECT) => {
                let n = take_u32(&mut body)?;
                let size = take_u32(&mut body)?;
                let mut body = take(&mut body, size)?;
                let mut found = None;
                for _ in 0..n {
                    let klen = take_u32(&mut body)?;
                    let key = take(&mut body, klen)?;
                    let val = value_bytes(&mut body)?;
                    match key_order_bytes(key, k.as_bytes()) {
                        Ordering::Equal => {
                            found = Some(val);
                            break;
                        }
                        // Keys are sorted: it is not further on.
                        Ordering::Greater => break,
                        Ordering::Less => {}
                    }
                }
                found
            }
            (Leg::Index(ix), tag::ARRAY) => {
                let n = take_u32(&mut body)?;
                let size = take_u32(&mut body)?;
                let mut body = take(&mut body, size)?;
                match ix.at(n).filter(|&i| i < n) {
                    Some(i) => {
                        for _ in 0..i {
                            value_bytes(&mut body)?;
                        }
                        Some(value_bytes(&mut body)?)
                    }
                    None => None,
                }
            }
            // Not an array: `[0]` and `[last]` name the value itself.
            (Leg::Index(ix), _) if ix.at(1) == Some(0) => Some(cur),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return Some(None),
        }
    }
    // A `Value::Json` was checked whole where it entered (a row read, a
    // parse), so the part found needs no second walk.
    Some(Some(cur))
}

fn key_order_bytes(a: &[u8], b: &[u8]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// 3142: a stored document that does not decode.
fn corrupted() -> SqlError {
    SqlError::new(
        3142,
        "HY000",
        "The JSON binary value contains invalid data.",
    )
}

/// Decodes a [`Value::Json`]'s bytes, or error 3142.
pub(crate) fn decode_value(b: &[u8]) -> SqlResult<Json> {
    decode(b).ok_or_else(corrupted)
}

// ---------------------------------------------------------------------
// Text out.

/// The text form of a tree, as MySQL prints it.
pub(crate) fn to_text(j: &Json) -> String {
    let mut s = String::new();
    write_text(j, &mut s);
    s
}

/// The text form of a binary document (for display; a document that
/// does not decode reads as that).
pub(crate) fn binary_text(b: &[u8]) -> String {
    match decode(b) {
        Some(j) => to_text(&j),
        None => "(invalid JSON binary value)".into(),
    }
}

fn write_text(j: &Json, out: &mut String) {
    match j {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Int(i) => out.push_str(&i.to_string()),
        Json::UInt(u) => out.push_str(&u.to_string()),
        Json::Double(f) => out.push_str(&double_text(*f)),
        Json::Decimal(d, s) => out.push_str(&format_decimal(*d, *s)),
        Json::Str(s) => write_string(s, out),
        Json::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(x, out);
            }
            out.push(']');
        }
        Json::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(k, out);
                out.push_str(": ");
                write_text(v, out);
            }
            out.push('}');
        }
    }
}

/// JSON_PRETTY's form: one member or element per line, two spaces per
/// level.
fn write_pretty(j: &Json, level: usize, out: &mut String) {
    let indent = |out: &mut String, n: usize| out.extend(std::iter::repeat_n("  ", n));
    match j {
        Json::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                write_pretty(x, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        Json::Object(m) if !m.is_empty() => {
            out.push_str("{\n");
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                write_string(k, out);
                out.push_str(": ");
                write_pretty(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        other => write_text(other, out),
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double as MySQL prints one inside JSON: `1.0` for a whole number,
/// the shortest digits that read back otherwise, exponent form past
/// 1e15 or below 1e-6.
fn double_text(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e15).contains(&a) {
        format!("{f:e}")
    } else if f == f.trunc() {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

// ---------------------------------------------------------------------
// Paths.

/// An array position in a path: `n` or `last - n`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Idx {
    Front(u64),
    Last(u64),
}

impl Idx {
    /// The position in an array of `len` elements (None before the
    /// start; may be past the end).
    fn at(self, len: usize) -> Option<usize> {
        match self {
            Idx::Front(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Idx::Last(n) => len
                .checked_sub(1)?
                .checked_sub(usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Leg {
    Key(String),
    AnyKey,
    Index(Idx),
    Range(Idx, Idx),
    AnyIndex,
    Descend,
}

type Path = Vec<Leg>;

fn is_wild(p: &[Leg]) -> bool {
    p.iter().any(|l| {
        matches!(
            l,
            Leg::AnyKey | Leg::AnyIndex | Leg::Range(..) | Leg::Descend
        )
    })
}

/// 3143 at byte `pos` of the path.
fn bad_path(pos: usize) -> SqlError {
    SqlError::new(
        3143,
        "42000",
        format!(
            "Invalid JSON path expression. The error is around character position {}.",
            pos + 1
        ),
    )
}

/// Parses a path expression (`$`, `.key`, `."key"`, `.*`, `[n]`,
/// `[last - n]`, `[m to n]`, `[*]`, `**`).
fn parse_path(p: &[u8]) -> SqlResult<Path> {
    let mut i = 0usize;
    let at = |i: usize| p.get(i).copied();
    let skip_ws = |i: &mut usize| {
        while at(*i).is_some_and(|c| c.is_ascii_whitespace()) {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if at(i) != Some(b'$') {
        return Err(bad_path(i));
    }
    i += 1;
    let mut legs = Vec::new();
    loop {
        skip_ws(&mut i);
        match at(i) {
            None => break,
            Some(b'.') => {
                i += 1;
                skip_ws(&mut i);
                match at(i) {
                    Some(b'*') => {
                        i += 1;
                        legs.push(Leg::AnyKey);
                    }
                    Some(b'"') => {
                        let start = i;
                        i += 1;
                        while let Some(c) = at(i) {
                            if c == b'\\' {
                                i += 2;
                            } else if c == b'"' {
                                break;
                            } else {
                                i += 1;
                            }
                        }
                        if at(i) != Some(b'"') {
                            return Err(bad_path(start));
                        }
                        i += 1;
                        let quoted = p.get(start..i).ok_or_else(|| bad_path(start))?;
                        let k: String =
                            serde_json::from_slice(quoted).map_err(|_| bad_path(start))?;
                        legs.push(Leg::Key(k));
                    }
                    _ => {
                        let start = i;
                        while at(i).is_some_and(|c| {
                            c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
                        }) {
                            i += 1;
                        }
                        let k = p.get(start..i).unwrap_or_default();
                        if k.is_empty() || k.first().is_some_and(u8::is_ascii_digit) {
                            return Err(bad_path(start));
                        }
                        let k = std::str::from_utf8(k).map_err(|_| bad_path(start))?;
                        legs.push(Leg::Key(k.to_string()));
                    }
                }
            }
            Some(b'*') if at(i + 1) == Some(b'*') => {
                i += 2;
                // `***` is no token (MySQL refuses it too).
                if at(i) == Some(b'*') {
                    return Err(bad_path(i));
                }
                legs.push(Leg::Descend);
            }
            Some(b'[') => {
                i += 1;
                skip_ws(&mut i);
                if at(i) == Some(b'*') {
                    i += 1;
                    legs.push(Leg::AnyIndex);
                } else {
                    let a = parse_idx(p, &mut i)?;
                    skip_ws(&mut i);
                    if p.get(i..i + 2) == Some(b"to") {
                        i += 2;
                        skip_ws(&mut i);
                        let b = parse_idx(p, &mut i)?;
                        if let (Idx::Front(x), Idx::Front(y)) = (a, b) {
                            if x > y {
                                return Err(bad_path(i));
                            }
                        }
                        legs.push(Leg::Range(a, b));
                    } else {
                        legs.push(Leg::Index(a));
                    }
                }
                skip_ws(&mut i);
                if at(i) != Some(b']') {
                    return Err(bad_path(i));
                }
                i += 1;
            }
            Some(_) => return Err(bad_path(i)),
        }
    }
    if legs.last() == Some(&Leg::Descend) {
        return Err(bad_path(p.len()));
    }
    Ok(legs)
}

fn parse_idx(p: &[u8], i: &mut usize) -> SqlResult<Idx> {
    let digits = |i: &mut usize| -> SqlResult<u64> {
        let start = *i;
        while p.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        // Array positions are at most 2^32 - 1, as in MySQL.
        std::str::from_utf8(p.get(start..*i).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .map(u64::from)
            .ok_or_else(|| bad_path(start))
    };
    if p.get(*i..*i + 4) == Some(b"last") {
        *i += 4;
        let mut j = *i;
        while p.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if p.get(j) == Some(&b'-') {
            j += 1;
            while p.get(j).is_some_and(u8::is_ascii_whitespace) {
                j += 1;
            }
            *i = j;
            return Ok(Idx::Last(digits(i)?));
        }
        return Ok(Idx::Last(0));
    }
    Ok(Idx::Front(digits(i)?))
}

/// One leg applied to one node: the nodes it selects, in document order,
/// each with the step that reaches it (None: the node itself, as `[0]`
/// of a value that is not an array, or `**` selecting where it starts).
fn step<'a>(n: &'a Json, leg: &Leg, out: &mut Vec<(&'a Json, Option<PathStep>)>) {
    match (leg, n) {
        (Leg::Key(k), Json::Object(m)) => {
            if let Some(v) = obj_get(m, k) {
                out.push((v, Some(PathStep::Key(k.clone()))));
            }
        }
        (Leg::AnyKey, Json::Object(m)) => {
            out.extend(m.iter().map(|(k, v)| (v, Some(PathStep::Key(k.clone())))));
        }
        (Leg::Index(ix), Json::Array(a)) => {
            if let Some(i) = ix.at(a.len()).filter(|&i| i < a.len()) {
                if let Some(v) = a.get(i) {
                    out.push((v, Some(PathStep::Index(i))));
                }
            }
        }
        // A value that is not an array is an array of itself here.
        (Leg::Index(ix), _) if ix.at(1) == Some(0) => out.push((n, None)),
        (Leg::Range(lo, hi), Json::Array(a)) => {
            let lo = lo.at(a.len()).unwrap_or(0);
            if let Some(hi) = hi.at(a.len()) {
                let hi = hi.min(a.len().saturating_sub(1));
                for (i, v) in a.iter().enumerate().take(hi + 1).skip(lo) {
                    out.push((v, Some(PathStep::Index(i))));
                }
            }
        }
        (Leg::Range(lo, hi), _) if lo.at(1).unwrap_or(0) == 0 && hi.at(1).is_some() => {
            out.push((n, None))
        }
        (Leg::AnyIndex, Json::Array(a)) => {
            out.extend(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| (v, Some(PathStep::Index(i)))),
            );
        }
        (Leg::Descend, _) => {
            let mut all = Vec::new();
            descendants(n, &mut Vec::new(), false, &mut all);
            out.extend(all.into_iter().map(|(v, _)| (v, None)));
        }
        _ => {}
    }
}

/// `n` and every value inside it, in document order (for `**`), with
/// the steps from `n` when `paths` is on (else empty step lists).
fn descendants<'a>(
    n: &'a Json,
    at: &mut Vec<PathStep>,
    paths: bool,
    out: &mut Vec<(&'a Json, Vec<PathStep>)>,
) {
    // Depth is at most MAX_DEPTH, so this recursion is bounded.
    out.push((n, if paths { at.clone() } else { Vec::new() }));
    match n {
        Json::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                at.push(PathStep::Index(i));
                descendants(v, at, paths, out);
                at.pop();
            }
        }
        Json::Object(m) => {
            for (k, v) in m {
                at.push(PathStep::Key(k.clone()));
                descendants(v, at, paths, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The values `path` selects in `j`, in document order, each once (as
/// MySQL: `$**[0]` of `[[1]]` is `[[1], 1]`). Evaluated leg by leg over
/// the set of nodes reached, so neither a long path nor repeated `**`
/// recurses or multiplies.
fn find<'a>(j: &'a Json, path: &[Leg], out: &mut Vec<&'a Json>) {
    let mut cur: Vec<&'a Json> = vec![j];
    let mut next: Vec<(&'a Json, Option<PathStep>)> = Vec::new();
    let mut seen: std::collections::HashSet<*const Json> = std::collections::HashSet::new();
    for leg in path {
        next.clear();
        for &n in &cur {
            step(n, leg, &mut next);
        }
        seen.clear();
        cur.clear();
        for (n, _) in next.drain(..) {
            if seen.insert(n as *const Json) {
                cur.push(n);
            }
        }
        if cur.is_empty() {
            return;
        }
    }
    out.extend(cur);
}

/// The one value a path without wildcards names, for changing it.
fn find_mut<'a>(j: &'a mut Json, path: &[Leg]) -> Option<&'a mut Json> {
    let mut cur = j;
    for leg in path {
        cur = match (leg, cur) {
            (Leg::Key(k), Json::Object(m)) => {
                let i = find_key(m, k).ok()?;
                &mut m.get_mut(i)?.1
            }
            (Leg::Index(ix), Json::Array(a)) => {
                let i = ix.at(a.len())?;
                a.get_mut(i)?
            }
            (Leg::Index(ix), other) if ix.at(1) == Some(0) => other,
            _ => return None,
        };
    }
    Some(cur)
}

/// How JSON_SET, JSON_INSERT and JSON_REPLACE treat a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetMode {
    /// Replace what exists, add what does not.
    Set,
    /// Add only.
    Insert,
    /// Replace only.
    Replace,
}

fn set_path(doc: &mut Json, path: &[Leg], val: Json, mode: SetMode) {
    let Some((last, parent_path)) = path.split_last() else {
        if mode != SetMode::Insert {
            *doc = val;
        }
        return;
    };
    let Some(parent) = find_mut(doc, parent_path) else {
        return;
    };
    match last {
        Leg::Key(k) => {
            if let Json::Object(m) = parent {
                match find_key(m, k) {
                    Ok(i) => {
                        if mode != SetMode::Insert {
                            if let Some(slot) = m.get_mut(i) {
                                slot.1 = val;
                            }
                        }
                    }
                    Err(i) => {
                        if mode != SetMode::Replace {
                            m.insert(i, (k.clone(), val));
                        }
                    }
                }
            }
        }
        Leg::Index(ix) => match parent {
            Json::Array(a) => match ix.at(a.len()) {
                Some(i) if i < a.len() && mode != SetMode::Insert => {
                    if let Some(slot) = a.get_mut(i) {
                        *slot = val;
                    }
                }
                Some(i) if i >= a.len() && mode != SetMode::Replace => a.push(val),
                // `[last - n]` before the start adds at the front (MySQL).
                None if mode != SetMode::Replace => a.insert(0, val),
                _ => {}
            },
            other => match ix.at(1) {
                Some(0) if mode != SetMode::Insert => *other = val,
                Some(0) => {}
                Some(_) if mode != SetMode::Replace => {
                    let old = std::mem::take(other);
                    *other = Json::Array(vec![old, val]);
                }
                None if mode != SetMode::Replace => {
                    let old = std::mem::take(other);
                    *other = Json::Array(vec![val, old]);
                }
                _ => {}
            },
        },
        _ => {}
    }
}

fn remove_path(doc: &mut Json, path: &[Leg]) {
    // `[0]` / `[last]` of a value that is not an array names the value
    // itself: such legs are dropped first, so `$.a[0]` removes `a` (as
    // MySQL does).
    let mut plain: Vec<Leg> = Vec::with_capacity(path.len());
    let mut node: Option<&Json> = Some(doc);
    for leg in path {
        if let (Leg::Index(ix), Some(n)) = (leg, node) {
            if !matches!(n, Json::Array(_)) && ix.at(1) == Some(0) {
                continue;
            }
        }
        node = node.and_then(|n| {
            let mut out = Vec::new();
            step(n, leg, &mut out);
            out.first().map(|(v, _)| *v)
        });
        plain.push(leg.clone());
    }
    let Some((last, parent_path)) = plain.split_last() else {
        return;
    };
    match (last, find_mut(doc, parent_path)) {
        (Leg::Key(k), Some(Json::Object(m))) => {
            if let Ok(i) = find_key(m, k) {
                m.remove(i);
            }
        }
        (Leg::Index(ix), Some(Json::Array(a))) => {
            if let Some(i) = ix.at(a.len()).filter(|&i| i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// A path as MySQL prints one (JSON_SEARCH's results).
fn path_text(legs: &[PathStep]) -> String {
    let mut s = String::from("$");
    for l in legs {
        match l {
            PathStep::Key(k) => {
                s.push('.');
                let plain = !k.is_empty()
                    && !k.as_bytes().first().is_some_and(u8::is_ascii_digit)
                    && k.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$');
                if plain {
                    s.push_str(k);
                } else {
                    write_string(k, &mut s);
                }
            }
            PathStep::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// A concrete step, for printing found paths.
#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

// ---------------------------------------------------------------------
// Comparison, containment.

/// MySQL's order of JSON types when two values' types differ.
fn rank(j: &Json) -> u8 {
    match j {
        Json::Null => 0,
        Json::Int(_) | Json::UInt(_) | Json::Double(_) | Json::Decimal(..) => 1,
        Json::Str(_) => 2,
        Json::Object(_) => 3,
        Json::Array(_) => 4,
        Json::Bool(_) => 5,
    }
}

fn num_cmp(a: &Json, b: &Json) -> Option<Ordering> {
    let int = |j: &Json| match j {
        Json::Int(i) => Some(i128::from(*i)),
        Json::UInt(u) => Some(i128::from(*u)),
        _ => None,
    };
    let f = |j: &Json| match j {
        Json::Int(i) => *i as f64,
        Json::UInt(u) => *u as f64,
        Json::Double(d) => *d,
        Json::Decimal(d, s) => *d as f64 / 10f64.powi(i32::from(*s)),
        _ => 0.0,
    };
    let dec = |j: &Json, scale: u8| -> Option<i128> {
        match j {
            Json::Decimal(d, s) => d.checked_mul(10i128.checked_pow(u32::from(scale - *s))?),
            _ => int(j)?.checked_mul(10i128.checked_pow(u32::from(scale))?),
        }
    };
    match (a, b) {
        (Json::Double(_), _) | (_, Json::Double(_)) => f(a).partial_cmp(&f(b)),
        (Json::Decimal(_, s), _) | (_, Json::Decimal(_, s)) => {
            let scale = match (a, b) {
                (Json::Decimal(_, x), Json::Decimal(_, y)) => (*x).max(*y),
                _ => *s,
            };
            match (dec(a, scale), dec(b, scale)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => f(a).partial_cmp(&f(b)),
            }
        }
        _ => Some(int(a)?.cmp(&int(b)?)),
    }
}

/// Compares two JSON values as MySQL does: by type first (NULL <
/// numbers < strings < objects < arrays < booleans), then by value;
/// strings by their bytes, arrays element by element.
pub(crate) fn cmp_json(a: &Json, b: &Json) -> Option<Ordering> {
    let (ra, rb) = (rank(a), rank(b));
    if ra != rb {
        return Some(ra.cmp(&rb));
    }
    match (a, b) {
        (Json::Null, Json::Null) => Some(Ordering::Equal),
        (Json::Bool(x), Json::Bool(y)) => Some(x.cmp(y)),
        (Json::Str(x), Json::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Json::Array(x), Json::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                match cmp_json(p, q)? {
                    Ordering::Equal => {}
                    o => return Some(o),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        (Json::Object(x), Json::Object(y)) => {
            for ((kp, p), (kq, q)) in x.iter().zip(y) {
                match key_order(kp, kq).then(cmp_json(p, q)?) {
                    Ordering::Equal => {}
                    o => return Some(o),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => num_cmp(a, b),
    }
}

fn json_eq(a: &Json, b: &Json) -> bool {
    cmp_json(a, b) == Some(Ordering::Equal)
}

/// Compares a JSON value with any value (a SQL string is a JSON string
/// there, a number a JSON number); None with NULL or a corrupted value.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Option<Ordering> {
    let x = as_json(a).ok()??;
    let y = as_json(b).ok()??;
    cmp_json(&x, &y)
}

/// A value as JSON (None for SQL NULL).
fn as_json(v: &Value) -> SqlResult<Option<Json>> {
    Ok(match v {
        Value::Null => None,
        other => Some(from_value(other)?),
    })
}

/// JSON_CONTAINS: whether `c` is contained in `t`.
fn contains(t: &Json, c: &Json) -> bool {
    match (t, c) {
        (Json::Array(ta), Json::Array(ca)) => ca.iter().all(|x| ta.iter().any(|y| contains(y, x))),
        (Json::Array(ta), _) => ta.iter().any(|y| contains(y, c)),
        (Json::Object(tm), Json::Object(cm)) => cm
            .iter()
            .all(|(k, v)| obj_get(tm, k).is_some_and(|tv| contains(tv, v))),
        (Json::Object(_), _) | (_, Json::Array(_) | Json::Object(_)) => false,
        _ => json_eq(t, c),
    }
}

/// JSON_OVERLAPS: whether two documents share an element, a member or
/// (scalars) are equal.
fn overlaps(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => x.iter().any(|p| y.iter().any(|q| json_eq(p, q))),
        (Json::Array(x), o) | (o, Json::Array(x)) => x.iter().any(|p| json_eq(p, o)),
        (Json::Object(x), Json::Object(y)) => x
            .iter()
            .any(|(k, v)| obj_get(y, k).is_some_and(|w| json_eq(v, w))),
        _ => json_eq(a, b),
    }
}

fn merge_preserve(a: Json, b: Json) -> Json {
    match (a, b) {
        (Json::Array(mut x), Json::Array(y)) => {
            x.extend(y);
            Json::Array(x)
        }
        (Json::Object(mut x), Json::Object(y)) => {
            for (k, v) in y {
                match find_key(&x, &k) {
                    Ok(i) => {
                        if let Some(slot) = x.get_mut(i) {
                            let old = std::mem::take(&mut slot.1);
                            slot.1 = merge_preserve(old, v);
                        }
                    }
                    Err(i) => x.insert(i, (k, v)),
                }
            }
            Json::Object(x)
        }
        (Json::Array(mut x), b) => {
            x.push(b);
            Json::Array(x)
        }
        (a, Json::Array(y)) => {
            let mut x = Vec::with_capacity(y.len() + 1);
            x.push(a);
            x.extend(y);
            Json::Array(x)
        }
        (a, b) => Json::Array(vec![a, b]),
    }
}

/// RFC 7396's merge patch.
fn merge_patch(target: Json, patch: Json) -> Json {
    let Json::Object(p) = patch else {
        return patch;
    };
    let mut t = match target {
        Json::Object(m) => m,
        _ => Vec::new(),
    };
    for (k, v) in p {
        match find_key(&t, &k) {
            Ok(i) => {
                if v == Json::Null {
                    t.remove(i);
                } else if let Some(slot) = t.get_mut(i) {
                    let old = std::mem::take(&mut slot.1);
                    slot.1 = merge_patch(old, v);
                }
            }
            Err(i) => {
                if v != Json::Null {
                    t.insert(i, (k, merge_patch(Json::Null, v)));
                }
            }
        }
    }
    Json::Object(t)
}

// ---------------------------------------------------------------------
// Values in and out.

/// A SQL value as a JSON value (a function's value argument): a string
/// is a JSON string, a number a number, a date or time its text, a JSON
/// value itself; NULL is `null`.
pub(crate) fn from_value(v: &Value) -> SqlResult<Json> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Int(i) => Json::Int(*i),
        Value::UInt(u) => match i64::try_from(*u) {
            Ok(i) => Json::Int(i),
            Err(_) => Json::UInt(*u),
        },
        Value::Double(f) if f.is_finite() => Json::Double(*f),
        Value::Double(_) => {
            return Err(SqlError::new(
                1690,
                "22003",
                "DOUBLE value is out of range in a JSON value",
            ))
        }
        Value::Decimal(d, s) => Json::Decimal(*d, *s),
        Value::Str(s) | Value::Member(_, s) => Json::Str(String::from_utf8_lossy(s).into_owned()),
        Value::Date(d) => {
            let (y, m, dd) = unpack_date(*d);
            Json::Str(format!("{y:04}-{m:02}-{dd:02}"))
        }
        Value::DateTime(t) => {
            let (d, h, mi, s, us) = unpack_datetime(*t);
            let (y, m, dd) = unpack_date(d);
            Json::Str(format!(
                "{y:04}-{m:02}-{dd:02} {h:02}:{mi:02}:{s:02}.{us:06}"
            ))
        }
        Value::Time(us) => Json::Str(format_time(*us, Some(6))),
        Value::Json(b) => decode_value(b)?,
    })
}

/// The JSON value of the text `s` for a column (`CAST`, an INSERT):
/// error 3140 names the column.
pub(crate) fn parse_for_column(s: &[u8], column: &str) -> SqlResult<Vec<u8>> {
    match parse(s) {
        Ok(j) => Ok(encode(&j)),
        Err(e) => Err(SqlError::new(
            3140,
            "22032",
            format!(
                "Invalid JSON text: \"{}\" at position {} in value for column '{column}'.",
                e.msg, e.pos
            ),
        )),
    }
}

/// The JSON boolean `true` or `false` (TRUE / FALSE given to a JSON
/// function).
pub(crate) fn boolean(b: bool) -> Value {
    Value::Json(encode(&Json::Bool(b)))
}

/// The document `null` (a JSON column's implicit default).
pub(crate) fn null_document() -> Value {
    Value::Json(encode(&Json::Null))
}

/// A JSON value's text with a top-level string unquoted (how a JSON
/// value reads where a date or time is wanted, and JSON_UNQUOTE).
pub(crate) fn unquoted_text(b: &[u8]) -> String {
    match decode(b) {
        Some(Json::Str(s)) => s,
        Some(other) => to_text(&other),
        None => binary_text(b),
    }
}

/// Appends a key of the document `b` that is equal for documents that
/// compare equal (numbers by value: `1`, `1.0` and a decimal `1.00` are
/// one group), for GROUP BY, DISTINCT and set operations.
pub(crate) fn group_key(b: &[u8], out: &mut Vec<u8>) {
    match decode(b) {
        Some(j) => put_group_key(&j, out),
        None => {
            out.push(0xff);
            out.extend_from_slice(b);
        }
    }
}

fn put_group_key(j: &Json, out: &mut Vec<u8>) {
    let int = |out: &mut Vec<u8>, i: i128| {
        out.push(2);
        out.extend_from_slice(&i.to_be_bytes());
    };
    let dbl = |out: &mut Vec<u8>, f: f64| {
        // A whole double is its integer; -0 is 0.
        if f == f.trunc() && f.abs() < 1e38 {
            out.push(2);
            out.extend_from_slice(&(f as i128).to_be_bytes());
        } else {
            out.push(3);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
    };
    match j {
        Json::Null => out.push(0),
        Json::Bool(b) => out.extend_from_slice(&[1, u8::from(*b)]),
        Json::Int(i) => int(out, i128::from(*i)),
        Json::UInt(u) => int(out, i128::from(*u)),
        Json::Double(f) => dbl(out, *f),
        Json::Decimal(d, s) => {
            let p = 10i128.checked_pow(u32::from(*s)).unwrap_or(1);
            if d % p == 0 {
                int(out, d / p);
            } else {
                dbl(out, *d as f64 / p as f64);
            }
        }
        Json::Str(s) => {
            out.push(5);
            out.extend_from_slice(&(s.len() as u64).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Json::Array(a) => {
            out.push(6);
            out.extend_from_slice(&(a.len() as u64).to_be_bytes());
            for x in a {
                put_group_key(x, out);
            }
        }
        Json::Object(m) => {
            out.push(7);
            out.extend_from_slice(&(m.len() as u64).to_be_bytes());
            for (k, v) in m {
                out.extend_from_slice(&(k.len() as u64).to_be_bytes());
                out.extend_from_slice(k.as_bytes());
                put_group_key(v, out);
            }
        }
    }
}

/// A value stored into a JSON column: JSON as it is, a string parsed as
/// JSON text; anything else is MySQL's 3140 ("may need CAST").
pub(crate) fn to_column(v: &Value, column: &str) -> SqlResult<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        // Every producer checks what it makes; a row must never hold a
        // document it cannot read back, so it is checked once more.
        Value::Json(b) if is_valid_binary(b) => Ok(Value::Json(b.clone())),
        Value::Json(_) => Err(corrupted()),
        Value::Str(s) | Value::Member(_, s) => Ok(Value::Json(parse_for_column(s, column)?)),
        _ => Err(SqlError::new(
            3140,
            "22032",
            format!(
                "Invalid JSON text: \"not a JSON text, may need CAST\" at position 0 in value for column '{column}'."
            ),
        )),
    }
}

/// `CAST(v AS JSON)`: a string is parsed as JSON text, other values
/// become JSON scalars.
pub(crate) fn cast(v: &Value) -> SqlResult<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Str(s) | Value::Member(_, s) => match parse(s) {
            Ok(j) => Ok(Value::Json(encode(&j))),
            Err(e) => Err(arg_text_error(1, "cast_as_json", &e)),
        },
        other => Ok(Value::Json(encode(&from_value(other)?))),
    }
}

/// A JSON value in numeric context: numbers as they are, booleans 1/0,
/// a string read as a number, anything else 0.
pub(crate) fn to_number(b: &[u8]) -> Value {
    match decode(b) {
        Some(Json::Int(i)) => Value::Int(i),
        Some(Json::UInt(u)) => Value::UInt(u),
        Some(Json::Double(f)) => Value::Double(f),
        Some(Json::Decimal(d, s)) => Value::Decimal(d, s),
        Some(Json::Bool(t)) => Value::Int(i64::from(t)),
        Some(Json::Str(s)) => Value::Str(s.into_bytes()),
        _ => Value::Int(0),
    }
}

fn arg_text_error(n: usize, func: &str, e: &TextError) -> SqlError {
    if e.msg == DEPTH_MSG {
        return too_deep();
    }
    SqlError::new(
        3141,
        "22032",
        format!(
            "Invalid JSON text in argument {n} to function {func}: \"{}\" at position {}.",
            e.msg, e.pos
        ),
    )
}

/// A function's document argument number `n` (1-based): JSON as it
/// is, a string parsed as JSON text; None for NULL.
fn doc_arg(v: &Value, n: usize, func: &str) -> SqlResult<Option<Json>> {
    match v {
        Value::Null => Ok(None),
        Value::Json(b) => Ok(Some(decode_value(b)?)),
        Value::Str(s) | Value::Member(_, s) => match parse(s) {
            Ok(j) => Ok(Some(j)),
            Err(e) => Err(arg_text_error(n, func, &e)),
        },
        _ => Err(SqlError::new(
            3146,
            "22032",
            format!(
                "Invalid data type for JSON data in argument {n} to function {func}; a JSON string or JSON type is required."
            ),
        )),
    }
}

/// A path argument; None for NULL.
fn path_arg(v: &Value) -> SqlResult<Option<Path>> {
    match v {
        Value::Null => Ok(None),
        other => parse_path(&crate::expr::text_of(other)).map(Some),
    }
}

/// The value an optional path argument names in `doc` (`doc` itself
/// without one); None when the path is NULL or names nothing.
fn at_optional_path(doc: Json, path: Option<&Value>) -> SqlResult<Option<Json>> {
    let Some(v) = path else {
        return Ok(Some(doc));
    };
    let Some(p) = exact_path_arg(v)? else {
        return Ok(None);
    };
    let mut found = Vec::new();
    find(&doc, &p, &mut found);
    Ok(found.first().map(|t| (*t).clone()))
}

/// A path argument that must name one place (no wildcards, 3149).
fn exact_path_arg(v: &Value) -> SqlResult<Option<Path>> {
    let p = path_arg(v)?;
    if p.as_deref().is_some_and(is_wild) {
        return Err(SqlError::new(
            3149,
            "42000",
            "In this situation, path expressions may not contain the * and ** tokens or an array range.",
        ));
    }
    Ok(p)
}

/// A function's JSON result: nested at most [`MAX_DEPTH`] (else 3157),
/// and NULL with warning 1301 past `max_allowed_packet`, as MySQL's.
fn json_out(j: &Json, env: &dyn Env, name: &str) -> SqlResult<Value> {
    if depth(j) > MAX_DEPTH {
        return Err(too_deep());
    }
    let b = encode(j);
    if !crate::strfuncs::fits(env, name, b.len() as u128) {
        return Ok(Value::Null);
    }
    Ok(Value::Json(b))
}

// ---------------------------------------------------------------------
// The functions.

/// The JSON functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFn {
    /// JSON_VALID(v)
    Valid,
    /// JSON_TYPE(doc)
    Type,
    /// JSON_EXTRACT(doc, path, ...) and `doc -> path`
    Extract,
    /// JSON_UNQUOTE(v) and `doc ->> path` (over JSON_EXTRACT)
    Unquote,
    /// JSON_QUOTE(str)
    Quote,
    /// JSON_OBJECT(k, v, ...)
    Object,
    /// JSON_ARRAY(v, ...)
    Array,
    /// JSON_CONTAINS(doc, candidate[, path])
    Contains,
    /// JSON_CONTAINS_PATH(doc, 'one'|'all', path, ...)
    ContainsPath,
    /// JSON_KEYS(doc[, path])
    Keys,
    /// JSON_LENGTH(doc[, path])
    Length,
    /// JSON_DEPTH(doc)
    Depth,
    /// JSON_SET(doc, path, v, ...)
    Set,
    /// JSON_INSERT(doc, path, v, ...)
    Insert,
    /// JSON_REPLACE(doc, path, v, ...)
    Replace,
    /// JSON_REMOVE(doc, path, ...)
    Remove,
    /// JSON_ARRAY_APPEND(doc, path, v, ...)
    ArrayAppend,
    /// JSON_ARRAY_INSERT(doc, path, v, ...)
    ArrayInsert,
    /// JSON_MERGE_PRESERVE / JSON_MERGE(doc, doc, ...)
    MergePreserve,
    /// JSON_MERGE_PATCH(doc, doc, ...)
    MergePatch,
    /// JSON_SEARCH(doc, 'one'|'all', pattern[, escape[, path ...]])
    Search,
    /// JSON_OVERLAPS(doc, doc)
    Overlaps,
    /// `v MEMBER OF (doc)`
    MemberOf,
    /// JSON_PRETTY(doc)
    Pretty,
    /// JSON_STORAGE_SIZE(doc)
    StorageSize,
    /// A SQL truth value (a comparison's 1 / 0) given to a JSON function
    /// as a value: JSON `true` / `false` (internal, no SQL name).
    Bool,
}

/// The function of a name.
pub fn by_name(name: &str) -> Option<JsonFn> {
    Some(match name {
        "json_valid" => JsonFn::Valid,
        "json_type" => JsonFn::Type,
        "json_extract" => JsonFn::Extract,
        "json_unquote" => JsonFn::Unquote,
        "json_quote" => JsonFn::Quote,
        "json_object" => JsonFn::Object,
        "json_array" => JsonFn::Array,
        "json_contains" => JsonFn::Contains,
        "json_contains_path" => JsonFn::ContainsPath,
        "json_keys" => JsonFn::Keys,
        "json_length" => JsonFn::Length,
        "json_depth" => JsonFn::Depth,
        "json_set" => JsonFn::Set,
        "json_insert" => JsonFn::Insert,
        "json_replace" => JsonFn::Replace,
        "json_remove" => JsonFn::Remove,
        "json_array_append" | "json_append" => JsonFn::ArrayAppend,
        "json_array_insert" => JsonFn::ArrayInsert,
        "json_merge_preserve" | "json_merge" => JsonFn::MergePreserve,
        "json_merge_patch" => JsonFn::MergePatch,
        "json_search" => JsonFn::Search,
        "json_overlaps" => JsonFn::Overlaps,
        "json_pretty" => JsonFn::Pretty,
        "json_storage_size" => JsonFn::StorageSize,
        _ => return None,
    })
}

impl JsonFn {
    /// Its SQL name, lower-case (in error messages).
    fn name(self) -> &'static str {
        match self {
            JsonFn::Valid => "json_valid",
            JsonFn::Type => "json_type",
            JsonFn::Extract => "json_extract",
            JsonFn::Unquote => "json_unquote",
            JsonFn::Quote => "json_quote",
            JsonFn::Object => "json_object",
            JsonFn::Array => "json_array",
            JsonFn::Contains => "json_contains",
            JsonFn::ContainsPath => "json_contains_path",
            JsonFn::Keys => "json_keys",
            JsonFn::Length => "json_length",
            JsonFn::Depth => "json_depth",
            JsonFn::Set => "json_set",
            JsonFn::Insert => "json_insert",
            JsonFn::Replace => "json_replace",
            JsonFn::Remove => "json_remove",
            JsonFn::ArrayAppend => "json_array_append",
            JsonFn::ArrayInsert => "json_array_insert",
            JsonFn::MergePreserve => "json_merge_preserve",
            JsonFn::MergePatch => "json_merge_patch",
            JsonFn::Search => "json_search",
            JsonFn::Overlaps => "json_overlaps",
            JsonFn::MemberOf => "member of",
            JsonFn::Pretty => "json_pretty",
            JsonFn::StorageSize => "json_storage_size",
            JsonFn::Bool => "json_bool",
        }
    }
}

/// Whether argument `i` of `f` is a value (where a SQL truth value is
/// a JSON boolean) rather than a document, a path or a key.
pub(crate) fn is_value_arg(f: JsonFn, i: usize) -> bool {
    match f {
        JsonFn::Array => true,
        JsonFn::Object => i % 2 == 1,
        JsonFn::Set
        | JsonFn::Insert
        | JsonFn::Replace
        | JsonFn::ArrayAppend
        | JsonFn::ArrayInsert => i >= 2 && i.is_multiple_of(2),
        JsonFn::MemberOf => i == 0,
        _ => false,
    }
}

/// Whether `n` arguments suit `f`.
pub fn arity_ok(f: JsonFn, n: usize) -> bool {
    match f {
        JsonFn::Valid
        | JsonFn::Type
        | JsonFn::Unquote
        | JsonFn::Quote
        | JsonFn::Depth
        | JsonFn::Pretty
        | JsonFn::StorageSize
        | JsonFn::Bool => n == 1,
        JsonFn::Extract | JsonFn::Remove | JsonFn::MergePreserve | JsonFn::MergePatch => n >= 2,
        JsonFn::Object => n.is_multiple_of(2),
        JsonFn::Array => true,
        JsonFn::Contains => (2..=3).contains(&n),
        JsonFn::ContainsPath => n >= 3,
        JsonFn::Keys | JsonFn::Length => (1..=2).contains(&n),
        JsonFn::Set
        | JsonFn::Insert
        | JsonFn::Replace
        | JsonFn::ArrayAppend
        | JsonFn::ArrayInsert => n >= 3 && n % 2 == 1,
        JsonFn::Search => n >= 3,
        JsonFn::Overlaps | JsonFn::MemberOf => n == 2,
    }
}

/// The type a function's values are sent as.
pub fn out_type(f: JsonFn) -> OutType {
    match f {
        JsonFn::Valid
        | JsonFn::Contains
        | JsonFn::ContainsPath
        | JsonFn::Length
        | JsonFn::Depth
        | JsonFn::Overlaps
        | JsonFn::MemberOf
        | JsonFn::StorageSize => OutType::LongLong,
        JsonFn::Type | JsonFn::Unquote | JsonFn::Quote | JsonFn::Pretty => OutType::VarString,
        JsonFn::Bool => OutType::Json,
        _ => OutType::Json,
    }
}

fn one_or_all(v: &Value, func: &str) -> SqlResult<Option<bool>> {
    match v {
        Value::Null => Ok(None),
        other => {
            let t = crate::expr::text_of(other);
            if t.eq_ignore_ascii_case(b"one") {
                Ok(Some(false))
            } else if t.eq_ignore_ascii_case(b"all") {
                Ok(Some(true))
            } else {
                Err(SqlError::new(
                    3154,
                    "42000",
                    format!(
                        "The oneOrAll argument to {func} may take these values: 'one' or 'all'."
                    ),
                ))
            }
        }
    }
}

fn bool_out(b: bool) -> Value {
    Value::Int(i64::from(b))
}

/// Evaluates `f` over its evaluated arguments.
pub fn call(f: JsonFn, a: Vec<Value>, env: &dyn Env) -> SqlResult<Value> {
    let name = f.name();
    let arg = |i: usize| a.get(i).unwrap_or(&Value::Null);
    Ok(match f {
        JsonFn::Bool => match crate::expr::truth(arg(0)) {
            None => Value::Null,
            Some(t) => boolean(t),
        },
        JsonFn::Valid => match arg(0) {
            Value::Null => Value::Null,
            Value::Json(_) => bool_out(true),
            Value::Str(s) | Value::Member(_, s) => bool_out(parse(s).is_ok()),
            _ => bool_out(false),
        },
        JsonFn::Type => match doc_arg(arg(0), 1, name)? {
            None => Value::Null,
            Some(j) => Value::Str(
                match j {
                    Json::Null => "NULL",
                    Json::Bool(_) => "BOOLEAN",
                    Json::Int(_) => "INTEGER",
                    Json::UInt(_) => "UNSIGNED INTEGER",
                    Json::Double(_) => "DOUBLE",
                    Json::Decimal(..) => "DECIMAL",
                    Json::Str(_) => "STRING",
                    Json::Array(_) => "ARRAY",
                    Json::Object(_) => "OBJECT",
                }
                .as_bytes()
                .to_vec(),
            ),
        },
        JsonFn::Extract => {
            // A stored document and one plain path: read the value's bytes
            // in place, decoding nothing else.
            if let (Value::Json(b), [_, p]) = (arg(0), a.as_slice()) {
                let Some(p) = path_arg(p)? else {
                    return Ok(Value::Null);
                };
                if !is_wild(&p) {
                    let body = b.get(1..).ok_or_else(corrupted)?;
                    return Ok(match seek(body, &p).ok_or_else(corrupted)? {
                        Some(v) => {
                            let mut out = Vec::with_capacity(v.len() + 1);
                            out.push(VERSION);
                            out.extend_from_slice(v);
                            Value::Json(out)
                        }
                        None => Value::Null,
                    });
                }
            }
            let Some(doc) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            let mut paths = Vec::with_capacity(a.len() - 1);
            for v in a.iter().skip(1) {
                match path_arg(v)? {
                    Some(p) => paths.push(p),
                    None => return Ok(Value::Null),
                }
            }
            let mut found = Vec::new();
            for p in &paths {
                find(&doc, p, &mut found);
            }
            // One path without wildcards gives its value; otherwise the
            // matches are wrapped in an array.
            if paths.len() == 1 && !paths.first().is_some_and(|p| is_wild(p)) {
                match found.first() {
                    Some(j) => json_out(j, env, name)?,
                    None => Value::Null,
                }
            } else if found.is_empty() {
                Value::Null
            } else {
                json_out(
                    &Json::Array(found.into_iter().cloned().collect()),
                    env,
                    name,
                )?
            }
        }
        JsonFn::Unquote => match arg(0) {
            Value::Null => Value::Null,
            Value::Json(b) => match decode_value(b)? {
                Json::Str(s) => Value::Str(s.into_bytes()),
                other => Value::Str(to_text(&other).into_bytes()),
            },
            other => {
                let s = crate::expr::text_of(other);
                if s.len() >= 2 && s.first() == Some(&b'"') && s.last() == Some(&b'"') {
                    match parse(&s) {
                        Ok(Json::Str(t)) => Value::Str(t.into_bytes()),
                        Ok(_) => Value::Str(s),
                        Err(e) => return Err(arg_text_error(1, name, &e)),
                    }
                } else {
                    Value::Str(s)
                }
            }
        },
        JsonFn::Quote => match arg(0) {
            Value::Null => Value::Null,
            other => {
                let mut s = String::new();
                write_string(
                    &String::from_utf8_lossy(&crate::expr::text_of(other)),
                    &mut s,
                );
                Value::Str(s.into_bytes())
            }
        },
        JsonFn::Object => {
            let mut m = Vec::with_capacity(a.len() / 2);
            for pair in a.chunks(2) {
                let (k, v) = match pair {
                    [k, v] => (k, v),
                    _ => return Err(param_count(name)),
                };
                if k.is_null() {
                    return Err(SqlError::new(
                        3158,
                        "22032",
                        "JSON documents may not contain NULL member names.",
                    ));
                }
                let k = String::from_utf8_lossy(&crate::expr::text_of(k)).into_owned();
                obj_put(&mut m, k, from_value(v)?);
            }
            json_out(&Json::Object(m), env, name)?
        }
        JsonFn::Array => json_out(
            &Json::Array(a.iter().map(from_value).collect::<SqlResult<Vec<_>>>()?),
            env,
            name,
        )?,
        JsonFn::Contains => {
            let Some(target) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            let Some(cand) = doc_arg(arg(1), 2, name)? else {
                return Ok(Value::Null);
            };
            let Some(target) = at_optional_path(target, a.get(2))? else {
                return Ok(Value::Null);
            };
            bool_out(contains(&target, &cand))
        }
        JsonFn::ContainsPath => {
            let Some(doc) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            let Some(all) = one_or_all(arg(1), name)? else {
                return Ok(Value::Null);
            };
            let mut hits = Vec::with_capacity(a.len() - 2);
            for v in a.iter().skip(2) {
                let Some(p) = path_arg(v)? else {
                    return Ok(Value::Null);
                };
                let mut found = Vec::new();
                find(&doc, &p, &mut found);
                hits.push(!found.is_empty());
            }
            bool_out(if all {
                hits.iter().all(|&h| h)
            } else {
                hits.iter().any(|&h| h)
            })
        }
        JsonFn::Keys | JsonFn::Length => {
            let Some(doc) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            let Some(target) = at_optional_path(doc, a.get(1))? else {
                return Ok(Value::Null);
            };
            match (f, target) {
                (JsonFn::Keys, Json::Object(m)) => json_out(
                    &Json::Array(m.into_iter().map(|(k, _)| Json::Str(k)).collect()),
                    env,
                    name,
                )?,
                (JsonFn::Keys, _) => Value::Null,
                (_, Json::Object(m)) => Value::Int(m.len() as i64),
                (_, Json::Array(x)) => Value::Int(x.len() as i64),
                _ => Value::Int(1),
            }
        }
        JsonFn::Depth => match doc_arg(arg(0), 1, name)? {
            None => Value::Null,
            Some(j) => Value::Int(depth(&j) as i64),
        },
        JsonFn::Set
        | JsonFn::Insert
        | JsonFn::Replace
        | JsonFn::ArrayAppend
        | JsonFn::ArrayInsert => {
            let Some(mut doc) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            for pair in a.get(1..).unwrap_or_default().chunks(2) {
                let [p, v] = pair else {
                    return Err(param_count(name));
                };
                let Some(p) = exact_path_arg(p)? else {
                    return Ok(Value::Null);
                };
                let v = from_value(v)?;
                match f {
                    JsonFn::Set => set_path(&mut doc, &p, v, SetMode::Set),
                    JsonFn::Insert => set_path(&mut doc, &p, v, SetMode::Insert),
                    JsonFn::Replace => set_path(&mut doc, &p, v, SetMode::Replace),
                    JsonFn::ArrayAppend => {
                        if let Some(t) = find_mut(&mut doc, &p) {
                            match t {
                                Json::Array(x) => x.push(v),
                                other => {
                                    let old = std::mem::take(other);
                                    *other = Json::Array(vec![old, v]);
                                }
                            }
                        }
                    }
                    _ => {
                        let Some((Leg::Index(ix), parent)) = p.split_last() else {
                            return Err(SqlError::new(
                                3165,
                                "42000",
                                "A path expression is not a path to a cell in an array.",
                            ));
                        };
                        if let Some(Json::Array(x)) = find_mut(&mut doc, parent) {
                            let at = ix.at(x.len()).unwrap_or(0).min(x.len());
                            x.insert(at, v);
                        }
                    }
                }
                if depth(&doc) > MAX_DEPTH {
                    return Err(too_deep());
                }
            }
            json_out(&doc, env, name)?
        }
        JsonFn::Remove => {
            let Some(mut doc) = doc_arg(arg(0), 1, name)? else {
                return Ok(Value::Null);
            };
            for v in a.iter().skip(1) {
                let Some(p) = exact_path_arg(v)? else {
                    return Ok(Value::Null);
                };
                if p.is_empty() {
                    return Err(SqlError::new(
                        3153,
                        "42000",
                        "The path expression '$' is not allowed in this context.",
                    ));
                }
                remove_path(&mut doc, &p);
            }
            json_out(&doc, env, name)?
        }
        JsonFn::MergePreserve | JsonFn::MergePatch => {
            let mut acc: Option<Json> = None;
            for (i, v) in a.iter().enumerate() {
                // Any NULL argument makes the result NULL.
                let Some(d) = doc_arg(v, i + 1, name)? else {
                    return Ok(Value::Null);
                };
                acc = Some(match acc {
                    None => d,
                    Some(x) if f == JsonFn::MergePatch => merge_patch(x, d),
                    Some(x) => merge_preserve(x, d),
                });
            }
            match acc {
                Some(j) if depth(&j) > MAX_DEPTH => return Err(too_deep()),
                Some(j) => json_out(&j, env, name)?,
                None => Value::Null,
            }
        }
        JsonFn::Search => search(&a, name, env)?,
        JsonFn::Overlaps => match (doc_arg(arg(0), 1, name)?, doc_arg(arg(1), 2, name)?) {
            (Some(x), Some(y)) => bool_out(overlaps(&x, &y)),
            _ => Value::Null,
        },
        JsonFn::MemberOf => {
            let (v, doc) = (arg(0), arg(1));
            if v.is_null() {
                return Ok(Value::Null);
            }
            let Some(doc) = doc_arg(doc, 2, name)? else {
                return Ok(Value::Null);
            };
            let v = from_value(v)?;
            bool_out(match doc {
                Json::Array(x) => x.iter().any(|e| json_eq(e, &v)),
                other => json_eq(&other, &v),
            })
        }
        JsonFn::Pretty => match doc_arg(arg(0), 1, name)? {
            None => Value::Null,
            Some(j) => {
                let mut s = String::new();
                write_pretty(&j, 0, &mut s);
                Value::Str(s.into_bytes())
            }
        },
        JsonFn::StorageSize => match arg(0) {
            Value::Null => Value::Null,
            Value::Json(b) => Value::Int(b.len() as i64),
            other => match doc_arg(other, 1, name)? {
                Some(j) => Value::Int(encode(&j).len() as i64),
                None => Value::Null,
            },
        },
    })
}

/// JSON_ARRAYAGG's result over a group's values.
pub(crate) fn array_agg(items: &[Value], env: &dyn Env) -> SqlResult<Value> {
    let name = "json_arrayagg";
    let a = items
        .iter()
        .map(from_value)
        .collect::<SqlResult<Vec<_>>>()?;
    let j = Json::Array(a);
    if depth(&j) > MAX_DEPTH {
        return Err(too_deep());
    }
    json_out(&j, env, name)
}

/// JSON_OBJECTAGG's result over a group's `[key, value]` pairs (the
/// last value of a key wins; a NULL key is 3158).
pub(crate) fn object_agg(items: &[Value], env: &dyn Env) -> SqlResult<Value> {
    let name = "json_objectagg";
    let mut m = Vec::new();
    for it in items {
        let Json::Array(pair) = from_value(it)? else {
            return Err(corrupted());
        };
        let mut pair = pair.into_iter();
        let (k, v) = (
            pair.next().unwrap_or_default(),
            pair.next().unwrap_or_default(),
        );
        let k = match k {
            Json::Null => {
                return Err(SqlError::new(
                    3158,
                    "22032",
                    "JSON documents may not contain NULL member names.",
                ))
            }
            Json::Str(s) => s,
            other => to_text(&other),
        };
        obj_put(&mut m, k, v);
    }
    let j = Json::Object(m);
    if depth(&j) > MAX_DEPTH {
        return Err(too_deep());
    }
    json_out(&j, env, name)
}

fn too_deep() -> SqlError {
    SqlError::new(
        3157,
        "22032",
        "The JSON document exceeds the maximum depth.",
    )
}

fn param_count(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

/// JSON_SEARCH(doc, one_or_all, pattern[, escape[, path ...]]): the
/// paths of the strings that match `pattern` (LIKE, byte-exact).
fn search(a: &[Value], name: &str, env: &dyn Env) -> SqlResult<Value> {
    let arg = |i: usize| a.get(i).unwrap_or(&Value::Null);
    let Some(doc) = doc_arg(arg(0), 1, name)? else {
        return Ok(Value::Null);
    };
    let Some(all) = one_or_all(arg(1), name)? else {
        return Ok(Value::Null);
    };
    if arg(2).is_null() {
        return Ok(Value::Null);
    }
    let pat = crate::expr::text_of(arg(2));
    let esc = match a.get(3) {
        None | Some(Value::Null) => Some('\\'),
        Some(v) => {
            let t = String::from_utf8_lossy(&crate::expr::text_of(v)).into_owned();
            let mut cs = t.chars();
            match (cs.next(), cs.next()) {
                (None, _) => Some('\\'),
                (Some(c), None) => Some(c),
                _ => {
                    return Err(SqlError::new(
                        1210,
                        "HY000",
                        "Incorrect arguments to ESCAPE",
                    ))
                }
            }
        }
    };
    let mut scopes: Vec<Path> = Vec::new();
    for v in a.iter().skip(4) {
        match path_arg(v)? {
            Some(p) => scopes.push(p),
            None => return Ok(Value::Null),
        }
    }
    // The scopes' own paths, once; a hit counts under a scope when its
    // path is the scope's or goes on from it.
    let prefixes: Vec<String> = scopes
        .iter()
        .flat_map(|p| concrete_paths(&doc, p))
        .collect();
    let under = |hit: &str| {
        prefixes.is_empty()
            || prefixes.iter().any(|pre| {
                hit == pre
                    || hit
                        .strip_prefix(pre.as_str())
                        .is_some_and(|r| r.starts_with('.') || r.starts_with('['))
            })
    };
    let mut hits: Vec<String> = Vec::new();
    walk_strings(&doc, &mut Vec::new(), &mut |s, at| {
        if (all || hits.is_empty()) && like_escape(s.as_bytes(), &pat, Collation::Utf8mb4Bin, esc) {
            let t = path_text(at);
            if under(&t) {
                hits.push(t);
            }
        }
    });
    Ok(match hits.len() {
        0 => Value::Null,
        1 => json_out(&Json::Str(hits.swap_remove(0)), env, name)?,
        _ if !all => json_out(&Json::Str(hits.swap_remove(0)), env, name)?,
        _ => json_out(
            &Json::Array(hits.into_iter().map(Json::Str).collect()),
            env,
            name,
        )?,
    })
}

/// The printed paths of the values `path` selects in `j`, each once.
fn concrete_paths(j: &Json, path: &[Leg]) -> Vec<String> {
    let mut cur: Vec<(&Json, Vec<PathStep>)> = vec![(j, Vec::new())];
    let mut seen: std::collections::HashSet<*const Json> = std::collections::HashSet::new();
    for leg in path {
        let mut next: Vec<(&Json, Vec<PathStep>)> = Vec::new();
        for (n, at) in &cur {
            if *leg == Leg::Descend {
                let mut steps = at.clone();
                descendants(n, &mut steps, true, &mut next);
                // `descendants` gave paths from `n`'s own path on.
                continue;
            }
            let mut one = Vec::new();
            step(n, leg, &mut one);
            for (v, st) in one {
                let mut p = at.clone();
                p.extend(st);
                next.push((v, p));
            }
        }
        seen.clear();
        cur = next
            .into_iter()
            .filter(|(n, _)| seen.insert(*n as *const Json))
            .collect();
    }
    cur.iter().map(|(_, at)| path_text(at)).collect()
}

/// Calls `f` with every string of `j` and its path, in document order.
fn walk_strings(j: &Json, at: &mut Vec<PathStep>, f: &mut dyn FnMut(&str, &[PathStep])) {
    match j {
        Json::Str(s) => f(s, at),
        Json::Array(x) => {
            for (i, v) in x.iter().enumerate() {
                at.push(PathStep::Index(i));
                walk_strings(v, at, f);
                at.pop();
            }
        }
        Json::Object(m) => {
            for (k, v) in m {
                at.push(PathStep::Key(k.clone()));
                walk_strings(v, at, f);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Result<Json, String> {
        parse(s.as_bytes()).map_err(|e| format!("{s}: {e:?}"))
    }

    fn path(p: &str) -> Result<Path, String> {
        parse_path(p.as_bytes()).map_err(|e| format!("{p}: {e}"))
    }

    #[test]
    fn text_round_trips_through_the_binary_form_in_mysql_order() -> Result<(), String> {
        let doc = j(
            r#"{"bb": [1, -2, 18446744073709551615, 1.5, true, null], "a": "x\"y\n", "a": "last"}"#,
        )?;
        let b = encode(&doc);
        assert_eq!(decode(&b), Some(doc.clone()));
        assert_eq!(
            to_text(&doc),
            r#"{"a": "last", "bb": [1, -2, 18446744073709551615, 1.5, true, null]}"#
        );
        assert_eq!(to_text(&j("[100.0, 1e20, 0.25]")?), "[100.0, 1e20, 0.25]");
        Ok(())
    }

    #[test]
    fn corrupted_binary_documents_are_refused_not_guessed() -> Result<(), String> {
        let b = encode(&j(r#"{"a": [1, 2, {"b": "c"}]}"#)?);
        for cut in 0..b.len() {
            assert_eq!(
                decode(b.get(..cut).unwrap_or_default()),
                None,
                "cut at {cut}"
            );
        }
        let mut bad = b.clone();
        if let Some(v) = bad.first_mut() {
            *v = 2;
        }
        assert_eq!(decode(&bad), None);
        // Keys out of order.
        let mut swapped = encode(&Json::Object(vec![
            ("b".into(), Json::Null),
            ("a".into(), Json::Null),
        ]));
        assert_eq!(decode(&swapped), None);
        swapped.push(0);
        assert_eq!(decode(&swapped), None);
        // Nesting past the limit, built by hand.
        let mut deep = vec![VERSION];
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend_from_slice(&[tag::ARRAY, 1, 0, 0, 0, 0, 0, 0, 0]);
        }
        assert_eq!(decode(&deep), None);
        Ok(())
    }

    #[test]
    fn paths_read_in_place_agree_with_the_decoded_tree() -> Result<(), String> {
        let doc = j(r#"{"a": [10, 20, {"b": 30}], "c": {"b": 40}, "d e": 5, "zz": "s"}"#)?;
        let b = encode(&doc);
        for p in [
            "$",
            "$.a",
            "$.a[1]",
            "$.a[last]",
            "$.a[last-2]",
            "$.a[2].b",
            "$.a[3]",
            "$.c[0].b",
            "$.c.b[0]",
            "$.\"d e\"",
            "$.zz",
            "$.zz[0]",
            "$.zz[1]",
            "$.x",
            "$.a.b",
            "$[0].a[0]",
        ] {
            let legs = path(p)?;
            let mut out = Vec::new();
            find(&doc, &legs, &mut out);
            let tree = out.first().map(|x| to_text(x));
            let seeked = seek(b.get(1..).unwrap_or_default(), &legs)
                .ok_or_else(|| format!("{p}: corrupted"))?
                .map(|v| {
                    let mut d = vec![VERSION];
                    d.extend_from_slice(v);
                    binary_text(&d)
                });
            assert_eq!(seeked, tree, "{p}");
        }
        // Every cut of the document is refused by the checker and by a
        // seek into its end.
        let legs = path("$.zz")?;
        for cut in 1..b.len() {
            let part = b.get(..cut).unwrap_or_default();
            assert!(!is_valid_binary(part), "cut at {cut}");
            assert!(
                !matches!(
                    seek(part.get(1..).unwrap_or_default(), &legs),
                    Some(Some(_))
                ),
                "cut at {cut}"
            );
        }
        assert!(is_valid_binary(&b));
        Ok(())
    }

    #[test]
    fn texts_deeper_than_the_limit_are_refused() -> Result<(), String> {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(deep.as_bytes()).is_err());
        let very = "[".repeat(100_000);
        assert!(parse(very.as_bytes()).is_err());
        Ok(())
    }

    #[test]
    fn paths_select_as_mysql_does() -> Result<(), String> {
        let doc = j(r#"{"a": [10, 20, {"b": 30}], "c": {"b": 40}, "d e": 5}"#)?;
        let sel = |p: &str| -> Result<String, String> {
            let p = path(p)?;
            let mut out = Vec::new();
            find(&doc, &p, &mut out);
            Ok(out.iter().map(|x| to_text(x)).collect::<Vec<_>>().join("|"))
        };
        assert_eq!(sel("$.a[1]")?, "20");
        assert_eq!(sel("$.a[last]")?, r#"{"b": 30}"#);
        assert_eq!(sel("$.a[last-1]")?, "20");
        assert_eq!(sel("$.a[0 to 1]")?, "10|20");
        assert_eq!(sel("$.a[*]")?, r#"10|20|{"b": 30}"#);
        assert_eq!(sel("$**.b")?, "30|40");
        assert_eq!(sel("$.\"d e\"")?, "5");
        assert_eq!(sel("$.c[0].b")?, "40");
        assert_eq!(sel("$.x")?, "");
        for bad in ["a", "$.", "$[", "$[1", "$.a**", "$[2 to 1]", "$.1a"] {
            assert!(parse_path(bad.as_bytes()).is_err(), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn comparison_orders_types_then_values() -> Result<(), String> {
        assert_eq!(cmp_json(&j("1")?, &j("1.0")?), Some(Ordering::Equal));
        assert_eq!(cmp_json(&j("2")?, &j("\"1\"")?), Some(Ordering::Less));
        assert_eq!(cmp_json(&j("[1, 2]")?, &j("[1, 3]")?), Some(Ordering::Less));
        assert_eq!(cmp_json(&j("true")?, &j("[9]")?), Some(Ordering::Greater));
        assert_eq!(
            cmp_json(&Json::Decimal(150, 2), &j("1.5")?),
            Some(Ordering::Equal)
        );
        assert!(contains(
            &j(r#"{"a": [1, 2], "b": 3}"#)?,
            &j(r#"{"a": [2]}"#)?
        ));
        assert!(!contains(&j("[1, 2]")?, &j("[3]")?));
        assert!(overlaps(&j("[1, 5]")?, &j("[5, 7]")?));
        Ok(())
    }

    #[test]
    fn merges_follow_preserve_and_patch_rules() -> Result<(), String> {
        assert_eq!(
            to_text(&merge_preserve(
                j(r#"{"a": 1}"#)?,
                j(r#"{"a": 2, "b": 3}"#)?
            )),
            r#"{"a": [1, 2], "b": 3}"#
        );
        assert_eq!(
            to_text(&merge_patch(
                j(r#"{"a": 1, "b": 2}"#)?,
                j(r#"{"a": null, "c": {"d": null}}"#)?
            )),
            r#"{"b": 2, "c": {}}"#
        );
        Ok(())
    }
}
