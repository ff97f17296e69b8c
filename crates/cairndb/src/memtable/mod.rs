//! The memtable: recent writes, in memory, ordered by internal key.
//!
//! A [`MemTable`] is an arena-backed concurrent skiplist
//! ([`skiplist`], [`arena`]) whose entries are `(internal key, value)` with the
//! internal key (`user_key ++ trailer`) stored contiguously, so iterators hand
//! out keys without copying. Writes (`add`, `insert_batch`) may run on many
//! threads at once (the skiplist links nodes with compare-and-swap and
//! serialises only the arena's bump allocation); reads (`get`, iterators)
//! take no lock and run concurrently with writers. Entries become visible to
//! the engine's readers only through the sequence number it publishes after
//! a write group's inserts are all done. Memory is released only when the
//! last `Arc<MemTable>` (including those held by iterators) is dropped.

pub mod arena;
mod filter;
mod skiplist;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::batch::{BatchOp, WriteBatch};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueType, MAX_SEQ, TRAILER_LEN, TYPE_FOR_SEEK};

use filter::KeyFilter;
pub use skiplist::MAX_HEIGHT;
use skiplist::{HashSeek, Iter, ListOwner, SkipList};

/// Lookup keys up to this length are built on the stack in [`MemTable::get`].
const STACK_KEY: usize = 128;

/// The result of a memtable lookup that found the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemGet<'a> {
    /// The newest visible version is a value.
    Value(&'a [u8]),
    /// The newest visible version is a deletion.
    Deleted,
}

/// An in-memory sorted table of recent writes. `Send + Sync`.
pub struct MemTable {
    list: SkipList,
    /// Whole-key filter consulted by `get` ([`filter`]); None when disabled.
    filter: Option<KeyFilter>,
    /// Set when a write with the WAL disabled goes into this table: its
    /// data then exists nowhere else until the table is flushed.
    unlogged: AtomicBool,
}

