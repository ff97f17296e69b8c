//! Writes one SST file front to back (`docs/format/sstable.md`, "File
//! layout"): data blocks as they fill, then on `finish` the filter block, the
//! hash index block (when asked for), the index block, the properties block
//! and the footer, then `sync`.
//!
//! Invariants: keys are added in strictly increasing internal-key order
//! (debug-asserted); each index entry's key is a separator `>=` the last key
//! of its block and `<` the first key of the next block; the first error from
//! the file is latched and returned by every later call. A builder is owned by
//! one thread (the flush or compaction job): no locks.

use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::key::{self, compare_internal, ValueType, MAX_SEQ, TRAILER_LEN};
use crate::options::{CompressionType, Options, SliceTransform};
use crate::sst::block::BlockBuilder;
use crate::sst::filter::FilterBuilder;
use crate::sst::format::{
    block_crc, compress_block, compression_byte, BlockHandle, Footer, BLOCK_TRAILER_LEN,
    COMPRESSION_NONE, FORMAT_VERSION,
};
use crate::sst::hash_index::HashIndexBuilder;
use crate::sst::properties::TableProperties;

/// Settings for writing one table.
#[derive(Clone)]
pub struct TableOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points in data blocks.
    pub block_restart_interval: usize,
    /// Write a hash index block over the user keys.
    pub hash_index: bool,
    /// Bloom filter bits per key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Compression of data blocks.
    pub compression: CompressionType,
    /// Prefix extractor whose prefixes are added to the filter.
    pub prefix_extractor: Option<Arc<dyn SliceTransform>>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions::from_options(&Options::default(), 0)
    }
}

impl TableOptions {
    /// The settings for a table written to `level`.
    pub fn from_options(o: &Options, level: usize) -> TableOptions {
        TableOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            hash_index: o.hash_index,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression_for_level(level),
            prefix_extractor: o.prefix_extractor.clone(),
        }
    }
}

/// What `finish` reports about the written file.
#[derive(Debug, Clone)]
pub struct TableFileInfo {
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries written.
    pub num_entries: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// The properties written into the file.
    pub props: TableProperties,
}

/// Builds a table (see the module doc).
pub struct TableBuilder {
    opts: TableOptions,
    file: Box<dyn WritableFile>,
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<FilterBuilder>,
    hash_index: Option<HashIndexBuilder>,
    /// Handle of the last flushed data block, whose index entry waits for the
    /// first key of the next block (to pick a short separator).
    pending_index: Option<BlockHandle>,
    last_key: Vec<u8>,
    props: TableProperties,
    compressed: Vec<u8>,
    scratch: Vec<u8>,
    error: Option<Error>,
}

impl TableBuilder {
    /// A builder writing to `file` (which should be empty).
    pub fn new(opts: TableOptions, file: Box<dyn WritableFile>) -> TableBuilder {
        let filter = (opts.bloom_bits_per_key > 0)
            .then(|| FilterBuilder::new(opts.bloom_bits_per_key, opts.prefix_extractor.clone()));
        let hash_index = opts.hash_index.then(HashIndexBuilder::default);
        let props = TableProperties {
            compression: compression_byte(opts.compression),
            prefix_extractor_name: opts
                .prefix_extractor
                .as_ref()
                .map(|p| p.name().to_string())
                .unwrap_or_default(),
            smallest_seq: u64::MAX,
            ..TableProperties::default()
        };
        TableBuilder {
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(1),
            offset: file.len(),
            opts,
            file,
            filter,
            hash_index,
            pending_index: None,
            last_key: Vec::new(),
            props,
            compressed: Vec::new(),
            scratch: Vec::new(),
            error: None,
        }
    }

