//! Regular expressions: `x REGEXP p` / `RLIKE`, REGEXP_LIKE,
//! REGEXP_REPLACE, REGEXP_SUBSTR and REGEXP_INSTR with MySQL 8.0's
//! arguments, on the `regex` crate (whose syntax covers what
//! applications send to MySQL's ICU engine: classes, anchors,
//! repetitions, groups, alternation, `\d`-style escapes; it has no
//! back-references or look-around, which are refused as syntax errors).
//!
//! Matching is case-insensitive unless the operand's collation is binary
//! or `utf8mb4_bin` (the compiler passes that as a last, hidden
//! argument) or the match type says otherwise. A bad pattern is one of
//! MySQL's 3685..3700 errors. A compiled pattern is kept per thread and
//! reused while the same pattern comes again (a constant pattern is
//! compiled once per statement, not once per row). No locks, no I/O.

use std::cell::RefCell;
use std::sync::Arc;

use regex::{Regex, RegexBuilder};

use crate::error::{SqlError, SqlResult};
use crate::expr::{text_of, to_i64, Env, Func};
use crate::types::Value;

thread_local! {
    static LAST: RefCell<Option<(String, String, Arc<Regex>)>> = const { RefCell::new(None) };
}

/// MySQL's error for a pattern the engine refuses.
fn pattern_error(e: &regex::Error) -> SqlError {
    let msg = e.to_string();
    let (code, text) = if msg.contains("unclosed group") || msg.contains("unopened group") {
        (3691, "Mismatched parenthesis in regular expression.")
    } else if msg.contains("unclosed character class") {
        (
            3696,
            "The regular expression contains an unclosed bracket expression.",
        )
    } else if msg.contains("repetition quantifier") || msg.contains("counted repetition") {
        if msg.contains("invalid") && msg.contains("range") {
            (
                3693,
                "The maximum is less than the minumum in a {min,max} interval.",
            )
        } else {
            (3692, "Incorrect description of a {min,max} interval.")
        }
    } else if msg.contains("invalid character class range") {
        (3697, "Illegal character range in regular expression.")
    } else if msg.contains("unrecognized escape") {
        (3689, "Unrecognized escape sequence in regular expression.")
    } else if msg.contains("size limit") {
        (
            3700,
            "The pattern exceeds the maximum size of a regular expression.",
        )
    } else {
        (
            3688,
            "Syntax error in regular expression on line 1, character 1.",
        )
    };
    SqlError::new(code, "HY000", text)
}

/// The compiled `pattern` under the match-type `flags` ("c", "i", "m",
/// "n", "u"; the rightmost of c/i wins).
fn compile(pattern: &str, flags: &str, name: &str) -> SqlResult<Arc<Regex>> {
    let hit = LAST.with(|l| {
        l.borrow()
            .as_ref()
            .filter(|(p, f, _)| p == pattern && f == flags)
            .map(|(_, _, r)| r.clone())
    });
    if let Some(r) = hit {
        return Ok(r);
    }
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(1 << 22);
    for c in flags.chars() {
        match c {
            'c' => {
                b.case_insensitive(false);
            }
            'i' => {
                b.case_insensitive(true);
            }
            'm' => {
                b.multi_line(true);
            }
            'n' => {
                b.dot_matches_new_line(true);
            }
            'u' => {}
            _ => {
                return Err(SqlError::new(
                    1210,
                    "HY000",
                    format!("Incorrect arguments to {name}"),
                ))
            }
        }
    }
    let r = Arc::new(b.build().map_err(|e| pattern_error(&e))?);
    LAST.with(|l| *l.borrow_mut() = Some((pattern.into(), flags.into(), r.clone())));
    Ok(r)
}

/// Byte offset of the 1-based character position `pos` in `s`; error
/// 3686 when it lies past the end (one past it is allowed).
fn byte_at(s: &str, pos: i64) -> SqlResult<usize> {
    let bad = || {
        SqlError::new(
            3686,
            "HY000",
            "Index out of bounds in regular expression search.",
        )
    };
    if pos < 1 {
        return Err(bad());
    }
    let k = (pos - 1) as usize;
    if k == s.chars().count() {
        return Ok(s.len());
    }
    s.char_indices().nth(k).map(|(b, _)| b).ok_or_else(bad)
}