impl Default for MemTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("len", &self.len())
            .field("memory", &self.approximate_memory_usage())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable without a key filter.
    pub fn new() -> MemTable {
        Self::with_filter(0)
    }

    /// An empty memtable with a whole-key filter of about `filter_bytes`
    /// bytes (0: none), counted in its memory usage.
    pub fn with_filter(filter_bytes: usize) -> MemTable {
        Self::with_indexes(filter_bytes, 0)
    }

    /// An empty memtable with a whole-key filter of about `filter_bytes`
    /// bytes and a hash index of `hash_slots` slots (0: none for either),
    /// both counted in its memory usage. With a hash index a point read
    /// finds its key in a slot or two instead of searching the skiplist.
    pub fn with_indexes(filter_bytes: usize, hash_slots: usize) -> MemTable {
        MemTable {
            list: if hash_slots > 0 {
                SkipList::with_hash_index(hash_slots)
            } else {
                SkipList::new()
            },
            filter: (filter_bytes > 0).then(|| KeyFilter::new(filter_bytes)),
            unlogged: AtomicBool::new(false),
        }
    }

    /// Adds an entry. Keys and values must be shorter than 4 GiB, `seq <=
    /// MAX_SEQ`, and `(user_key, seq)` new to this table (sequence numbers are
    /// unique); the engine guarantees all three. Serialised with other
    /// writers by an internal lock.
    #[inline]
    pub fn add(&self, seq: SeqNo, t: ValueType, user_key: &[u8], value: &[u8]) {
        debug_assert!(seq <= MAX_SEQ);
        let trailer = key::pack_trailer(seq, t).to_le_bytes();
        // Hashed only for what uses the hash (0 is never read otherwise).
        let h = if self.filter.is_some() || self.list.has_hash_index() {
            xxhash_rust::xxh3::xxh3_64(user_key)
        } else {
            0
        };
        // Before the insert, so a reader that can see the entry sees its
        // filter bits (filter module doc).
        if let Some(f) = &self.filter {
            f.add_hash(h);
        }
        self.list.insert_parts(user_key, &trailer, value, h);
    }

    /// The newest entry for `user_key` with sequence number `<= seq`, if any.
    /// Does not allocate for user keys shorter than 120 bytes.
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<MemGet<'_>> {
        self.find(user_key, seq).map(|(g, _)| g)
    }

    /// Like [`MemTable::get`], with the sequence number of the entry found.
    pub fn find(&self, user_key: &[u8], seq: SeqNo) -> Option<(MemGet<'_>, SeqNo)> {
        self.find_hashed(user_key, xxhash_rust::xxh3::xxh3_64(user_key), seq)
    }

    /// [`MemTable::find`] given `h = xxh3_64(user_key)` (one hash serves
    /// every memtable and table of a point read).
    #[inline]
    pub fn find_hashed(&self, user_key: &[u8], h: u64, seq: SeqNo) -> Option<(MemGet<'_>, SeqNo)> {
        if let Some(f) = &self.filter {
            if !f.may_contain_hash(h) {
                return None;
            }
        }
        let trailer = key::pack_trailer(seq.min(MAX_SEQ), TYPE_FOR_SEEK).to_le_bytes();
        let n = user_key.len() + TRAILER_LEN;
        let mut stack = [0u8; STACK_KEY];
        let heap: Vec<u8>;
        let lookup: &[u8] = if n <= STACK_KEY {
            stack[..user_key.len()].copy_from_slice(user_key);
            stack[user_key.len()..n].copy_from_slice(&trailer);
            &stack[..n]
        } else {
            heap = [user_key, &trailer[..]].concat();
            &heap
        };
        let (k, v) = match self.list.hash_seek(h, lookup) {
            HashSeek::Found(k, v) => (k, v),
            HashSeek::Absent => return None,
            HashSeek::Unknown => self.list.seek_entry(lookup)?,
        };
        if key::user_key(k) != user_key {
            return None;
        }
        let t = key::trailer(k);
        let found_seq = t >> 8;
        match ValueType::from_u8((t & 0xff) as u8) {
            Some(ValueType::Value) => Some((MemGet::Value(v), found_seq)),
            Some(ValueType::Deletion) => Some((MemGet::Deleted, found_seq)),
            // Only `add` writes trailers, always with a value or deletion
            // type (blob references live only in tables).
            Some(ValueType::BlobIndex) | None => None,
        }
    }

    /// [`MemTable::get`] given `h = xxh3_64(user_key)`.
    #[inline]
    pub fn get_hashed(&self, user_key: &[u8], h: u64, seq: SeqNo) -> Option<MemGet<'_>> {
        self.find_hashed(user_key, h, seq).map(|(g, _)| g)
    }

    /// Starts loading what a lookup of the key hashing to `h` reads first
    /// (its filter line).
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        if let Some(f) = &self.filter {
            f.prefetch_hash(h);
        }
        self.list.prefetch_hash(h);
    }

    /// Records that writes with the WAL disabled go into this table. Call
    /// before inserting them.
    pub fn mark_unlogged(&self) {
        self.unlogged.store(true, Ordering::Release);
    }

    /// True when [`MemTable::mark_unlogged`] was called.
    pub fn has_unlogged(&self) -> bool {
        self.unlogged.load(Ordering::Acquire)
    }

    /// Exact bytes reserved by the arena (what flush decisions should use).
    #[inline]
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage()
            + self.list.hash_memory_usage()
            + self.filter.as_ref().map_or(0, KeyFilter::memory_usage)
    }

    /// True when the memtable should be switched: it holds
    /// `write_buffer_size` bytes, or its searched part (skiplist nodes:
    /// links, keys, small values) holds `index_limit` bytes (0: no limit).
    #[inline]
    pub fn is_full(&self, write_buffer_size: usize, index_limit: usize) -> bool {
        self.approximate_memory_usage() >= write_buffer_size
            || (index_limit > 0 && self.list.index_memory_usage() >= index_limit)
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// An iterator over the table; it keeps the table alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            inner: Iter::new(self.clone()),
        }
    }

    /// Applies every record of `batch` in order, record `i` with sequence
    /// number `first_seq + i`; returns how many records were applied.
    ///
    /// Batches reach the memtable only after validation (`WriteBatch` built
    /// in-process, or `WriteBatch::from_data` during recovery), so a malformed
    /// record cannot occur; if one did, application stops there.
    pub fn insert_batch(&self, batch: &WriteBatch, first_seq: SeqNo) -> u64 {
        let mut seq = first_seq;
        for op in batch.iter() {
            match op {
                Ok(BatchOp::Put(k, v)) => self.add(seq, ValueType::Value, k, v),
                Ok(BatchOp::Delete(k)) => self.add(seq, ValueType::Deletion, k, &[]),
                Ok(BatchOp::Marker(..)) => continue,
                Err(_) => break,
            }
            seq += 1;
        }
        seq - first_seq
    }
}

