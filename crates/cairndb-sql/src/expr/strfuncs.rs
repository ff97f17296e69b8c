//! String functions (REPLACE, LOCATE, LPAD, REPEAT, CONCAT_WS,
//! SUBSTRING_INDEX, HEX, FIELD, ...) with MySQL 8.0's semantics. Their
//! arguments are evaluated first; NULL in gives NULL out except where
//! MySQL says otherwise (CONCAT_WS skips NULLs, FIELD of NULL is 0).
//! Results that would pass `max_allowed_packet` are NULL with warning
//! 1301, decided before anything is allocated.

use std::cmp::Ordering;

use crate::error::SqlResult;
use crate::expr::{compare, text_of, to_i64, Env, Func};
use crate::types::{Collation, Value};

/// The session's `max_allowed_packet`.
fn max_packet(env: &dyn Env) -> u64 {
    env.sys_var("max_allowed_packet")
        .ok()
        .and_then(|v| to_i64(&v))
        .map_or(67_108_864, |n| n.max(0) as u64)
}

/// Whether a result of `bytes` fits; warns 1301 for `name` when not.
pub(crate) fn fits(env: &dyn Env, name: &str, bytes: u128) -> bool {
    let max = max_packet(env);
    if bytes > u128::from(max) {
        env.warn(
            1301,
            format!("Result of {name}() was larger than max_allowed_packet ({max}) - truncated"),
        );
        false
    } else {
        true
    }
}

fn chars(v: &Value) -> Vec<char> {
    String::from_utf8_lossy(&text_of(v)).chars().collect()
}

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// 1-based char position of `needle` in `hay` at or after char `from`
/// (0-based), case-insensitively; 0 when absent.
fn locate(needle: &[char], hay: &[char], from: usize) -> i64 {
    if from > hay.len() {
        return 0;
    }
    if needle.is_empty() {
        return from as i64 + 1;
    }
    let n: Vec<char> = needle.iter().map(|&c| fold(c)).collect();
    let h: Vec<char> = hay.iter().map(|&c| fold(c)).collect();
    h.get(from..)
        .unwrap_or_default()
        .windows(n.len())
        .position(|w| w == n.as_slice())
        .map_or(0, |p| (from + p) as i64 + 1)
}

fn int(v: &Value) -> i64 {
    to_i64(v).unwrap_or(0)
}

fn s(v: String) -> Value {
    Value::Str(v.into_bytes())
}

