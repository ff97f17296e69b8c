//! Backups of a live database (RocksDB's `BackupEngine`): a backup
//! directory holding any number of backups, which share their table and
//! blob files (`docs/format/backup.md` has the layout and the metadata
//! file's lines; `docs/reliability.md` the promises).
//!
//! A backup is made from a capture of the database (`db/checkpoint.rs`):
//! tables and blob files go to `shared/`, named by file number, crc32c and
//! size, so a file already there is not copied again; the MANIFEST,
//! CURRENT and WALs go to `private/<id>/`. The backup exists once its
//! metadata file `meta/<id>` does: it is written last, to a temporary
//! name, synced, renamed, and the directory synced. Anything without
//! metadata (a backup cut short by a crash or an error) is never listed
//! and is removed at the next [`BackupEngine::open`], with shared files no
//! metadata names.
//!
//! Invariants: a shared file's name is final only after its bytes are
//! synced (it is written as `*.tmp` and renamed); metadata names only
//! files that were synced before it was written; nothing in the backup
//! directory is changed by a restore or a verify.
//!
//! Locking: one engine per backup directory, held by its `LOCK` file; an
//! engine's methods take `&mut self` where they change the directory.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::db::checkpoint::CapturedKind;
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::util::crc;
use crate::Db;

/// Identifies one backup in a backup directory (1, 2, ...).
pub type BackupId = u32;

/// First line of a metadata file.
const META_MAGIC: &str = "cairndb-backup 1";
const COPY_CHUNK: usize = 256 << 10;

/// Options for [`BackupEngine::open_with`].
#[derive(Clone)]
pub struct BackupEngineOptions {
    /// The file system of the backup directory, also used to read the
    /// database's files. Default: the POSIX one.
    pub fs: Arc<dyn Fs>,
    /// Bytes per second the copies may write (0: unlimited). Default 0.
    pub rate_limit: u64,
    /// Flush the memtable before a backup, so it holds tables only (plus
    /// a near-empty WAL). Off: the WALs are copied as they are, and
    /// writes made with the WAL disabled and not flushed are not in the
    /// backup. Default true.
    pub flush_before_backup: bool,
}

impl Default for BackupEngineOptions {
    fn default() -> Self {
        BackupEngineOptions {
            fs: crate::env::posix::PosixFs::shared(),
            rate_limit: 0,
            flush_before_backup: true,
        }
    }
}

/// What [`BackupEngine::get_backup_info`] tells about one backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// Its id.
    pub backup_id: BackupId,
    /// When it was made, seconds since the Unix epoch.
    pub timestamp: u64,
    /// The last sequence number it holds.
    pub sequence: u64,
    /// Total bytes of its files (shared ones counted in full).
    pub size: u64,
    /// How many files it names.
    pub number_files: usize,
}

/// What the last [`BackupEngine::create_new_backup`] copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackupCopyStats {
    /// Files copied (shared ones not already present, and private ones).
    pub files_copied: u64,
    /// Bytes of those.
    pub bytes_copied: u64,
    /// Shared files found already in the backup directory.
    pub files_reused: u64,
    /// Bytes of those.
    pub bytes_reused: u64,
}

/// One file of a backup: where it is in the backup directory (relative,
/// `/`-separated), its size and crc32c.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileEntry {
    rel: String,
    size: u64,
    crc: u32,
}

impl FileEntry {
    /// Its name in a restored database directory.
    fn db_name(&self) -> Result<String> {
        if let Some(s) = self.rel.strip_prefix("shared/") {
            // NNNNNN_CCCCCCCC_SIZE.ext -> NNNNNN.ext
            let (stem, ext) = s.rsplit_once('.').unwrap_or((s, ""));
            let number = stem.split('_').next().unwrap_or(stem);
            return Ok(format!("{number}.{ext}"));
        }
        match self.rel.rsplit_once('/') {
            Some((_, name)) if !name.is_empty() => Ok(name.to_string()),
            _ => Err(Error::invalid(format!(
                "backup file name `{}` is not one the engine writes",
                self.rel
            ))),
        }
    }
}

/// A parsed metadata file.
#[derive(Debug, Clone)]
struct BackupMeta {
    id: BackupId,
    timestamp: u64,
    sequence: u64,
    files: Vec<FileEntry>,
}

