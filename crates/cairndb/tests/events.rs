//! The info log (`LOG`) and the event listener: what a user sees of
//! flushes, compactions, blob files, stalls and background errors.

mod common;

use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::{
    BlobFileCreationInfo, BlobFileCreationReason, BlobFileDeletionInfo, CompactionJobInfo, Db,
    Error, EventListener, FlushJobInfo, Options, ReadOptions, WriteOptions, WriteStallCause,
    WriteStallInfo,
};
use parking_lot::Mutex;

#[derive(Default)]
struct Recorder {
    flushes: Mutex<Vec<FlushJobInfo>>,
    compactions: Mutex<Vec<CompactionJobInfo>>,
    stalls: Mutex<Vec<WriteStallInfo>>,
    errors: Mutex<Vec<String>>,
}

impl EventListener for Recorder {
    fn on_flush_completed(&self, i: &FlushJobInfo) {
        self.flushes.lock().push(i.clone());
    }
    fn on_compaction_completed(&self, i: &CompactionJobInfo) {
        self.compactions.lock().push(i.clone());
    }
    fn on_stall_conditions_changed(&self, i: &WriteStallInfo) {
        self.stalls.lock().push(i.clone());
    }
    fn on_background_error(&self, e: &Error) {
        self.errors.lock().push(e.to_string());
    }
}

#[test]
fn listener_and_info_log_see_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    // Level 0 never reaches the compaction trigger here: an automatic
    // compaction that raced ahead could leave one bottom-level file, which
    // `compact_range` rightly leaves alone (no manual compaction to see).
    let opts = || Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 19,
        listeners: vec![rec.clone() as Arc<dyn EventListener>],
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..2000u32 {
        db.put(&WriteOptions::default(), &i.to_be_bytes(), &[7u8; 100])
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let flushes = rec.flushes.lock().clone();
    assert!(!flushes.is_empty());
    let entries: u64 = flushes.iter().map(|f| f.entries).sum();
    assert_eq!(entries, 2000, "{flushes:?}");
    assert!(flushes
        .iter()
        .all(|f| f.table_bytes > 0 && f.table_number.is_some()));
    let manual: Vec<_> = rec
        .compactions
        .lock()
        .iter()
        .filter(|c| c.manual)
        .cloned()
        .collect();
    assert!(!manual.is_empty());
    assert!(manual
        .iter()
        .all(|c| !c.inputs.is_empty() && c.output_bytes > 0));

    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains("opened"), "{log}");
    assert!(log.contains("Options: "), "{log}");
    assert!(log.contains("write_buffer_size: 65536"), "{log}");
    assert!(log.contains("Flush: table"), "{log}");
    assert!(log.contains("Compaction (manual): L0 -> L1"), "{log}");
    // Lines carry RocksDB's timestamp shape: YYYY/MM/DD-HH:MM:SS.micros.
    let first = log.lines().next().unwrap();
    assert_eq!(first.as_bytes()[4], b'/');
    assert_eq!(first.as_bytes()[10], b'-');

    // Reopening keeps the previous log as LOG.old.*.
    drop(Db::open(dir.path(), opts()).unwrap());
    let old: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("LOG.old."))
        .collect();
    assert_eq!(old.len(), 1);
}

/// Holds each flush back a little (the listener runs on the flush thread).
struct SlowFlush(Arc<Recorder>);

impl EventListener for SlowFlush {
    fn on_flush_completed(&self, _: &FlushJobInfo) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    fn on_stall_conditions_changed(&self, i: &WriteStallInfo) {
        self.0.on_stall_conditions_changed(i);
    }
}

#[test]
fn listener_sees_memtable_stall_begin_and_end() {
    let rec = Arc::new(Recorder::default());
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(MemFs::new()),
            write_buffer_size: 64 << 10,
            max_write_buffer_number: 2,
            listeners: vec![Arc::new(SlowFlush(rec.clone())) as Arc<dyn EventListener>],
            ..Options::default()
        },
    )
    .unwrap();
    // About ten memtables' worth, written far faster than a flush that
    // takes 20 ms: the writer meets a full set of immutable memtables.
    for i in 0..3000u32 {
        db.put(&WriteOptions::default(), &i.to_be_bytes(), &[1u8; 200])
            .unwrap();
    }
    db.close().unwrap();
    let stalls = rec.stalls.lock().clone();
    let begins: Vec<_> = stalls.iter().filter(|s| !s.cleared).collect();
    let ends = stalls.iter().filter(|s| s.cleared).count();
    assert!(!begins.is_empty(), "no stall was reported");
    assert_eq!(begins.len(), ends, "{stalls:?}");
    assert!(begins
        .iter()
        .any(|s| s.cause == WriteStallCause::MemtableLimit));
}

