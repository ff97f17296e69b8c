//! LevelDB behind the benchmark [`Engine`] trait (feature `leveldb`),
//! through a minimal FFI binding to the system libleveldb's C API
//! (`leveldb/c.h`, Debian libleveldb-dev 1.23).

use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::path::Path;
use std::ptr;

use super::engine::{not_applicable_notes, EResult, Engine, EngineIter, Op};
use super::flags::Flags;

#[allow(non_camel_case_types)]
mod ffi {
    use super::*;
    pub enum leveldb_t {}
    pub enum leveldb_options_t {}
    pub enum leveldb_cache_t {}
    pub enum leveldb_filterpolicy_t {}
    pub enum leveldb_readoptions_t {}
    pub enum leveldb_writeoptions_t {}
    pub enum leveldb_writebatch_t {}
    pub enum leveldb_iterator_t {}

    #[link(name = "leveldb")]
    extern "C" {
        pub fn leveldb_options_create() -> *mut leveldb_options_t;
        pub fn leveldb_options_destroy(o: *mut leveldb_options_t);
        pub fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: c_uchar);
        pub fn leveldb_options_set_write_buffer_size(o: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, v: c_int);
        pub fn leveldb_options_set_block_size(o: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_block_restart_interval(o: *mut leveldb_options_t, v: c_int);
        pub fn leveldb_options_set_max_file_size(o: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int);
        pub fn leveldb_options_set_cache(o: *mut leveldb_options_t, c: *mut leveldb_cache_t);
        pub fn leveldb_options_set_filter_policy(
            o: *mut leveldb_options_t,
            p: *mut leveldb_filterpolicy_t,
        );
        pub fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
        pub fn leveldb_cache_destroy(c: *mut leveldb_cache_t);
        pub fn leveldb_filterpolicy_create_bloom(bits: c_int) -> *mut leveldb_filterpolicy_t;
        pub fn leveldb_filterpolicy_destroy(p: *mut leveldb_filterpolicy_t);
        pub fn leveldb_open(
            o: *const leveldb_options_t,
            name: *const c_char,
            err: *mut *mut c_char,
        ) -> *mut leveldb_t;
        pub fn leveldb_close(db: *mut leveldb_t);
        pub fn leveldb_put(
            db: *mut leveldb_t,
            o: *const leveldb_writeoptions_t,
            k: *const c_char,
            klen: usize,
            v: *const c_char,
            vlen: usize,
            err: *mut *mut c_char,
        );
        pub fn leveldb_delete(
            db: *mut leveldb_t,
            o: *const leveldb_writeoptions_t,
            k: *const c_char,
            klen: usize,
            err: *mut *mut c_char,
        );
        pub fn leveldb_write(
            db: *mut leveldb_t,
            o: *const leveldb_writeoptions_t,
            b: *mut leveldb_writebatch_t,
            err: *mut *mut c_char,
        );
        pub fn leveldb_get(
            db: *mut leveldb_t,
            o: *const leveldb_readoptions_t,
            k: *const c_char,
            klen: usize,
            vlen: *mut usize,
            err: *mut *mut c_char,
        ) -> *mut c_char;
        pub fn leveldb_create_iterator(
            db: *mut leveldb_t,
            o: *const leveldb_readoptions_t,
        ) -> *mut leveldb_iterator_t;
        pub fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> c_uchar;
        pub fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek(it: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
        pub fn leveldb_iter_next(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_prev(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_key(it: *const leveldb_iterator_t, len: *mut usize) -> *const c_char;
        pub fn leveldb_iter_value(it: *const leveldb_iterator_t, len: *mut usize) -> *const c_char;
        pub fn leveldb_iter_get_error(it: *const leveldb_iterator_t, err: *mut *mut c_char);
        pub fn leveldb_property_value(db: *mut leveldb_t, name: *const c_char) -> *mut c_char;
        pub fn leveldb_compact_range(
            db: *mut leveldb_t,
            start: *const c_char,
            startlen: usize,
            limit: *const c_char,
            limitlen: usize,
        );
        pub fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
        pub fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t);
        pub fn leveldb_writebatch_put(
            b: *mut leveldb_writebatch_t,
            k: *const c_char,
            klen: usize,
            v: *const c_char,
            vlen: usize,
        );
        pub fn leveldb_writebatch_delete(
            b: *mut leveldb_writebatch_t,
            k: *const c_char,
            klen: usize,
        );
        pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
        pub fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t);
        pub fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: c_uchar);
        pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
        pub fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t);
        pub fn leveldb_free(p: *mut c_void);
    }
}

