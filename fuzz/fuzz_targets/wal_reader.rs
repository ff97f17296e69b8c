//! Fuzz target: any bytes read as a write-ahead log yield records, damage
//! reports or the end, never a panic or an endless loop; every record is
//! decoded as a write batch.
#![no_main]

use std::path::Path;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::internals::wal::{LogReader, ReadEvent};
use cairndb::WriteBatch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let p = Path::new("/000007.log");
    fs.set_contents(p, data.to_vec());
    let Ok(f) = fs.open_sequential(p) else { return };
    let mut r = LogReader::new(f, 7);
    let mut rec = Vec::new();
    // Every call consumes input or ends; bound it anyway.
    for _ in 0..data.len() + 2 {
        match r.read_record(&mut rec) {
            Ok(ReadEvent::Record { offset }) => {
                if let Ok(b) = WriteBatch::from_data(&rec, p, offset) {
                    for op in b.iter() {
                        let _ = op;
                    }
                }
            }
            Ok(ReadEvent::Corruption { .. }) => {}
            Ok(ReadEvent::Eof) | Err(_) => return,
        }
    }
    panic!(
        "the log reader did not reach the end of {} bytes",
        data.len()
    );
});
