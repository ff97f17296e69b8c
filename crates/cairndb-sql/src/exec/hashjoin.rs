//! Hash joins: how a joined source that no index serves is read.
//!
//! A source after the first whose rows would be scanned in full for
//! every row of the sources before it (no index serves its join
//! condition), and whose ON condition holds `a = b` between one of its
//! columns and a column of an earlier source of the same comparison
//! class, is read once per execution into a table hashed on those
//! columns; each earlier row then visits only the rows whose key bytes
//! equal its own, in the order the scan gave them, and the whole ON is
//! still checked on each. So the hash only narrows the candidates: the
//! answer is the nested loop's, row for row and in the same order.
//!
//! Key bytes are made so that values equal under SQL `=` for the class
//! get equal bytes (integers of any width and sign by value, strings by
//! their collation's weights, dates and date-times by their packed
//! form). A value of another shape than its class expects goes to a
//! list every probe visits; a NULL key never matches and is left out.
//!
//! A build larger than [`HASH_JOIN_MAX_BYTES`] is dropped and the source
//! is read by the nested loop, as without this module.
//!
//! Owned by one execution of one plan; no locks (the tables live in a
//! `RefCell` of the execution's join state, built on first use).

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use crate::expr::{BinOp, Expr};
use crate::plan::{Access, SelectPlan, Source};
use crate::types::{Collation, ColumnType, Value};

/// Bytes of rows a hash join may hold in memory (estimated); a larger
/// build falls back to the nested loop. docs/sql.md, "Joins".
pub const HASH_JOIN_MAX_BYTES: usize = 128 << 20;

/// How one key part's values become bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKey {
    /// Integers (any width, signed or not): their value.
    Int,
    /// Strings compared under this collation: their weights.
    Str(Collation),
    /// Dates, or date-times and timestamps: their packed integer.
    Packed,
}

/// A source read through a hash table: key parts as (the source's own
/// slot, a slot of an earlier source, how they compare).
#[derive(Debug, Clone)]
pub struct HashJoin {
    /// The key parts, in the ON condition's order.
    pub parts: Vec<(usize, usize, HashKey)>,
}

/// The hash join each source is read by (None: nested loop), by level;
/// empty when no source has one.
pub(crate) fn plan(p: &SelectPlan) -> Vec<Option<HashJoin>> {
    let mut out: Vec<Option<HashJoin>> = Vec::with_capacity(p.sources.len());
    // The slots of the sources joined before each one, in join order.
    let mut earlier: Vec<(usize, usize)> = Vec::with_capacity(p.sources.len());
    for (level, src) in p.sources.iter().enumerate() {
        out.push(if level == 0 {
            None
        } else {
            for_source(p, src, &earlier)
        });
        earlier.push(src.span());
    }
    if out.iter().all(Option::is_none) {
        out.clear();
    }
    out
}

fn for_source(p: &SelectPlan, src: &Source, earlier: &[(usize, usize)]) -> Option<HashJoin> {
    let (lo, hi, on) = match src {
        Source::Table {
            t,
            access: Access::Full,
            on,
            ..
        } => (t.offset, t.offset + t.def.columns.len(), on.as_ref()?),
        Source::Derived {
            offset, width, on, ..
        } => (*offset, offset + width, on.as_ref()?),
        Source::Table { .. } => return None,
    };
    let mut conj = Vec::new();
    crate::plan::conjuncts(on, &mut conj);
    let mut parts = Vec::new();
    for e in conj {
        let Expr::Binary(BinOp::Eq, a, b) = e else {
            continue;
        };
        let (Expr::Column(x), Expr::Column(y)) = (&**a, &**b) else {
            continue;
        };
        let mine = |s: usize| s >= lo && s < hi;
        let before = |s: usize| earlier.iter().any(|(l, h)| s >= *l && s < *h);
        let (own, other) = if mine(*x) && before(*y) {
            (*x, *y)
        } else if mine(*y) && before(*x) {
            (*y, *x)
        } else {
            continue;
        };
        let ta = p.types.get(own).copied().flatten()?;
        let tb = p.types.get(other).copied().flatten()?;
        if let Some(k) = key_class(&ta, &tb) {
            parts.push((own, other, k));
        }
    }
    (!parts.is_empty()).then_some(HashJoin { parts })
}

