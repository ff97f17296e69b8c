//! `cairndb verify` finds a flipped byte in every kind of file (table, WAL,
//! MANIFEST, CURRENT), names the file and the byte offset, and exits
//! non-zero; on the undamaged database it exits zero.

use std::path::{Path, PathBuf};
use std::process::Command;

use cairndb::{Db, Options, WriteOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_cairndb")
}

/// A closed database with several tables (two levels) and a WAL holding
/// records that are not in any table.
fn make_db(dir: &Path) {
    let o = Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        block_size: 512,
        ..Options::default()
    };
    let db = Db::open(dir, o).unwrap();
    for i in 0..6000u32 {
        let k = format!("key{:06}", (i * 7919) % 6000);
        db.put(&WriteOptions::default(), k.as_bytes(), &[b'v'; 40])
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..50u32 {
        db.put(
            &WriteOptions::default(),
            format!("wal{i:04}").as_bytes(),
            b"in the log",
        )
        .unwrap();
    }
    db.close().unwrap();
}

/// The tests run one at a time: a child process forked by one test while
/// another test's database is open briefly shares that database's LOCK
/// descriptor (until its exec), which could make a verify see `LockFileHeld`.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_verify(dir: &Path) -> (bool, String) {
    let out = Command::new(bin()).arg("verify").arg(dir).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

fn find(dir: &Path, pred: impl Fn(&str) -> bool) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v.pop()
        .unwrap_or_else(|| panic!("no such file in {}", dir.display()))
}

/// Bytes of a WAL that belong to its records. A recycled WAL file is longer:
/// past its last record lie the previous log's bytes, which are not part of
/// this log (docs/format/wal.md, "Recycling"), so a flip there changes
/// nothing.
fn live_log_len(path: &Path) -> usize {
    use cairndb::env::Fs;
    use cairndb::internals::wal::{LogReader, ReadEvent};
    let number: u64 = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let fs = cairndb::env::posix::PosixFs;
    let mut r = LogReader::new(fs.open_sequential(path).unwrap(), number);
    let mut rec = Vec::new();
    let mut end = 0;
    while let ReadEvent::Record { offset } = r.read_record(&mut rec).unwrap() {
        // The records here are small: one fragment each.
        end = offset as usize + 11 + rec.len();
    }
    assert!(end > 0, "the WAL holds no record");
    end
}

/// Picks a file of one kind by its name.
type NamePred = fn(&str) -> bool;

/// Copies `clean` to a new case directory, flips byte `pos` of the file
/// `pred` picks there and runs verify: (file name, verify passed, report).
fn flip_and_verify(
    clean: &Path,
    case_dir: &Path,
    pred: NamePred,
    pos: usize,
) -> (String, bool, String) {
    copy_dir(clean, case_dir);
    let file = find(case_dir, pred);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[pos] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let (ok, text) = run_verify(case_dir);
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    std::fs::remove_dir_all(case_dir).unwrap();
    (name, ok, text)
}

#[test]
fn verify_finds_a_flipped_byte_in_each_kind_of_file() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("clean");
    make_db(&clean);
    let (ok, text) = run_verify(&clean);
    assert!(ok, "clean database fails verify:\n{text}");
    assert!(text.contains("0 problems"), "{text}");

    let kinds: [(&str, NamePred); 4] = [
        ("sst", |n| n.ends_with(".sst")),
        ("log", |n| n.ends_with(".log")),
        ("MANIFEST", |n| n.starts_with("MANIFEST-")),
        ("CURRENT", |n| n == "CURRENT"),
    ];
    let mut case = 0;
    for (kind, pred) in kinds {
        let path = find(&clean, pred);
        let len = if kind == "log" {
            live_log_len(&path)
        } else {
            std::fs::metadata(&path).unwrap().len() as usize
        };
        assert!(len > 0, "{kind} is empty");
        // Up to 24 positions spread over the file, always the first and last.
        let step = (len / 23).max(1);
        let mut positions: Vec<usize> = (0..len).step_by(step).collect();
        positions.push(len - 1);
        positions.dedup();
        for pos in positions {
            case += 1;
            let d = tmp.path().join(format!("case{case}"));
            let (name, ok, text) = flip_and_verify(&clean, &d, pred, pos);
            assert!(
                !ok,
                "{kind}: byte {pos} of {len} flipped, verify passed:\n{text}"
            );
            assert!(
                text.contains(&name) && text.contains("offset"),
                "{kind}: byte {pos} flipped: the report does not name {name} and an offset:\n{text}"
            );
        }
    }
}

#[test]
fn verify_reports_a_missing_table_and_a_bad_usage() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    make_db(&d);
    let t = find(&d, |n| n.ends_with(".sst"));
    std::fs::remove_file(&t).unwrap();
    let (ok, text) = run_verify(&d);
    assert!(!ok);
    assert!(text.contains("missing"), "{text}");
    let (ok, _) = run_verify(&tmp.path().join("nonexistent"));
    assert!(!ok);
}

/// File offset of the last record in a log or MANIFEST (its records are
/// small: one fragment each).
fn last_record_offset(path: &Path, number: u64) -> usize {
    use cairndb::env::Fs;
    use cairndb::internals::wal::{LogReader, ReadEvent};
    let fs = cairndb::env::posix::PosixFs;
    let mut r = LogReader::new(fs.open_sequential(path).unwrap(), number);
    let mut rec = Vec::new();
    let mut last = None;
    while let ReadEvent::Record { offset } = r.read_record(&mut rec).unwrap() {
        last = Some(offset as usize);
    }
    last.expect("the log holds no record")
}

/// Regression: a flip in the length, type or log-number bytes of the
/// MANIFEST's last record read as a torn tail, so verify only noted it (and
/// then reported the tables the dropped edit had replaced as missing). Every
/// header byte of the last record of the MANIFEST and of the WAL is flipped
/// in turn; each must be named with its file and offset.
#[test]
fn verify_names_damage_in_the_last_record_header() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("clean");
    make_db(&clean);
    let kinds: [(&str, NamePred); 2] = [
        ("log", |n| n.ends_with(".log")),
        ("MANIFEST", |n| n.starts_with("MANIFEST-")),
    ];
    let mut case = 0;
    for (kind, pred) in kinds {
        let path = find(&clean, pred);
        let number: u64 = path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .trim_start_matches("MANIFEST-")
            .trim_end_matches(".log")
            .parse()
            .unwrap();
        let at = last_record_offset(&path, number);
        for pos in at..at + 11 {
            case += 1;
            let d = tmp.path().join(format!("case{case}"));
            let (name, ok, text) = flip_and_verify(&clean, &d, pred, pos);
            assert!(
                !ok,
                "{kind}: header byte {pos} flipped, verify passed:\n{text}"
            );
            assert!(
                text.contains(&format!("{name} offset {at}")) || text.contains(&format!("{name}: offset {at}")),
                "{kind}: header byte {pos} (record at {at}) flipped: the report does not name {name} at offset {at}:\n{text}"
            );
        }
    }
}