impl BackupMeta {
    /// The metadata file's bytes (`docs/format/backup.md`).
    fn encode(&self) -> Vec<u8> {
        let mut s = String::new();
        s.push_str(META_MAGIC);
        s.push('\n');
        s.push_str(&format!("id {}\n", self.id));
        s.push_str(&format!("timestamp {}\n", self.timestamp));
        s.push_str(&format!("sequence {}\n", self.sequence));
        s.push_str(&format!("files {}\n", self.files.len()));
        for f in &self.files {
            s.push_str(&format!("{} {} {:08x}\n", f.rel, f.size, f.crc));
        }
        let c = crc::crc32c(s.as_bytes());
        s.push_str(&format!("checksum {c:08x}\n"));
        s.into_bytes()
    }

    fn decode(data: &[u8], path: &Path) -> Result<BackupMeta> {
        let bad = |what: &str| Error::corruption(path, 0, format!("backup metadata: {what}"));
        let text = std::str::from_utf8(data).map_err(|_| bad("not UTF-8"))?;
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad("too short"))?;
        let (body, last) = text.split_at(body_end);
        let want = last
            .strip_prefix("checksum ")
            .and_then(|h| u32::from_str_radix(h.trim_end(), 16).ok())
            .ok_or_else(|| bad("no checksum line"))?;
        let got = crc::crc32c(body.as_bytes());
        if got != want {
            return Err(bad(&format!(
                "checksum mismatch: crc32c {got:08x}, recorded {want:08x}"
            )));
        }
        let mut lines = body.lines();
        if lines.next() != Some(META_MAGIC) {
            return Err(bad("unknown first line"));
        }
        let mut field = |name: &str| -> Result<u64> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|v| v.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(&format!("no `{name}` line")))
        };
        let id = BackupId::try_from(field("id")?).map_err(|_| bad("id out of range"))?;
        let timestamp = field("timestamp")?;
        let sequence = field("sequence")?;
        let n = field("files")?;
        let mut files = Vec::new();
        for l in lines.by_ref() {
            let mut parts = l.split(' ');
            let (Some(rel), Some(size), Some(c), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(bad(&format!("bad file line `{l}`")));
            };
            let size = size
                .parse()
                .map_err(|_| bad(&format!("bad size in `{l}`")))?;
            let crc =
                u32::from_str_radix(c, 16).map_err(|_| bad(&format!("bad checksum in `{l}`")))?;
            if rel.is_empty() || rel.contains("..") || rel.starts_with('/') {
                return Err(bad(&format!("bad file name in `{l}`")));
            }
            files.push(FileEntry {
                rel: rel.to_string(),
                size,
                crc,
            });
        }
        if files.len() as u64 != n {
            return Err(bad(&format!(
                "{} file lines, `files` says {n}",
                files.len()
            )));
        }
        Ok(BackupMeta {
            id,
            timestamp,
            sequence,
            files,
        })
    }

    fn info(&self) -> BackupInfo {
        BackupInfo {
            backup_id: self.id,
            timestamp: self.timestamp,
            sequence: self.sequence,
            size: self.files.iter().map(|f| f.size).sum(),
            number_files: self.files.len(),
        }
    }
}

/// Limits copy writes to a number of bytes per second (0: none).
struct RateLimiter {
    rate: u64,
    start: Instant,
    bytes: u64,
}

impl RateLimiter {
    fn new(rate: u64) -> Self {
        RateLimiter {
            rate,
            start: Instant::now(),
            bytes: 0,
        }
    }

    /// Counts `n` bytes written; sleeps while ahead of the rate.
    fn request(&mut self, n: usize) {
        if self.rate == 0 {
            return;
        }
        self.bytes += n as u64;
        let due = Duration::from_secs_f64(self.bytes as f64 / self.rate as f64);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

/// Copies the first `len` bytes of `src` to a new file `dst` (synced),
/// limited by `rl`; returns their crc32c. A source shorter than `len` is
/// an error naming it.
fn copy_with_crc(
    fs: &dyn Fs,
    src: &Path,
    dst: &Path,
    len: u64,
    rl: &mut RateLimiter,
) -> Result<u32> {
    let mut r = fs.open_sequential(src)?;
    let mut w = fs.create(dst)?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut done = 0u64;
    let mut c = 0u32;
    while done < len {
        let want = (len - done).min(COPY_CHUNK as u64) as usize;
        let n = r.read(&mut buf[..want])?;
        if n == 0 {
            return Err(Error::corruption(
                src,
                done,
                format!("file ends at {done} bytes, {len} expected"),
            ));
        }
        c = crc::extend(c, &buf[..n]);
        w.append(&buf[..n])?;
        rl.request(n);
        done += n as u64;
    }
    w.sync()?;
    Ok(c)
}

/// Size and crc32c of the whole file at `path`.
fn file_crc(fs: &dyn Fs, path: &Path) -> Result<(u64, u32)> {
    let mut r = fs.open_sequential(path)?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let (mut size, mut c) = (0u64, 0u32);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok((size, c));
        }
        c = crc::extend(c, &buf[..n]);
        size += n as u64;
    }
}

