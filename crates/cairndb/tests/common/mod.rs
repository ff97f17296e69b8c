//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::{CompressionType, FixedPrefix, Options};

/// Options that make flushes and compactions happen after a few hundred KB.
pub fn small_options(fs: Arc<dyn Fs>) -> Options {
    Options {
        fs,
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 3,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 8,
        level0_stop_writes_trigger: 12,
        max_bytes_for_level_base: 128 << 10,
        target_file_size_base: 32 << 10,
        block_size: 512,
        block_cache_size: 256 << 10,
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        compression: CompressionType::None,
        ..Options::default()
    }
}

pub fn mem_options() -> (MemFs, Options) {
    let fs = MemFs::new();
    let o = small_options(Arc::new(fs.clone()));
    (fs, o)
}

/// A seed from CAIRNDB_SEED or the clock, printed so a failure can be replayed.
pub fn seed(name: &str) -> u64 {
    let s = std::env::var("CAIRNDB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{name}: seed {s} (rerun with CAIRNDB_SEED={s})");
    s
}

/// Copies every file of `src` under `dir` into a fresh MemFs.
pub fn clone_fs(src: &MemFs, dir: &std::path::Path) -> MemFs {
    let dst = MemFs::new();
    dst.create_dir_all(dir).unwrap();
    for name in src.list_dir(dir).unwrap() {
        let p = dir.join(&name);
        if let Some(c) = src.contents(&p) {
            dst.set_contents(&p, c);
        }
    }
    dst.sync_dir(dir).unwrap();
    dst
}

/// Numbers of the blob files in `/db`, ascending.
pub fn blob_file_numbers(fs: &dyn Fs) -> Vec<u64> {
    let mut v: Vec<u64> = fs
        .list_dir(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter_map(|n| n.strip_suffix(".blob")?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}
