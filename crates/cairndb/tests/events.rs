//! The info log (`LOG`) and the event listener: what a user sees of
//! flushes, compactions, stalls and background errors.

use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::{
    CompactionJobInfo, Db, Error, EventListener, FlushJobInfo, Options, WriteOptions,
    WriteStallCause, WriteStallInfo,
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
    let opts = || Options {
        write_buffer_size: 64 << 10,
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