/// Checks `path` against its entry: size, then crc32c. Errors name the file.
fn check_entry(fs: &dyn Fs, path: &Path, e: &FileEntry) -> Result<()> {
    let size = fs.file_size(path)?;
    if size != e.size {
        return Err(Error::corruption(
            path,
            size.min(e.size),
            format!(
                "backup file is {size} bytes, the metadata records {}",
                e.size
            ),
        ));
    }
    let (_, c) = file_crc(fs, path)?;
    if c != e.crc {
        return Err(crc_mismatch(path, c, e.crc));
    }
    Ok(())
}

fn crc_mismatch(path: &Path, got: u32, want: u32) -> Error {
    Error::corruption(
        path,
        0,
        format!("checksum mismatch: crc32c {got:08x}, the metadata records {want:08x}"),
    )
}

/// Removes every file in `dir`, then `dir` (best effort).
fn remove_tree(fs: &dyn Fs, dir: &Path) {
    if let Ok(names) = fs.list_dir(dir) {
        for n in names {
            let _ = fs.remove_file(&dir.join(n));
        }
    }
    let _ = fs.remove_dir(dir);
}

/// Manages the backups in one backup directory.
pub struct BackupEngine {
    dir: PathBuf,
    opts: BackupEngineOptions,
    backups: BTreeMap<BackupId, BackupMeta>,
    /// Metadata files that did not parse: (name, error). Their backups are
    /// not listed, and shared files are not collected while any exists.
    corrupt: Vec<(String, Error)>,
    last_stats: BackupCopyStats,
    _lock: Box<dyn FileLock>,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngine")
            .field("dir", &self.dir)
            .field("backups", &self.backups.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl BackupEngine {
    /// Opens (creating if needed) the backup directory `dir` on the POSIX
    /// file system.
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        BackupEngine::open_with(dir, BackupEngineOptions::default())
    }

    /// Opens (creating if needed) the backup directory `dir`: takes its
    /// lock, reads every backup's metadata, and removes what a backup cut
    /// short left (files without metadata, temporaries, shared files no
    /// backup names).
    pub fn open_with(dir: impl AsRef<Path>, opts: BackupEngineOptions) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        for sub in ["meta", "shared", "private"] {
            fs.create_dir_all(&dir.join(sub))?;
        }
        let lock = fs.lock(&dir.join("LOCK"))?;
        let mut e = BackupEngine {
            dir,
            opts,
            backups: BTreeMap::new(),
            corrupt: Vec::new(),
            last_stats: BackupCopyStats::default(),
            _lock: lock,
        };
        e.load()?;
        e.collect_garbage();
        Ok(e)
    }

    fn fs(&self) -> &dyn Fs {
        self.opts.fs.as_ref()
    }

    fn load(&mut self) -> Result<()> {
        let meta_dir = self.dir.join("meta");
        for name in self.fs().list_dir(&meta_dir)? {
            let Ok(id) = name.parse::<BackupId>() else {
                continue;
            };
            let path = meta_dir.join(&name);
            let parsed = self
                .fs()
                .read_all(&path)
                .and_then(|d| BackupMeta::decode(&d, &path))
                .and_then(|m| {
                    if m.id == id {
                        Ok(m)
                    } else {
                        Err(Error::corruption(
                            &path,
                            0,
                            format!("backup metadata names backup {}", m.id),
                        ))
                    }
                });
            match parsed {
                Ok(m) => {
                    self.backups.insert(id, m);
                }
                Err(e) => self.corrupt.push((name, e)),
            }
        }
        Ok(())
    }