use ffi::*;

/// Takes an error string LevelDB allocated, if any.
fn take_err(err: *mut c_char) -> EResult<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB hands back a NUL-terminated malloc'd string we now own.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by LevelDB, freed once.
    unsafe { leveldb_free(err.cast()) };
    Err(msg)
}

/// An open LevelDB database.
pub struct LevelEngine {
    db: *mut leveldb_t,
    opts: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
    filter: *mut leveldb_filterpolicy_t,
    wo: *mut leveldb_writeoptions_t,
    ro: *mut leveldb_readoptions_t,
}

// SAFETY: a leveldb_t is safe for concurrent use by many threads (LevelDB's
// documented contract); the option objects are only read after open.
unsafe impl Send for LevelEngine {}
// SAFETY: as above.
unsafe impl Sync for LevelEngine {}

impl LevelEngine {
    /// Opens (creating) the database at `path`, mapping db_bench flags.
    pub fn open(path: &Path, f: &Flags, notes: &mut Vec<String>) -> EResult<LevelEngine> {
        not_applicable_notes(f, "leveldb", notes);
        if f.memtable_bloom_size_ratio.is_some() || f.memtable_whole_key_filtering.is_some() {
            notes.push(
                "--memtable_bloom_size_ratio/--memtable_whole_key_filtering: LevelDB has no memtable filter; ignored"
                    .into(),
            );
        }
        if f.recycle_log_file_num.is_some() {
            notes.push("--recycle_log_file_num: LevelDB does not recycle logs; ignored".into());
        }
        let name = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| "database path contains a NUL byte".to_string())?;
        // SAFETY: plain C constructors and setters on objects we own.
        unsafe {
            let opts = leveldb_options_create();
            leveldb_options_set_create_if_missing(opts, 1);
            leveldb_options_set_write_buffer_size(opts, f.write_buffer_size as usize);
            let files = if f.open_files < 0 {
                1_000_000
            } else {
                f.open_files as c_int
            };
            leveldb_options_set_max_open_files(opts, files);
            leveldb_options_set_block_size(opts, f.block_size);
            leveldb_options_set_block_restart_interval(opts, f.block_restart_interval as c_int);
            leveldb_options_set_max_file_size(opts, f.target_file_size_base as usize);
            let comp = match f.compression_type.as_str() {
                "none" => 0,
                "snappy" => 1,
                other => {
                    notes.push(format!(
                        "--compression_type={other}: LevelDB has only none and snappy; using snappy"
                    ));
                    1
                }
            };
            leveldb_options_set_compression(opts, comp);
            let cache = if f.cache_size > 0 {
                let c = leveldb_cache_create_lru(f.cache_size as usize);
                leveldb_options_set_cache(opts, c);
                c
            } else {
                ptr::null_mut()
            };
            let filter = if f.bloom_bits > 0 {
                let p = leveldb_filterpolicy_create_bloom(f.bloom_bits);
                leveldb_options_set_filter_policy(opts, p);
                p
            } else {
                ptr::null_mut()
            };
            notes.push(
                "LevelDB: no max_write_buffer_number, level0 triggers, max_bytes_for_level_base, \
                 background job count, disable_wal or flush; those flags do not apply"
                    .into(),
            );
            let wo = leveldb_writeoptions_create();
            leveldb_writeoptions_set_sync(wo, u8::from(f.sync));
            let ro = leveldb_readoptions_create();
            let mut err = ptr::null_mut();
            let db = leveldb_open(opts, name.as_ptr(), &mut err);
            let e = LevelEngine {
                db,
                opts,
                cache,
                filter,
                wo,
                ro,
            };
            take_err(err)?;
            if db.is_null() {
                return Err("leveldb_open returned no database".into());
            }
            Ok(e)
        }
    }
}

impl Drop for LevelEngine {
    fn drop(&mut self) {
        // SAFETY: each object was created by us and is destroyed once, the
        // database first (it references the cache and filter).
        unsafe {
            if !self.db.is_null() {
                leveldb_close(self.db);
            }
            leveldb_options_destroy(self.opts);
            if !self.cache.is_null() {
                leveldb_cache_destroy(self.cache);
            }
            if !self.filter.is_null() {
                leveldb_filterpolicy_destroy(self.filter);
            }
            leveldb_writeoptions_destroy(self.wo);
            leveldb_readoptions_destroy(self.ro);
        }
    }
}

