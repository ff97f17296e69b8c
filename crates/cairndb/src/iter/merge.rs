//! The merging iterator: one ordered stream out of many sorted children
//! (memtables, level-0 tables, one iterator per deeper level).
//!
//! Invariant while moving forward: every valid child is positioned at the
//! first entry > the current key, except the current child, which is at the
//! current key. Moving backward mirrors it. Switching direction re-seeks the
//! other children, as LevelDB's merger does. Children are few (about ten), so
//! the smallest is found by a linear scan, which beats a heap at this size.
//! Equal keys across children cannot occur (sequence numbers are unique).
//!
//! Each child's validity and key are cached beside it (LevelDB's
//! `IteratorWrapper`), refreshed whenever that child moves, so the scans and
//! `key()` compare plain byte strings instead of calling through the
//! child's iterator layers (a level iterator is four deep). The cache is a
//! copy, refreshed by one `memcpy` per move of the one child that moved.
//!
//! The scan also remembers the runner-up: the best child other than the
//! current one. Only the current child moves on `next`/`prev`, so the
//! runner-up stays the best of the others; when the current child's new
//! key still beats the runner-up's, it stays current after one comparison
//! instead of a scan; when it loses, the runner-up becomes current and one
//! scan of the others' cached keys finds the next runner-up. Runs of keys
//! from one child (a scan over a level that holds most of the data) cost one
//! comparison per step.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::key::compare_internal;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A child and a copy of its position: `valid` and `key` always equal the
/// iterator's own `valid()` and `key()` (every move goes through
/// [`Child::refresh`]).
struct Child {
    iter: Box<dyn InternalIterator>,
    valid: bool,
    key: Vec<u8>,
}

impl Child {
    #[inline]
    fn refresh(&mut self) {
        self.valid = self.iter.valid();
        if self.valid {
            self.key.clear();
            self.key.extend_from_slice(self.iter.key());
        }
    }
}