    /// Removes what no backup's metadata names (best effort).
    fn collect_garbage(&self) {
        let fs = self.fs();
        let meta_dir = self.dir.join("meta");
        if let Ok(names) = fs.list_dir(&meta_dir) {
            for n in names.iter().filter(|n| n.ends_with(".tmp")) {
                let _ = fs.remove_file(&meta_dir.join(n));
            }
        }
        let corrupt_ids: HashSet<&str> = self.corrupt.iter().map(|(n, _)| n.as_str()).collect();
        let private = self.dir.join("private");
        if let Ok(names) = fs.list_dir(&private) {
            for n in names {
                let known = n
                    .parse::<BackupId>()
                    .is_ok_and(|id| self.backups.contains_key(&id));
                if !known && !corrupt_ids.contains(n.as_str()) {
                    remove_tree(fs, &private.join(&n));
                }
            }
        }
        let shared = self.dir.join("shared");
        let used: HashSet<&str> = self
            .backups
            .values()
            .flat_map(|m| m.files.iter())
            .filter_map(|f| f.rel.strip_prefix("shared/"))
            .collect();
        if let Ok(names) = fs.list_dir(&shared) {
            for n in names {
                // A damaged metadata file may name any shared file.
                if n.ends_with(".tmp") || (self.corrupt.is_empty() && !used.contains(n.as_str())) {
                    let _ = fs.remove_file(&shared.join(&n));
                }
            }
        }
    }

    /// The backups, oldest first.
    pub fn get_backup_info(&self) -> Vec<BackupInfo> {
        self.backups.values().map(BackupMeta::info).collect()
    }

    /// Metadata files that could not be read: (file name, error). Their
    /// backups are not listed.
    pub fn corrupt_backups(&self) -> Vec<(String, Error)> {
        self.corrupt.clone()
    }

    /// What the last `create_new_backup` copied and reused.
    pub fn last_copy_stats(&self) -> BackupCopyStats {
        self.last_stats
    }

    /// Backs up `db`, flushing it first unless
    /// [`BackupEngineOptions::flush_before_backup`] is off. Returns the new
    /// backup's id. On error the backups made before are unchanged and the
    /// partial one is never listed.
    pub fn create_new_backup(&mut self, db: &Db) -> Result<BackupId> {
        let flush = self.opts.flush_before_backup;
        self.create_new_backup_with_flush(db, flush)
    }

    /// [`BackupEngine::create_new_backup`] choosing whether to flush.
    pub fn create_new_backup_with_flush(&mut self, db: &Db, flush: bool) -> Result<BackupId> {
        let id = self
            .backups
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(self.corrupt_max_id())
            .checked_add(1)
            .ok_or_else(|| Error::invalid("backup ids exhausted"))?;
        let cap = db.capture(if flush { 0 } else { u64::MAX })?;
        let mut new_shared = Vec::new();
        let mut stats = BackupCopyStats::default();
        let r = self.write_backup(id, &cap, &mut new_shared, &mut stats);
        drop(cap);
        match r {
            Ok(meta) => {
                self.backups.insert(id, meta);
                self.last_stats = stats;
                Ok(id)
            }
            Err(e) => {
                // Best effort: what is left goes at the next open.
                let fs = self.fs();
                let _ = fs.remove_file(&self.meta_path(id));
                let _ = fs.remove_file(&self.meta_tmp_path(id));
                remove_tree(fs, &self.private_dir(id));
                for rel in new_shared {
                    let _ = fs.remove_file(&self.dir.join(rel));
                }
                Err(e)
            }
        }
    }

    fn corrupt_max_id(&self) -> BackupId {
        self.corrupt
            .iter()
            .filter_map(|(n, _)| n.parse().ok())
            .max()
            .unwrap_or(0)
    }

    fn meta_path(&self, id: BackupId) -> PathBuf {
        self.dir.join("meta").join(id.to_string())
    }

    fn meta_tmp_path(&self, id: BackupId) -> PathBuf {
        self.dir.join("meta").join(format!("{id}.tmp"))
    }

    fn private_dir(&self, id: BackupId) -> PathBuf {
        self.dir.join("private").join(id.to_string())
    }

    /// A shared file of `number`.`ext` with this size already present:
    /// its entry, if its crc matches the source's.
    fn find_shared(&self, number: &str, ext: &str, size: u64) -> Vec<FileEntry> {
        let prefix = format!("shared/{number}_");
        let suffix = format!("_{size}.{ext}");
        let mut seen = HashSet::new();
        self.backups
            .values()
            .flat_map(|m| m.files.iter())
            .filter(|f| f.rel.starts_with(&prefix) && f.rel.ends_with(&suffix) && f.size == size)
            .filter(|f| seen.insert(f.rel.clone()))
            .cloned()
            .collect()
    }

