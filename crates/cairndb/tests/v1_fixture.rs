//! Format-compatibility guard: `tests/fixtures/v1-db/` is a database written
//! by format version 1 (block-based tables with bloom filters, a zip table,
//! a MANIFEST and a WAL holding unflushed writes). Every later build must
//! open it with default options and read exactly what was written. A format
//! bump that breaks this test breaks every existing database.
//!
//! The expected content is derived from [`phases`], the same deterministic
//! operations the generator applied. To regenerate the fixture (only when
//! the generator itself changes, never to paper over a reader change):
//!
//! ```text
//! cargo test -p cairndb --test v1_fixture -- --ignored generate_version_1_fixture
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairndb::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

/// One write: `Some(value)` puts, `None` deletes.
type Op = (Vec<u8>, Option<Vec<u8>>);

/// The generator's writes, in three phases: flushed and compacted into the
/// zip level, flushed into a level-0 block-based table, left in the WAL.
fn phases() -> [Vec<Op>; 3] {
    let key = |i: u32| format!("key{i:05}").into_bytes();
    let val = |i: u32, gen: u32| {
        format!("value {i} generation {gen} ")
            .repeat(1 + (i % 4) as usize)
            .into_bytes()
    };
    let first = (0..300).map(|i| (key(i), Some(val(i, 1)))).collect();
    let second = (0..300)
        .step_by(3)
        .map(|i| {
            if i % 2 == 0 {
                (key(i), Some(val(i, 2)))
            } else {
                (key(i), None)
            }
        })
        .chain((300..340).map(|i| (key(i), Some(val(i, 2)))))
        .collect();
    let third = (0..340)
        .step_by(7)
        .map(|i| {
            if i % 3 == 0 {
                (key(i), None)
            } else {
                (key(i), Some(val(i, 3)))
            }
        })
        .chain((340..360).map(|i| (key(i), Some(val(i, 3)))))
        .collect();
    [first, second, third]
}

fn expected() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for phase in phases() {
        for (k, v) in phase {
            match v {
                Some(v) => m.insert(k, v),
                None => m.remove(&k),
            };
        }
    }
    m
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-db")
}

fn apply(db: &Db, ops: &[Op]) {
    // Several small batches, so the WAL holds more than one record.
    for chunk in ops.chunks(16) {
        let mut b = WriteBatch::new();
        for (k, v) in chunk {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        db.write(&WriteOptions::default(), b).unwrap();
    }
}

/// Writes the fixture (see the module doc). Not run by default.
#[test]
#[ignore = "regenerates tests/fixtures/v1-db; run by hand"]
fn generate_version_1_fixture() {
    let dir = fixture_dir();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = Options {
        bloom_bits_per_key: 10,
        // No old WALs kept for reuse: the fixture holds only what is needed.
        recycle_log_file_num: 0,
        ..Options::default()
    };
    opts.zip.dict_size = 4096;
    opts.set_zip_from_level(1);
    let db = Db::open(&dir, opts).unwrap();
    let [first, second, third] = phases();
    apply(&db, &first);
    db.flush().unwrap();
    // Down through the levels: the bottom one is written as a zip table.
    db.compact_range(None, None).unwrap();
    apply(&db, &second);
    db.flush().unwrap();
    apply(&db, &third);
    db.close().unwrap();
    drop(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let ends_with_magic = |name: &str, magic: u64| {
        let b = std::fs::read(dir.join(name)).unwrap();
        b.len() >= 8 && b[b.len() - 8..] == magic.to_le_bytes()
    };
    let zip_magic = cairndb::internals::sst::zip::format::ZIP_MAGIC;
    let tables: Vec<&String> = names.iter().filter(|n| n.ends_with(".sst")).collect();
    assert!(
        tables.iter().any(|n| ends_with_magic(n, zip_magic)),
        "no zip table in {names:?}"
    );
    assert!(
        tables.iter().any(|n| !ends_with_magic(n, zip_magic)),
        "no block-based table in {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.ends_with(".log") && std::fs::metadata(dir.join(n)).unwrap().len() > 0),
        "no WAL with unflushed writes in {names:?}"
    );
    let total: u64 = names
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .sum();
    assert!(total < 200 << 10, "fixture is {total} bytes: {names:?}");
}

fn copy_dir(src: &Path, dst: &Path) {
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

fn check(db: &Db, want: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let r = ReadOptions::default();
    for phase in phases() {
        for (k, _) in phase {
            assert_eq!(
                db.get(&r, &k).unwrap().as_ref(),
                want.get(&k),
                "key {}",
                String::from_utf8_lossy(&k)
            );
        }
    }
    let mut it = db.iter(&r).unwrap();
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> = want.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(fwd == all, "forward scan differs from the expected content");
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert!(
        back == all,
        "backward scan differs from the expected content"
    );
}

#[test]
fn opens_version_1_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(), tmp.path());
    let mut want = expected();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    check(&db, &want);
    // A write on top, then a reopen: the recovered fixture is a normal
    // database from here on.
    db.put(&WriteOptions::default(), b"key00001", b"after the fixture")
        .unwrap();
    db.delete(&WriteOptions::default(), b"key00002").unwrap();
    want.insert(b"key00001".to_vec(), b"after the fixture".to_vec());
    want.remove(b"key00002".as_slice());
    check(&db, &want);
    db.close().unwrap();
    drop(db);
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    check(&db, &want);
    db.close().unwrap();
}
