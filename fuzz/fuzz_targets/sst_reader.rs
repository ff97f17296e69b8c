//! Fuzz target: any bytes opened as a table are either rejected with an
//! error or read (iteration, checksum verification) without panicking.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::internals::iter::InternalIterator;
use cairndb::internals::sst::Table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let p = Path::new("/000001.sst");
    fs.set_contents(p, data.to_vec());
    let Ok(f) = fs.open_random(p) else { return };
    let Ok(t) = Table::open(f, 1, None, None) else {
        return;
    };
    let t = Arc::new(t);
    let _ = t.verify_checksums();
    let mut it = t.iter(false);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        let _ = (it.key(), it.value());
        it.next();
        n += 1;
    }
    let _ = it.status();
    let mut it = t.iter(false);
    it.seek_to_last();
    if it.valid() {
        it.prev();
    }
    it.seek(b"m\x00\x00\x00\x00\x00\x00\x00\x00");
    let _ = it.status();
});
