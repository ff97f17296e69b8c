//! `cairndb checkpoint` and `cairndb backup create|list|verify|restore|purge`
//! end to end: the copies open with the data, a second backup shares the
//! tables, a flipped byte fails verify and restore naming the file, and
//! existing targets are refused.

use std::path::Path;
use std::process::Command;

use cairndb::{Db, Options, ReadOptions, WriteOptions};

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (bool, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cairndb"));
    for a in args {
        c.arg(a);
    }
    let out = c.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn small() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

fn count(dir: &Path) -> usize {
    let db = Db::open(dir, small()).unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    db.close().unwrap();
    n
}

#[test]
fn checkpoint_and_backup_commands() {
    let t = tempfile::tempdir().unwrap();
    let db_dir = t.path().join("db");
    let bk = t.path().join("bk");
    {
        let db = Db::open(&db_dir, small()).unwrap();
        for i in 0..3000u32 {
            db.put(
                &WriteOptions::default(),
                format!("k{i:05}").as_bytes(),
                &[b'v'; 50],
            )
            .unwrap();
        }
        db.close().unwrap();
    }

    let cp = t.path().join("cp");
    let (ok, out) = run(&[&"checkpoint", &db_dir, &cp]);
    assert!(ok, "{out}");
    assert_eq!(count(&cp), 3000);
    let (ok, out) = run(&[&"checkpoint", &db_dir, &cp]);
    assert!(!ok && out.contains("already exists"), "{out}");

    let (ok, out) = run(&[&"backup", &"create", &db_dir, &bk]);
    assert!(ok && out.contains("backup 1 created"), "{out}");
    let (ok, out) = run(&[
        &"backup",
        &"create",
        &db_dir,
        &bk,
        &"--no-flush",
        &"--rate-limit=10000000",
    ]);
    assert!(ok && out.contains("backup 2 created"), "{out}");
    // The tables were already there.
    assert!(!out.contains(", 0 shared files"), "{out}");
    let (ok, out) = run(&[&"backup", &"list", &bk]);
    assert!(ok, "{out}");
    let ids: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, vec!["1", "2"], "{out}");
    let (ok, out) = run(&[&"backup", &"verify", &bk]);
    assert!(
        ok && out.contains("backup 1: OK") && out.contains("backup 2: OK"),
        "{out}"
    );

    let restored = t.path().join("restored");
    let (ok, out) = run(&[&"backup", &"restore", &bk, &restored, &"--id=1"]);
    assert!(ok, "{out}");
    assert_eq!(count(&restored), 3000);
    let (ok, out) = run(&[&"backup", &"restore", &bk, &restored]);
    assert!(!ok && out.contains("already exists"), "{out}");

    // A flipped byte in a shared table: verify and restore name the file.
    let shared = std::fs::read_dir(bk.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let mut data = std::fs::read(&shared).unwrap();
    data[10] ^= 1;
    std::fs::write(&shared, &data).unwrap();
    let name = shared.file_name().unwrap().to_str().unwrap().to_string();
    let (ok, out) = run(&[&"backup", &"verify", &bk, &"2"]);
    assert!(
        !ok && out.contains(&name) && out.contains("checksum mismatch"),
        "{out}"
    );
    let (ok, out) = run(&[&"backup", &"restore", &bk, &t.path().join("r2")]);
    assert!(!ok && out.contains(&name), "{out}");
    data[10] ^= 1;
    std::fs::write(&shared, &data).unwrap();

    let (ok, out) = run(&[&"backup", &"purge", &bk, &"--keep=1"]);
    assert!(ok, "{out}");
    let (_, out) = run(&[&"backup", &"list", &bk]);
    assert_eq!(out.lines().count(), 2, "{out}");
    let (ok, out) = run(&[&"backup", &"restore", &bk, &t.path().join("r3")]);
    assert!(ok, "{out}");
    assert_eq!(count(&t.path().join("r3")), 3000);
    let (ok, out) = run(&[&"backup", &"list", &t.path().join("nothing")]);
    assert!(!ok && out.contains("not a backup directory"), "{out}");
}
