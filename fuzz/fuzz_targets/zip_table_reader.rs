//! Fuzz target: a zip table whose sections are arbitrary bytes but whose
//! meta section, footer and section checksums are valid, so the decoders
//! behind the checksum gate (fst key index, packed arrays, groups, zstd) see
//! the fuzzer's bytes. The top bit of the group-size byte picks the format
//! version (1: the dictionary section is a zstd dictionary; the newest: it
//! is a compressed dictionary behind a length header, and groups may carry
//! key positions and packed hex runs), so both readers are fuzzed. Every input must be rejected with an error or read without
//! panicking.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::internals::iter::InternalIterator;
use cairndb::internals::sst::zip::format::{
    section_crc, Meta, Section, ZipFooter, ZIP_FORMAT_VERSION,
};
use cairndb::internals::sst::Table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let (head, body) = data.split_at(16);
    // Six section sizes, then group size, record and key counts.
    let mut sizes = [0usize; 6];
    for (i, s) in sizes.iter_mut().enumerate() {
        *s = u16::from_le_bytes([head[2 * i], head[2 * i + 1]]) as usize;
    }
    let group_size = ((head[12] & 0x7f) as u32).max(1);
    let version = if head[12] & 0x80 != 0 {
        1
    } else {
        ZIP_FORMAT_VERSION
    };
    let num_records = u16::from_le_bytes([head[13], head[14]]) as u64;
    let num_keys = num_records.saturating_sub(head[15] as u64 % 3);
    let total: usize = sizes.iter().sum();
    if total > body.len() {
        return;
    }
    let groups = body.len() - total;
    let mut meta = Meta {
        group_size,
        num_records,
        num_keys,
        num_groups: num_records.div_ceil(group_size as u64),
        // Bit 0: a dictionary; bit 1 (the newest version): key positions
        // in every group; bit 2 (the newest version): hex runs, with the
        // escape byte from the same byte.
        flags: head[15] & 7,
        compression_level: 3,
        sections: [Section::default(); 6],
        hex_escape: head[15],
    };
    let mut off = groups;
    for (i, s) in sizes.iter().enumerate() {
        let bytes = &body[off..off + s];
        meta.sections[i] = Section {
            offset: off as u64,
            size: *s as u64,
            crc: section_crc(bytes),
        };
        off += s;
    }
    let mut file = body.to_vec();
    let mb = meta.encode();
    let footer = ZipFooter {
        meta: Section {
            offset: file.len() as u64,
            size: mb.len() as u64,
            crc: section_crc(&mb),
        },
        version,
    };
    file.extend_from_slice(&mb);
    file.extend_from_slice(&footer.encode());
    let fs = MemFs::new();
    let p = Path::new("/000001.sst");
    fs.set_contents(p, file);
    let Ok(f) = fs.open_random(p) else { return };
    let Ok(t) = Table::open(f, 1, None, None) else {
        return;
    };
    let t = Arc::new(t);
    let _ = t.verify_checksums();
    let _ = t.get(b"key\x01\xff\xff\xff\xff\xff\xff\xff", true, |_, v| v.len());
    let _ = t.may_contain_prefix(b"k");
    let mut it = t.iter(false);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        let _ = (it.key(), it.value());
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 20_000 {
        it.prev();
        n += 1;
    }
    it.seek(b"m\x01\x00\x00\x00\x00\x00\x00\x00");
    let _ = it.status();
});
