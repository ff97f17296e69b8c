//! How deep a statement's trees can be, read from its text before it is
//! parsed, and the stack that a statement of that depth runs on.
//!
//! `sqlparser` builds a chain of binary operators (`1+1+...+1`, `a OR b OR
//! ...`) as a tree as deep as the chain, without recursing while it
//! parses; dropping, cloning, compiling and evaluating such a tree
//! recurse over it. A 20 KB query can therefore need megabytes of stack.
//! [`bound`] scans the text once and returns an upper bound on the depth
//! of any tree parsed from it; [`run`] runs a closure with at least the
//! stack that depth needs (growing it on the heap through `stacker` only
//! when the calling thread has too little left) or refuses the statement
//! with MySQL's error 1436 when the bound is past [`MAX_LEVELS`].
//!
//! The bound counts, for each position in the text, the operators met
//! since the last comma at each open parenthesis level, plus the open
//! levels themselves: siblings (select items, IN lists, rows of VALUES)
//! do not add up, while every operator of a chain may add one level.
//! Quoted strings, quoted identifiers and comments are skipped.
//! Keywords that open a nested expression without a parenthesis (`NOT`,
//! `CASE`, `INTERVAL`, `BINARY`, ...) count as operators too.
//!
//! No state; no locking.

use crate::error::{SqlError, SqlResult};

/// The deepest statement accepted: past this bound, error 1436. About
/// one hundred thousand chained operators, or a 1 MB `OR` chain.
pub(crate) const MAX_LEVELS: usize = 100_000;

/// Stack each level may take across the recursive walks of one
/// statement (dropping and cloning the parsed tree, compiling, planning,
/// evaluating). Debug builds have frames several times larger.
const PER_LEVEL: usize = if cfg!(debug_assertions) {
    6 << 10
} else {
    1 << 10
};

/// Stack any statement may need whatever its depth: the parser's own
/// recursion (bounded by its recursion limit, each level growing its own
/// stack), planning and execution.
const BASE: usize = 512 << 10;

