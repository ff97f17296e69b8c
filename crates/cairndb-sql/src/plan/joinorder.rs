//! Join order: the order in which a SELECT's inner-joined FROM items
//! (comma joins, `JOIN`, `CROSS JOIN`, `INNER JOIN`) are read, up to the
//! first LEFT join.
//!
//! The nested loop reads the first source once and each later one once
//! per row of the sources before it, so the order decides whether a
//! join of many tables reads each through a key or builds cross
//! products: `FROM t1, t2, t3 WHERE t3.a = t1.b AND t2.a = t3.b` read in
//! FROM order joins t2 to t1 with no condition between them. The order
//! is chosen greedily, without statistics: first the source whose own
//! conditions bind an index best (a primary-key point on a constant
//! first), then, step by step, the remaining source that the conditions
//! bind best given the sources already placed (a key lookup on a column
//! of a placed source above a range, a range above an equality with a
//! placed source that no index serves, which a hash join reads, and
//! that above no condition at all). Of sources that tie, the one with
//! fewer rows by the statistics of the last `ANALYZE TABLE` comes first
//! when both tables have them (the smaller table drives the loop),
//! unless the larger one would then be read worse than the smaller one
//! would after it (a key lookup lost to a hash join); other ties keep
//! FROM order, so a query whose FROM order is already a chain
//! of key lookups is read as written.
//!
//! An inner join's ON says what its WHERE says, so before reordering
//! the ONs of the reordered sources are folded into the WHERE; the
//! caller then pushes each conjunct down to the first source at which
//! all it reads is known. Only the sources before the first LEFT join
//! are reordered (they are the same set in any order, so a later LEFT
//! join's ON still reads only sources before it); the LEFT-joined ones
//! and every source after them keep FROM order, and so does a query with
//! `STRAIGHT_JOIN` or one whose first join is a `RIGHT JOIN` (read as
//! its mirrored LEFT join). Only the reading order changes: the columns
//! and the rows of the answer are the same, in another order where no
//! ORDER BY fixes one (as in MySQL).
//!
//! Pure planning: no locks, no I/O.

use super::access::{best_path, Avail};
use super::*;

/// Reorders `sources` (inner-joined, at least two, the first sources
/// of a FROM) for reading and folds their ON conditions into `filter`.
/// `rows[i]` is source `i`'s row count when its table was analyzed.
pub(super) fn reorder(sources: &mut [Source], filter: &mut Option<Expr>, rows: &[Option<u64>]) {
    // Every ON, then the WHERE: the conditions the joined rows meet.
    let mut owned: Vec<Expr> = Vec::new();
    for src in sources.iter_mut() {
        let on = match src {
            Source::Table { on, .. } | Source::Derived { on, .. } => on,
        };
        owned.extend(on.take());
    }
    owned.extend(filter.take());
    let mut conj: Vec<&Expr> = Vec::new();
    for e in &owned {
        conjuncts(e, &mut conj);
    }
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(sources.len());
    let mut rest: Vec<usize> = (0..sources.len()).collect();
    let mut order: Vec<usize> = Vec::with_capacity(sources.len());
    while !rest.is_empty() {
        let mut pick = 0;
        let mut best = None;
        for (k, &i) in rest.iter().enumerate() {
            let Some(src) = sources.get(i) else {
                continue;
            };
            let score = score(src, &conj, Avail(&spans));
            // Fewer rows by the statistics, and no worse a read for the
            // other one next: a smaller table must not turn the larger
            // one's key lookups into a hash join or scans.
            let fewer = || {
                let at = |k: usize| rest.get(k).and_then(|&i| rows.get(i).copied().flatten());
                if !matches!((at(k), at(pick)), (Some(a), Some(b)) if a < b) {
                    return false;
                }
                let Some(other) = rest.get(pick).and_then(|&i| sources.get(i)) else {
                    return false;
                };
                let next = |first: &Source, then: &Source| {
                    let mut with = spans.clone();
                    with.push(first.span());
                    self::score(then, &conj, Avail(&with))
                };
                next(src, other) >= next(other, src)
            };
            if best.is_none_or(|b| score > b || (score == b && fewer())) {
                best = Some(score);
                pick = k;
            }
        }
        let i = rest.remove(pick);
        if let Some(src) = sources.get(i) {
            spans.push(src.span());
        }
        order.push(i);
    }
    *filter = and_all(&conj);
    // Put source order[k] at position k; `at[j]` is the original index
    // of the source now at position j.
    let mut at: Vec<usize> = (0..sources.len()).collect();
    for (k, i) in order.into_iter().enumerate() {
        if let Some(j) = at.iter().position(|x| *x == i) {
            sources.swap(k, j);
            at.swap(k, j);
        }
    }
}

/// How well the conditions bind `src` once the slots of `avail` are
/// known: an index path's score (see [`best_path`]), else 2 when an
/// equality ties one of its columns to a known column (a hash join can
/// read it), else 0.
fn score(src: &Source, conj: &[&Expr], avail: Avail) -> u32 {
    if let Source::Table { t, .. } = src {
        if let Some((s, _)) = best_path(t, conj, avail, false) {
            return s;
        }
    }
    let (lo, hi) = src.span();
    let mine = |s: usize| s >= lo && s < hi;
    let tied = conj.iter().any(|e| match e {
        Expr::Binary(BinOp::Eq, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Column(x), Expr::Column(y)) => {
                (mine(*x) && avail.has(*y)) || (mine(*y) && avail.has(*x))
            }
            _ => false,
        },
        _ => false,
    });
    if tied {
        2
    } else {
        0
    }
}
