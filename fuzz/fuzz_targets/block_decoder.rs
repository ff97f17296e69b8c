//! Fuzz target: any bytes given to the block decoder are either rejected
//! with an error or iterated (forward, backward, seeks) without panicking.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use cairndb::internals::iter::InternalIterator;
use cairndb::internals::sst::block::{Block, BlockOrigin};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let origin = BlockOrigin {
        path: Arc::from(Path::new("fuzz.sst")),
        offset: 0,
    };
    let Ok(block) = Block::new(data.to_vec(), origin) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    let mut first = None;
    while it.valid() && n < 10_000 {
        if first.is_none() {
            first = Some(it.key().to_vec());
        }
        let _ = it.value();
        it.next();
        n += 1;
    }
    let _ = it.status();
    let mut it = block.iter();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        it.prev();
        n += 1;
    }
    let _ = it.status();
    let mut it = block.iter();
    it.seek(first.as_deref().unwrap_or(data.get(..8).unwrap_or(data)));
    let _ = it.valid();
    let _ = it.status();
});