/// Evaluates the string function `f` over evaluated `a`.
pub fn call(f: Func, a: Vec<Value>, env: &dyn Env) -> SqlResult<Value> {
    let any_null = a.iter().any(Value::is_null);
    let skips_null = matches!(
        f,
        Func::ConcatWs | Func::Field | Func::Elt | Func::Char | Func::Quote
    );
    if any_null && !skips_null {
        return Ok(Value::Null);
    }
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::Replace => {
            let (src, from, to) = (text_of(&arg(0)), text_of(&arg(1)), text_of(&arg(2)));
            if from.is_empty() {
                return Ok(Value::Str(src));
            }
            let count = count_matches(&src, &from) as u128;
            let size = src.len() as u128 - count * from.len() as u128 + count * to.len() as u128;
            if !fits(env, "replace", size) {
                return Ok(Value::Null);
            }
            let mut out = Vec::with_capacity(size as usize);
            let mut i = 0;
            while i < src.len() {
                if src[i..].starts_with(&from) {
                    out.extend_from_slice(&to);
                    i += from.len();
                } else {
                    out.push(src[i]);
                    i += 1;
                }
            }
            Value::Str(out)
        }
        Func::Locate | Func::Instr => {
            let (needle, hay) = if f == Func::Instr {
                (chars(&arg(1)), chars(&arg(0)))
            } else {
                (chars(&arg(0)), chars(&arg(1)))
            };
            let from = if a.len() > 2 {
                let p = int(&arg(2));
                if p < 1 {
                    return Ok(Value::Int(0));
                }
                usize::try_from(p - 1).unwrap_or(usize::MAX)
            } else {
                0
            };
            Value::Int(locate(&needle, &hay, from))
        }
        Func::Lpad | Func::Rpad => {
            let (src, len, pad) = (chars(&arg(0)), int(&arg(1)), chars(&arg(2)));
            if len < 0 {
                return Ok(Value::Null);
            }
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            if len <= src.len() {
                return Ok(s(src[..len].iter().collect()));
            }
            if pad.is_empty() {
                return Ok(Value::Null);
            }
            let need = len - src.len();
            let pad_bytes = pad.iter().map(|c| c.len_utf8()).max().unwrap_or(1) as u128;
            let src_bytes: usize = src.iter().map(|c| c.len_utf8()).sum();
            let name = if f == Func::Lpad { "lpad" } else { "rpad" };
            if !fits(env, name, src_bytes as u128 + need as u128 * pad_bytes) {
                return Ok(Value::Null);
            }
            let fill: String = pad.iter().cycle().take(need).collect();
            let src: String = src.iter().collect();
            s(if f == Func::Lpad {
                fill + &src
            } else {
                src + &fill
            })
        }
        Func::Left | Func::Right => {
            let (src, len) = (chars(&arg(0)), int(&arg(1)));
            let len = usize::try_from(len.max(0))
                .unwrap_or(usize::MAX)
                .min(src.len());
            s(if f == Func::Left {
                src[..len].iter().collect()
            } else {
                src[src.len() - len..].iter().collect()
            })
        }
        Func::Repeat => {
            let (src, n) = (text_of(&arg(0)), int(&arg(1)));
            if n <= 0 || src.is_empty() {
                return Ok(Value::Str(Vec::new()));
            }
            if !fits(env, "repeat", src.len() as u128 * n as u128) {
                return Ok(Value::Null);
            }
            Value::Str(src.repeat(n as usize))
        }
        Func::Space => {
            let n = int(&arg(0));
            if n <= 0 {
                return Ok(Value::Str(Vec::new()));
            }
            if !fits(env, "space", n as u128) {
                return Ok(Value::Null);
            }
            Value::Str(vec![b' '; n as usize])
        }
        Func::Reverse => s(chars(&arg(0)).into_iter().rev().collect()),
        Func::ConcatWs => {
            if a.first().is_none_or(Value::is_null) {
                return Ok(Value::Null);
            }
            concat_ws(&a, env)
        }
        Func::SubstringIndex => {
            let (src, delim, n) = (text_of(&arg(0)), text_of(&arg(1)), int(&arg(2)));
            if delim.is_empty() || n == 0 {
                return Ok(Value::Str(Vec::new()));
            }
            let pos: Vec<usize> = match_positions(&src, &delim);
            let k = n.unsigned_abs() as usize;
            if k > pos.len() {
                return Ok(Value::Str(src));
            }
            Value::Str(if n > 0 {
                src[..pos[k - 1]].to_vec()
            } else {
                src[pos[pos.len() - k] + delim.len()..].to_vec()
            })
        }
        Func::Hex => match arg(0) {
            Value::Str(b) => s(b.iter().map(|x| format!("{x:02X}")).collect()),
            v @ (Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(..)) => match v
            {
                Value::UInt(u) => s(format!("{u:X}")),
                Value::Int(i) => s(format!("{:X}", i as u64)),
                _ => {
                    let x = crate::expr::num_f64(&v).unwrap_or(0.0).round();
                    let u = if x < 0.0 {
                        (x.max(i64::MIN as f64) as i64) as u64
                    } else {
                        x.min(u64::MAX as f64) as u64
                    };
                    s(format!("{u:X}"))
                }
            },
            v => s(text_of(&v).iter().map(|x| format!("{x:02X}")).collect()),
        },
        Func::Unhex => {
            let t = text_of(&arg(0));
            let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let mut out = Vec::with_capacity(t.len() / 2 + 1);
            let (head, rest) = if t.len() % 2 == 1 {
                (Some(t[0]), &t[1..])
            } else {
                (None, &t[..])
            };
            if let Some(h) = head {
                match hexval(h) {
                    Some(d) => out.push(d),
                    None => return Ok(Value::Null),
                }
            }
            for p in rest.chunks(2) {
                match (hexval(p[0]), hexval(p[1])) {
                    (Some(x), Some(y)) => out.push(x * 16 + y),
                    _ => return Ok(Value::Null),
                }
            }
            Value::Str(out)
        }
        Func::Field => {
            let needle = arg(0);
            if needle.is_null() {
                return Ok(Value::Int(0));
            }
            let pos = a[1..].iter().position(|v| {
                compare(&needle, v, Collation::Utf8mb4GeneralCi) == Some(Ordering::Equal)
            });
            Value::Int(pos.map_or(0, |p| p as i64 + 1))
        }
        Func::FindInSet => {
            let needle = text_of(&arg(0));
            let list = text_of(&arg(1));
            if needle.contains(&b',') || list.is_empty() {
                return Ok(Value::Int(0));
            }
            let pos = list
                .split(|&c| c == b',')
                .position(|item| Collation::Utf8mb4GeneralCi.cmp(item, &needle) == Ordering::Equal);
            Value::Int(pos.map_or(0, |p| p as i64 + 1))
        }
        Func::Elt => {
            let Some(n) = to_i64(&arg(0)) else {
                return Ok(Value::Null);
            };
            if n < 1 || n as u64 >= a.len() as u64 {
                return Ok(Value::Null);
            }
            match &a[n as usize] {
                Value::Null => Value::Null,
                v => Value::Str(text_of(v)),
            }
        }
        Func::Ascii => Value::Int(text_of(&arg(0)).first().map_or(0, |&b| i64::from(b))),
        Func::Ord => {
            let t = text_of(&arg(0));
            let width = match t.first() {
                None => return Ok(Value::Int(0)),
                Some(&b) if b < 0x80 => 1,
                Some(&b) if b >= 0xF0 => 4,
                Some(&b) if b >= 0xE0 => 3,
                Some(&b) if b >= 0xC0 => 2,
                Some(_) => 1,
            };
            let bytes = t.get(..width).unwrap_or(&t[..1]);
            Value::Int(bytes.iter().fold(0i64, |acc, &b| acc * 256 + i64::from(b)))
        }
        Func::Ltrim => {
            let t = text_of(&arg(0));
            let k = t.iter().take_while(|&&c| c == b' ').count();
            Value::Str(t[k..].to_vec())
        }
        Func::Rtrim => {
            let t = text_of(&arg(0));
            let k = t.iter().rev().take_while(|&&c| c == b' ').count();
            Value::Str(t[..t.len() - k].to_vec())
        }
        Func::Strcmp => {
            let o = Collation::Utf8mb4GeneralCi.cmp(&text_of(&arg(0)), &text_of(&arg(1)));
            Value::Int(match o {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            })
        }
        Func::Insert => {
            let (src, pos, len, new) = (chars(&arg(0)), int(&arg(1)), int(&arg(2)), chars(&arg(3)));
            let n = src.len() as i64;
            if pos < 1 || pos > n {
                return Ok(s(src.into_iter().collect()));
            }
            let start = (pos - 1) as usize;
            let end = if len < 0 || len > n - pos + 1 {
                src.len()
            } else {
                start + len as usize
            };
            let bytes: usize = src[..start]
                .iter()
                .chain(&new)
                .chain(&src[end..])
                .map(|c| c.len_utf8())
                .sum();
            if !fits(env, "insert", bytes as u128) {
                return Ok(Value::Null);
            }
            s(src[..start].iter().chain(&new).chain(&src[end..]).collect())
        }
        Func::Md5 => {
            use md5::Digest;
            s(hex_lower(&md5::Md5::digest(text_of(&arg(0)))))
        }
        Func::Sha1 => {
            use sha1::Digest;
            s(hex_lower(&sha1::Sha1::digest(text_of(&arg(0)))))
        }
        Func::Sha2 => {
            use sha2::Digest;
            let t = text_of(&arg(0));
            match int(&arg(1)) {
                0 | 256 => s(hex_lower(&sha2::Sha256::digest(&t))),
                224 => s(hex_lower(&sha2::Sha224::digest(&t))),
                384 => s(hex_lower(&sha2::Sha384::digest(&t))),
                512 => s(hex_lower(&sha2::Sha512::digest(&t))),
                _ => Value::Null,
            }
        }
        Func::Crc32 => Value::Int(i64::from(crc32fast::hash(&text_of(&arg(0))))),
        Func::Char => {
            // Each integer as its big-endian bytes without leading zeros;
            // NULLs are skipped.
            let mut out = Vec::new();
            for v in a.iter().filter(|v| !v.is_null()) {
                let n = int(v) as u32;
                let b = n.to_be_bytes();
                let skip = b.iter().take_while(|&&x| x == 0).count().min(3);
                if n != 0 || skip < 4 {
                    out.extend_from_slice(&b[skip..]);
                }
            }
            Value::Str(out)
        }
        Func::Format => format_number(&arg(0), int(&arg(1))),
        Func::Quote => match arg(0) {
            Value::Null => Value::Str(b"NULL".to_vec()),
            v => {
                let t = text_of(&v);
                let mut out = Vec::with_capacity(t.len() + 2);
                out.push(b'\'');
                for &c in &t {
                    match c {
                        b'\\' | b'\'' => out.extend_from_slice(&[b'\\', c]),
                        0 => out.extend_from_slice(b"\\0"),
                        26 => out.extend_from_slice(b"\\Z"),
                        _ => out.push(c),
                    }
                }
                out.push(b'\'');
                Value::Str(out)
            }
        },
        Func::RegexpLike | Func::RegexpReplace | Func::RegexpSubstr | Func::RegexpInstr => {
            return crate::regexfuncs::call(f, &a, env);
        }
        _ => Value::Null,
    })
}

