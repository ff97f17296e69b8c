//! Consistent copies of an open database: the file-deletion pin
//! (`disable_file_deletions`), `live_files`, the capture that checkpoints
//! and backups are made from, and [`Checkpoint`].
//!
//! A capture names the tables and blob files of one version, the WALs that
//! hold everything written after that version's flushed state (the live
//! WAL up to its length at one moment, taken under `log`, so the copy ends
//! on a record boundary and holds a prefix of the writes), and the bytes of
//! a fresh MANIFEST for exactly that version. While a capture is alive,
//! obsolete-file deletion is off (`DbInner::deletions_disabled`), so every
//! file it names stays on disk. The pin is looked at only by the collector
//! (`obsolete.rs`), under `gc_lock`: reads and writes never see it.
//!
//! Locking: the pin's counter changes under `gc_lock`, so once
//! `disable_file_deletions` returns no collection is running; the capture
//! takes `versions`, then (released) `log` with `state` under it, each
//! briefly, never together (`db/mod.rs`).

use super::*;
use crate::env::{copy_file, WritableFile};
use crate::version::set::set_current_bytes;

/// RocksDB's `log_size_for_flush` default for a checkpoint: 0, flush first.
pub const DEFAULT_LOG_SIZE_FOR_FLUSH: u64 = 0;

/// What kind of file a [`CapturedFile`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapturedKind {
    Table,
    Blob,
    Wal,
}

/// One file of a capture.
#[derive(Debug, Clone)]
pub(crate) struct CapturedFile {
    /// Its name in the database directory.
    pub(crate) name: String,
    pub(crate) kind: CapturedKind,
    /// Bytes to copy: the whole file for tables and blob files, the length
    /// at the capture for a WAL.
    pub(crate) size: u64,
}

/// A consistent set of files that opens as the database at one sequence
/// number (see the module comment). Deletion stays off until it drops.
pub(crate) struct Capture {
    _pin: DeletionPin,
    pub(crate) dir: PathBuf,
    pub(crate) files: Vec<CapturedFile>,
    /// The name and bytes of a MANIFEST for the captured version.
    pub(crate) manifest_name: String,
    pub(crate) manifest: Vec<u8>,
    /// The bytes of CURRENT naming that MANIFEST.
    pub(crate) current: Vec<u8>,
    /// The last sequence number the captured files hold.
    pub(crate) sequence: SeqNo,
}

/// Keeps obsolete-file deletion off while alive (counted, like
/// `disable_file_deletions`).
pub(crate) struct DeletionPin {
    inner: Arc<DbInner>,
}

impl Drop for DeletionPin {
    fn drop(&mut self) {
        self.inner.enable_file_deletions();
    }
}

/// The files that make up the database now ([`Db::live_files`]), RocksDB's
/// `GetLiveFiles`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFiles {
    /// Names in the database directory: `CURRENT`, the MANIFEST, and the
    /// tables and blob files of the current version. WALs are not listed.
    pub files: Vec<String>,
    /// How much of the MANIFEST is valid (it is still appended to: copy
    /// only this many bytes).
    pub manifest_file_size: u64,
}

/// A [`WritableFile`] collecting bytes in memory (a MANIFEST built before
/// it is written anywhere), read back after the writer is done.
struct SharedVecFile(Arc<Mutex<Vec<u8>>>, PathBuf);

impl WritableFile for SharedVecFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
    fn path(&self) -> &Path {
        &self.1
    }
}

impl DbInner {
    /// Turns obsolete-file deletion off (counted). Waits for a collection
    /// under way to finish, so no file is deleted after this returns.
    pub(super) fn disable_file_deletions(&self) {
        let _g = self.gc_lock.lock();
        self.deletions_disabled.fetch_add(1, Ordering::SeqCst);
    }

    /// Undoes one `disable_file_deletions`; the last one deletes what
    /// became obsolete meanwhile. Returns the count left.
    pub(super) fn enable_file_deletions(&self) -> u64 {
        let left = {
            let _g = self.gc_lock.lock();
            let n = self.deletions_disabled.load(Ordering::SeqCst);
            let left = n.saturating_sub(1);
            self.deletions_disabled.store(left, Ordering::SeqCst);
            left
        };
        if left == 0 && !self.closed.load(Ordering::Acquire) {
            self.delete_obsolete_files();
        }
        left
    }

    /// Bytes in the WALs that recovery would replay now.
    fn live_wal_bytes(&self) -> Result<u64> {
        let log_number = self.versions.lock().log_number;
        let mut total = 0;
        for n in self.fs.list_dir(&self.path)? {
            if let Some((FileType::Log, num)) = filename::parse_file_name(&n) {
                if num >= log_number {
                    total += self.fs.file_size(&self.path.join(&n)).unwrap_or(0);
                }
            }
        }
        Ok(total)
    }
}

