//! A position in a zip table's key index (an fst map from user key to key
//! ordinal) that steps to the next and previous key in time proportional to
//! the bytes that change, and seeks without allocating.
//!
//! The fst crate's streams borrow the map, so an iterator that owns its table
//! could not keep one; its reverse lookup (`get_key_into`, ordinal to key)
//! scans every transition of every node on the path, which made it the
//! whole cost of a zip table scan. The cursor holds only node addresses and
//! transition indexes, and each call takes the fst by reference.
//!
//! Each frame keeps its node's transition count and finality, and the
//! cursor keeps `at`'s transition count, so a step decodes only the nodes
//! it descends through, never the ones it climbs back over (with long
//! single-transition chains under random keys that halves the decoding).
//!
//! Invariants: when positioned, `stack` is the path from the root to the
//! node `at`, which is final; `key` holds the path's input bytes and
//! `ord` the sum of its outputs plus `at`'s final output; `at_len` is
//! `at`'s transition count. The fst is the
//! one the cursor was positioned in (the caller's duty; the table owns both).
//! No locking: a cursor belongs to one iterator.

use fst::raw::{CompiledAddr, Fst, Node};

/// One step of the path: the node left and the index of the transition
/// taken out of it.
#[derive(Debug, Clone, Copy)]
struct Frame {
    addr: CompiledAddr,
    trans: usize,
    /// The output accumulated before this transition.
    out_before: u64,
    /// The node's transition count.
    len: usize,
    /// Whether the node is final (a key ends there).
    is_final: bool,
}

/// A position in an fst map (see the module doc).
#[derive(Debug, Default)]
pub(super) struct FstCursor {
    stack: Vec<Frame>,
    key: Vec<u8>,
    /// Node of the current key (final when positioned).
    at: CompiledAddr,
    /// `at`'s transition count, when positioned.
    at_len: usize,
    /// Output accumulated through every transition on the stack.
    out: u64,
    ord: u64,
    valid: bool,
}