struct LevelIter<'a> {
    it: *mut leveldb_iterator_t,
    _db: &'a LevelEngine,
}

impl Drop for LevelIter<'_> {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_create_iterator, destroyed once, before the db.
        unsafe { leveldb_iter_destroy(self.it) }
    }
}

impl EngineIter for LevelIter<'_> {
    fn seek_to_first(&mut self) {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_seek_to_first(self.it) }
    }
    fn seek_to_last(&mut self) {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_seek_to_last(self.it) }
    }
    fn seek(&mut self, key: &[u8]) {
        // SAFETY: live iterator; key outlives the call.
        unsafe { leveldb_iter_seek(self.it, key.as_ptr().cast(), key.len()) }
    }
    fn valid(&self) -> bool {
        // SAFETY: live iterator.
        unsafe { leveldb_iter_valid(self.it) != 0 }
    }
    fn key(&self) -> &[u8] {
        let mut len = 0;
        // SAFETY: valid iterator; the slice lives until the iterator moves,
        // which needs &mut self.
        unsafe {
            let p = leveldb_iter_key(self.it, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
    fn value(&self) -> &[u8] {
        let mut len = 0;
        // SAFETY: as for key().
        unsafe {
            let p = leveldb_iter_value(self.it, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
    fn next(&mut self) {
        // SAFETY: live, valid iterator.
        unsafe { leveldb_iter_next(self.it) }
    }
    fn prev(&mut self) {
        // SAFETY: live, valid iterator.
        unsafe { leveldb_iter_prev(self.it) }
    }
    fn status(&self) -> EResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: live iterator.
        unsafe { leveldb_iter_get_error(self.it, &mut err) };
        take_err(err)
    }
}

impl Engine for LevelEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> EResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: open db; buffers outlive the call.
        unsafe {
            leveldb_put(
                self.db,
                self.wo,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        take_err(err)
    }
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        let mut err = ptr::null_mut();
        let mut len = 0;
        // SAFETY: open db; the returned buffer is malloc'd and freed below.
        unsafe {
            let p = leveldb_get(
                self.db,
                self.ro,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            take_err(err)?;
            if p.is_null() {
                return Ok(None);
            }
            let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
            leveldb_free(p.cast());
            Ok(Some(v))
        }
    }
    fn delete(&self, key: &[u8]) -> EResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: open db.
        unsafe { leveldb_delete(self.db, self.wo, key.as_ptr().cast(), key.len(), &mut err) };
        take_err(err)
    }
    fn write(&self, ops: &[Op<'_>]) -> EResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: a batch we create, fill and destroy here.
        unsafe {
            let b = leveldb_writebatch_create();
            for op in ops {
                match op {
                    Op::Put(k, v) => leveldb_writebatch_put(
                        b,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    Op::Delete(k) => leveldb_writebatch_delete(b, k.as_ptr().cast(), k.len()),
                }
            }
            leveldb_write(self.db, self.wo, b, &mut err);
            leveldb_writebatch_destroy(b);
        }
        take_err(err)
    }
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>> {
        // SAFETY: open db; the iterator borrows self so it dies first.
        let it = unsafe { leveldb_create_iterator(self.db, self.ro) };
        Ok(Box::new(LevelIter { it, _db: self }))
    }
    fn flush(&self) -> EResult<()> {
        Ok(()) // LevelDB has no public memtable flush.
    }
    fn compact(&self) -> EResult<()> {
        // LevelDB's CompactRange is synchronous: it compacts the memtable,
        // then every level holding files, top down, before it returns.
        // SAFETY: open db; null bounds mean the whole range.
        unsafe { leveldb_compact_range(self.db, ptr::null(), 0, ptr::null(), 0) };
        Ok(())
    }
    fn wait_for_compactions(&self) -> EResult<()> {
        Ok(()) // No public way to wait; LevelDB compacts one job at a time.
    }
    fn stats(&self) -> String {
        let name = c"leveldb.stats";
        // SAFETY: open db; the returned string is malloc'd and freed here.
        unsafe {
            let p = leveldb_property_value(self.db, name.as_ptr());
            if p.is_null() {
                return String::new();
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            leveldb_free(p.cast());
            s
        }
    }
    fn close(&self) -> EResult<()> {
        Ok(()) // Closed on drop.
    }
}