/// A database with `listener`, holding one key, whose flush fails with EIO
/// (the first `flush` call makes it read-only).
fn db_whose_flush_fails(listener: Arc<dyn EventListener>) -> Db {
    let fault = Arc::new(FaultFs::new(Arc::new(MemFs::new())));
    let db = Db::open(
        "/db",
        Options {
            fs: fault.clone(),
            listeners: vec![listener],
            ..Options::default()
        },
    )
    .unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    fault.inject(FaultRule::new(FaultOp::Write, libc::EIO).on_path(".sst"));
    db
}

#[test]
fn listener_sees_the_background_error_that_makes_the_db_read_only() {
    let rec = Arc::new(Recorder::default());
    let db = db_whose_flush_fails(rec.clone());
    assert!(db.flush().is_err());
    let errors = rec.errors.lock().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(db.put(&WriteOptions::default(), b"k2", b"v").is_err());
}

/// A listener slow to record the background error.
struct SlowErrorListener(Arc<Recorder>);

impl EventListener for SlowErrorListener {
    fn on_background_error(&self, e: &Error) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.0.on_background_error(e);
    }
}

/// The flush thread published the error before telling the listeners, and
/// `flush` returned it to the caller first.
#[test]
fn flush_returns_the_background_error_only_after_the_listener_saw_it() {
    let rec = Arc::new(Recorder::default());
    let db = db_whose_flush_fails(Arc::new(SlowErrorListener(rec.clone())));
    assert!(db.flush().is_err());
    assert_eq!(rec.errors.lock().len(), 1);
    // Every later caller sees it too, without a second report.
    assert!(db.flush().is_err());
    assert!(db.compact_range(None, None).is_err());
    assert_eq!(rec.errors.lock().len(), 1);
}

/// Blob file events, and the flush and compaction events among them, in
/// the order they were reported.
#[derive(Default)]
struct BlobRecorder {
    created: Mutex<Vec<BlobFileCreationInfo>>,
    deleted: Mutex<Vec<BlobFileDeletionInfo>>,
    order: Mutex<Vec<String>>,
}

impl EventListener for BlobRecorder {
    fn on_flush_completed(&self, i: &FlushJobInfo) {
        self.order
            .lock()
            .push(format!("flush {}", i.table_number.unwrap_or(0)));
    }
    fn on_compaction_completed(&self, _: &CompactionJobInfo) {
        self.order.lock().push("compaction".into());
    }
    fn on_blob_file_created(&self, i: &BlobFileCreationInfo) {
        self.order.lock().push(format!("created {}", i.file_number));
        self.created.lock().push(i.clone());
    }
    fn on_blob_file_deleted(&self, i: &BlobFileDeletionInfo) {
        self.order.lock().push(format!("deleted {}", i.file_number));
        self.deleted.lock().push(i.clone());
    }
}

fn blob_options(fs: Arc<dyn Fs>, rec: &Arc<BlobRecorder>) -> Options {
    Options {
        fs,
        write_buffer_size: 1 << 20,
        enable_blob_files: true,
        min_blob_size: 100,
        blob_file_size: 16 << 10,
        enable_blob_garbage_collection: true,
        blob_garbage_collection_age_cutoff: 1.0,
        // Only `compact_range` compacts.
        level0_file_num_compaction_trigger: 8,
        listeners: vec![rec.clone() as Arc<dyn EventListener>],
        ..Options::default()
    }
}

