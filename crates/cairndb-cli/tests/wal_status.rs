//! `cairndb verify` and `cairndb dump wal` say which WAL files are live
//! (replayed at the next open) and which are obsolete (left for recycling).

use std::path::{Path, PathBuf};
use std::process::Command;

use cairndb::{Db, Options, WriteOptions};

fn run(args: &[&str], path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {text}");
    text
}

fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

#[test]
fn verify_and_dump_name_live_and_obsolete_wals() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options {
        recycle_log_file_num: 2,
        ..Options::default()
    };
    let db = Db::open(tmp.path(), opts).unwrap();
    let w = WriteOptions::default();
    db.put(&w, b"a", b"1").unwrap();
    // The flush switches to a new WAL; the old one becomes obsolete and is
    // kept for recycling.
    db.flush().unwrap();
    db.put(&w, b"b", b"2").unwrap();
    // A crash, not a close: `close` deletes the pooled WALs.
    db.simulate_crash();

    let logs = logs(tmp.path());
    assert!(
        logs.len() >= 2,
        "expected a live and an obsolete WAL: {logs:?}"
    );
    let out = run(&["verify"], tmp.path());
    let (old, live) = (&logs[0], logs.last().unwrap());
    let line = |p: &Path| {
        out.lines()
            .find(|l| l.starts_with("wal ") && l.contains(&p.display().to_string()))
            .unwrap_or_else(|| panic!("no wal line for {}: {out}", p.display()))
            .to_string()
    };
    assert!(
        line(old).contains("obsolete (number") && line(old).contains("not replayed"),
        "{out}"
    );
    assert!(
        line(live).contains("live (number") && line(live).contains("replayed at the next open"),
        "{out}"
    );

    let d = run(&["dump", "wal"], old);
    assert!(d.contains("status: obsolete"), "{d}");
    let d = run(&["dump", "wal"], live);
    assert!(d.contains("status: live") && d.contains("PUT 'b'"), "{d}");
}
