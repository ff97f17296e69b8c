//! What the engine tells about itself: the `LOG` file in the database
//! directory (RocksDB's info log: the options at open, each flush and
//! compaction with sizes and times, blob files created and deleted, stalls
//! with their cause, background errors and the switch to read-only) and
//! the [`EventListener`] callbacks for the same events.
//!
//! The info log is diagnostic: a failure to write it never fails a database
//! operation (the first one is reported on stderr, later ones are dropped).
//! At open the previous `LOG` is renamed to `LOG.old.<micros>`; at most
//! `keep_log_file_num` old logs are kept.
//!
//! Locking: `InfoLog` has its own mutex, held only to append one line.
//! Listeners are called with no database lock held, except the stall
//! callbacks, which run on the writing thread while it holds the log lock
//! (every writer waits for them): a listener must not call back into the
//! database from `on_stall_conditions_changed`, and should return quickly.
//! The callbacks of a compaction (`on_compaction_completed`, the
//! `on_blob_file_created` of its garbage collection, and the
//! `on_blob_file_deleted` of the collection that follows it) run under
//! `compaction_lock`, and those of a flush on the flush thread: a listener
//! may read, but must not wait for background work (`flush`,
//! `compact_range`). Blob file deletions are reported after `gc_lock` is
//! released.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::env::{Fs, WritableFile};
use crate::error::{Error, Result};
use crate::options::Options;

/// A flush that finished: one immutable memtable written to level 0.
#[derive(Debug, Clone)]
pub struct FlushJobInfo {
    /// Number of the table written (none when the memtable was empty).
    pub table_number: Option<u64>,
    /// Bytes of the table written.
    pub table_bytes: u64,
    /// Entries in the flushed memtable.
    pub entries: u64,
    /// Smallest and largest sequence numbers in the table.
    pub seq_range: (u64, u64),
    /// Time spent building and installing the table.
    pub duration: Duration,
}

/// A compaction that finished (trivial moves included).
#[derive(Debug, Clone)]
pub struct CompactionJobInfo {
    /// The level compacted.
    pub level: usize,
    /// The level written.
    pub output_level: usize,
    /// Input table numbers (both levels).
    pub inputs: Vec<u64>,
    /// Output table numbers.
    pub outputs: Vec<u64>,
    /// Bytes of the inputs.
    pub input_bytes: u64,
    /// Bytes written.
    pub output_bytes: u64,
    /// The files moved down without being rewritten.
    pub trivial_move: bool,
    /// Started by `compact_range`, not by the level scores.
    pub manual: bool,
    /// Time from picking to installing.
    pub duration: Duration,
}

/// What wrote a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobFileCreationReason {
    /// A flush separated a memtable's large values.
    Flush,
    /// Garbage collection in a compaction relocated values from older
    /// blob files.
    Compaction,
    /// The replay of the WALs at open flushed recovered writes.
    Recovery,
}

/// A blob file that became part of the database (RocksDB's
/// `BlobFileCreationInfo`): reported after the MANIFEST edit that lists it
/// is installed, before the flush or compaction that wrote it is reported.
#[derive(Debug, Clone)]
pub struct BlobFileCreationInfo {
    /// The blob file's number.
    pub file_number: u64,
    /// Its path.
    pub path: PathBuf,
    /// What wrote it.
    pub reason: BlobFileCreationReason,
    /// Values (records) in it.
    pub blob_count: u64,
    /// Record bytes in it (`docs/format/blob.md`, the MANIFEST's count).
    pub blob_bytes: u64,
    /// Bytes of the file: header, records and footer.
    pub file_size: u64,
    /// Masked crc32c of the whole file, as the MANIFEST records it.
    pub checksum: u32,
}

impl BlobFileCreationInfo {
    pub(crate) fn new(
        dir: &Path,
        meta: &crate::version::BlobFileMeta,
        reason: BlobFileCreationReason,
    ) -> BlobFileCreationInfo {
        BlobFileCreationInfo {
            file_number: meta.number,
            path: crate::filename::blob_file_name(dir, meta.number),
            reason,
            blob_count: meta.count,
            blob_bytes: meta.bytes,
            file_size: (crate::blob::BLOB_HEADER_LEN + crate::blob::BLOB_FOOTER_LEN) as u64
                + meta.bytes,
            checksum: meta.checksum,
        }
    }
}

