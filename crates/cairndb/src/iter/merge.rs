//! The merging iterator: one ordered stream out of many sorted children
//! (memtables, level-0 tables, one iterator per deeper level).
//!
//! Invariant while moving forward: every valid child is positioned at the
//! first entry > the current key, except the current child, which is at the
//! current key. Moving backward mirrors it. Switching direction re-seeks the
//! other children, as LevelDB's merger does. Children are few (about ten), so
//! the smallest is found by a linear scan, which beats a heap at this size.
//! Equal keys across children cannot occur (sequence numbers are unique).

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::key::compare_internal;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Merges sorted children into one sorted stream.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// A merging iterator over `children`.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
        }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                best = match best {
                    Some(b)
                        if compare_internal(c.key(), self.children[b].key()) != Ordering::Less =>
                    {
                        Some(b)
                    }
                    _ => Some(i),
                };
            }
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if c.valid() {
                best = match best {
                    Some(b)
                        if compare_internal(c.key(), self.children[b].key())
                            != Ordering::Greater =>
                    {
                        Some(b)
                    }
                    _ => Some(i),
                };
            }
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Position every other child after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() && compare_internal(&key, c.key()) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Position every other child before the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() {
                        c.prev();
                    } else {
                        c.seek_to_last();
                    }
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
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
}