impl FstCursor {
    /// True when positioned on a key.
    pub(super) fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not positioned).
    pub(super) fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// The current key's value (its ordinal in a zip table).
    pub(super) fn ord(&self) -> u64 {
        self.ord
    }

    fn clear(&mut self) {
        self.stack.clear();
        self.key.clear();
        self.out = 0;
        self.valid = false;
    }

    /// Takes transition `i` out of node `n` (already decoded by the
    /// caller: each step decodes a node once).
    fn push(&mut self, n: &Node<'_>, i: usize) {
        let t = n.transition(i);
        self.stack.push(Frame {
            addr: n.addr(),
            trans: i,
            out_before: self.out,
            len: n.len(),
            is_final: n.is_final(),
        });
        self.key.push(t.inp);
        self.out += t.out.value();
        self.at = t.addr;
    }

    /// Undoes the last transition; returns its frame.
    fn pop(&mut self) -> Option<Frame> {
        let f = self.stack.pop()?;
        self.key.pop();
        self.out = f.out_before;
        self.at = f.addr;
        Some(f)
    }

    /// Marks the cursor positioned on `at` (decoded as `n`), which must
    /// be final.
    fn settle(&mut self, n: &Node<'_>) -> bool {
        self.valid = n.is_final();
        self.at_len = n.len();
        self.ord = self.out + n.final_output().value();
        self.valid
    }

    /// Descends from `at` to the smallest key of its subtree.
    fn leftmost<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        loop {
            let n = fst.node(self.at);
            if n.is_final() {
                return self.settle(&n);
            }
            if n.is_empty() {
                // A non-final node without transitions: not a valid fst.
                self.valid = false;
                return false;
            }
            self.push(&n, 0);
        }
    }

    /// Descends from `at` to the largest key of its subtree.
    fn rightmost<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        loop {
            let n = fst.node(self.at);
            if n.is_empty() {
                return self.settle(&n);
            }
            self.push(&n, n.len() - 1);
        }
    }

    /// Moves to the smallest key after the subtree of `at`: the next
    /// sibling transition of the nearest ancestor that has one.
    fn after_subtree<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        while let Some(f) = self.pop() {
            if f.trans + 1 < f.len {
                self.push(&fst.node(f.addr), f.trans + 1);
                return self.leftmost(fst);
            }
        }
        self.clear();
        false
    }

    /// Positions on the smallest key.
    pub(super) fn first<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        self.clear();
        self.at = fst.root().addr();
        self.leftmost(fst)
    }

    /// Positions on the largest key.
    pub(super) fn last<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        self.clear();
        self.at = fst.root().addr();
        !fst.is_empty() && self.rightmost(fst)
    }

    /// Positions on the smallest key `>= target`; false when there is none.
    pub(super) fn seek<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>, target: &[u8]) -> bool {
        self.clear();
        self.at = fst.root().addr();
        if fst.is_empty() {
            return false;
        }
        for &b in target {
            let n = fst.node(self.at);
            if let Some(i) = n.find_input(b) {
                self.push(&n, i);
                continue;
            }
            // No transition on `b`: the answer starts with the first larger
            // transition here, or lies after this subtree.
            let len = n.len();
            let mut i = 0;
            while i < len && n.transition(i).inp < b {
                i += 1;
            }
            if i < len {
                self.push(&n, i);
                return self.leftmost(fst);
            }
            return self.after_subtree(fst);
        }
        // `target` is a path: it, or its first extension.
        self.leftmost(fst)
    }

    /// Steps to the next key; false (and not positioned) past the last.
    pub(super) fn next<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        if !self.valid {
            return false;
        }
        if self.at_len > 0 {
            // The next key extends this one.
            self.push(&fst.node(self.at), 0);
            return self.leftmost(fst);
        }
        self.after_subtree(fst)
    }

    /// Steps to the previous key; false (and not positioned) before the
    /// first.
    pub(super) fn prev<D: AsRef<[u8]>>(&mut self, fst: &Fst<D>) -> bool {
        if !self.valid {
            return false;
        }
        while let Some(f) = self.pop() {
            if f.trans > 0 {
                self.push(&fst.node(f.addr), f.trans - 1);
                return self.rightmost(fst);
            }
            // The parent's own key, a prefix of this one, comes before it.
            if f.is_final {
                return self.settle(&fst.node(self.at));
            }
        }
        self.clear();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(keys: &std::collections::BTreeSet<Vec<u8>>) -> Fst<Vec<u8>> {
        let mut b = fst::raw::Builder::memory();
        for (i, k) in keys.iter().enumerate() {
            b.insert(k, i as u64).unwrap();
        }
        b.into_fst()
    }

    fn walk_forward(f: &Fst<Vec<u8>>) -> Vec<(Vec<u8>, u64)> {
        let mut c = FstCursor::default();
        let mut out = Vec::new();
        let mut ok = c.first(f);
        while ok {
            out.push((c.key().to_vec(), c.ord()));
            ok = c.next(f);
        }
        out
    }

    fn walk_backward(f: &Fst<Vec<u8>>) -> Vec<(Vec<u8>, u64)> {
        let mut c = FstCursor::default();
        let mut out = Vec::new();
        let mut ok = c.last(f);
        while ok {
            out.push((c.key().to_vec(), c.ord()));
            ok = c.prev(f);
        }
        out.reverse();
        out
    }

    fn keyset() -> impl Strategy<Value = std::collections::BTreeSet<Vec<u8>>> {
        // Few distinct bytes, so keys share prefixes and extend each other.
        proptest::collection::btree_set(
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(7), Just(255)], 0..6),
            0..40,
        )
    }

    proptest! {
        #[test]
        fn cursor_walks_and_seeks_as_the_sorted_set_does(
            keys in keyset(),
            targets in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(4), Just(7), Just(255)], 0..7),
                1..12,
            ),
        ) {
            let f = build(&keys);
            let want: Vec<(Vec<u8>, u64)> =
                keys.iter().cloned().zip(0u64..).collect();
            prop_assert_eq!(walk_forward(&f), want.clone());
            prop_assert_eq!(walk_backward(&f), want.clone());
            let mut c = FstCursor::default();
            for t in &targets {
                let at = want.iter().position(|(k, _)| k >= t);
                prop_assert_eq!(c.seek(&f, t), at.is_some());
                if let Some(p) = at {
                    prop_assert_eq!((c.key(), c.ord()), (&want[p].0[..], want[p].1));
                    // Steps from a seek land where the set says.
                    if c.next(&f) {
                        prop_assert_eq!(c.key(), &want[p + 1].0[..]);
                        prop_assert!(c.prev(&f));
                    } else {
                        prop_assert_eq!(p + 1, want.len());
                        prop_assert!(c.seek(&f, t));
                    }
                    prop_assert_eq!(c.key(), &want[p].0[..]);
                    prop_assert_eq!(c.prev(&f), p > 0);
                    if p > 0 {
                        prop_assert_eq!((c.key(), c.ord()), (&want[p - 1].0[..], want[p - 1].1));
                    }
                } else {
                    prop_assert!(!c.valid());
                }
            }
        }
    }

    #[test]
    fn empty_map_has_no_position() {
        let f = build(&Default::default());
        let mut c = FstCursor::default();
        assert!(!c.first(&f));
        assert!(!c.last(&f));
        assert!(!c.seek(&f, b""));
        assert!(!c.next(&f));
        assert!(!c.prev(&f));
    }
}