/// An upper bound on the depth of the trees parsed from `sql`.
pub(crate) fn bound(sql: &str) -> usize {
    let b = sql.as_bytes();
    // Operators since the last comma, per open parenthesis level.
    let mut levels: Vec<usize> = vec![0];
    // Sum of `levels` plus the open levels.
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut i = 0;
    let op = |levels: &mut Vec<usize>, depth: &mut usize, n: usize| {
        if let Some(l) = levels.last_mut() {
            *l += n;
        }
        *depth += n;
    };
    while let Some(&c) = b.get(i) {
        match c {
            b'\'' | b'"' | b'`' => {
                i += 1;
                while let Some(&d) = b.get(i) {
                    if d == b'\\' && c != b'`' {
                        i += 2;
                        continue;
                    }
                    if d == c {
                        if b.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            b'#' => {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|d| d.is_ascii_whitespace()) =>
            {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
                continue;
            }
            // A comment, not an executable one (`/*! ... */`, whose
            // content is SQL).
            b'/' if b.get(i + 1) == Some(&b'*') && b.get(i + 2) != Some(&b'!') => {
                i += 2;
                while i < b.len() && !(b.get(i) == Some(&b'*') && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'(' => {
                levels.push(0);
                depth += PAREN_LEVELS;
            }
            b')' if levels.len() > 1 => {
                let l = levels.pop().unwrap_or(0);
                depth = depth.saturating_sub(l + PAREN_LEVELS);
            }
            b',' => {
                if let Some(l) = levels.last_mut() {
                    depth = depth.saturating_sub(*l);
                    *l = 0;
                }
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b'<' | b'>' | b'!' | b'&' | b'|' | b'^'
            | b'~' | b':' => op(&mut levels, &mut depth, 1),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|d| d.is_ascii_alphanumeric() || *d == b'_' || *d == b'$')
                {
                    i += 1;
                }
                if let Some(w) = b.get(start..i).filter(|w| is_operator_word(w)) {
                    // A query level takes many frames in the parser, the
                    // planner and the executor.
                    let n = if w.eq_ignore_ascii_case(b"SELECT") {
                        QUERY_LEVELS
                    } else {
                        1
                    };
                    op(&mut levels, &mut depth, n);
                    max = max.max(depth);
                }
                continue;
            }
            _ => {}
        }
        max = max.max(depth);
        i += 1;
    }
    max
}

/// The levels an open parenthesis counts for (a parenthesised query
/// takes several large frames of the parser per level).
const PAREN_LEVELS: usize = 16;

/// The levels a `SELECT` counts for.
const QUERY_LEVELS: usize = 32;

/// Keywords that may add a level to an expression tree.
fn is_operator_word(w: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "AND",
        "OR",
        "XOR",
        "NOT",
        "IS",
        "IN",
        "LIKE",
        "BETWEEN",
        "DIV",
        "MOD",
        "REGEXP",
        "RLIKE",
        "COLLATE",
        "SOUNDS",
        "ESCAPE",
        "MEMBER",
        "BINARY",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "INTERVAL",
        "EXISTS",
        "ANY",
        "ALL",
        "SOME",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "SELECT",
    ];
    w.len() <= 8 && WORDS.iter().any(|k| k.as_bytes().eq_ignore_ascii_case(w))
}

/// Error 1436 for a statement whose trees may be `levels` deep.
pub(crate) fn too_deep(levels: usize) -> SqlError {
    SqlError::new(
        1436,
        "HY000",
        format!(
            "Thread stack overrun: the statement nests expressions up to {levels} levels \
             deep; the limit is {MAX_LEVELS}"
        ),
    )
}

/// The stack a statement `levels` deep needs.
fn stack_for(levels: usize) -> usize {
    BASE + levels.saturating_mul(PER_LEVEL)
}

/// Runs `f` with the stack a statement `levels` deep needs: on the
/// calling thread's own stack when enough of it is left, else on a stack
/// grown for it. Error 1436 past [`MAX_LEVELS`].
pub(crate) fn run<T>(levels: usize, f: impl FnOnce() -> SqlResult<T>) -> SqlResult<T> {
    if levels > MAX_LEVELS {
        return Err(too_deep(levels));
    }
    on_stack(levels, f)
}

/// Runs `f` (a drop, say) with the stack `levels` need, with no limit.
pub(crate) fn on_stack<T>(levels: usize, f: impl FnOnce() -> T) -> T {
    let need = stack_for(levels);
    stacker::maybe_grow(need, need + (1 << 20), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_counts_chains_not_siblings() {
        assert!(bound("SELECT 1") <= QUERY_LEVELS + 2);
        let chain = format!("SELECT 1{}", "+1".repeat(1000));
        assert!(bound(&chain) >= 1000);
        let ors = format!("SELECT * FROM t WHERE a=0{}", " OR a=1".repeat(500));
        assert!(bound(&ors) >= 500);
        let rows = format!("INSERT INTO t VALUES (-1,'a'){}", ",(-2,'b')".repeat(5000));
        assert!(bound(&rows) < PAREN_LEVELS + 10, "{}", bound(&rows));
        let list = format!("SELECT * FROM t WHERE a IN (1{})", ",-1".repeat(5000));
        assert!(bound(&list) < QUERY_LEVELS + PAREN_LEVELS + 10);
    }

    #[test]
    fn bound_skips_strings_and_comments() {
        let s = format!(
            "SELECT '{}' /* {} */ -- {}\n",
            "+".repeat(900),
            "+".repeat(900),
            "+".repeat(900)
        );
        assert!(bound(&s) < QUERY_LEVELS + 5, "{}", bound(&s));
        let q = format!("SELECT `{}`", "-".repeat(900));
        assert!(bound(&q) < QUERY_LEVELS + 5);
        let esc = format!("SELECT 'it\\'s {}'", "*".repeat(900));
        assert!(bound(&esc) < QUERY_LEVELS + 5);
    }

    #[test]
    fn bound_counts_nesting() {
        let nest = format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300));
        assert!(bound(&nest) >= 300);
        let nots = format!("SELECT {}1", "NOT ".repeat(300));
        assert!(bound(&nots) >= 300);
    }

    #[test]
    fn run_refuses_past_the_limit() {
        let r = run(MAX_LEVELS + 1, || Ok(()));
        assert!(matches!(r, Err(ref e) if e.code == 1436), "{r:?}");
        assert_eq!(run(10, || Ok(7)), Ok(7));
    }
}
