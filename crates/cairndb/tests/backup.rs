//! Checkpoints and backups: a checkpoint taken under concurrent writers
//! opens at one consistent point; backups share unchanged files, survive
//! purges, catch flipped bytes, and a fault at any file operation while
//! backing up or restoring leaves the earlier backups and the source intact.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::env::posix::PosixFs;
use cairndb::env::Fs;
use cairndb::{
    BackupEngine, BackupEngineOptions, Checkpoint, Db, Error, ReadOptions, TransactionDb,
    TransactionDbOptions, TransactionOptions, WriteOptions,
};

const EIO: i32 = 5;

fn w() -> WriteOptions {
    WriteOptions::default()
}
fn r() -> ReadOptions {
    ReadOptions::default()
}

/// Everything in the database, as a map.
fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(&r()).unwrap();
    it.seek_to_first();
    let mut m = BTreeMap::new();
    while it.valid() {
        m.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    m
}

const SLOTS: u64 = 8;

fn writer_key(w: usize, slot: u64) -> Vec<u8> {
    format!("w{w}-{slot}").into_bytes()
}

/// Writer `w`'s keys in `db` form a prefix of its writes: counter c went to
/// slot c % SLOTS, so with M the largest counter found every slot holds the
/// largest c <= M of its class. Returns M.
fn check_writer_prefix(db: &Db, w: usize) -> u64 {
    let mut vals = Vec::new();
    for slot in 0..SLOTS {
        let v = db
            .get(&r(), &writer_key(w, slot))
            .unwrap()
            .map(|v| String::from_utf8(v).unwrap().parse::<u64>().unwrap());
        vals.push(v);
    }
    let m = vals.iter().flatten().copied().max().unwrap_or(0);
    for slot in 0..SLOTS {
        // The largest c <= m with c % SLOTS == slot, c >= 1.
        let want = if m >= slot.max(1) {
            let c = m - (m + SLOTS - slot) % SLOTS;
            (c >= 1).then_some(c)
        } else {
            None
        };
        assert_eq!(vals[slot as usize], want, "writer {w} slot {slot}, max {m}");
    }
    m
}

