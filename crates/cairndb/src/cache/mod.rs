//! Caches shared by all readers: [`BlockCache`] holds decoded blocks
//! (`Arc<Block>`) keyed by (table file number, block offset), decoded value
//! groups of zip tables keyed by (table file number, group offset) and,
//! when it is the blob cache too (`BlobCacheConfig::SharedWithBlockCache`),
//! blob values keyed by (blob file number, value offset); each entry is
//! charged by its byte size. [`table_cache::TableCache`] keeps open
//! [`crate::sst::Table`]s.
//!
//! Invariants: a cached block or value is immutable and was
//! checksum-verified before it was inserted (or, for a value put in by
//! the flush that wrote it, is the very bytes written); table and blob
//! files draw their numbers from one counter that never goes back while
//! the database is open, and a cache lives no longer than the open
//! database, so a key never names two different blocks or values, and a
//! block key never names a blob value (a lookup of the other kind is a
//! miss). Entries of deleted files are not removed: nothing can look them
//! up again, and they age out. Locking: `quick_cache::sync::Cache` shards
//! internally (short per-shard locks); the hit/miss counters are relaxed
//! atomics. The block hit/miss counters count block lookups only; blob
//! lookups are counted by the blob reader (`crate::blob::BlobCache`).
//! Zip point reads may pass the cache by when it is full and almost
//! nothing hits (`ZipStats::use_cache` in `sst::zip::table`); the
//! never-decreasing count of zip group bytes inserted tells them whether
//! it can be full yet.

pub mod table_cache;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::sst::block::Block;
use crate::sst::zip::table::DecodedGroup;

pub use table_cache::TableCache;

/// Fixed bytes charged per cached block on top of its data (bookkeeping).
const BLOCK_OVERHEAD: u64 = 64;

/// What the cache holds under one (file number, offset) key.
#[derive(Clone)]
enum Entry {
    /// A decoded table block.
    Block(Arc<Block>),
    /// An uncompressed blob value.
    Blob(Arc<Vec<u8>>),
    /// A decoded value group of a zip table.
    ZipGroup(Arc<DecodedGroup>),
}

#[derive(Clone, Copy)]
struct EntryWeighter;

impl Weighter<(u64, u64), Entry> for EntryWeighter {
    fn weight(&self, _key: &(u64, u64), val: &Entry) -> u64 {
        let bytes = match val {
            Entry::Block(b) => b.size(),
            // The allocation, not just the value: that is what is held.
            Entry::Blob(v) => v.capacity(),
            Entry::ZipGroup(g) => g.heap_bytes(),
        };
        bytes as u64 + BLOCK_OVERHEAD
    }
}

