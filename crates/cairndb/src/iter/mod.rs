//! Iterators over internal keys, and the user-facing iterator built on them.
//!
//! [`InternalIterator`] is what memtables, blocks, tables and levels expose;
//! `merge` combines many into one ordered stream; `db_iter` turns that stream
//! into user keys as of a snapshot (hiding shadowed versions and tombstones).
//! Iterators are single-threaded objects; they hold `Arc`s to what they read
//! so that the memtables and files under them stay alive.

pub mod db_iter;
pub mod merge;

use crate::error::Result;

/// A bidirectional cursor over internal keys in `key::compare_internal` order.
///
/// `key`, `value` require `valid()`. After an error, `valid()` is false and
/// `status()` returns it.
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry with key >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry with key <= `target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            self.seek_to_last();
        }
        while self.valid() && crate::key::compare_internal(self.key(), target).is_gt() {
            self.prev();
        }
    }
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// An iterator over nothing, or over an error.
pub struct EmptyIterator(pub Option<crate::Error>);

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        match &self.0 {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// A sorted in-memory vector of (internal key, value), used by tests of the
/// iterator layers and by the model tests.
#[cfg(test)]
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
}

#[cfg(test)]
impl VecIterator {
    /// Sorts `entries` by internal-key order.
    pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        entries.sort_by(|a, b| crate::key::compare_internal(&a.0, &b.0));
        let pos = entries.len();
        VecIterator { entries, pos }
    }
}

#[cfg(test)]
impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = if self.entries.is_empty() {
            0
        } else {
            self.entries.len() - 1
        };
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|e| crate::key::compare_internal(&e.0, target).is_lt());
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = if self.pos == 0 {
            self.entries.len()
        } else {
            self.pos - 1
        };
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