    /// Adds an entry. REQUIRES: `ikey` is an internal key greater than every
    /// key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let Some(parsed) = key::parse_internal_key(ikey) else {
            return Err(Error::invalid(format!(
                "table builder for {}: not an internal key ({} bytes)",
                self.file.path().display(),
                ikey.len()
            )));
        };
        debug_assert!(
            self.props.num_entries == 0 || compare_internal(&self.last_key, ikey).is_lt(),
            "table keys must be strictly increasing"
        );
        if let Some(handle) = self.pending_index.take() {
            shortest_separator(&self.last_key, ikey, &mut self.scratch);
            self.add_index_entry(handle);
        }
        if let Some(f) = &mut self.filter {
            f.add_key(parsed.user_key);
        }
        self.props.add_entry(ikey, &parsed, value.len());
        let new_user_key =
            self.props.num_entries == 1 || key::user_key(&self.last_key) != parsed.user_key;
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data_block.add(ikey, value);
        if let (Some(h), true) = (&mut self.hash_index, new_user_key) {
            let offset = self.data_block.current_restart_offset();
            match u32::try_from(self.props.num_data_blocks) {
                Ok(b) => h.add(xxh3_64(parsed.user_key), b, offset),
                // Past what a slot can name: the table gets no hash index.
                _ => self.hash_index = None,
            }
        }
        if self.data_block.size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the pending data block.
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data_block.size_estimate() as u64
    }

    fn add_index_entry(&mut self, handle: BlockHandle) {
        let mut v = Vec::with_capacity(20);
        handle.encode_varint(&mut v);
        self.index_block.add(&self.scratch, &v);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let c = self.opts.compression;
        let raw = self.data_block.finish();
        let t = compress_block(c, raw, &mut self.compressed);
        let body: &[u8] = if t == COMPRESSION_NONE {
            raw
        } else {
            &self.compressed
        };
        let handle = write_block(&mut *self.file, &mut self.offset, body, t, &mut self.error)?;
        self.data_block.reset();
        self.props.data_size += handle.size + BLOCK_TRAILER_LEN as u64;
        self.props.num_data_blocks += 1;
        self.pending_index = Some(handle);
        Ok(())
    }

    fn write_raw_block(&mut self, body: &[u8]) -> Result<BlockHandle> {
        write_block(
            &mut *self.file,
            &mut self.offset,
            body,
            COMPRESSION_NONE,
            &mut self.error,
        )
    }

    /// Writes everything that remains and syncs the file.
    pub fn finish(mut self) -> Result<TableFileInfo> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            short_successor(&self.last_key, &mut self.scratch);
            self.add_index_entry(handle);
        }
        let filter_handle = match self.filter.take() {
            Some(f) if self.props.num_entries > 0 => {
                let bytes = f.finish();
                let h = self.write_raw_block(&bytes)?;
                self.props.filter_size = h.size + BLOCK_TRAILER_LEN as u64;
                h
            }
            _ => BlockHandle::default(),
        };
        if let Some(bytes) = self.hash_index.take().and_then(HashIndexBuilder::finish) {
            let h = self.write_raw_block(&bytes)?;
            self.props.hash_index = Some(h);
        }
        let index_bytes = self.index_block.finish().to_vec();
        let index_handle = self.write_raw_block(&index_bytes)?;
        self.props.index_size = index_handle.size + BLOCK_TRAILER_LEN as u64;
        if self.props.num_entries == 0 {
            self.props.smallest_seq = 0;
        }
        self.props.largest_key = self.last_key.clone();
        let props_bytes = self.props.encode();
        let props_handle = self.write_raw_block(&props_bytes)?;
        let footer = Footer {
            index: index_handle,
            filter: filter_handle,
            properties: props_handle,
            version: FORMAT_VERSION,
        };
        self.file.append(&footer.encode())?;
        self.offset += footer.encode().len() as u64;
        self.file.flush()?;
        self.file.sync()?;
        Ok(TableFileInfo {
            file_size: self.offset,
            num_entries: self.props.num_entries,
            smallest: self.props.smallest_key.clone(),
            largest: self.props.largest_key.clone(),
            props: self.props,
        })
    }

    /// Drops the builder without finishing the file (the caller deletes it).
    pub fn abandon(self) {}
}

fn write_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    body: &[u8],
    t: u8,
    error: &mut Option<Error>,
) -> Result<BlockHandle> {
    let handle = BlockHandle {
        offset: *offset,
        size: body.len() as u64,
    };
    let mut trailer = [0u8; BLOCK_TRAILER_LEN];
    trailer[0] = t;
    trailer[1..].copy_from_slice(&block_crc(body, t).to_le_bytes());
    let r = file.append(body).and_then(|_| file.append(&trailer));
    if let Err(e) = r {
        *error = Some(e.clone());
        return Err(e);
    }
    *offset += (body.len() + BLOCK_TRAILER_LEN) as u64;
    Ok(handle)
}

/// Sets `out` to a short internal key `k` with `a <= k < b` (requires a < b).
pub(crate) fn shortest_separator(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (ua, ub) = (key::user_key(a), key::user_key(b));
    let min = ua.len().min(ub.len());
    let diff = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    if diff < min {
        let c = ua[diff];
        if c < 0xff && c + 1 < ub[diff] {
            out.extend_from_slice(&ua[..diff]);
            out.push(c + 1);
            // out's user key is > ua and < ub, so (out, MAX_SEQ) is in range.
            out.extend_from_slice(&key::pack_trailer(MAX_SEQ, ValueType::Value).to_le_bytes());
            debug_assert!(compare_internal(a, out).is_le() && compare_internal(out, b).is_lt());
            return;
        }
    }
    out.extend_from_slice(a);
}

/// Sets `out` to a short internal key `k >= a`.
pub(crate) fn short_successor(a: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let ua = key::user_key(a);
    if let Some(i) = ua.iter().position(|&c| c != 0xff) {
        if i + 1 < ua.len() {
            out.extend_from_slice(&ua[..i]);
            out.push(ua[i] + 1);
            out.extend_from_slice(&key::pack_trailer(MAX_SEQ, ValueType::Value).to_le_bytes());
            debug_assert!(compare_internal(a, out).is_lt());
            return;
        }
    }
    out.extend_from_slice(a);
    debug_assert!(out.len() >= TRAILER_LEN);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueType};

    #[test]
    fn separators() {
        let mut out = Vec::new();
        let a = make_internal_key(b"abcdef", 5, ValueType::Value);
        let b = make_internal_key(b"abzz", 9, ValueType::Value);
        shortest_separator(&a, &b, &mut out);
        assert_eq!(key::user_key(&out), b"abd");
        assert!(compare_internal(&a, &out).is_lt() && compare_internal(&out, &b).is_lt());
        // Adjacent bytes: keep a.
        let b2 = make_internal_key(b"abd", 9, ValueType::Value);
        shortest_separator(&a, &b2, &mut out);
        assert_eq!(out, a);
        // Same user key.
        let a3 = make_internal_key(b"k", 9, ValueType::Value);
        let b3 = make_internal_key(b"k", 2, ValueType::Value);
        shortest_separator(&a3, &b3, &mut out);
        assert_eq!(out, a3);
        // Prefix.
        let b4 = make_internal_key(b"abcdefg", 2, ValueType::Value);
        shortest_separator(&a, &b4, &mut out);
        assert_eq!(out, a);
        short_successor(&a, &mut out);
        assert_eq!(key::user_key(&out), b"b");
        let ff = make_internal_key(&[0xff, 0xff], 1, ValueType::Value);
        short_successor(&ff, &mut out);
        assert_eq!(out, ff);
        let one = make_internal_key(b"a", 1, ValueType::Value);
        short_successor(&one, &mut out);
        assert_eq!(out, one);
    }
}
