//! Fuzz target: a valid block-based table with a hash index whose index
//! block the fuzzer rewrites (slots, and trailer bytes when the input asks),
//! with its checksum made valid again, so the hash index decoder and the
//! point-read path behind it see the fuzzer's slots. Every input must be
//! rejected with an error or read without panicking, and a point read must
//! never return an entry of another key.
#![no_main]

use std::path::Path;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::internals::key::{self, make_internal_key, ValueType};
use cairndb::internals::sst::format::{block_crc, BLOCK_TRAILER_LEN, COMPRESSION_NONE};
use cairndb::internals::sst::{Table, TableBuilder, TableOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, body) = data.split_at(4);
    let keys = 1 + head[0] as usize;
    let interval = 1 + (head[1] % 4) as usize;
    let keep_trailer = head[2] & 1 == 0;
    let fs = MemFs::new();
    let p = Path::new("/000001.sst");
    let opts = TableOptions {
        block_size: 64 + head[3] as usize * 4,
        block_restart_interval: interval,
        hash_index: true,
        bloom_bits_per_key: 0,
        ..TableOptions::default()
    };
    let Ok(f) = fs.create(p) else { return };
    let mut b = TableBuilder::new(opts, f);
    let ukey = |i: usize| format!("key{i:05}").into_bytes();
    for i in 0..keys {
        // Two versions of every third key.
        for seq in (1..=1 + u64::from(i % 3 == 0)).rev() {
            let k = make_internal_key(&ukey(i), seq * 10, ValueType::Value);
            if b.add(&k, format!("v{i}.{seq}").as_bytes()).is_err() {
                return;
            }
        }
    }
    if b.finish().is_err() {
        return;
    }
    let Some(mut bytes) = fs.contents(p) else {
        return;
    };
    let Ok(t) = fs
        .open_random(p)
        .and_then(|f| Table::open(f, 1, None, None))
    else {
        return;
    };
    let Some(h) = t.properties().hash_index else {
        return;
    };
    let (start, len) = (h.offset as usize, h.size as usize);
    let slots = if keep_trailer {
        len.saturating_sub(8)
    } else {
        len
    };
    for (i, &x) in body.iter().enumerate().take(slots) {
        bytes[start + i] = x;
    }
    let crc = block_crc(&bytes[start..start + len], COMPRESSION_NONE);
    bytes[start + len + 1..start + len + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
    fs.set_contents(p, bytes);
    let Ok(f) = fs.open_random(p) else { return };
    let Ok(t) = Table::open(f, 1, None, None) else {
        return;
    };
    for i in 0..keys + 3 {
        for snap in [5, 15, 25] {
            let lookup = key::lookup_key(&ukey(i), snap);
            if let Ok(Some(k)) = t.get(&lookup, false, |k, _| k.to_vec()) {
                // The first entry at or after the lookup key: never one
                // before it.
                assert!(key::compare_internal(&k, &lookup).is_ge());
            }
        }
    }
});