fn char_pos(s: &str, byte: usize) -> i64 {
    s.get(..byte).map_or(0, |p| p.chars().count() as i64) + 1
}

/// Evaluates a regular-expression function over evaluated `a`, whose
/// last value is the compiler's default match type.
pub fn call(f: Func, a: &[Value], _env: &dyn Env) -> SqlResult<Value> {
    let name = match f {
        Func::RegexpReplace => "regexp_replace",
        Func::RegexpSubstr => "regexp_substr",
        Func::RegexpInstr => "regexp_instr",
        _ => "regexp_like",
    };
    let (default, user) = match a.split_last() {
        Some((d, rest)) => (d, rest),
        None => return Ok(Value::Null),
    };
    let text = String::from_utf8_lossy(&text_of(user.first().unwrap_or(&Value::Null))).into_owned();
    let pattern =
        String::from_utf8_lossy(&text_of(user.get(1).unwrap_or(&Value::Null))).into_owned();
    // Where the user's match type is, by function.
    let mt_at = match f {
        Func::RegexpLike => 2,
        Func::RegexpReplace => 5,
        Func::RegexpSubstr => 4,
        _ => 5,
    };
    let mut flags = String::from_utf8_lossy(&text_of(default)).into_owned();
    if let Some(m) = user.get(mt_at) {
        flags.push_str(&String::from_utf8_lossy(&text_of(m)));
    }
    let re = compile(&pattern, &flags, name)?;
    let int_at = |i: usize, dflt: i64| user.get(i).and_then(to_i64).unwrap_or(dflt);
    Ok(match f {
        Func::RegexpLike => Value::Int(i64::from(re.is_match(&text))),
        Func::RegexpReplace => {
            let repl = String::from_utf8_lossy(&text_of(&user[2])).into_owned();
            let start = byte_at(&text, int_at(3, 1))?;
            let occurrence = int_at(4, 0);
            let (head, tail) = text.split_at(start);
            let mut out = String::from(head);
            let mut last = 0;
            for (n, m) in re.find_iter(tail).enumerate() {
                let n = n as i64 + 1;
                if occurrence == 0 || n == occurrence {
                    out.push_str(&tail[last..m.start()]);
                    out.push_str(&expand(&re, tail, m.start(), &repl));
                    last = m.end();
                    if occurrence != 0 {
                        break;
                    }
                }
            }
            out.push_str(&tail[last..]);
            Value::Str(out.into_bytes())
        }
        Func::RegexpSubstr => {
            let start = byte_at(&text, int_at(2, 1))?;
            let occurrence = int_at(3, 1).max(1);
            match re.find_iter(&text[start..]).nth((occurrence - 1) as usize) {
                Some(m) => Value::Str(m.as_str().as_bytes().to_vec()),
                None => Value::Null,
            }
        }
        _ => {
            let start = byte_at(&text, int_at(2, 1))?;
            let occurrence = int_at(3, 1).max(1);
            let end_opt = int_at(4, 0);
            if !(0..=1).contains(&end_opt) {
                return Err(SqlError::new(
                    1210,
                    "HY000",
                    "Incorrect arguments to regexp_instr: return_option must be 1 or 0.",
                ));
            }
            match re.find_iter(&text[start..]).nth((occurrence - 1) as usize) {
                Some(m) => {
                    let b = start + if end_opt == 1 { m.end() } else { m.start() };
                    Value::Int(char_pos(&text, b))
                }
                None => Value::Int(0),
            }
        }
    })
}

/// The replacement for the match at `at` in `hay`, with `$n` / `${n}`
/// group references as MySQL's engine reads them.
fn expand(re: &Regex, hay: &str, at: usize, repl: &str) -> String {
    match re.captures_at(hay, at) {
        Some(c) => {
            let mut out = String::new();
            c.expand(repl, &mut out);
            out
        }
        None => repl.to_string(),
    }
}
