//! Point reads and iterators. A read takes the super-version (an `Arc`
//! copy under the `sv` read lock) and then its sequence number, and holds
//! no lock while it searches memtables and tables.

use super::*;

impl DbInner {
    pub(super) fn read_seq(&self, opts: &ReadOptions) -> SeqNo {
        match &opts.snapshot {
            Some(s) => s.sequence(),
            None => self.pipeline.last_seq(),
        }
    }

    pub(super) fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // The super-version first, then the sequence: every write at or
        // below a sequence read later is either in this super-version's
        // memtables and tables or in a newer memtable that holds only
        // newer writes (so the read is a consistent prefix). The other
        // order lets a flush and a compaction run in between and drop,
        // from the tables this read then searches, the version its older
        // sequence needs (Pebble's get.go makes the same argument).
        let sv = self.current_sv();
        self.hook(hooks::READ_BETWEEN);
        let seq = self.read_seq(opts);
        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            match m.get(key, seq) {
                Some(MemGet::Value(v)) => return Ok(Some(v.to_vec())),
                Some(MemGet::Deleted) => return Ok(None),
                None => {}
            }
        }
        // The lookup key is built on the stack unless the key is long.
        let mut stack = [0u8; 256];
        let heap;
        let lk: &[u8] = if key.len() + TRAILER_LEN <= stack.len() {
            let n = key.len();
            stack[..n].copy_from_slice(key);
            stack[n..n + TRAILER_LEN]
                .copy_from_slice(&pack_trailer(seq, TYPE_FOR_SEEK).to_le_bytes());
            &stack[..n + TRAILER_LEN]
        } else {
            heap = lookup_key(key, seq);
            &heap
        };
        match sv
            .version
            .get(&self.table_cache, lk, !opts.fill_cache_off)?
        {
            Some(TableGet::Value(v)) => Ok(Some(v)),
            Some(TableGet::Deleted) | None => Ok(None),
        }
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
                let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
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
        )
    }
}
