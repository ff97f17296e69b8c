//! A transaction's iterator: its own uncommitted writes (the delta, a
//! sorted map from key to value or tombstone) merged over a database
//! iterator at the transaction's snapshot (the base), in both directions.
//! RocksDB's `BaseDeltaIterator` over a `WriteBatchWithIndex` is the model.
//!
//! Invariant: moving forward, the base and the delta cursor each sit on
//! their first entry `>=` the current key; moving backward, on their last
//! entry `<=` it. The current entry is the smaller (larger) of the two; on
//! equal keys the delta wins, and a delta tombstone hides the key. A change
//! of direction re-seeks both sides from the current key.
//!
//! The delta is a copy-on-write snapshot taken when the iterator is made:
//! writes the transaction makes afterwards are not seen by it. No locks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::error::Result;
use crate::iter::db_iter::DbIterator;
use crate::options::SliceTransform;

/// The write set: key -> value, or None for a delete.
pub(crate) type WriteSet = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Backward,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Current {
    Base,
    Delta,
    None,
}

/// An iterator over a transaction's view: its own writes over its
/// snapshot. Obtained from [`crate::Transaction::iter`]. Same surface as
/// [`DbIterator`].
pub struct TransactionIterator {
    base: DbIterator,
    delta: Arc<WriteSet>,
    /// The delta cursor's key (valid when `delta_valid`).
    delta_key: Vec<u8>,
    delta_valid: bool,
    dir: Dir,
    current: Current,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    extractor: Option<Arc<dyn SliceTransform>>,
    prefix_same_as_start: bool,
    prefix: Option<Vec<u8>>,
}

impl TransactionIterator {
    pub(crate) fn new(
        base: DbIterator,
        delta: Arc<WriteSet>,
        opts: &crate::ReadOptions,
        extractor: Option<Arc<dyn SliceTransform>>,
    ) -> Self {
        TransactionIterator {
            base,
            delta,
            delta_key: Vec::new(),
            delta_valid: false,
            dir: Dir::Forward,
            current: Current::None,
            lower: opts.iterate_lower_bound.clone(),
            upper: opts.iterate_upper_bound.clone(),
            prefix_same_as_start: opts.prefix_same_as_start && extractor.is_some(),
            extractor,
            prefix: None,
        }
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.current != Current::None
    }