#[test]
fn listener_sees_blob_files_created_by_flush_and_gc_and_deleted() {
    let fs = MemFs::new();
    let rec = Arc::new(BlobRecorder::default());
    let db = Db::open("/db", blob_options(Arc::new(fs.clone()), &rec)).unwrap();
    let w = WriteOptions::default();
    for i in 0..100u32 {
        db.put(&w, &i.to_be_bytes(), &[i as u8; 500]).unwrap();
    }
    db.flush().unwrap();
    let flushed: Vec<BlobFileCreationInfo> = rec.created.lock().clone();
    // 100 values of 500 bytes in files closed at 16 KiB: several files.
    assert!(flushed.len() > 1, "{flushed:?}");
    assert_eq!(common::blob_file_numbers(&fs), {
        let mut v: Vec<u64> = flushed.iter().map(|c| c.file_number).collect();
        v.sort_unstable();
        v
    });
    for c in &flushed {
        assert_eq!(c.reason, BlobFileCreationReason::Flush);
        assert_eq!(fs.file_size(&c.path).unwrap(), c.file_size, "{c:?}");
        assert!(c.path.ends_with(format!("{:06}.blob", c.file_number)));
    }
    assert_eq!(flushed.iter().map(|c| c.blob_count).sum::<u64>(), 100);
    assert_eq!(
        flushed.iter().map(|c| c.blob_bytes).sum::<u64>(),
        db.stats().blob_file_bytes
    );
    // Reported before the flush that wrote them.
    let order = rec.order.lock().clone();
    let flush_at = order.iter().position(|e| e.starts_with("flush")).unwrap();
    assert_eq!(flush_at, flushed.len(), "{order:?}");
    assert!(rec.deleted.lock().is_empty());

    // Garbage collection moves every value into new files; the old ones go.
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let created = rec.created.lock().clone();
    let gc: Vec<_> = created[flushed.len()..].to_vec();
    assert!(!gc.is_empty());
    assert!(gc
        .iter()
        .all(|c| c.reason == BlobFileCreationReason::Compaction));
    assert_eq!(gc.iter().map(|c| c.blob_count).sum::<u64>(), 100);
    let mut deleted: Vec<u64> = rec.deleted.lock().iter().map(|d| d.file_number).collect();
    deleted.sort_unstable();
    let mut first: Vec<u64> = flushed.iter().map(|c| c.file_number).collect();
    first.sort_unstable();
    assert_eq!(deleted, first);
    assert!(rec.deleted.lock().iter().all(|d| d.error.is_none()));
    let mut left: Vec<u64> = gc.iter().map(|c| c.file_number).collect();
    left.sort_unstable();
    assert_eq!(common::blob_file_numbers(&fs), left);
    let order = rec.order.lock().clone();
    let compaction_at = order.iter().position(|e| e == "compaction").unwrap();
    assert!(order[compaction_at - gc.len()..compaction_at]
        .iter()
        .all(|e| e.starts_with("created")));

    let log = String::from_utf8(fs.contents(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("created (flush): "), "{log}");
    assert!(log.contains("created (compaction): "), "{log}");
    assert!(
        log.contains(&format!("Blob file {:06} deleted", first[0])),
        "{log}"
    );
}

/// The replay of the WAL at open writes blob files too; a blob file that a
/// failed garbage collection left is deleted at the next open, reported
/// with no creation before it.
#[test]
fn listener_sees_recovery_blob_files_and_the_deletion_of_an_orphan() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let rec = Arc::new(BlobRecorder::default());
    let db = Db::open("/db", blob_options(Arc::new(fault.clone()), &rec)).unwrap();
    for i in 0..20u32 {
        db.put(&WriteOptions::default(), &i.to_be_bytes(), &[1u8; 300])
            .unwrap();
    }
    db.simulate_crash();
    let rec = Arc::new(BlobRecorder::default());
    let db = Db::open("/db", blob_options(Arc::new(fault.clone()), &rec)).unwrap();
    let created = rec.created.lock().clone();
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0].reason, BlobFileCreationReason::Recovery);
    assert_eq!(created[0].blob_count, 20);
    assert_eq!(
        common::blob_file_numbers(&mem),
        vec![created[0].file_number]
    );

    // Garbage collection writes a new blob file, whose sync fails.
    fault.inject(FaultRule::new(FaultOp::Sync, libc::EIO).on_path(".blob"));
    assert!(db.compact_range(None, None).is_err());
    let orphans: Vec<u64> = common::blob_file_numbers(&mem)
        .into_iter()
        .filter(|&n| n != created[0].file_number)
        .collect();
    assert_eq!(orphans.len(), 1);
    assert_eq!(rec.created.lock().len(), 1);
    db.simulate_crash();
    mem.process_crash();
    fault.clear();
    let rec = Arc::new(BlobRecorder::default());
    let db = Db::open("/db", blob_options(Arc::new(fault.clone()), &rec)).unwrap();
    let deleted = rec.deleted.lock().clone();
    assert_eq!(
        deleted.iter().map(|d| d.file_number).collect::<Vec<_>>(),
        orphans
    );
    assert!(rec.created.lock().is_empty());
    assert_eq!(
        common::blob_file_numbers(&mem),
        vec![created[0].file_number]
    );
    assert_eq!(
        db.get(&ReadOptions::default(), &7u32.to_be_bytes())
            .unwrap(),
        Some(vec![1u8; 300])
    );
}

/// A listener slow to hear of a flush.
#[derive(Default)]
struct SlowFlushListener {
    flushes: Mutex<u32>,
}

impl EventListener for SlowFlushListener {
    fn on_flush_completed(&self, _: &FlushJobInfo) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        *self.flushes.lock() += 1;
    }
}

#[test]
fn flush_returns_only_after_the_listener_saw_the_flush() {
    let rec = Arc::new(SlowFlushListener::default());
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(MemFs::new()),
            listeners: vec![rec.clone() as Arc<dyn EventListener>],
            ..Options::default()
        },
    )
    .unwrap();
    for round in 1..=3u32 {
        db.put(&WriteOptions::default(), &round.to_be_bytes(), b"v")
            .unwrap();
        db.flush().unwrap();
        assert_eq!(*rec.flushes.lock(), round);
    }
    db.close().unwrap();
}