impl Db {
    /// Turns the deletion of obsolete files off until as many
    /// [`Db::enable_file_deletions`] calls have been made (RocksDB's
    /// `DisableFileDeletions`): files may then be copied out of the
    /// directory without a compaction or flush deleting them meanwhile.
    /// Waits for a deletion pass under way to finish.
    pub fn disable_file_deletions(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.disable_file_deletions();
        Ok(())
    }

    /// Undoes one [`Db::disable_file_deletions`]; when none is left in
    /// effect, deletes what became obsolete meanwhile. Returns how many
    /// disables are still in effect (0 when called with none).
    pub fn enable_file_deletions(&self) -> Result<u64> {
        self.inner.check_open()?;
        Ok(self.inner.enable_file_deletions())
    }

    /// The files of the current state (RocksDB's `GetLiveFiles`), after a
    /// flush when `flush_memtable` is set (otherwise writes still in the
    /// memtable are only in the WALs, which are not listed). Pair with
    /// [`Db::disable_file_deletions`] to copy them.
    pub fn live_files(&self, flush_memtable: bool) -> Result<LiveFiles> {
        self.inner.check_open()?;
        if flush_memtable {
            self.inner.flush()?;
        }
        let vs = self.inner.versions.lock();
        let cur = vs.current();
        let mut files = vec!["CURRENT".to_string(), manifest_name(vs.manifest_number())];
        for f in cur.files.iter().flatten() {
            files.push(file_name_of(&filename::table_file_name(
                Path::new(""),
                f.number,
            )));
        }
        for &n in cur.blob_files.keys() {
            files.push(file_name_of(&filename::blob_file_name(Path::new(""), n)));
        }
        Ok(LiveFiles {
            files,
            manifest_file_size: vs.manifest_size(),
        })
    }

    /// Captures a consistent set of files (see `checkpoint.rs`). Flushes
    /// first when the WALs to copy hold `log_size_for_flush` bytes or more
    /// (0: always).
    pub(crate) fn capture(&self, log_size_for_flush: u64) -> Result<Capture> {
        let inner = &self.inner;
        inner.check_open()?;
        inner.disable_file_deletions();
        let pin = DeletionPin {
            inner: inner.clone(),
        };
        if log_size_for_flush == 0 || inner.live_wal_bytes()? >= log_size_for_flush {
            inner.flush()?;
        }
        // The version first: its WALs (numbers >= log_number) stay, pinned.
        let (mut edit, log_number, version) = {
            let vs = inner.versions.lock();
            (vs.snapshot_edit(), vs.log_number, vs.current())
        };
        // Then the live WAL's length, at a record boundary: no group
        // appends while `log` is held, and its bytes are handed to the OS.
        let (live_log, live_len, logged_seq) = {
            let mut log = inner.log.lock();
            let logged_seq = log.last_logged_seq;
            let w = log.writer.as_mut().ok_or(Error::Closed)?;
            w.flush()?;
            let len = w.file_size();
            let live = inner.state.lock().mem_log_number;
            (live, len, logged_seq)
        };
        // Above every number in use, so the copy's own WAL and MANIFEST
        // never take a copied file's number.
        let manifest_number = inner.next_file.fetch_add(1, Ordering::SeqCst);
        edit.next_file_number = Some(manifest_number + 1);
        let mut files = Vec::new();
        for f in version.files.iter().flatten() {
            files.push(CapturedFile {
                name: file_name_of(&filename::table_file_name(Path::new(""), f.number)),
                kind: CapturedKind::Table,
                size: f.size,
            });
        }
        for &n in version.blob_files.keys() {
            let name = file_name_of(&filename::blob_file_name(Path::new(""), n));
            let size = inner.fs.file_size(&inner.path.join(&name))?;
            files.push(CapturedFile {
                name,
                kind: CapturedKind::Blob,
                size,
            });
        }
        let mut logs: Vec<u64> = inner
            .fs
            .list_dir(&inner.path)?
            .iter()
            .filter_map(|n| match filename::parse_file_name(n) {
                Some((FileType::Log, num)) if num >= log_number && num <= live_log => Some(num),
                _ => None,
            })
            .collect();
        logs.sort_unstable();
        for num in logs {
            let name = file_name_of(&filename::log_file_name(Path::new(""), num));
            // A WAL switched out before the live one is complete (its
            // writer was flushed at the switch).
            let size = if num == live_log {
                live_len
            } else {
                inner.fs.file_size(&inner.path.join(&name))?
            };
            files.push(CapturedFile {
                name,
                kind: CapturedKind::Wal,
                size,
            });
        }
        let manifest_name = manifest_name(manifest_number);
        let buf = Arc::new(Mutex::new(Vec::new()));
        {
            let mut w = LogWriter::new(
                Box::new(SharedVecFile(buf.clone(), PathBuf::from(&manifest_name))),
                manifest_number,
            );
            let mut rec = Vec::new();
            edit.encode(&mut rec);
            w.add_record(&rec)?;
            w.flush()?;
        }
        let manifest = std::mem::take(&mut *buf.lock());
        let sequence = logged_seq.max(edit.last_sequence.unwrap_or(0));
        Ok(Capture {
            _pin: pin,
            dir: inner.path.clone(),
            files,
            current: set_current_bytes(&manifest_name),
            manifest_name,
            manifest,
            sequence,
        })
    }