/// Merges sorted children into one sorted stream.
pub struct MergingIterator {
    children: Vec<Child>,
    current: Option<usize>,
    /// The best valid child other than `current` in `direction` (see the
    /// module doc); `None` when no other child is valid.
    runner_up: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// A merging iterator over `children`.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children: children
                .into_iter()
                .map(|iter| Child {
                    iter,
                    valid: false,
                    key: Vec::new(),
                })
                .collect(),
            current: None,
            runner_up: None,
            direction: Direction::Forward,
        }
    }

    /// Moves every child with `f`, then picks the best in `direction`.
    fn position_all(
        &mut self,
        direction: Direction,
        mut f: impl FnMut(&mut Box<dyn InternalIterator>),
    ) {
        for c in &mut self.children {
            f(&mut c.iter);
            c.refresh();
        }
        self.direction = direction;
        self.find_best(match direction {
            Direction::Forward => Ordering::Less,
            Direction::Reverse => Ordering::Greater,
        });
    }

    /// Picks the best child (`want`: `Less` for the smallest key, `Greater`
    /// for the largest) and the runner-up, by the cached keys.
    fn find_best(&mut self, want: Ordering) {
        self.current = self.best_except(None, want);
        self.runner_up = self.best_except(self.current, want);
    }

    /// Moves the current child one step (`want`: `Less` forward, `Greater`
    /// backward): it stays current if its new key still beats the
    /// runner-up's, else a scan of the cached keys.
    #[inline]
    fn step(&mut self, cur: usize, want: Ordering) {
        let c = &mut self.children[cur];
        if want == Ordering::Less {
            c.iter.next();
        } else {
            c.iter.prev();
        }
        c.refresh();
        if c.valid {
            match self.runner_up {
                None => return,
                Some(r)
                    if compare_internal(&self.children[cur].key, &self.children[r].key) == want =>
                {
                    return
                }
                Some(_) => {}
            }
        }
        // The runner-up is now the best; the best of the rest (the child
        // that moved included) becomes the runner-up.
        self.current = self.runner_up;
        self.runner_up = self.best_except(self.current, want);
    }

    /// The best valid child other than `skip`, by the cached keys. Ties
    /// cannot occur (see the module doc); the scan order only decides among
    /// equal keys of a malformed input, as LevelDB's merger does: the first
    /// child wins going forward, the last going backward.
    fn best_except(&self, skip: Option<usize>, want: Ordering) -> Option<usize> {
        let n = self.children.len();
        let mut best: Option<usize> = None;
        for j in 0..n {
            let i = if want == Ordering::Less { j } else { n - 1 - j };
            let c = &self.children[i];
            if !c.valid || Some(i) == skip {
                continue;
            }
            match best {
                Some(b) if compare_internal(&c.key, &self.children[b].key) != want => {}
                _ => best = Some(i),
            }
        }
        best
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.position_all(Direction::Forward, |i| i.seek_to_first());
    }

    fn seek_to_last(&mut self) {
        self.position_all(Direction::Reverse, |i| i.seek_to_last());
    }

    fn seek(&mut self, target: &[u8]) {
        self.position_all(Direction::Forward, |i| i.seek(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.position_all(Direction::Reverse, |i| i.seek_for_prev(target));
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Position every other child after the current key.
            let key = std::mem::take(&mut self.children[cur].key);
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.iter.seek(&key);
                    if c.iter.valid() && compare_internal(&key, c.iter.key()) == Ordering::Equal {
                        c.iter.next();
                    }
                    c.refresh();
                }
            }
            self.children[cur].key = key;
            self.direction = Direction::Forward;
            let c = &mut self.children[cur];
            c.iter.next();
            c.refresh();
            self.find_best(Ordering::Less);
            return;
        }
        self.step(cur, Ordering::Less);
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Position every other child before the current key.
            let key = std::mem::take(&mut self.children[cur].key);
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.iter.seek(&key);
                    if c.iter.valid() {
                        c.iter.prev();
                    } else {
                        c.iter.seek_to_last();
                    }
                    c.refresh();
                }
            }
            self.children[cur].key = key;
            self.direction = Direction::Reverse;
            let c = &mut self.children[cur];
            c.iter.prev();
            c.refresh();
            self.find_best(Ordering::Greater);
            return;
        }
        self.step(cur, Ordering::Greater);
    }

    #[inline]
    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => &self.children[i].key,
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].iter.value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.iter.status()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIterator;
    use crate::key::{make_internal_key, ValueType};

    fn kv(k: &str, seq: u64) -> (Vec<u8>, Vec<u8>) {
        (
            make_internal_key(k.as_bytes(), seq, ValueType::Value),
            format!("{k}@{seq}").into_bytes(),
        )
    }

    #[test]
    fn merges_and_switches_direction() {
        let a = VecIterator::new(vec![kv("a", 1), kv("c", 3), kv("e", 5)]);
        let b = VecIterator::new(vec![kv("b", 2), kv("c", 7), kv("f", 6)]);
        let c = VecIterator::new(vec![]);
        let mut m = MergingIterator::new(vec![Box::new(a), Box::new(b), Box::new(c)]);
        m.seek_to_first();
        let mut fwd = Vec::new();
        while m.valid() {
            fwd.push(String::from_utf8(m.value().to_vec()).unwrap());
            m.next();
        }
        assert_eq!(fwd, ["a@1", "b@2", "c@7", "c@3", "e@5", "f@6"]);
        m.seek_to_last();
        let mut back = Vec::new();
        while m.valid() {
            back.push(String::from_utf8(m.value().to_vec()).unwrap());
            m.prev();
        }
        fwd.reverse();
        assert_eq!(back, fwd);
        // Zig-zag around c@3.
        m.seek(&make_internal_key(b"c", 3, ValueType::Value));
        assert_eq!(m.value(), b"c@3");
        m.prev();
        assert_eq!(m.value(), b"c@7");
        m.prev();
        assert_eq!(m.value(), b"b@2");
        m.next();
        assert_eq!(m.value(), b"c@7");
        m.next();
        assert_eq!(m.value(), b"c@3");
        m.next();
        assert_eq!(m.value(), b"e@5");
        m.seek_for_prev(&make_internal_key(b"d", 0, ValueType::Value));
        assert_eq!(m.value(), b"c@3");
    }

    /// Random children and random moves against the sorted union: the
    /// runner-up shortcut must never skip or repeat an entry.
    #[test]
    fn random_moves_match_the_sorted_union() {
        use proptest::prelude::*;
        let child = proptest::collection::vec((0u8..24, 0u8..3), 0..30);
        let moves = proptest::collection::vec((0u8..6, 0u8..26), 1..60);
        proptest!(ProptestConfig::with_cases(300), |(
            children in proptest::collection::vec(child, 1..6),
            moves in moves,
        )| {
            // Unique sequence numbers across all children.
            let mut seq = 1u64;
            let mut all = Vec::new();
            let mut iters: Vec<Box<dyn InternalIterator>> = Vec::new();
            for c in &children {
                let mut entries = Vec::new();
                for &(k, _) in c {
                    let e = kv(&format!("k{k:02}"), seq);
                    seq += 1;
                    all.push(e.clone());
                    entries.push(e);
                }
                iters.push(Box::new(VecIterator::new(entries)));
            }
            all.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let mut m = MergingIterator::new(iters);
            // Model position: Some(index into all) or None.
            let mut pos: Option<usize> = None;
            for (op, k) in moves {
                let target = make_internal_key(format!("k{k:02}").as_bytes(), 2, ValueType::Value);
                match op {
                    0 => { m.seek_to_first(); pos = if all.is_empty() { None } else { Some(0) }; }
                    1 => { m.seek_to_last(); pos = all.len().checked_sub(1); }
                    2 => {
                        m.seek(&target);
                        let p = all.partition_point(|e| compare_internal(&e.0, &target).is_lt());
                        pos = (p < all.len()).then_some(p);
                    }
                    3 => {
                        m.seek_for_prev(&target);
                        let p = all.partition_point(|e| !compare_internal(&e.0, &target).is_gt());
                        pos = p.checked_sub(1);
                    }
                    4 => if let Some(p) = pos {
                        m.next();
                        pos = (p + 1 < all.len()).then_some(p + 1);
                    },
                    _ => if let Some(p) = pos {
                        m.prev();
                        pos = p.checked_sub(1);
                    },
                }
                match pos {
                    Some(p) => {
                        prop_assert!(m.valid());
                        prop_assert_eq!(m.key(), all[p].0.as_slice());
                    }
                    None => prop_assert!(!m.valid()),
                }
            }
        });
    }
}