/// The class two column types compare in when `=` between them is
/// equality of key bytes (None: they compare otherwise, e.g. a string
/// with a number, or two collations).
fn key_class(a: &ColumnType, b: &ColumnType) -> Option<HashKey> {
    use ColumnType as T;
    match (a, b) {
        (T::Int { .. }, T::Int { .. }) => Some(HashKey::Int),
        (T::Str { collation: x, .. }, T::Str { collation: y, .. }) if x == y => {
            Some(HashKey::Str(*x))
        }
        (T::Date, T::Date) => Some(HashKey::Packed),
        (T::DateTime { .. } | T::Timestamp { .. }, T::DateTime { .. } | T::Timestamp { .. }) => {
            Some(HashKey::Packed)
        }
        _ => None,
    }
}

/// What one key part of a value gives.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// Bytes were appended.
    Key,
    /// NULL: equal to nothing.
    Null,
    /// A value of a shape the class does not expect.
    Other,
}

/// Appends the key bytes of `v` under `k`.
pub(crate) fn key_part(out: &mut Vec<u8>, v: &Value, k: HashKey) -> Part {
    match (k, v) {
        (_, Value::Null) => return Part::Null,
        (HashKey::Int, Value::Int(i)) => out.extend_from_slice(&i128::from(*i).to_le_bytes()),
        (HashKey::Int, Value::UInt(u)) => out.extend_from_slice(&i128::from(*u).to_le_bytes()),
        (HashKey::Packed, Value::Date(d) | Value::DateTime(d)) => {
            out.extend_from_slice(&d.to_le_bytes())
        }
        (HashKey::Str(c), Value::Str(s)) => c.put_key(s, out),
        _ => return Part::Other,
    }
    Part::Key
}

/// The key of a row's values at `slot(part)` for each part; `None` for a
/// NULL part, `Some(false)` when a part has another shape.
fn row_key<'a>(
    out: &mut Vec<u8>,
    parts: &[(usize, usize, HashKey)],
    value: impl Fn(&(usize, usize, HashKey)) -> Option<&'a Value>,
) -> Option<bool> {
    out.clear();
    for part in parts {
        match key_part(out, value(part).unwrap_or(&Value::Null), part.2) {
            Part::Key => {}
            Part::Null => return None,
            Part::Other => return Some(false),
        }
    }
    Some(true)
}

/// One source's rows hashed on its key.
pub(crate) struct HashTable {
    /// The rows (a stored table's, read once; empty for a derived table,
    /// whose rows are already held).
    pub rows: Vec<Vec<Value>>,
    map: HashMap<Vec<u8>, Vec<u32>>,
    /// Rows with a key part of an unexpected shape: every probe visits
    /// them.
    always: Vec<u32>,
}

/// A source's hash table, per execution.
pub(crate) enum HashState {
    /// Not needed yet.
    Unbuilt,
    /// Built.
    Built(Rc<HashTable>),
    /// Too large: the source is read by the nested loop.
    TooBig,
}

impl HashTable {
    /// Hashes `rows` (each the source's own columns, its first at slot
    /// `offset`) on `hj`'s own slots; `held`: rows kept in the table
    /// (a stored table's) rather than by the caller.
    pub(crate) fn build(
        hj: &HashJoin,
        offset: usize,
        rows: &[Vec<Value>],
        held: Vec<Vec<Value>>,
    ) -> HashTable {
        let mut map: HashMap<Vec<u8>, Vec<u32>> = HashMap::new();
        let mut always = Vec::new();
        let mut key = Vec::new();
        let source = if held.is_empty() { rows } else { &held[..] };
        for (i, r) in source.iter().enumerate() {
            let Ok(i) = u32::try_from(i) else {
                break;
            };
            match row_key(&mut key, &hj.parts, |p| r.get(p.0 - offset)) {
                None => {}
                Some(false) => always.push(i),
                Some(true) => match map.get_mut(key.as_slice()) {
                    Some(l) => l.push(i),
                    None => {
                        map.insert(key.clone(), vec![i]);
                    }
                },
            }
        }
        HashTable {
            rows: held,
            map,
            always,
        }
    }