    /// [`Checkpoint::create`] for this database, flushing first.
    pub fn create_checkpoint(&self, dir: impl AsRef<Path>) -> Result<u64> {
        Checkpoint::new(self).create_checkpoint(dir, DEFAULT_LOG_SIZE_FOR_FLUSH)
    }

    pub(crate) fn fs(&self) -> Arc<dyn Fs> {
        self.inner.fs.clone()
    }
}

fn manifest_name(number: u64) -> String {
    file_name_of(&filename::manifest_file_name(Path::new(""), number))
}

fn file_name_of(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

/// Makes openable copies of a live database (RocksDB's `Checkpoint`):
/// tables and blob files hard-linked (copied when a link cannot be made,
/// e.g. across file systems), a fresh MANIFEST and CURRENT for exactly the
/// live files of one version, and the WALs holding the writes after it
/// copied up to one consistent point. `Db::open` on the directory opens
/// the database as of one sequence number: every write acknowledged before
/// the checkpoint began, and a prefix of those made during it. Prepared
/// transactions are in the WALs and come along.
pub struct Checkpoint<'a> {
    db: &'a Db,
}

impl<'a> Checkpoint<'a> {
    /// A checkpoint maker for `db`.
    pub fn new(db: &'a Db) -> Checkpoint<'a> {
        Checkpoint { db }
    }

    /// Creates a checkpoint of `db` in `dir`, flushing first. See
    /// [`Checkpoint::create_checkpoint`].
    pub fn create(db: &Db, dir: impl AsRef<Path>) -> Result<u64> {
        Checkpoint::new(db).create_checkpoint(dir, DEFAULT_LOG_SIZE_FOR_FLUSH)
    }

    /// Creates a checkpoint in `dir`, which must not exist. The memtable is
    /// flushed first when the WALs to copy hold `log_size_for_flush` bytes
    /// or more (0: always, RocksDB's default), else the WALs are copied.
    /// Returns the last sequence number the checkpoint holds. On failure
    /// the files written are removed (best effort); a checkpoint without
    /// CURRENT, which is written last, never opens.
    pub fn create_checkpoint(&self, dir: impl AsRef<Path>, log_size_for_flush: u64) -> Result<u64> {
        let dir = dir.as_ref();
        let fs = self.db.fs();
        if fs.exists(dir) {
            return Err(Error::invalid(format!(
                "checkpoint directory {} already exists",
                dir.display()
            )));
        }
        let cap = self.db.capture(log_size_for_flush)?;
        fs.create_dir_all(dir)?;
        let r = write_checkpoint(fs.as_ref(), &cap, dir);
        if r.is_err() {
            if let Ok(names) = fs.list_dir(dir) {
                for n in names {
                    let _ = fs.remove_file(&dir.join(n));
                }
            }
            let _ = fs.remove_dir(dir);
        }
        r.map(|()| cap.sequence)
    }
}

fn write_checkpoint(fs: &dyn Fs, cap: &Capture, dir: &Path) -> Result<()> {
    for f in &cap.files {
        let src = cap.dir.join(&f.name);
        let dst = dir.join(&f.name);
        match f.kind {
            CapturedKind::Table | CapturedKind::Blob => fs.link_file(&src, &dst)?,
            CapturedKind::Wal => {
                copy_file(fs, &src, &dst, Some(f.size))?;
            }
        }
    }
    let mut m = fs.create(&dir.join(&cap.manifest_name))?;
    m.append(&cap.manifest)?;
    m.sync()?;
    drop(m);
    fs.sync_dir(dir)?;
    fs.write_atomic(&filename::current_file_name(dir), &cap.current)
}