/// A byte-weighted, sharded cache of decoded blocks (and, as the blob
/// cache, of blob values).
pub struct BlockCache {
    cache: Cache<(u64, u64), Entry, EntryWeighter>,
    capacity: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Bytes of zip groups inserted, ever (see `inserted_bytes`).
    inserted: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding up to `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: usize) -> BlockCache {
        let capacity = capacity_bytes as u64;
        let items = (capacity_bytes / 4096).max(16);
        BlockCache {
            cache: Cache::with_weighter(items, capacity.max(1), EntryWeighter),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserted: AtomicU64::new(0),
        }
    }

    /// The block at `offset` of table `file`, counting a hit or a miss.
    pub fn get(&self, file: u64, offset: u64) -> Option<Arc<Block>> {
        self.counted(match self.cache.get(&(file, offset)) {
            Some(Entry::Block(b)) => Some(b),
            _ => None,
        })
    }

    /// Counts `r` as a hit or a miss and passes it on.
    fn counted<T>(&self, r: Option<T>) -> Option<T> {
        let c = if r.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        c.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Caches `block` (may evict others, or be refused when larger than a shard).
    pub fn insert(&self, file: u64, offset: u64, block: Arc<Block>) {
        if self.capacity > 0 {
            self.cache.insert((file, offset), Entry::Block(block));
        }
    }

    /// The blob value at `offset` of blob file `file`. Counts nothing
    /// here: the blob reader keeps the blob cache's counters.
    pub fn get_blob(&self, file: u64, offset: u64) -> Option<Arc<Vec<u8>>> {
        match self.cache.get(&(file, offset)) {
            Some(Entry::Blob(v)) => Some(v),
            _ => None,
        }
    }

    /// Caches the (uncompressed) blob value at `offset` of blob file `file`.
    pub fn insert_blob(&self, file: u64, offset: u64, value: Arc<Vec<u8>>) {
        if self.capacity > 0 {
            self.cache.insert((file, offset), Entry::Blob(value));
        }
    }

    /// The decoded value group at `offset` of zip table `file`, counting
    /// a hit or a miss as block lookups do.
    pub fn get_zip_group(&self, file: u64, offset: u64) -> Option<Arc<DecodedGroup>> {
        self.counted(match self.cache.get(&(file, offset)) {
            Some(Entry::ZipGroup(g)) => Some(g),
            _ => None,
        })
    }

    /// Caches the decoded value group at `offset` of zip table `file`.
    pub fn insert_zip_group(&self, file: u64, offset: u64, group: Arc<DecodedGroup>) {
        if self.capacity > 0 {
            self.inserted.fetch_add(
                group.heap_bytes() as u64 + BLOCK_OVERHEAD,
                Ordering::Relaxed,
            );
            self.cache.insert((file, offset), Entry::ZipGroup(group));
        }
    }

    /// Bytes of zip groups ever put in the cache (never decreases): while
    /// it is below the capacity, the cache cannot be full of them.
    pub fn inserted_bytes(&self) -> u64 {
        self.inserted.load(Ordering::Relaxed)
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Bytes charged for the blocks held now.
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Blocks held now.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// True when no block is cached.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::block::{tests::origin, BlockBuilder};

    fn block(n: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(16);
        for i in 0..n {
            let k = crate::key::make_internal_key(
                format!("k{i:08}").as_bytes(),
                1,
                crate::key::ValueType::Value,
            );
            b.add(&k, &[7u8; 100]);
        }
        Arc::new(Block::new(b.finish().to_vec(), origin()).unwrap())
    }

    #[test]
    fn weight_bound_and_counters() {
        let cap = 64 << 10;
        let c = BlockCache::new(cap);
        let blk = block(20);
        assert!(blk.size() > 2000);
        for i in 0..200 {
            c.insert(1, i, blk.clone());
            assert!(c.usage() <= cap as u64, "usage {} > {cap}", c.usage());
        }
        assert!(c.len() < 200);
        assert!(c.usage() > 0);
        assert_eq!(c.capacity(), cap as u64);
        assert!(c.get(2, 0).is_none());
        assert_eq!(c.misses(), 1);
        let found = (0..200).filter(|&i| c.get(1, i).is_some()).count();
        assert_eq!(c.hits(), found as u64);
        assert!(found > 0);
        // A zero-capacity cache holds nothing.
        let z = BlockCache::new(0);
        z.insert(1, 0, blk);
        assert!(z.get(1, 0).is_none());
    }

    #[test]
    fn blob_values_share_the_budget_and_never_pass_for_blocks() {
        let cap = 64 << 10;
        let c = BlockCache::new(cap);
        let blk = block(20);
        c.insert(1, 0, blk.clone());
        c.insert_blob(2, 20, Arc::new(vec![9u8; 1000]));
        assert_eq!(c.get_blob(2, 20).unwrap().as_slice(), &[9u8; 1000][..]);
        // One key space, two kinds: a lookup of the wrong kind is a miss.
        assert!(c.get(2, 20).is_none());
        assert!(c.get_blob(1, 0).is_none());
        assert_eq!((c.hits(), c.misses()), (0, 1));
        assert!(c.usage() >= blk.size() as u64 + 1000);
        for i in 0..200 {
            c.insert_blob(3, i, Arc::new(vec![1u8; 4096]));
            assert!(c.usage() <= cap as u64, "usage {} > {cap}", c.usage());
        }
        assert!(c.len() < 200);
        let z = BlockCache::new(0);
        z.insert_blob(1, 0, Arc::new(vec![1]));
        assert!(z.get_blob(1, 0).is_none());
    }
}
