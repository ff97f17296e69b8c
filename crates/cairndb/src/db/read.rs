//! Point reads and iterators. A read takes the super-version (an `Arc`
//! copy under the `sv` read lock) and then its sequence number, and holds
//! no lock while it searches memtables and tables. A blob reference found
//! in a table is resolved from the blob cache, or with one read of the
//! blob file (through the blob file cache, a leaf lock), after the table's
//! block is released; the version the read holds keeps that file.

use super::*;
use crate::blob::BlobIndex;

impl DbInner {
    pub(super) fn read_seq(&self, opts: &ReadOptions) -> SeqNo {
        match &opts.snapshot {
            Some(s) => s.sequence(),
            None => self.pipeline.last_seq(),
        }
    }

    pub(super) fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut out = None;
        self.find(opts, key, |v| out = Some(v.to_vec()))?;
        Ok(out)
    }

    /// Copies the value of `key` into `buf` (cleared first; its capacity
    /// is reused); false when the key has no value.
    pub(super) fn get_into(
        &self,
        opts: &ReadOptions,
        key: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        buf.clear();
        self.find(opts, key, |v| buf.extend_from_slice(v))
    }

    /// The point read: hands the visible value of `key` (borrowed from a
    /// memtable or a block) to `f`; returns whether there was one.
    fn find(&self, opts: &ReadOptions, key: &[u8], f: impl FnOnce(&[u8])) -> Result<bool> {
        // The super-version first, then the sequence: every write at or
        // below a sequence read later is either in this super-version's
        // memtables and tables or in a newer memtable that holds only
        // newer writes (so the read is a consistent prefix). The other
        // order lets a flush and a compaction run in between and drop,
        // from the tables this read then searches, the version its older
        // sequence needs (Pebble's get.go makes the same argument).
        self.sv_cache
            .with(&self.sv, |sv| self.find_in(sv, opts, key, f))
    }

    /// `find` on the super-version `sv`.
    fn find_in(
        &self,
        sv: &SuperVersion,
        opts: &ReadOptions,
        key: &[u8],
        f: impl FnOnce(&[u8]),
    ) -> Result<bool> {
        self.hook(hooks::READ_BETWEEN);
        let seq = self.read_seq(opts);
        // One hash of the key serves every memtable filter, table hash
        // index and table filter; their first cache lines are requested
        // together before any is read. The tables to probe are chosen once.
        let h = xxhash_rust::xxh3::xxh3_64(key);
        let mut f = Some(f);
        // The table and the decoded reference (no copy of its bytes).
        let mut blob_ref: Option<(u64, std::result::Result<BlobIndex, String>)> = None;
        let found = with_lookup_key(key, seq, |lk| -> Result<Option<bool>> {
            let files = sv.version.point_files(lk);
            for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
                m.prefetch_hash(h);
            }
            files.prefetch(&self.table_cache, key, h);
            for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
                match m.get_hashed(key, h, seq) {
                    Some(MemGet::Value(v)) => {
                        if let Some(f) = f.take() {
                            f(v);
                        }
                        return Ok(Some(true));
                    }
                    Some(MemGet::Deleted) => return Ok(Some(false)),
                    None => {}
                }
            }
            files.find(
                &self.table_cache,
                lk,
                h,
                !opts.fill_cache_off,
                |table, t, _, v| match t {
                    ValueType::Value => {
                        if let Some(f) = f.take() {
                            f(v);
                        }
                        true
                    }
                    ValueType::BlobIndex => {
                        // Read after the table's block is released.
                        blob_ref = Some((table, BlobIndex::decode(v)));
                        true
                    }
                    ValueType::Deletion => false,
                },
            )
        })?;
        if let Some((table, r)) = blob_ref {
            let idx = r.map_err(|what| {
                Error::corruption(
                    filename::table_file_name(&self.path, table),
                    0,
                    format!("entry of key {:?}: {what}", String::from_utf8_lossy(key)),
                )
            })?;
            if let Some(f) = f.take() {
                self.blob_cache.with_value(&idx, !opts.fill_cache_off, f)?;
            }
        }
        Ok(found == Some(true))
    }

    /// The sequence number of the newest entry for `key` (a value or a
    /// tombstone), searching every memtable and table; None when the key
    /// was never written or every trace of it was compacted away. A
    /// transaction's conflict check: with `since`, the search stops at the
    /// memtables when the tables hold nothing newer than `since` (the
    /// answer is then only known to be `<= since`, returned as None).
    pub(crate) fn latest_seq(&self, key: &[u8], since: Option<SeqNo>) -> Result<Option<SeqNo>> {
        let sv = self.current_sv();
        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            if let Some((_, s)) = m.find(key, MAX_SEQ) {
                return Ok(Some(s));
            }
        }
        if let Some(since) = since {
            // Every write newer than the newest table entry is in a
            // memtable searched above.
            if sv.tables_max_seq <= since {
                return Ok(None);
            }
        }
        with_lookup_key(key, MAX_SEQ, |lk| {
            sv.version
                .find(&self.table_cache, lk, false, |_, _, s, _| s)
        })
    }

    pub(super) fn iter(&self, opts: &ReadOptions) -> DbIterator {
        // Super-version before sequence, as in `get`.
        let sv = self.current_sv();
        self.hook(hooks::READ_BETWEEN);
        let seq = self.read_seq(opts);
        let fill = !opts.fill_cache_off;
        let build = {
            let sv = sv.clone();
            let tables = self.table_cache.clone();
            move |prefix: Option<&[u8]>| -> Box<dyn InternalIterator> {
                let mut children: Vec<Box<dyn InternalIterator>> =
                    Vec::with_capacity(1 + sv.imms.len() + sv.version.num_sorted_runs());
                children.push(Box::new(sv.mem.iter()));
                for m in &sv.imms {
                    children.push(Box::new(m.iter()));
                }
                match prefix {
                    Some(p) => children.extend(sv.version.prefix_iterators(&tables, fill, p)),
                    None => children.extend(sv.version.iterators(&tables, fill)),
                }
                Box::new(MergingIterator::new(children))
            }
        };
        let inner = build(None);
        let rebuild = (opts.prefix_same_as_start && self.opts.prefix_extractor.is_some())
            .then(|| Box::new(build) as crate::iter::db_iter::Rebuild);
        DbIterator::new(
            inner,
            seq,
            self.opts.prefix_extractor.clone(),
            opts,
            Box::new(sv),
            rebuild,
            Some(if fill {
                self.blob_cache.clone()
            } else {
                Arc::new(self.blob_cache.without_fill())
            }),
        )
    }
}

/// Runs `f` with the internal lookup key of `(key, seq)`, built on the stack
/// unless the key is long.
fn with_lookup_key<R>(key: &[u8], seq: SeqNo, f: impl FnOnce(&[u8]) -> R) -> R {
    let mut stack = [0u8; 256];
    let n = key.len();
    if n + TRAILER_LEN <= stack.len() {
        stack[..n].copy_from_slice(key);
        stack[n..n + TRAILER_LEN].copy_from_slice(&pack_trailer(seq, TYPE_FOR_SEEK).to_le_bytes());
        f(&stack[..n + TRAILER_LEN])
    } else {
        f(&lookup_key(key, seq))
    }
}