    /// The rows an earlier row (`row`, the joined row so far) may match,
    /// ascending: None means every row (its key has an unexpected
    /// shape). A NULL in its key matches nothing.
    pub(crate) fn candidates(
        &self,
        hj: &HashJoin,
        row: &[Value],
        key: &mut Vec<u8>,
    ) -> Option<Cow<'_, [u32]>> {
        match row_key(key, &hj.parts, |p| row.get(p.1)) {
            None => Some(Cow::Borrowed(&[])),
            Some(false) => None,
            Some(true) => {
                let hit = self
                    .map
                    .get(key.as_slice())
                    .map_or(&[][..], |l| l.as_slice());
                if self.always.is_empty() {
                    return Some(Cow::Borrowed(hit));
                }
                let mut out = Vec::with_capacity(hit.len() + self.always.len());
                let (mut a, mut b) = (hit.iter().peekable(), self.always.iter().peekable());
                loop {
                    match (a.peek(), b.peek()) {
                        (Some(x), Some(y)) if x <= y => out.extend(a.next()),
                        (Some(_), Some(_)) => out.extend(b.next()),
                        (Some(_), None) => out.extend(a.next()),
                        (None, Some(_)) => out.extend(b.next()),
                        (None, None) => break,
                    }
                }
                Some(Cow::Owned(out))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_ci_keys_fold_case_and_trailing_spaces() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let k = HashKey::Str(Collation::Utf8mb4GeneralCi);
        assert_eq!(
            key_part(&mut a, &Value::Str(b"Abc  ".to_vec()), k),
            Part::Key
        );
        assert_eq!(key_part(&mut b, &Value::Str(b"aBC".to_vec()), k), Part::Key);
        assert_eq!(a, b);
    }

    #[test]
    fn signed_and_unsigned_integers_of_one_value_share_a_key() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert_eq!(key_part(&mut a, &Value::Int(7), HashKey::Int), Part::Key);
        assert_eq!(key_part(&mut b, &Value::UInt(7), HashKey::Int), Part::Key);
        assert_eq!(a, b);
        let mut c = Vec::new();
        assert_eq!(key_part(&mut c, &Value::Null, HashKey::Int), Part::Null);
        assert_eq!(
            key_part(&mut c, &Value::Double(1.0), HashKey::Int),
            Part::Other
        );
    }

    #[test]
    fn candidates_merge_unexpected_shapes_in_scan_order() {
        let hj = HashJoin {
            parts: vec![(1, 0, HashKey::Int)],
        };
        let rows = vec![
            vec![Value::Int(5)],
            vec![Value::Double(5.0)],
            vec![Value::Int(5)],
            vec![Value::Null],
            vec![Value::Int(6)],
        ];
        let t = HashTable::build(&hj, 1, &rows, Vec::new());
        let mut key = Vec::new();
        let probe = [Value::Int(5), Value::Null];
        let got = t.candidates(&hj, &probe, &mut key).map(|c| c.to_vec());
        assert_eq!(got, Some(vec![0, 1, 2]));
        let probe = [Value::Null, Value::Null];
        let got = t.candidates(&hj, &probe, &mut key).map(|c| c.to_vec());
        assert_eq!(got, Some(vec![]));
        let probe = [Value::Str(b"5".to_vec()), Value::Null];
        assert!(t.candidates(&hj, &probe, &mut key).is_none());
    }
}
