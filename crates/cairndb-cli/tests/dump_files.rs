//! `cairndb dump sst|wal|manifest` prints each kind of file, and reports
//! damage with its offset and a non-zero exit status instead of panicking.

use std::path::{Path, PathBuf};
use std::process::Command;

use cairndb::{Db, Options, WriteBatch, WriteOptions};

fn dump(kind: &str, file: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .args(["dump", kind])
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn find(dir: &Path, suffix: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains(suffix))
        .unwrap()
}

#[test]
fn dump_prints_each_kind_of_file_and_reports_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    db.put(&WriteOptions::default(), b"apple\x01", b"red")
        .unwrap();
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    b.put(b"banana", b"yellow");
    b.delete(b"apple\x01");
    db.write(&WriteOptions::default(), b).unwrap();
    db.close().unwrap();
    drop(db);

    let (ok, out) = dump("sst", &find(tmp.path(), ".sst"));
    assert!(ok, "{out}");
    assert!(
        out.contains("properties:") && out.contains("'apple\\x01' @ 1 : PUT => 'red'"),
        "{out}"
    );
    let (ok, out) = dump("wal", &find(tmp.path(), ".log"));
    assert!(ok, "{out}");
    assert!(
        out.contains("count 2") && out.contains("PUT 'banana'") && out.contains("DEL 'apple\\x01'"),
        "{out}"
    );
    let (ok, out) = dump("manifest", &find(tmp.path(), "MANIFEST-"));
    assert!(ok, "{out}");
    assert!(
        out.contains("edit at offset 0") && out.contains("add file"),
        "{out}"
    );

    let log = find(tmp.path(), ".log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[14] ^= 0xff;
    std::fs::write(&log, bytes).unwrap();
    let (ok, out) = dump("wal", &log);
    assert!(!ok && out.contains("DAMAGE at offset 0"), "{out}");
    let (ok, out) = dump("sst", &log);
    assert!(!ok, "{out}");
    let (ok, _) = dump("nonsense", &log);
    assert!(!ok);
}