#[test]
fn checkpoint_under_concurrent_writers_holds_a_prefix_of_each_writer() {
    let dir = tempfile::tempdir().unwrap();
    let o = common::small_options(PosixFs::shared());
    let db = Arc::new(Db::open(dir.path().join("db"), o.clone()).unwrap());
    const WRITERS: usize = 4;
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for wi in 0..WRITERS {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        handles.push(std::thread::spawn(move || {
            let mut c = 0u64;
            let pad = vec![b'p'; 100];
            while !stop.load(Ordering::Relaxed) {
                c += 1;
                let v = c.to_string().into_bytes();
                db.put(&w(), &writer_key(wi, c % SLOTS), &v).unwrap();
                acked[wi].store(c, Ordering::SeqCst);
                // Filler that makes tables.
                db.put(&w(), format!("fill{wi}-{}", c % 500).as_bytes(), &pad)
                    .unwrap();
            }
        }));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Flush first (0), and copy the WAL tail (never flush).
    for (i, flush_at) in [0u64, u64::MAX, 0, u64::MAX].into_iter().enumerate() {
        let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let cp = dir.path().join(format!("cp{i}"));
        Checkpoint::new(&db)
            .create_checkpoint(&cp, flush_at)
            .unwrap();
        let copy = Db::open(&cp, o.clone()).unwrap();
        for (wi, b) in before.iter().enumerate() {
            let m = check_writer_prefix(&copy, wi);
            assert!(
                m >= *b,
                "checkpoint {i}: writer {wi} has {m}, {b} acknowledged before"
            );
        }
        copy.close().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    // The source lost nothing to the pin, and deletes again after it.
    for wi in 0..WRITERS {
        assert_eq!(
            check_writer_prefix(&db, wi),
            acked[wi].load(Ordering::SeqCst)
        );
    }
    // An existing target is refused.
    let e = Checkpoint::create(&db, dir.path().join("cp0")).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
}

#[test]
fn file_deletions_are_counted_and_live_files_list_the_version() {
    let (fs, o) = common::mem_options();
    let db = Db::open("/db", o).unwrap();
    for i in 0..3000u32 {
        db.put(&w(), format!("k{i:05}").as_bytes(), &[b'x'; 64])
            .unwrap();
    }
    let live = db.live_files(true).unwrap();
    assert!(live.files.contains(&"CURRENT".to_string()));
    assert!(live.files.iter().any(|f| f.starts_with("MANIFEST-")));
    assert!(live.files.iter().any(|f| f.ends_with(".sst")));
    assert!(live.manifest_file_size > 0);
    db.disable_file_deletions().unwrap();
    db.disable_file_deletions().unwrap();
    db.compact_range(None, None).unwrap();
    // Every file listed before the compaction is still there.
    for f in &live.files {
        assert!(
            fs.exists(&Path::new("/db").join(f)),
            "{f} deleted while pinned"
        );
    }
    assert_eq!(db.enable_file_deletions().unwrap(), 1);
    for f in live.files.iter().filter(|f| f.ends_with(".sst")) {
        assert!(
            fs.exists(&Path::new("/db").join(f)),
            "{f} deleted while pinned"
        );
    }
    assert_eq!(db.enable_file_deletions().unwrap(), 0);
    let after = db.live_files(false).unwrap();
    let gone = live
        .files
        .iter()
        .filter(|f| f.ends_with(".sst") && !after.files.contains(f))
        .filter(|f| fs.exists(&Path::new("/db").join(f)))
        .count();
    assert_eq!(gone, 0, "obsolete tables left after deletions were enabled");
}

#[test]
fn transaction_db_checkpoint_carries_prepared_transactions() {
    let fs = MemFs::new();
    let o = common::small_options(Arc::new(fs.clone()));
    let tdb = TransactionDb::open("/db", o.clone(), TransactionDbOptions::default()).unwrap();
    tdb.put(&w(), b"plain", b"1").unwrap();
    let mut t = tdb.begin(&w(), &TransactionOptions::default());
    t.set_name(b"t1").unwrap();
    t.put(b"prepared-key", b"2").unwrap();
    t.prepare().unwrap();
    for (dir, flush_at) in [("/cp-flush", 0u64), ("/cp-wal", u64::MAX)] {
        Checkpoint::new(tdb.db())
            .create_checkpoint(dir, flush_at)
            .unwrap();
        let copy = TransactionDb::open(dir, o.clone(), TransactionDbOptions::default()).unwrap();
        assert_eq!(copy.get(&r(), b"plain").unwrap(), Some(b"1".to_vec()));
        assert_eq!(copy.get(&r(), b"prepared-key").unwrap(), None);
        let mut ts = copy.prepared_transactions();
        assert_eq!(ts.len(), 1, "{dir}");
        assert_eq!(ts[0].name(), Some(&b"t1"[..]));
        ts[0].commit().unwrap();
        assert_eq!(
            copy.get(&r(), b"prepared-key").unwrap(),
            Some(b"2".to_vec())
        );
        copy.close().unwrap();
    }
    t.rollback().unwrap();
}

fn mem_engine(fs: &MemFs, dir: &str) -> BackupEngine {
    BackupEngine::open_with(
        dir,
        BackupEngineOptions {
            fs: Arc::new(fs.clone()),
            ..Default::default()
        },
    )
    .unwrap()
}

fn fill(db: &Db, from: u32, n: u32, tag: &str) {
    for i in from..from + n {
        db.put(
            &w(),
            format!("k{i:05}").as_bytes(),
            format!("{tag}-{i}").as_bytes(),
        )
        .unwrap();
    }
}

fn restore_and_read(
    eng: &BackupEngine,
    id: u32,
    fs: &MemFs,
    dir: &str,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    eng.restore_db_from_backup(id, dir).unwrap();
    let db = Db::open(dir, common::small_options(Arc::new(fs.clone()))).unwrap();
    let m = contents(&db);
    db.close().unwrap();
    m
}

#[test]
fn second_backup_copies_only_metadata_and_after_compaction_only_new_files() {
    let fs = MemFs::new();
    let db = Db::open("/db", common::small_options(Arc::new(fs.clone()))).unwrap();
    fill(&db, 0, 4000, "a");
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let mut eng = mem_engine(&fs, "/bk");
    let b1 = eng.create_new_backup(&db).unwrap();
    let s1 = eng.last_copy_stats();
    assert!(s1.files_copied > 3 && s1.files_reused == 0, "{s1:?}");
    let tables = db
        .live_files(false)
        .unwrap()
        .files
        .iter()
        .filter(|f| f.ends_with(".sst"))
        .count() as u64;
    let b2 = eng.create_new_backup(&db).unwrap();
    let s2 = eng.last_copy_stats();
    // Only MANIFEST, CURRENT and the (near-empty) WAL.
    assert_eq!(s2.files_reused, tables, "{s2:?}");
    assert!(s2.files_copied <= 3, "{s2:?}");
    assert!(s2.bytes_copied < 4096, "{s2:?}");
    // New data and a full compaction: only the new tables are copied.
    fill(&db, 4000, 1000, "b");
    db.compact_range(None, None).unwrap();
    let live: Vec<String> = db.live_files(false).unwrap().files;
    let b3 = eng.create_new_backup(&db).unwrap();
    let s3 = eng.last_copy_stats();
    let new_tables = live.iter().filter(|f| f.ends_with(".sst")).count() as u64;
    assert_eq!(s3.files_copied, new_tables - s3.files_reused + 3, "{s3:?}");
    let expected = contents(&db);
    let info = eng.get_backup_info();
    assert_eq!(
        info.iter().map(|b| b.backup_id).collect::<Vec<_>>(),
        vec![b1, b2, b3]
    );
    for b in [b1, b2, b3] {
        eng.verify_backup(b).unwrap();
    }
    assert_eq!(restore_and_read(&eng, b3, &fs, "/r3"), expected);
    let r1 = restore_and_read(&eng, b1, &fs, "/r1");
    assert_eq!(r1.len(), 4000);
    // Reopened, the engine lists the same backups.
    drop(eng);
    let eng = mem_engine(&fs, "/bk");
    assert_eq!(eng.get_backup_info(), info);
    eng.restore_db_from_latest_backup("/r-latest").unwrap();
}

#[test]
fn purge_keeps_the_shared_files_still_needed() {
    let fs = MemFs::new();
    let db = Db::open("/db", common::small_options(Arc::new(fs.clone()))).unwrap();
    let mut eng = mem_engine(&fs, "/bk");
    let mut expected = Vec::new();
    for round in 0..4u32 {
        fill(&db, round * 700, 1500, &format!("r{round}"));
        if round == 2 {
            db.compact_range(None, None).unwrap();
        }
        let id = eng.create_new_backup(&db).unwrap();
        expected.push((id, contents(&db)));
    }
    eng.purge_old_backups(2).unwrap();
    let left: Vec<u32> = eng.get_backup_info().iter().map(|b| b.backup_id).collect();
    assert_eq!(left, vec![expected[2].0, expected[3].0]);
    // Shared files: exactly those the two kept backups name.
    for (id, want) in &expected[2..] {
        eng.verify_backup(*id).unwrap();
        assert_eq!(&restore_and_read(&eng, *id, &fs, &format!("/r{id}")), want);
    }
    let shared = fs.list_dir(Path::new("/bk/shared")).unwrap();
    let private = fs.list_dir(Path::new("/bk/private")).unwrap();
    assert_eq!(private.len(), 2, "{private:?}");
    eng.delete_backup(expected[2].0).unwrap();
    let shared_after = fs.list_dir(Path::new("/bk/shared")).unwrap();
    assert!(shared_after.len() <= shared.len());
    eng.verify_backup(expected[3].0).unwrap();
    eng.purge_old_backups(0).unwrap();
    assert!(eng.get_backup_info().is_empty());
    assert!(fs.list_dir(Path::new("/bk/shared")).unwrap().is_empty());
}

fn flip_byte(fs: &MemFs, p: &Path, at: u64) {
    let mut data = fs.read_all(p).unwrap();
    let i = (at as usize).min(data.len() - 1);
    data[i] ^= 0x20;
    let mut f = fs.create(p).unwrap();
    f.append(&data).unwrap();
    f.sync().unwrap();
}

#[test]
fn flipped_byte_is_found_by_verify_and_refused_by_restore_naming_the_file() {
    let fs = MemFs::new();
    let db = Db::open("/db", common::small_options(Arc::new(fs.clone()))).unwrap();
    fill(&db, 0, 2000, "a");
    let mut eng = mem_engine(&fs, "/bk");
    let id = eng.create_new_backup(&db).unwrap();
    eng.verify_backup(id).unwrap();
    let shared = fs.list_dir(Path::new("/bk/shared")).unwrap();
    let victim = PathBuf::from("/bk/shared").join(&shared[0]);
    flip_byte(&fs, &victim, 100);
    let e = eng.verify_backup(id).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(e.to_string().contains(&shared[0]), "{e}");
    let e = eng.restore_db_from_backup(id, "/restored").unwrap_err();
    assert!(e.to_string().contains(&shared[0]), "{e}");
    assert!(!fs.exists(Path::new("/restored/CURRENT")));
    // A private file likewise.
    flip_byte(&fs, &victim, 100);
    eng.verify_backup(id).unwrap();
    let private = PathBuf::from(format!("/bk/private/{id}"));
    let m = fs
        .list_dir(&private)
        .unwrap()
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .unwrap();
    flip_byte(&fs, &private.join(&m), 10);
    let e = eng.verify_backup(id).unwrap_err();
    assert!(e.to_string().contains(&m), "{e}");
    // A truncated file: its size.
    flip_byte(&fs, &private.join(&m), 10);
    eng.verify_backup(id).unwrap();
    // Restoring over a database is refused.
    let e = eng.restore_db_from_backup(id, "/db").unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
}

/// What a backup engine over `fault` must show after a failed or good
/// operation: the backups `want`, each verified, the newest restorable.
/// The expected contents of each kept backup.
type Kept = [(u32, BTreeMap<Vec<u8>, Vec<u8>>)];

fn check_engine(mem: &MemFs, want: &Kept, restore_to: &str) {
    let eng = mem_engine(mem, "/bk");
    let ids: Vec<u32> = eng.get_backup_info().iter().map(|b| b.backup_id).collect();
    assert_eq!(ids, want.iter().map(|(id, _)| *id).collect::<Vec<_>>());
    for (id, _) in want {
        eng.verify_backup(*id).unwrap();
    }
    if let Some((id, m)) = want.last() {
        assert_eq!(&restore_and_read(&eng, *id, mem, restore_to), m);
    }
    // Nothing is left that no backup names.
    for n in mem.list_dir(Path::new("/bk/private")).unwrap() {
        assert!(
            ids.iter().any(|i| i.to_string() == n),
            "leftover private/{n}"
        );
    }
    assert!(mem
        .list_dir(Path::new("/bk/shared"))
        .unwrap()
        .iter()
        .all(|n| !n.ends_with(".tmp")));
    assert!(mem
        .list_dir(Path::new("/bk/meta"))
        .unwrap()
        .iter()
        .all(|n| !n.ends_with(".tmp")));
}

#[test]
fn a_fault_at_any_file_operation_of_create_or_restore_spares_earlier_backups() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open("/db", common::small_options(Arc::new(mem.clone()))).unwrap();
    fill(&db, 0, 1500, "base");
    let mut want = Vec::new();
    {
        let mut eng = mem_engine(&mem, "/bk");
        let id = eng.create_new_backup(&db).unwrap();
        want.push((id, contents(&db)));
    }
    let ops = [
        FaultOp::Create,
        FaultOp::Read,
        FaultOp::Write,
        FaultOp::Sync,
        FaultOp::Rename,
        FaultOp::SyncDir,
        FaultOp::Remove,
    ];
    let mut round = 0u32;
    let mut failures = 0;
    for op in ops {
        for n in 0.. {
            round += 1;
            // Something new to copy each time.
            fill(&db, 1000 + round * 37 % 800, 60, &format!("r{round}"));
            let mut eng = BackupEngine::open_with(
                "/bk",
                BackupEngineOptions {
                    fs: Arc::new(fault.clone()),
                    ..Default::default()
                },
            )
            .unwrap();
            let fired = fault.injected();
            fault.inject(FaultRule::new(op, EIO).after(n).times(1));
            let res = eng.create_new_backup(&db);
            fault.clear();
            let did_fire = fault.injected() > fired;
            match res {
                Ok(id) => want.push((id, contents(&db))),
                Err(_) => {
                    assert!(did_fire, "{op:?} #{n}: failed with no fault");
                    failures += 1;
                }
            }
            drop(eng);
            // The source is unharmed: it writes and reads.
            db.put(&w(), b"probe", format!("{round}").as_bytes())
                .unwrap();
            assert_eq!(
                db.get(&r(), b"probe").unwrap(),
                Some(format!("{round}").into_bytes())
            );
            // Kept bounded: the newest few backups.
            check_engine(&mem, &want, &format!("/restore-c{round}"));
            if want.len() > 3 {
                let mut e = mem_engine(&mem, "/bk");
                e.purge_old_backups(3).unwrap();
                want.drain(..want.len() - 3);
            }
            if !did_fire {
                break;
            }
        }
    }
    eprintln!("{failures} failed backups in {round} rounds");
    assert!(failures > 20, "only {failures} faults made a backup fail");
    // A backup cut short whose clean-up fails too (as a crash leaves it):
    // its files stay until the next open, which removes them.
    {
        fill(&db, 5000, 300, "cut");
        let mut eng = BackupEngine::open_with(
            "/bk",
            BackupEngineOptions {
                fs: Arc::new(fault.clone()),
                ..Default::default()
            },
        )
        .unwrap();
        fault.inject(FaultRule::new(FaultOp::Rename, EIO).on_path("/bk/meta"));
        fault.inject(FaultRule::new(FaultOp::Remove, EIO));
        let next = want.last().unwrap().0 + 1;
        assert!(eng.create_new_backup(&db).is_err());
        fault.clear();
        drop(eng);
        assert!(mem.exists(Path::new(&format!("/bk/private/{next}/CURRENT"))));
        assert!(mem.exists(Path::new(&format!("/bk/meta/{next}.tmp"))));
        check_engine(&mem, &want, "/restore-cut");
        assert!(!mem.exists(Path::new(&format!("/bk/private/{next}"))));
    }
    // Restore: a fault anywhere fails it cleanly and changes no backup.
    let (last_id, last) = want.last().cloned().unwrap();
    for op in ops {
        for n in 0.. {
            round += 1;
            let eng = BackupEngine::open_with(
                "/bk",
                BackupEngineOptions {
                    fs: Arc::new(fault.clone()),
                    ..Default::default()
                },
            )
            .unwrap();
            let target = format!("/restore-f{round}");
            let fired = fault.injected();
            fault.inject(FaultRule::new(op, EIO).after(n).times(1));
            let res = eng.restore_db_from_backup(last_id, &target);
            fault.clear();
            let did_fire = fault.injected() > fired;
            drop(eng);
            match res {
                Ok(()) => {
                    let d =
                        Db::open(&target, common::small_options(Arc::new(mem.clone()))).unwrap();
                    assert_eq!(contents(&d), last);
                    d.close().unwrap();
                }
                Err(_) => {
                    assert!(did_fire);
                    assert!(!mem.exists(&Path::new(&target).join("CURRENT")));
                }
            }
            check_engine(&mem, &want, &format!("/restore-g{round}"));
            if !did_fire {
                break;
            }
        }
    }
}

#[test]
fn rate_limit_slows_the_copy() {
    let fs = MemFs::new();
    let db = Db::open("/db", common::small_options(Arc::new(fs.clone()))).unwrap();
    fill(&db, 0, 3000, "a");
    let mut eng = BackupEngine::open_with(
        "/bk",
        BackupEngineOptions {
            fs: Arc::new(fs.clone()),
            rate_limit: 1 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    let t = std::time::Instant::now();
    eng.create_new_backup(&db).unwrap();
    let s = eng.last_copy_stats();
    let min = std::time::Duration::from_secs_f64(s.bytes_copied as f64 / (1 << 20) as f64 * 0.8);
    assert!(
        t.elapsed() >= min,
        "{:?} for {} bytes",
        t.elapsed(),
        s.bytes_copied
    );
}

#[test]
fn backup_without_flush_copies_the_wal_tail() {
    let fs = MemFs::new();
    let mut o = common::small_options(Arc::new(fs.clone()));
    o.write_buffer_size = 4 << 20;
    let db = Db::open("/db", o).unwrap();
    fill(&db, 0, 500, "a");
    let mut eng = mem_engine(&fs, "/bk");
    let id = eng.create_new_backup_with_flush(&db, false).unwrap();
    // Nothing was flushed: every write came from the WAL copy.
    assert!(db
        .live_files(false)
        .unwrap()
        .files
        .iter()
        .all(|f| !f.ends_with(".sst")));
    assert_eq!(restore_and_read(&eng, id, &fs, "/r").len(), 500);
}

#[test]
fn posix_link_file_links_and_falls_back_to_a_copy_across_file_systems() {
    use std::os::unix::fs::MetadataExt;
    let fs = PosixFs::shared();
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a.sst");
    std::fs::write(&src, b"table bytes").unwrap();
    fs.link_file(&src, &t.path().join("b.sst")).unwrap();
    assert_eq!(std::fs::metadata(&src).unwrap().nlink(), 2);
    // An existing target is an error, not an overwrite.
    assert!(fs.link_file(&src, &t.path().join("b.sst")).is_err());
    // Another file system (when /dev/shm is one): EXDEV, so a copy.
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && std::fs::metadata(shm).unwrap().dev() != std::fs::metadata(t.path()).unwrap().dev()
    {
        let other = tempfile::tempdir_in(shm).unwrap();
        let dst = other.path().join("c.sst");
        fs.link_file(&src, &dst).unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), b"table bytes");
        assert_eq!(std::fs::metadata(&src).unwrap().nlink(), 2);
    }
}

/// Blob files are captured like tables: linked into a checkpoint, shared
/// between backups, and the values read back from either.
#[test]
fn blob_files_come_along_in_checkpoints_and_backups() {
    let fs = MemFs::new();
    let mut o = common::small_options(Arc::new(fs.clone()));
    o.enable_blob_files = true;
    o.min_blob_size = 100;
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..400u32 {
        let v = format!("{i:04}").repeat(50);
        db.put(&w(), format!("b{i:04}").as_bytes(), v.as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    let live = db.live_files(false).unwrap();
    let blobs = live.files.iter().filter(|f| f.ends_with(".blob")).count() as u64;
    assert!(blobs > 0, "{live:?}");
    let expected = contents(&db);
    Checkpoint::create(&db, "/cp").unwrap();
    let cp = Db::open("/cp", o.clone()).unwrap();
    assert_eq!(contents(&cp), expected);
    cp.close().unwrap();
    let mut eng = mem_engine(&fs, "/bk");
    eng.create_new_backup(&db).unwrap();
    let id = eng.create_new_backup(&db).unwrap();
    let s = eng.last_copy_stats();
    assert_eq!(s.files_reused, live.files.len() as u64 - 2, "{s:?}");
    eng.verify_backup(id).unwrap();
    eng.restore_db_from_backup(id, "/restored").unwrap();
    let r = Db::open("/restored", o).unwrap();
    assert_eq!(contents(&r), expected);
}

/// Transactions committing while a checkpoint is taken: each commits a
/// counter to two keys at once; the checkpoint holds both keys equal (whole
/// transactions) and at least what was acknowledged before it began.
#[test]
fn checkpoint_under_transaction_writers_holds_whole_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let o = common::small_options(PosixFs::shared());
    let tdb = Arc::new(
        TransactionDb::open(
            dir.path().join("db"),
            o.clone(),
            TransactionDbOptions::default(),
        )
        .unwrap(),
    );
    const WRITERS: usize = 2;
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for wi in 0..WRITERS {
        let (tdb, acked, stop) = (tdb.clone(), acked.clone(), stop.clone());
        handles.push(std::thread::spawn(move || {
            let mut c = 0u64;
            while !stop.load(Ordering::Relaxed) {
                c += 1;
                let mut t = tdb.begin(&w(), &TransactionOptions::default());
                let v = c.to_string();
                t.put(format!("a{wi}").as_bytes(), v.as_bytes()).unwrap();
                t.put(format!("b{wi}").as_bytes(), v.as_bytes()).unwrap();
                t.put(format!("fill{wi}-{}", c % 300).as_bytes(), &[b'f'; 100])
                    .unwrap();
                t.commit().unwrap();
                acked[wi].store(c, Ordering::SeqCst);
            }
        }));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    for (i, flush_at) in [u64::MAX, 0].into_iter().enumerate() {
        let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let cp = dir.path().join(format!("cp{i}"));
        Checkpoint::new(tdb.db())
            .create_checkpoint(&cp, flush_at)
            .unwrap();
        let copy = Db::open(&cp, o.clone()).unwrap();
        for (wi, b) in before.iter().enumerate() {
            let get = |k: String| {
                copy.get(&r(), k.as_bytes())
                    .unwrap()
                    .map(|v| String::from_utf8(v).unwrap().parse::<u64>().unwrap())
                    .unwrap_or(0)
            };
            let (a, bb) = (get(format!("a{wi}")), get(format!("b{wi}")));
            assert_eq!(a, bb, "checkpoint {i}: writer {wi}'s transaction is split");
            assert!(
                a >= *b,
                "checkpoint {i}: writer {wi} has {a}, {b} acknowledged before"
            );
        }
        copy.close().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
}

/// A damaged metadata file is not a backup: left out of the list, reported,
/// and the shared files stay (it may name them); the other backups work.
#[test]
fn damaged_metadata_is_reported_and_its_backup_not_listed() {
    let fs = MemFs::new();
    let db = Db::open("/db", common::small_options(Arc::new(fs.clone()))).unwrap();
    fill(&db, 0, 1000, "a");
    let mut eng = mem_engine(&fs, "/bk");
    let b1 = eng.create_new_backup(&db).unwrap();
    fill(&db, 1000, 1000, "b");
    let b2 = eng.create_new_backup(&db).unwrap();
    let expected = contents(&db);
    drop(eng);
    flip_byte(&fs, Path::new(&format!("/bk/meta/{b1}")), 20);
    let shared_before = fs.list_dir(Path::new("/bk/shared")).unwrap().len();
    let mut eng = mem_engine(&fs, "/bk");
    let ids: Vec<u32> = eng.get_backup_info().iter().map(|b| b.backup_id).collect();
    assert_eq!(ids, vec![b2]);
    let bad = eng.corrupt_backups();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, b1.to_string());
    assert!(
        bad[0].1.to_string().contains("checksum mismatch"),
        "{}",
        bad[0].1
    );
    assert_eq!(
        fs.list_dir(Path::new("/bk/shared")).unwrap().len(),
        shared_before
    );
    assert_eq!(restore_and_read(&eng, b2, &fs, "/r"), expected);
    // A new backup does not take the damaged one's id.
    assert!(eng.create_new_backup(&db).unwrap() > b2);
}
