//! A blob cache hit allocates nothing beyond what the read path does for
//! a value stored in the table: `get_into` hands the cached bytes to the
//! caller's buffer. (A binary of its own: it counts allocations with a
//! global allocator.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::{BlobCacheConfig, Db, Options, ReadOptions, WriteOptions};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.with(Cell::get)
}

#[test]
fn blob_cache_hit_allocates_no_more_than_an_inline_value_read() {
    for cache in [
        BlobCacheConfig::SharedWithBlockCache,
        BlobCacheConfig::Dedicated(1 << 20),
    ] {
        let fs = MemFs::new();
        let o = Options {
            enable_blob_files: true,
            min_blob_size: 1000,
            blob_cache: cache,
            block_cache_size: 4 << 20,
            ..common::small_options(Arc::new(fs.clone()))
        };
        let db = Db::open("/db", o).unwrap();
        let w = WriteOptions::default();
        db.put(&w, b"key-blob", &[7u8; 4000]).unwrap();
        db.put(&w, b"key-inline", &[8u8; 500]).unwrap();
        db.flush().unwrap();
        let ro = ReadOptions::default();
        let mut buf = Vec::with_capacity(8192);
        // Warm the table, block and blob caches.
        for _ in 0..2 {
            assert!(db.get_into(&ro, b"key-blob", &mut buf).unwrap());
            assert!(db.get_into(&ro, b"key-inline", &mut buf).unwrap());
        }
        let hits = db.stats().blob_cache_hits;
        let inline = allocations(|| {
            assert!(db.get_into(&ro, b"key-inline", &mut buf).unwrap());
        });
        assert_eq!(buf, vec![8u8; 500]);
        let blob = allocations(|| {
            assert!(db.get_into(&ro, b"key-blob", &mut buf).unwrap());
        });
        assert_eq!(buf, vec![7u8; 4000]);
        assert_eq!(db.stats().blob_cache_hits, hits + 1);
        eprintln!("{cache:?}: allocations: blob cache hit {blob}, inline value {inline}");
        assert!(
            blob <= inline,
            "{cache:?}: a blob cache hit made {blob} allocations, an inline read {inline}"
        );
    }
}
