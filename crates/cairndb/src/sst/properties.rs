//! Table properties: statistics about a table written into its properties
//! block (`docs/format/sstable.md`, "Properties block").
//!
//! Encoding: fixed field order, integers as varint64, the compression byte as
//! one raw byte, byte strings length-prefixed (varint32). Bytes after the last
//! known field are ignored so that later versions may append fields. Decoding
//! never panics: any short or malformed field is a `Corruption` naming the file
//! and the block offset. Plain data: no locks.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::Path;

use crate::error::{Error, Result};
use crate::sst::format::BlockHandle;
use crate::util::coding::{put_length_prefixed, put_varint64, Reader};

/// Statistics about one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Entries (values and tombstones).
    pub num_entries: u64,
    /// Tombstones among them.
    pub num_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_size: u64,
    /// Sum of value lengths.
    pub raw_value_size: u64,
    /// Stored bytes of data blocks (after compression, trailers included).
    pub data_size: u64,
    /// Stored bytes of the index block (trailer included).
    pub index_size: u64,
    /// Stored bytes of the filter block (trailer included); 0 without filter.
    pub filter_size: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Smallest sequence number in the table.
    pub smallest_seq: u64,
    /// Largest sequence number in the table.
    pub largest_seq: u64,
    /// Compression type byte the table was configured with.
    pub compression: u8,
    /// Smallest internal key.
    pub smallest_key: Vec<u8>,
    /// Largest internal key.
    pub largest_key: Vec<u8>,
    /// Name of the prefix extractor the filter was built with ("" for none).
    pub prefix_extractor_name: String,
    /// Where the hash index block is (block-based tables written with
    /// `Options::hash_index`); fields 15 and 16, absent when `None`.
    pub hash_index: Option<BlockHandle>,
}

impl TableProperties {
    /// Counts one added entry (both table builders call this in key order).
    pub fn add_entry(&mut self, ikey: &[u8], parsed: &crate::key::ParsedKey<'_>, value_len: usize) {
        if self.num_entries == 0 {
            self.smallest_key = ikey.to_vec();
        }
        self.num_entries += 1;
        if parsed.vtype == crate::key::ValueType::Deletion {
            self.num_deletions += 1;
        }
        self.raw_key_size += ikey.len() as u64;
        self.raw_value_size += value_len as u64;
        self.smallest_seq = self.smallest_seq.min(parsed.seq);
        self.largest_seq = self.largest_seq.max(parsed.seq);
    }

    /// The encoded record.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(96 + self.smallest_key.len() + self.largest_key.len());
        for v in [
            self.num_entries,
            self.num_deletions,
            self.raw_key_size,
            self.raw_value_size,
            self.data_size,
            self.index_size,
            self.filter_size,
            self.num_data_blocks,
            self.smallest_seq,
            self.largest_seq,
        ] {
            put_varint64(&mut b, v);
        }
        b.push(self.compression);
        put_length_prefixed(&mut b, &self.smallest_key);
        put_length_prefixed(&mut b, &self.largest_key);
        put_length_prefixed(&mut b, self.prefix_extractor_name.as_bytes());
        if let Some(h) = self.hash_index {
            h.encode_varint(&mut b);
        }
        b
    }

    /// Decodes a record read from the block at `offset` of `path`.
    pub fn decode(path: &Path, offset: u64, src: &[u8]) -> Result<TableProperties> {
        let mut r = Reader::new(src);
        let bad = |r: &Reader, field: &str| {
            Error::corruption(
                path,
                offset,
                format!(
                    "bad table properties: field {field} at byte {} of the block",
                    r.pos()
                ),
            )
        };
        let mut ints = [0u64; 10];
        const NAMES: [&str; 10] = [
            "num_entries",
            "num_deletions",
            "raw_key_size",
            "raw_value_size",
            "data_size",
            "index_size",
            "filter_size",
            "num_data_blocks",
            "smallest_seq",
            "largest_seq",
        ];
        for (slot, name) in ints.iter_mut().zip(NAMES) {
            *slot = r.varint64().ok_or_else(|| bad(&r, name))?;
        }
        let compression = r.u8().ok_or_else(|| bad(&r, "compression"))?;
        let smallest_key = r
            .length_prefixed()
            .ok_or_else(|| bad(&r, "smallest_key"))?
            .to_vec();
        let largest_key = r
            .length_prefixed()
            .ok_or_else(|| bad(&r, "largest_key"))?
            .to_vec();
        let name = r
            .length_prefixed()
            .ok_or_else(|| bad(&r, "prefix_extractor_name"))?;
        let prefix_extractor_name = String::from_utf8(name.to_vec())
            .map_err(|_| bad(&r, "prefix_extractor_name (not UTF-8)"))?;
        let hash_index = if r.is_empty() {
            None
        } else {
            let offset = r.varint64().ok_or_else(|| bad(&r, "hash_index_offset"))?;
            let size = r.varint64().ok_or_else(|| bad(&r, "hash_index_size"))?;
            Some(BlockHandle { offset, size })
        };
        Ok(TableProperties {
            num_entries: ints[0],
            num_deletions: ints[1],
            raw_key_size: ints[2],
            raw_value_size: ints[3],
            data_size: ints[4],
            index_size: ints[5],
            filter_size: ints[6],
            num_data_blocks: ints[7],
            smallest_seq: ints[8],
            largest_seq: ints[9],
            compression,
            smallest_key,
            largest_key,
            prefix_extractor_name,
            hash_index,
        })
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let p = TableProperties {
            num_entries: 10,
            num_deletions: 2,
            raw_key_size: 1 << 40,
            raw_value_size: 5,
            data_size: 6,
            index_size: 7,
            filter_size: 8,
            num_data_blocks: 9,
            smallest_seq: 1,
            largest_seq: 99,
            compression: 2,
            smallest_key: b"aaaaaaaaaaaa".to_vec(),
            largest_key: b"zzzzzzzzzzzz".to_vec(),
            prefix_extractor_name: "cairndb.FixedPrefix.4".into(),
            hash_index: None,
        };
        let b = p.encode();
        let path = Path::new("/t/000009.sst");
        assert_eq!(TableProperties::decode(path, 0, &b).unwrap(), p);
        for n in 0..b.len() {
            let e = TableProperties::decode(path, 77, &b[..n]).unwrap_err();
            assert!(e.is_corruption());
            assert!(e.to_string().contains("000009.sst"));
        }
        let with_hash = TableProperties {
            hash_index: Some(BlockHandle {
                offset: 1 << 33,
                size: 4104,
            }),
            ..p.clone()
        };
        let bh = with_hash.encode();
        assert_eq!(bh[..b.len()], b[..], "fields 15-16 are appended");
        assert_eq!(TableProperties::decode(path, 0, &bh).unwrap(), with_hash);
        for n in b.len() + 1..bh.len() {
            let e = TableProperties::decode(path, 77, &bh[..n]).unwrap_err();
            assert!(e.to_string().contains("hash_index"), "{e}");
        }
        let mut longer = bh.clone();
        longer.extend_from_slice(b"future");
        assert_eq!(
            TableProperties::decode(path, 0, &longer).unwrap(),
            with_hash
        );
    }
}
