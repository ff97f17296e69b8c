//! `cairndb stress`: a short run passes its own verification, survives a
//! SIGKILL with every acknowledged write intact, and `--verify` catches a
//! write that went missing behind the oracle's back or a value that was
//! never written.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cairndb::{Db, FixedPrefix, Options, ReadOptions, WriteOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_cairndb")
}

fn stress(db: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new(bin())
        .arg("stress")
        .arg("--db")
        .arg(db)
        .args(["--max_key", "2000", "--threads", "3"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn opts() -> Options {
    Options {
        prefix_extractor: Some(std::sync::Arc::new(FixedPrefix::new(7))),
        ..Options::default()
    }
}

#[test]
fn stress_run_kill_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let (ok, text) = stress(&db, &["--ops_per_thread", "400", "--seed", "7"]);
    assert!(ok, "{text}");
    assert!(text.contains("violations 0"), "{text}");

    // Kill a running stress and verify.
    let mut child = Command::new(bin())
        .arg("stress")
        .arg("--db")
        .arg(&db)
        .args(["--max_key", "2000", "--threads", "3", "--sync_percent", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let (ok, text) = stress(&db, &["--verify"]);
    assert!(ok, "{text}");

    // Find a key the oracle says holds a value, and delete it behind the
    // oracle's back: verify must report it.
    let d = Db::open(&db, opts()).unwrap();
    let mut victim = None;
    for k in 0..2000u64 {
        let key = format!("{k:010}");
        if d.get(&ReadOptions::default(), key.as_bytes())
            .unwrap()
            .is_some()
        {
            victim = Some(key);
            break;
        }
    }
    let victim = victim.expect("the run wrote something");
    d.delete(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        victim.as_bytes(),
    )
    .unwrap();
    d.close().unwrap();
    drop(d);
    let (ok, text) = stress(&db, &["--verify"]);
    assert!(!ok, "a lost write went unnoticed:\n{text}");
    assert!(
        text.contains(&format!("key {}", victim.parse::<u64>().unwrap())),
        "{text}"
    );

    // Restore it with a value that was never written: still a violation.
    let d = Db::open(&db, opts()).unwrap();
    d.put(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        victim.as_bytes(),
        b"bogus",
    )
    .unwrap();
    d.close().unwrap();
    drop(d);
    let (ok, text) = stress(&db, &["--verify"]);
    assert!(!ok, "a foreign value went unnoticed:\n{text}");
    assert!(text.contains("foreign value"), "{text}");
}

fn txn_stress(db: &Path, extra: &[&str]) -> (bool, String) {
    stress(db, &[&["--txn"], extra].concat())
}

fn sync() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..Default::default()
    }
}

/// `cairndb stress --txn`: runs of both flavours verify themselves, a
/// SIGKILL in the middle of synced transfers passes `--verify`, and
/// `--verify` catches a balance moved behind the oracle's back (the total
/// unchanged) and a missing acknowledged transfer.
#[test]
fn stress_txn_run_kill_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let (ok, text) = txn_stress(&db, &["--ops_per_thread", "300", "--seed", "7"]);
    assert!(ok, "{text}");
    assert!(text.contains("violations 0"), "{text}");
    let (ok, text) = txn_stress(&db, &["--optimistic", "--ops_per_thread", "300"]);
    assert!(ok, "{text}");
    assert!(text.contains("violations 0"), "{text}");

    let mut child = Command::new(bin())
        .arg("stress")
        .arg("--db")
        .arg(&db)
        .args(["--txn", "--threads", "4", "--sync_percent", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let (ok, text) = txn_stress(&db, &["--verify"]);
    assert!(ok, "{text}");

    // Move 5 between two accounts behind the oracle's back: the total
    // holds, the accounts do not.
    let shift = |amount: i64| {
        let d = Db::open(&db, opts()).unwrap();
        for (k, delta) in [(&b"a000000"[..], -amount), (b"a000001", amount)] {
            let v = d.get(&ReadOptions::default(), k).unwrap().unwrap();
            let b: i64 = std::str::from_utf8(&v).unwrap().parse().unwrap();
            d.put(&sync(), k, (b + delta).to_string().as_bytes())
                .unwrap();
        }
        d.close().unwrap();
    };
    shift(5);
    let (ok, text) = txn_stress(&db, &["--verify"]);
    assert!(!ok, "a moved balance went unnoticed:\n{text}");
    assert!(text.contains("account 0: balance"), "{text}");
    shift(-5);
    let (ok, text) = txn_stress(&db, &["--verify"]);
    assert!(ok, "{text}");

    // A run left unverified, then its last acknowledged transfer of
    // thread 0 deleted.
    let (ok, text) = txn_stress(&db, &["--ops_per_thread", "100", "--no_final_verify"]);
    assert!(ok, "{text}");
    let d = Db::open(&db, opts()).unwrap();
    let mut it = d.iter(&ReadOptions::default()).unwrap();
    it.seek_for_prev(b"x01");
    assert!(it.valid() && it.key().starts_with(b"x00"));
    let last = it.key().to_vec();
    drop(it);
    d.delete(&sync(), &last).unwrap();
    d.close().unwrap();
    drop(d);
    let (ok, text) = txn_stress(&db, &["--verify"]);
    assert!(!ok, "a missing transfer went unnoticed:\n{text}");
    let n: u64 = std::str::from_utf8(&last[3..]).unwrap().parse().unwrap();
    assert!(
        text.contains(&format!("transfer 0/{n} was acknowledged but is missing")),
        "{text}"
    );
}
