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