    fn write_backup(
        &self,
        id: BackupId,
        cap: &crate::db::checkpoint::Capture,
        new_shared: &mut Vec<String>,
        stats: &mut BackupCopyStats,
    ) -> Result<BackupMeta> {
        let fs = self.fs();
        let private = self.private_dir(id);
        // Left by an earlier attempt cut short (never listed): start over.
        remove_tree(fs, &private);
        fs.create_dir_all(&private)?;
        let mut rl = RateLimiter::new(self.opts.rate_limit);
        let mut files = Vec::new();
        for f in &cap.files {
            let src = cap.dir.join(&f.name);
            match f.kind {
                CapturedKind::Table | CapturedKind::Blob => {
                    let (number, ext) = f.name.rsplit_once('.').unwrap_or((&f.name, ""));
                    let candidates = self.find_shared(number, ext, f.size);
                    let reuse = if candidates.is_empty() {
                        None
                    } else {
                        // Read (not copied) to tell a same-numbered file of
                        // another database apart.
                        let (_, c) = file_crc(fs, &src)?;
                        candidates
                            .into_iter()
                            .find(|e| e.crc == c && fs.exists(&self.dir.join(&e.rel)))
                    };
                    if let Some(e) = reuse {
                        stats.files_reused += 1;
                        stats.bytes_reused += e.size;
                        files.push(e);
                        continue;
                    }
                    let tmp_rel = format!("shared/{number}_{}.{ext}.tmp", f.size);
                    let tmp = self.dir.join(&tmp_rel);
                    new_shared.push(tmp_rel);
                    let c = copy_with_crc(fs, &src, &tmp, f.size, &mut rl)?;
                    let rel = format!("shared/{number}_{c:08x}_{}.{ext}", f.size);
                    fs.rename(&tmp, &self.dir.join(&rel))?;
                    new_shared.push(rel.clone());
                    stats.files_copied += 1;
                    stats.bytes_copied += f.size;
                    files.push(FileEntry {
                        rel,
                        size: f.size,
                        crc: c,
                    });
                }
                CapturedKind::Wal => {
                    let rel = format!("private/{id}/{}", f.name);
                    let c = copy_with_crc(fs, &src, &self.dir.join(&rel), f.size, &mut rl)?;
                    stats.files_copied += 1;
                    stats.bytes_copied += f.size;
                    files.push(FileEntry {
                        rel,
                        size: f.size,
                        crc: c,
                    });
                }
            }
        }
        for (name, data) in [
            (cap.manifest_name.as_str(), &cap.manifest),
            ("CURRENT", &cap.current),
        ] {
            let rel = format!("private/{id}/{name}");
            let mut w = fs.create(&self.dir.join(&rel))?;
            w.append(data)?;
            w.sync()?;
            stats.files_copied += 1;
            stats.bytes_copied += data.len() as u64;
            files.push(FileEntry {
                rel,
                size: data.len() as u64,
                crc: crc::crc32c(data),
            });
        }
        fs.sync_dir(&private)?;
        fs.sync_dir(&self.dir.join("private"))?;
        fs.sync_dir(&self.dir.join("shared"))?;
        let meta = BackupMeta {
            id,
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            sequence: cap.sequence,
            files,
        };
        // The commit point: the metadata's rename, made durable.
        let tmp = self.meta_tmp_path(id);
        {
            let mut w = fs.create(&tmp)?;
            w.append(&meta.encode())?;
            w.sync()?;
        }
        fs.rename(&tmp, &self.meta_path(id))?;
        fs.sync_dir(&self.dir.join("meta"))?;
        Ok(meta)
    }

    fn meta(&self, id: BackupId) -> Result<&BackupMeta> {
        self.backups
            .get(&id)
            .ok_or_else(|| Error::invalid(format!("backup {id} does not exist")))
    }

    /// Checks every file of backup `id` against its metadata: present,
    /// the recorded size, the recorded crc32c. The error names the first
    /// bad file.
    pub fn verify_backup(&self, id: BackupId) -> Result<()> {
        let m = self.meta(id)?;
        for f in &m.files {
            check_entry(self.fs(), &self.dir.join(&f.rel), f)?;
        }
        Ok(())
    }

    /// Deletes backup `id` and the shared files no other backup needs.
    pub fn delete_backup(&mut self, id: BackupId) -> Result<()> {
        self.meta(id)?;
        let fs = self.opts.fs.clone();
        // Gone once its metadata is: the rest is garbage.
        fs.remove_file(&self.meta_path(id))?;
        fs.sync_dir(&self.dir.join("meta"))?;
        self.backups.remove(&id);
        self.collect_garbage();
        Ok(())
    }