fn hex_lower(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// FORMAT(x, d): `x` rounded half away from zero to `d` decimals
/// (0..=30), with `,` between groups of three digits.
fn format_number(x: &Value, d: i64) -> Value {
    let d = d.clamp(0, 30) as u8;
    let text = match x {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(..) => {
            let (digits, scale) = match x {
                Value::Int(i) => (i128::from(*i), 0u8),
                Value::UInt(u) => (i128::from(*u), 0),
                Value::Decimal(v, s) => (*v, *s),
                _ => (0, 0),
            };
            let scaled = if scale > d {
                let p = 10i128.pow(u32::from(scale - d));
                let (q, r) = (digits / p, digits % p);
                if r.abs() * 2 >= p {
                    q + digits.signum()
                } else {
                    q
                }
            } else {
                digits.saturating_mul(10i128.pow(u32::from(d - scale)))
            };
            crate::types::format_decimal(scaled, d)
        }
        other => {
            let f = crate::expr::num_f64(other).unwrap_or(0.0);
            if !f.is_finite() {
                return Value::Str(b"0".to_vec());
            }
            let p = 10f64.powi(i32::from(d));
            let r = (f * p).round() / p;
            format!("{r:.prec$}", prec = usize::from(d))
        }
    };
    let (neg, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text.as_str()),
    };
    let (int_part, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut grouped = String::new();
    for (i, c) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let mut out = String::new();
    if neg && (int_part.bytes().any(|b| b != b'0') || frac.bytes().any(|b| b != b'0')) {
        out.push('-');
    }
    out.push_str(&grouped);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    s(out)
}

fn concat_ws(a: &[Value], env: &dyn Env) -> Value {
    let sep = text_of(&a[0]);
    let parts: Vec<Vec<u8>> = a[1..]
        .iter()
        .filter(|v| !v.is_null())
        .map(text_of)
        .collect();
    let size: u128 = parts.iter().map(|p| p.len() as u128).sum::<u128>()
        + sep.len() as u128 * parts.len().saturating_sub(1) as u128;
    if !fits(env, "concat_ws", size) {
        return Value::Null;
    }
    Value::Str(parts.join(sep.as_slice()))
}

fn match_positions(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if hay[i..].starts_with(needle) {
            out.push(i);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    out
}

fn count_matches(hay: &[u8], needle: &[u8]) -> usize {
    match_positions(hay, needle).len()
}