/// A blob file the database deleted (RocksDB's `BlobFileDeletionInfo`):
/// one no version needs any more (its values were relocated or are all
/// garbage), or one a failed or interrupted flush or compaction left.
#[derive(Debug, Clone)]
pub struct BlobFileDeletionInfo {
    /// The blob file's number.
    pub file_number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Why the unlink failed, if it did (the file stays until a later
    /// collection, or the next open, deletes it).
    pub error: Option<Error>,
}

/// Why writes are held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStallCause {
    /// The mutable memtable is full and `max_write_buffer_number` memtables
    /// wait to be flushed: writes stop.
    MemtableLimit,
    /// Level 0 holds `level0_stop_writes_trigger` files: writes stop.
    Level0Stop,
    /// Level 0 holds `level0_slowdown_writes_trigger` files: writes are
    /// paced to `delayed_write_rate`.
    Level0Slowdown,
}

/// Writes were stalled (`cleared` false) or are flowing again (`cleared`
/// true, with how long the stall lasted).
#[derive(Debug, Clone)]
pub struct WriteStallInfo {
    /// Why.
    pub cause: WriteStallCause,
    /// False when the stall begins, true when it ends.
    pub cleared: bool,
    /// With `cleared`: how long it lasted.
    pub duration: Duration,
}

/// Callbacks for engine events (RocksDB's `EventListener`). Every method
/// has an empty default. See the module doc for which locks are held.
pub trait EventListener: Send + Sync {
    /// A flush finished.
    fn on_flush_completed(&self, _info: &FlushJobInfo) {}
    /// A compaction finished.
    fn on_compaction_completed(&self, _info: &CompactionJobInfo) {}
    /// A blob file was written and installed.
    fn on_blob_file_created(&self, _info: &BlobFileCreationInfo) {}
    /// A blob file was deleted (or its deletion failed).
    fn on_blob_file_deleted(&self, _info: &BlobFileDeletionInfo) {}
    /// Writes stalled or resumed.
    fn on_stall_conditions_changed(&self, _info: &WriteStallInfo) {}
    /// A background error made the database read-only. Called once, before
    /// `flush`, `compact_range` or `sync_wal` return the error; a listener
    /// may read from the database here but must not write to it.
    fn on_background_error(&self, _error: &Error) {}
}

/// The `LOG` file.
pub(crate) struct InfoLog {
    file: Mutex<Box<dyn WritableFile>>,
    failed: AtomicBool,
}

impl InfoLog {
    /// Starts `dir/LOG`, keeping the previous one as `LOG.old.<micros>`
    /// and deleting old logs beyond `keep`.
    pub(crate) fn open(fs: &dyn Fs, dir: &Path, keep: usize) -> Result<InfoLog> {
        let path = dir.join("LOG");
        if fs.exists(&path) {
            let micros = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_micros();
            fs.rename(&path, &dir.join(format!("LOG.old.{micros}")))?;
        }
        let mut old: Vec<String> = fs
            .list_dir(dir)?
            .into_iter()
            .filter(|n| n.starts_with("LOG.old."))
            .collect();
        // Same-width microsecond stamps: name order is age order.
        old.sort_unstable();
        let excess = old.len().saturating_sub(keep);
        for n in &old[..excess] {
            // Diagnostic files: a failed delete only costs space.
            let _ = fs.remove_file(&dir.join(n));
        }
        Ok(InfoLog {
            file: Mutex::new(fs.create(&path)?),
            failed: AtomicBool::new(false),
        })
    }

    /// Appends one timestamped line.
    pub(crate) fn write(&self, msg: &str) {
        let mut line = timestamp(SystemTime::now());
        let _ = write!(line, " {msg}");
        line.push('\n');
        let mut f = self.file.lock();
        if let Err(e) = f.append(line.as_bytes()).and_then(|()| f.flush()) {
            if !self.failed.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "cairndb: cannot write the info log {}: {e}",
                    f.path().display()
                );
            }
        }
    }
}

/// The info log and the listeners of one database.
pub(crate) struct Events {
    log: Option<InfoLog>,
    listeners: Vec<Arc<dyn EventListener>>,
}

impl Events {
    pub(crate) fn new(fs: &dyn Fs, dir: &Path, opts: &Options) -> Result<Events> {
        let log = if opts.info_log {
            Some(InfoLog::open(fs, dir, opts.keep_log_file_num)?)
        } else {
            None
        };
        Ok(Events {
            log,
            listeners: opts.listeners.clone(),
        })
    }

