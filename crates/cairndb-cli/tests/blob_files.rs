//! `cairndb verify` checks blob files and every blob reference of a
//! database written with `enable_blob_files`, and names the blob file of a
//! damaged value; `cairndb dump blob FILE` prints a blob file's records.

use std::path::{Path, PathBuf};
use std::process::Command;

use cairndb::{Db, Options, WriteOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_cairndb")
}

fn run(args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// A closed database with blob files, garbage (overwritten values) and
/// relocated values.
fn make_db(dir: &Path) {
    let o = Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        enable_blob_files: true,
        min_blob_size: 100,
        blob_file_size: 32 << 10,
        enable_blob_garbage_collection: true,
        blob_garbage_collection_age_cutoff: 0.5,
        ..Options::default()
    };
    let db = Db::open(dir, o).unwrap();
    for round in 0..3u8 {
        for i in 0..300u32 {
            let v = vec![b'a' + round; 100 + (i as usize * 7) % 400];
            db.put(
                &WriteOptions::default(),
                format!("key{i:05}").as_bytes(),
                &v,
            )
            .unwrap();
            db.put(
                &WriteOptions::default(),
                format!("small{i:05}").as_bytes(),
                b"s",
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
}

fn blob_file(dir: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "blob"))
        .collect();
    v.sort();
    v.pop().expect("a blob file")
}

#[test]
fn verify_checks_blob_references_and_dump_prints_a_blob_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let (ok, text) = run(&["verify".as_ref(), dir.as_os_str()]);
    assert!(ok, "{text}");
    assert!(text.contains("0 problems"), "{text}");
    assert!(!text.contains(" 0 blob references"), "{text}");

    let blob = blob_file(&dir);
    let (ok, text) = run(&["dump".as_ref(), "blob".as_ref(), blob.as_os_str()]);
    assert!(ok, "{text}");
    assert!(text.contains("'key0") && text.contains("footer:"), "{text}");

    // A flipped byte in the last record's value: verify names the file.
    let mut data = std::fs::read(&blob).unwrap();
    let at = data.len() - 32 - 10;
    data[at] ^= 0x20;
    std::fs::write(&blob, &data).unwrap();
    let (ok, text) = run(&["verify".as_ref(), dir.as_os_str()]);
    assert!(!ok, "{text}");
    let name = blob.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(&format!("{name} offset")), "{text}");
    let (ok, text) = run(&["dump".as_ref(), "blob".as_ref(), blob.as_os_str()]);
    assert!(!ok && text.contains("checksum mismatch"), "{text}");
}