    /// The current key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.current {
            Current::Delta => &self.delta_key,
            _ => self.base.key(),
        }
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        match self.current {
            Current::Delta => match self.delta.get(&self.delta_key) {
                Some(Some(v)) => v,
                // The cursor only rests on values (`resolve_*`).
                _ => &[],
            },
            _ => self.base.value(),
        }
    }

    /// The first error met, if any (from the database side).
    pub fn status(&self) -> Result<()> {
        self.base.status()
    }

    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.prefix = None;
        self.base.seek_to_first();
        let from = self.lower.clone();
        self.delta_seek_ge(from.as_deref());
        self.dir = Dir::Forward;
        self.resolve_forward();
    }

    /// Positions at the last key.
    pub fn seek_to_last(&mut self) {
        self.prefix = None;
        self.base.seek_to_last();
        self.delta_seek_last_below_upper();
        self.dir = Dir::Backward;
        self.resolve_backward();
    }

    /// Positions at the first key `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.set_prefix(target);
        self.base.seek(target);
        let from = match &self.lower {
            Some(l) if l.as_slice() > target => l.clone(),
            _ => target.to_vec(),
        };
        self.delta_seek_ge(Some(&from));
        self.dir = Dir::Forward;
        self.resolve_forward();
    }

    /// Positions at the last key `<= target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.set_prefix(target);
        self.base.seek_for_prev(target);
        self.delta_seek_le(target);
        self.dir = Dir::Backward;
        self.resolve_backward();
    }

    /// Replaces the iteration bounds (`iterate_lower_bound`,
    /// `iterate_upper_bound`). The iterator is then unpositioned: seek
    /// before reading. Reading several ranges through one iterator this
    /// way costs one seek each instead of a new iterator each.
    pub fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) {
        self.base.set_bounds(lower.clone(), upper.clone());
        self.lower = lower;
        self.upper = upper;
        self.delta_valid = false;
        self.current = Current::None;
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid() {
            return;
        }
        if self.dir == Dir::Backward {
            // Both sides to their first entry >= the current key.
            let cur = self.key().to_vec();
            self.base.seek(&cur);
            self.delta_seek_ge(Some(&cur));
            self.dir = Dir::Forward;
            if self.base.valid() && self.base.key() == cur.as_slice() {
                self.base.next();
            }
            if self.delta_valid && self.delta_key == cur {
                self.delta_step_forward();
            }
            self.resolve_forward();
            return;
        }
        // Forward, each side on its first entry >= the current key, which
        // is the current side's: step that side, and the other one too
        // when it holds the same key (the delta then won; no copy of the
        // key per step).
        match self.current {
            Current::Base => {
                if self.delta_valid && self.delta_key.as_slice() == self.base.key() {
                    self.delta_step_forward();
                }
                self.base.next();
            }
            Current::Delta => {
                if self.base.valid() && self.base.key() == self.delta_key.as_slice() {
                    self.base.next();
                }
                self.delta_step_forward();
            }
            Current::None => {}
        }
        self.resolve_forward();
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.key().to_vec();
        if self.dir == Dir::Forward {
            // Both sides to their last entry <= the current key.
            self.base.seek_for_prev(&cur);
            self.delta_seek_le(&cur);
            self.dir = Dir::Backward;
        }
        if self.base.valid() && self.base.key() == cur.as_slice() {
            self.base.prev();
        }
        if self.delta_valid && self.delta_key == cur {
            self.delta_step_backward();
        }
        self.resolve_backward();
    }

    // ------------------------------------------------------------ internal

    fn set_prefix(&mut self, target: &[u8]) {
        self.prefix = match (&self.extractor, self.prefix_same_as_start) {
            (Some(x), true) if x.in_domain(target) => Some(x.transform(target).to_vec()),
            _ => None,
        };
    }

    /// Whether a delta key lies inside the bounds and the seek prefix.
    fn delta_in_range(&self, k: &[u8]) -> bool {
        if self.upper.as_deref().is_some_and(|u| k >= u) {
            return false;
        }
        if self.lower.as_deref().is_some_and(|l| k < l) {
            return false;
        }
        match (&self.prefix, &self.extractor) {
            (Some(p), Some(x)) => x.in_domain(k) && x.transform(k) == p.as_slice(),
            _ => true,
        }
    }

    fn set_delta(&mut self, k: Option<Vec<u8>>) {
        match k {
            Some(k) if self.delta_in_range(&k) => {
                self.delta_key = k;
                self.delta_valid = true;
            }
            _ => self.delta_valid = false,
        }
    }

    fn delta_seek_ge(&mut self, from: Option<&[u8]>) {
        let k = match from {
            Some(f) => self
                .delta
                .range::<[u8], _>((Bound::Included(f), Bound::Unbounded))
                .next(),
            None => self.delta.iter().next(),
        }
        .map(|(k, _)| k.clone());
        self.set_delta(k);
    }

    fn delta_seek_le(&mut self, to: &[u8]) {
        let k = self
            .delta
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(to)))
            .next_back()
            .map(|(k, _)| k.clone());
        self.set_delta(k);
    }

    fn delta_seek_last_below_upper(&mut self) {
        let k = match &self.upper {
            Some(u) => self
                .delta
                .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(u.as_slice())))
                .next_back(),
            None => self.delta.iter().next_back(),
        }
        .map(|(k, _)| k.clone());
        self.set_delta(k);
    }

    fn delta_step_forward(&mut self) {
        let k = self
            .delta
            .range::<[u8], _>((Bound::Excluded(self.delta_key.as_slice()), Bound::Unbounded))
            .next()
            .map(|(k, _)| k.clone());
        self.set_delta(k);
    }

    fn delta_step_backward(&mut self) {
        let k = self
            .delta
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(self.delta_key.as_slice())))
            .next_back()
            .map(|(k, _)| k.clone());
        self.set_delta(k);
    }

    fn delta_is_tombstone(&self) -> bool {
        matches!(self.delta.get(&self.delta_key), Some(None))
    }

    /// Settles on the smaller of the two sides, skipping keys the delta
    /// deletes.
    fn resolve_forward(&mut self) {
        loop {
            if !self.delta_valid {
                self.current = if self.base.valid() {
                    Current::Base
                } else {
                    Current::None
                };
                return;
            }
            if self.base.valid() {
                match self.base.key().cmp(self.delta_key.as_slice()) {
                    std::cmp::Ordering::Less => {
                        self.current = Current::Base;
                        return;
                    }
                    std::cmp::Ordering::Equal => {
                        if self.delta_is_tombstone() {
                            self.base.next();
                            self.delta_step_forward();
                            continue;
                        }
                        self.current = Current::Delta;
                        return;
                    }
                    std::cmp::Ordering::Greater => {}
                }
            }
            if self.delta_is_tombstone() {
                self.delta_step_forward();
                continue;
            }
            self.current = Current::Delta;
            return;
        }
    }

    /// Settles on the larger of the two sides, skipping keys the delta
    /// deletes.
    fn resolve_backward(&mut self) {
        loop {
            if !self.delta_valid {
                self.current = if self.base.valid() {
                    Current::Base
                } else {
                    Current::None
                };
                return;
            }
            if self.base.valid() {
                match self.base.key().cmp(self.delta_key.as_slice()) {
                    std::cmp::Ordering::Greater => {
                        self.current = Current::Base;
                        return;
                    }
                    std::cmp::Ordering::Equal => {
                        if self.delta_is_tombstone() {
                            self.base.prev();
                            self.delta_step_backward();
                            continue;
                        }
                        self.current = Current::Delta;
                        return;
                    }
                    std::cmp::Ordering::Less => {}
                }
            }
            if self.delta_is_tombstone() {
                self.delta_step_backward();
                continue;
            }
            self.current = Current::Delta;
            return;
        }
    }
}