    /// A line in the info log.
    pub(crate) fn info(&self, msg: impl AsRef<str>) {
        if let Some(l) = &self.log {
            l.write(msg.as_ref());
        }
    }

    pub(crate) fn opened(&self, dir: &Path, opts: &Options, last_seq: u64) {
        if self.log.is_none() {
            return;
        }
        self.info(format!(
            "CairnDB {} opened {} (last sequence {last_seq})",
            env!("CARGO_PKG_VERSION"),
            dir.display()
        ));
        for line in format!("{opts:#?}").lines() {
            self.info(format!("Options: {line}"));
        }
    }

    pub(crate) fn flush_completed(&self, i: &FlushJobInfo) {
        self.info(format!(
            "Flush: table {} ({} bytes, {} entries, seq {}..{}) in {:.3} ms",
            i.table_number
                .map_or_else(|| "none".to_string(), |n| format!("{n:06}")),
            i.table_bytes,
            i.entries,
            i.seq_range.0,
            i.seq_range.1,
            i.duration.as_secs_f64() * 1e3
        ));
        for l in &self.listeners {
            l.on_flush_completed(i);
        }
    }

    pub(crate) fn compaction_completed(&self, i: &CompactionJobInfo) {
        self.info(format!(
            "Compaction{}: L{} -> L{}{}: inputs {:?} ({} bytes), outputs {:?} ({} bytes) in {:.3} ms",
            if i.manual { " (manual)" } else { "" },
            i.level,
            i.output_level,
            if i.trivial_move { " trivial move" } else { "" },
            i.inputs,
            i.input_bytes,
            i.outputs,
            i.output_bytes,
            i.duration.as_secs_f64() * 1e3
        ));
        for l in &self.listeners {
            l.on_compaction_completed(i);
        }
    }

    pub(crate) fn blob_file_created(&self, i: &BlobFileCreationInfo) {
        let why = match i.reason {
            BlobFileCreationReason::Flush => "flush",
            BlobFileCreationReason::Compaction => "compaction",
            BlobFileCreationReason::Recovery => "recovery",
        };
        self.info(format!(
            "Blob file {:06} created ({why}): {} records, {} record bytes, {} file bytes",
            i.file_number, i.blob_count, i.blob_bytes, i.file_size
        ));
        for l in &self.listeners {
            l.on_blob_file_created(i);
        }
    }

    pub(crate) fn blob_file_deleted(&self, i: &BlobFileDeletionInfo) {
        match &i.error {
            None => self.info(format!("Blob file {:06} deleted", i.file_number)),
            Some(e) => self.info(format!(
                "Blob file {:06} could not be deleted: {e}",
                i.file_number
            )),
        }
        for l in &self.listeners {
            l.on_blob_file_deleted(i);
        }
    }

    pub(crate) fn stall(&self, i: &WriteStallInfo) {
        let what = match i.cause {
            WriteStallCause::MemtableLimit => "memtables waiting to be flushed",
            WriteStallCause::Level0Stop => "level-0 file count at the stop trigger",
            WriteStallCause::Level0Slowdown => "level-0 file count at the slowdown trigger",
        };
        if i.cleared {
            self.info(format!(
                "Write stall cleared ({what}) after {:.3} ms",
                i.duration.as_secs_f64() * 1e3
            ));
        } else {
            self.info(format!("Write stall: {what}"));
        }
        for l in &self.listeners {
            l.on_stall_conditions_changed(i);
        }
    }

    pub(crate) fn background_error(&self, e: &Error) {
        self.info(format!(
            "Background error, the database is now read-only: {e}"
        ));
        for l in &self.listeners {
            l.on_background_error(e);
        }
    }
}

/// `YYYY/MM/DD-HH:MM:SS.micros` in UTC, RocksDB's LOG format.
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}/{month:02}/{day:02}-{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_civil_dates() {
        let t = UNIX_EPOCH + Duration::from_micros(1_795_402_476_123_456);
        assert_eq!(timestamp(t), "2026/11/23-02:54:36.123456");
        assert_eq!(timestamp(UNIX_EPOCH), "1970/01/01-00:00:00.000000");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(t), "2000/02/29-00:00:00.000000");
    }
}