// SAFETY: `Arc` derefs to the same `MemTable` every time, and the memtable's
// `list` field is fixed for its life; the `Arc` keeps it alive.
unsafe impl ListOwner for Arc<MemTable> {
    fn list(&self) -> &SkipList {
        &self.list
    }
}

/// Iterator over a memtable's internal keys ([`InternalIterator`]). Holds an
/// `Arc` to the table. May observe entries added after its creation.
pub struct MemTableIter {
    inner: Iter<Arc<MemTable>>,
}

impl MemTableIter {
    /// The table being iterated.
    pub fn memtable(&self) -> &Arc<MemTable> {
        self.inner.owner()
    }
}

impl InternalIterator for MemTableIter {
    #[inline]
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target)
    }
    #[inline]
    fn next(&mut self) {
        self.inner.next()
    }
    fn prev(&mut self) {
        self.inner.prev()
    }
    #[inline]
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    #[inline]
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, parse_internal_key};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    #[test]
    fn send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        fn assert_send<T: Send>() {}
        assert_send_sync::<MemTable>();
        assert_send::<MemTableIter>();
    }

    #[test]
    fn duplicate_user_keys_order_newest_first() {
        let m = Arc::new(MemTable::new());
        m.add(1, ValueType::Value, b"b", b"b1");
        m.add(3, ValueType::Value, b"a", b"a3");
        m.add(2, ValueType::Deletion, b"a", b"");
        m.add(5, ValueType::Value, b"a", b"a5");
        m.add(4, ValueType::Value, b"c", b"c4");
        let mut it = m.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            let p = parse_internal_key(it.key()).unwrap();
            got.push((p.user_key.to_vec(), p.seq, p.vtype, it.value().to_vec()));
            it.next();
        }
        let want: Vec<(Vec<u8>, u64, ValueType, Vec<u8>)> = vec![
            (b"a".to_vec(), 5, ValueType::Value, b"a5".to_vec()),
            (b"a".to_vec(), 3, ValueType::Value, b"a3".to_vec()),
            (b"a".to_vec(), 2, ValueType::Deletion, vec![]),
            (b"b".to_vec(), 1, ValueType::Value, b"b1".to_vec()),
            (b"c".to_vec(), 4, ValueType::Value, b"c4".to_vec()),
        ];
        assert_eq!(got, want);
        assert_eq!(m.len(), 5);
    }

    #[test]
    fn get_at_snapshots_with_deletion_shadowing() {
        let m = MemTable::new();
        m.add(10, ValueType::Value, b"k", b"v10");
        m.add(20, ValueType::Deletion, b"k", b"");
        m.add(30, ValueType::Value, b"k", b"v30");
        m.add(15, ValueType::Value, b"j", b"j15");
        m.add(16, ValueType::Value, b"l", b"l16");
        assert_eq!(m.get(b"k", 9), None);
        assert_eq!(m.get(b"k", 10), Some(MemGet::Value(b"v10")));
        assert_eq!(m.get(b"k", 19), Some(MemGet::Value(b"v10")));
        assert_eq!(m.get(b"k", 20), Some(MemGet::Deleted));
        assert_eq!(m.get(b"k", 29), Some(MemGet::Deleted));
        assert_eq!(m.get(b"k", 30), Some(MemGet::Value(b"v30")));
        assert_eq!(m.get(b"k", MAX_SEQ), Some(MemGet::Value(b"v30")));
        assert_eq!(m.get(b"k", u64::MAX), Some(MemGet::Value(b"v30")));
        assert_eq!(m.get(b"j", 14), None);
        assert_eq!(m.get(b"j", 15), Some(MemGet::Value(b"j15")));
        assert_eq!(m.get(b"kk", 100), None);
        assert_eq!(m.get(b"", 100), None);
        assert_eq!(m.get(b"a", 100), None);
        assert_eq!(m.get(b"z", 100), None);
        // Empty key and empty value are legal.
        m.add(40, ValueType::Value, b"", b"");
        assert_eq!(m.get(b"", 100), Some(MemGet::Value(b"")));
        // Long keys take the heap path.
        let long = vec![b'x'; 1000];
        m.add(50, ValueType::Value, &long, b"long");
        assert_eq!(m.get(&long, 50), Some(MemGet::Value(b"long")));
        assert_eq!(m.get(&long, 49), None);
        let edge = vec![b'y'; STACK_KEY - TRAILER_LEN];
        m.add(51, ValueType::Value, &edge, b"edge");
        assert_eq!(m.get(&edge, 51), Some(MemGet::Value(b"edge")));
    }

    #[test]
    fn iterator_boundaries() {
        let m = Arc::new(MemTable::new());
        let mut it = m.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&make_internal_key(b"a", 1, ValueType::Value));
        assert!(!it.valid());
        assert!(it.status().is_ok());

        for (i, k) in [b"b", b"d", b"f"].iter().enumerate() {
            m.add(i as u64 + 1, ValueType::Value, *k, *k);
        }
        let ik = |k: &[u8], s| make_internal_key(k, s, TYPE_FOR_SEEK);
        // Before the first key.
        it.seek(&ik(b"a", 100));
        assert_eq!(key::user_key(it.key()), b"b");
        it.prev();
        assert!(!it.valid());
        // Exact hit and between keys.
        it.seek(&ik(b"d", 100));
        assert_eq!(key::user_key(it.key()), b"d");
        it.seek(&ik(b"d", 1)); // (d,2) is newer than the target: skipped
        assert_eq!(key::user_key(it.key()), b"f");
        it.seek(&ik(b"c", 0));
        assert_eq!(key::user_key(it.key()), b"d");
        it.prev();
        assert_eq!(key::user_key(it.key()), b"b");
        it.next();
        it.next();
        assert_eq!(key::user_key(it.key()), b"f");
        it.next();
        assert!(!it.valid());
        // Past the last key.
        it.seek(&ik(b"g", 100));
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(key::user_key(it.key()), b"f");
        assert_eq!(it.value(), b"f");
        it.seek_to_first();
        assert_eq!(key::user_key(it.key()), b"b");
        // seek_for_prev (trait default) works on top.
        it.seek_for_prev(&ik(b"e", 100));
        assert_eq!(key::user_key(it.key()), b"d");
        // The iterator keeps the table alive.
        let mut it2 = m.iter();
        drop(m);
        it2.seek_to_last();
        assert_eq!(it2.value(), b"f");
        assert_eq!(it2.memtable().len(), 3);
    }

    #[test]
    fn memory_usage_monotonic_and_close_to_data() {
        let m = MemTable::new();
        let empty = m.approximate_memory_usage();
        assert!(empty > 0 && empty <= arena::MIN_CHUNK);
        let mut last = empty;
        let mut data = 0usize;
        for i in 0..50_000u64 {
            let k = format!("key-{i:010}");
            let v = vec![b'v'; (i % 200) as usize];
            data += k.len() + TRAILER_LEN + v.len();
            m.add(i, ValueType::Value, k.as_bytes(), &v);
            let u = m.approximate_memory_usage();
            assert!(u >= last);
            last = u;
        }
        assert!(last >= data, "{last} < {data}");
        // Per-entry overhead: header (with the value pointer) + ~1.33 links
        // of 8 bytes + alignment, plus at most one partly used chunk in each
        // of the node and value arenas.
        let overhead = 50_000 * 48 + 2 * arena::MAX_CHUNK;
        assert!(last <= data + overhead, "usage {last} for {data} bytes");
    }

    /// The key filter only ever skips searches for keys the table never
    /// held: every stored key (value or tombstone, any version) is found,
    /// absent keys are not, and the filter's bytes count as memory.
    #[test]
    fn key_filter_never_hides_a_key() {
        let m = MemTable::with_filter(2048);
        let empty = MemTable::new().approximate_memory_usage();
        assert_eq!(m.approximate_memory_usage(), empty + 2048);
        for i in 0..5000u64 {
            let k = format!("k{i:05}");
            if i % 7 == 0 {
                m.add(i + 1, ValueType::Deletion, k.as_bytes(), b"");
            } else {
                m.add(i + 1, ValueType::Value, k.as_bytes(), k.as_bytes());
            }
        }
        for i in 0..5000u64 {
            let k = format!("k{i:05}");
            let want = if i % 7 == 0 {
                MemGet::Deleted
            } else {
                MemGet::Value(k.as_bytes())
            };
            assert_eq!(m.get(k.as_bytes(), MAX_SEQ), Some(want), "key {k}");
            // Not visible below its own sequence number.
            assert_eq!(m.get(k.as_bytes(), i), None);
        }
        for i in 0..5000u64 {
            assert_eq!(m.get(format!("x{i:05}").as_bytes(), MAX_SEQ), None);
        }
        assert!(m.approximate_memory_usage() > empty + 2048);
    }

    #[test]
    fn insert_batch_assigns_sequence_numbers() {
        let m = MemTable::new();
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.put(b"a", b"2");
        assert_eq!(m.insert_batch(&b, 100), 3);
        assert_eq!(m.get(b"a", 100), Some(MemGet::Value(b"1")));
        assert_eq!(m.get(b"a", 102), Some(MemGet::Value(b"2")));
        assert_eq!(m.get(b"b", 101), Some(MemGet::Deleted));
        assert_eq!(m.get(b"b", 100), None);
        assert_eq!(m.insert_batch(&WriteBatch::new(), 7), 0);
    }

    /// Random operations against a model: a map from (user key, seq) to
    /// value-or-tombstone; checks get at random snapshots and full scans.
    #[test]
    fn randomized_against_model() {
        let seed: u64 = rand::random();
        println!("randomized_against_model seed = {seed}");
        let mut rng = SmallRng::seed_from_u64(seed);
        let m = Arc::new(MemTable::new());
        // key: (user_key, Reverse(seq)) so that iteration matches internal order.
        type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), Option<Vec<u8>>>;
        let mut model = Model::new();
        let mut seq = 0u64;
        for _ in 0..5000 {
            seq += 1;
            let klen = rng.gen_range(0..6);
            let k: Vec<u8> = (0..klen).map(|_| rng.gen_range(b'a'..b'e')).collect();
            if rng.gen_bool(0.2) {
                m.add(seq, ValueType::Deletion, &k, b"");
                model.insert((k, std::cmp::Reverse(seq)), None);
            } else {
                let v: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
                m.add(seq, ValueType::Value, &k, &v);
                model.insert((k, std::cmp::Reverse(seq)), Some(v));
            }
        }
        // Gets at random snapshots.
        for _ in 0..5000 {
            let klen = rng.gen_range(0..6);
            let k: Vec<u8> = (0..klen).map(|_| rng.gen_range(b'a'..b'e')).collect();
            let snap = rng.gen_range(0..=seq + 1);
            let want = model
                .range((k.clone(), std::cmp::Reverse(snap))..)
                .next()
                .filter(|((uk, _), _)| *uk == k)
                .map(|(_, v)| v.clone());
            let got = m.get(&k, snap).map(|g| match g {
                MemGet::Value(v) => Some(v.to_vec()),
                MemGet::Deleted => None,
            });
            assert_eq!(got, want, "key {k:?} at {snap}");
        }
        // Full scan, forward and backward.
        let all: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .map(|((k, s), v)| {
                let t = if v.is_some() {
                    ValueType::Value
                } else {
                    ValueType::Deletion
                };
                (make_internal_key(k, s.0, t), v.clone().unwrap_or_default())
            })
            .collect();
        let mut it = m.iter();
        it.seek_to_first();
        for (k, v) in &all {
            assert_eq!(it.key(), &k[..]);
            assert_eq!(it.value(), &v[..]);
            it.next();
        }
        assert!(!it.valid());
        it.seek_to_last();
        for (k, _) in all.iter().rev().take(500) {
            assert_eq!(it.key(), &k[..]);
            it.prev();
        }
        // Random seeks.
        for _ in 0..2000 {
            let i = rng.gen_range(0..all.len());
            let (k, _) = &all[i];
            it.seek(k);
            assert_eq!(it.key(), &k[..]);
        }
    }

    /// Small entries fill the node arena first and switch the memtable
    /// below `write_buffer_size`; 4 KiB values live outside the nodes and
    /// fill it to `write_buffer_size` with the nodes far under the limit.
    #[test]
    fn index_limit_switches_small_entries_but_not_large_values() {
        let (wbs, index_limit) = (16 << 20, 1 << 20);
        let fill = |value_len: usize| {
            let m = MemTable::new();
            let value = vec![7u8; value_len];
            let mut n = 0u64;
            while !m.is_full(wbs, index_limit) {
                m.add(
                    n + 1,
                    ValueType::Value,
                    format!("key{n:012}").as_bytes(),
                    &value,
                );
                n += 1;
                assert!(n < 1_000_000);
            }
            m
        };
        let small = fill(100);
        assert!(
            small.approximate_memory_usage() < wbs / 2,
            "{}",
            small.approximate_memory_usage()
        );
        assert!(!small.is_full(wbs, 0), "no index limit: not full yet");
        let large = fill(4096);
        assert!(large.approximate_memory_usage() >= wbs);
        assert!(large.list.index_memory_usage() < index_limit);
    }
}