    /// Deletes the oldest backups, keeping the newest `keep`.
    pub fn purge_old_backups(&mut self, keep: usize) -> Result<()> {
        let ids: Vec<BackupId> = self.backups.keys().copied().collect();
        let n = ids.len().saturating_sub(keep);
        for id in ids.into_iter().take(n) {
            self.delete_backup(id)?;
        }
        Ok(())
    }

    /// Restores the newest backup into `db_dir` (see
    /// [`BackupEngine::restore_db_from_backup`]).
    pub fn restore_db_from_latest_backup(&self, db_dir: impl AsRef<Path>) -> Result<()> {
        let id = self
            .backups
            .keys()
            .next_back()
            .copied()
            .ok_or_else(|| Error::invalid("the backup directory holds no backup"))?;
        self.restore_db_from_backup(id, db_dir)
    }

    /// Restores backup `id` into `db_dir`, which must not exist or be
    /// empty. Every file's size and crc32c is checked against the
    /// metadata as it is copied; a mismatch fails the restore naming the
    /// backup file. CURRENT is written last, so a restore cut short never
    /// opens as a database; on error what was written is removed (best
    /// effort). The backup directory is not changed.
    pub fn restore_db_from_backup(&self, id: BackupId, db_dir: impl AsRef<Path>) -> Result<()> {
        let m = self.meta(id)?;
        let db_dir = db_dir.as_ref();
        let fs = self.fs();
        if fs.exists(db_dir) && !fs.list_dir(db_dir).unwrap_or_default().is_empty() {
            return Err(Error::invalid(format!(
                "restore target {} exists and is not empty",
                db_dir.display()
            )));
        }
        // Sizes first: a missing or truncated file fails before any copy.
        for f in &m.files {
            let p = self.dir.join(&f.rel);
            let size = fs.file_size(&p)?;
            if size != f.size {
                return Err(Error::corruption(
                    &p,
                    size.min(f.size),
                    format!(
                        "backup file is {size} bytes, the metadata records {}",
                        f.size
                    ),
                ));
            }
        }
        fs.create_dir_all(db_dir)?;
        let r = self.restore_files(m, db_dir);
        if r.is_err() {
            remove_tree(fs, db_dir);
        }
        r
    }

    fn restore_files(&self, m: &BackupMeta, db_dir: &Path) -> Result<()> {
        let fs = self.fs();
        let mut rl = RateLimiter::new(self.opts.rate_limit);
        let mut current = None;
        for f in &m.files {
            let name = f.db_name()?;
            let src = self.dir.join(&f.rel);
            if name == "CURRENT" {
                current = Some((src, f));
                continue;
            }
            let c = copy_with_crc(fs, &src, &db_dir.join(&name), f.size, &mut rl)?;
            if c != f.crc {
                return Err(crc_mismatch(&src, c, f.crc));
            }
        }
        let (src, f) = current.ok_or_else(|| {
            Error::corruption(
                self.meta_path(m.id),
                0,
                "backup metadata names no CURRENT file",
            )
        })?;
        let data = fs.read_all(&src)?;
        let c = crc::crc32c(&data);
        if c != f.crc || data.len() as u64 != f.size {
            return Err(crc_mismatch(&src, c, f.crc));
        }
        fs.sync_dir(db_dir)?;
        fs.write_atomic(&db_dir.join("CURRENT"), &data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_refuses_a_flipped_byte() -> Result<()> {
        let m = BackupMeta {
            id: 7,
            timestamp: 1_700_000_000,
            sequence: 42,
            files: vec![
                FileEntry {
                    rel: "shared/000012_0badf00d_4096.sst".into(),
                    size: 4096,
                    crc: 0x0bad_f00d,
                },
                FileEntry {
                    rel: "private/7/CURRENT".into(),
                    size: 16,
                    crc: 1,
                },
            ],
        };
        let bytes = m.encode();
        let back = BackupMeta::decode(&bytes, Path::new("meta/7"))?;
        assert_eq!(back.files, m.files);
        assert_eq!(
            (back.id, back.timestamp, back.sequence),
            (7, 1_700_000_000, 42)
        );
        assert_eq!(back.files[0].db_name()?, "000012.sst");
        assert_eq!(back.files[1].db_name()?, "CURRENT");
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert!(BackupMeta::decode(&bad, Path::new("meta/7")).is_err());
        Ok(())
    }
}
