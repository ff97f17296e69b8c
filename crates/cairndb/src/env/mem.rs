//! An in-memory file system that also models a power loss.
//!
//! Each file keeps its bytes and the image that was last synced; each
//! directory keeps the set of names that was last made durable by
//! `sync_dir`. [`MemFs::power_loss`] throws away everything not synced:
//! every byte written (appended or overwritten) since the file's last sync,
//! and names created, renamed or removed
//! since their directory was last synced. [`MemFs::process_crash`] keeps
//! everything the OS was handed (nothing is lost but unflushed user buffers,
//! which this file system does not have).
//!
//! Locking: one mutex over the namespace, one per file's contents; neither is
//! held while calling out.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, FileSync, Fs, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

#[derive(Default)]
struct FileData {
    bytes: Vec<u8>,
    /// The bytes as of the last sync. Invariant: equal to `bytes` below
    /// `dirty_from`.
    durable: Vec<u8>,
    dirty_from: usize,
    /// The last [`WritableFile::write_behind`] hint a writer of this file
    /// was given (a memory file has no write-back; kept for tests).
    write_behind: Option<u64>,
}

impl FileData {
    fn write_at(&mut self, pos: usize, data: &[u8]) {
        let end = pos + data.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[pos..end].copy_from_slice(data);
        self.dirty_from = self.dirty_from.min(pos);
    }

    fn sync(&mut self) {
        let from = self.dirty_from.min(self.durable.len());
        self.durable.truncate(from);
        self.durable.extend_from_slice(&self.bytes[from..]);
        self.dirty_from = self.bytes.len();
    }
}

type FileRef = Arc<Mutex<FileData>>;

#[derive(Default)]
struct Namespace {
    /// What a running process sees.
    live: BTreeMap<PathBuf, FileRef>,
    /// What survives a power loss: per name, the file as of the last sync of
    /// its directory.
    durable: BTreeMap<PathBuf, FileRef>,
    dirs: HashSet<PathBuf>,
    locks: HashSet<PathBuf>,
}

/// The in-memory file system. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct MemFs {
    ns: Arc<Mutex<Namespace>>,
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last [`WritableFile::write_behind`] hint given to a writer of
    /// `path`, if any.
    pub fn write_behind_hint(&self, path: &Path) -> Option<u64> {
        self.ns.lock().live.get(path)?.lock().write_behind
    }

    /// Simulates a power loss: unsynced bytes and unsynced directory changes
    /// vanish. Locks are released (the process is gone).
    pub fn power_loss(&self) {
        let mut ns = self.ns.lock();
        ns.live = ns.durable.clone();
        for f in ns.live.values() {
            let mut d = f.lock();
            d.bytes = d.durable.clone();
            d.dirty_from = d.bytes.len();
        }
        ns.locks.clear();
    }

    /// What a power loss at this instant would leave, as a separate file
    /// system, while this one keeps running: the durable names, each file as
    /// of its last sync. Taken atomically (every file is locked while
    /// the image is copied), so a test can "pull the plug" in the middle of
    /// a background flush or compaction without stopping it.
    pub fn power_loss_image(&self) -> MemFs {
        let ns = self.ns.lock();
        let mut files: Vec<&FileRef> = ns.durable.values().collect();
        files.sort_by_key(|f| Arc::as_ptr(f) as usize);
        files.dedup_by_key(|f| Arc::as_ptr(f) as usize);
        let guards: Vec<_> = files.iter().map(|f| (Arc::as_ptr(f), f.lock())).collect();
        let mut out = Namespace::default();
        for (path, f) in &ns.durable {
            let d = guards
                .iter()
                .find(|(p, _)| *p == Arc::as_ptr(f))
                .map(|(_, g)| g)
                .expect("every durable file is locked");
            let copy: FileRef = Arc::new(Mutex::new(FileData {
                bytes: d.durable.clone(),
                durable: d.durable.clone(),
                dirty_from: d.durable.len(),
                write_behind: d.write_behind,
            }));
            out.live.insert(path.clone(), copy.clone());
            out.durable.insert(path.clone(), copy);
        }
        out.dirs = ns.dirs.clone();
        drop(guards);
        MemFs {
            ns: Arc::new(Mutex::new(out)),
        }
    }

    /// Simulates a process crash: all data handed to the OS survives; locks
    /// are released.
    pub fn process_crash(&self) {
        self.ns.lock().locks.clear();
    }

    /// A copy of a file's current bytes (for tests that corrupt files).
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.ns
            .lock()
            .live
            .get(path)
            .map(|f| f.lock().bytes.clone())
    }

    /// Replaces a file's bytes as if they had been written and synced.
    pub fn set_contents(&self, path: &Path, bytes: Vec<u8>) {
        let mut ns = self.ns.lock();
        let f = ns.live.entry(path.to_path_buf()).or_default().clone();
        let mut d = f.lock();
        d.dirty_from = bytes.len();
        d.durable = bytes.clone();
        d.bytes = bytes;
    }

    fn get(&self, path: &Path, op: &'static str) -> Result<FileRef> {
        self.ns.lock().live.get(path).cloned().ok_or_else(|| {
            Error::io(
                op,
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            )
        })
    }
}

struct MemWritable {
    file: FileRef,
    path: PathBuf,
    /// Where the next append lands (0 for a reused file).
    pos: usize,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.lock().write_at(self.pos, data);
        self.pos += data.len();
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        self.file.lock().sync();
        Ok(())
    }
    fn seal(&mut self) -> Result<()> {
        let mut f = self.file.lock();
        if f.bytes.len() > self.pos {
            // Durable at the next sync, as a truncation is.
            f.bytes.truncate(self.pos);
            f.dirty_from = f.dirty_from.min(self.pos);
        }
        Ok(())
    }
    fn write_behind(&mut self, every: u64) {
        self.file.lock().write_behind = Some(every);
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        // Appends land in the shared file at once, as they reach a real
        // file's page cache: a sync from elsewhere covers them.
        Some(Arc::new(MemFileSync(self.file.clone())))
    }
    fn len(&self) -> u64 {
        self.pos as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// [`WritableFile::sync_handle`] of a [`MemWritable`]: the shared file.
struct MemFileSync(FileRef);

impl FileSync for MemFileSync {
    fn sync_data(&self) -> Result<()> {
        self.0.lock().sync();
        Ok(())
    }
}

struct MemSequential {
    file: FileRef,
    path: PathBuf,
    pos: usize,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let d = self.file.lock();
        let avail = d.bytes.len().saturating_sub(self.pos);
        let n = avail.min(buf.len());
        buf[..n].copy_from_slice(&d.bytes[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

struct MemRandom {
    file: FileRef,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let d = self.file.lock();
        let end = offset.checked_add(buf.len() as u64);
        match end {
            Some(end) if end <= d.bytes.len() as u64 => {
                buf.copy_from_slice(&d.bytes[offset as usize..end as usize]);
                Ok(())
            }
            _ => Err(Error::corruption(
                &self.path,
                offset,
                format!(
                    "read of {} bytes past end of file (size {})",
                    buf.len(),
                    d.bytes.len()
                ),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

struct MemLock {
    ns: Arc<Mutex<Namespace>>,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.ns.lock().locks.remove(&self.path);
    }
}

impl Fs for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file: FileRef = Arc::default();
        self.ns.lock().live.insert(path.to_path_buf(), file.clone());
        Ok(Box::new(MemWritable {
            file,
            path: path.to_path_buf(),
            pos: 0,
        }))
    }

    fn reuse_writable(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.rename(old, new)?;
        Ok(Box::new(MemWritable {
            file: self.get(new, "open for reuse")?,
            path: new.to_path_buf(),
            pos: 0,
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSequential {
            file: self.get(path, "open")?,
            path: path.to_path_buf(),
            pos: 0,
        }))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = self.get(path, "open")?;
        let size = file.lock().bytes.len() as u64;
        Ok(Arc::new(MemRandom {
            file,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        let ns = self.ns.lock();
        ns.live.contains_key(path) || ns.dirs.contains(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.get(path, "stat")?.lock().bytes.len() as u64)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        match self.ns.lock().live.remove(path) {
            Some(_) => Ok(()),
            None => Err(Error::io(
                "unlink",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            )),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut ns = self.ns.lock();
        match ns.live.remove(from) {
            Some(f) => {
                ns.live.insert(to.to_path_buf(), f);
                Ok(())
            }
            None => Err(Error::io(
                "rename",
                from,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            )),
        }
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        let mut ns = self.ns.lock();
        if ns.live.keys().any(|p| p.parent() == Some(path)) {
            return Err(Error::io(
                "rmdir",
                path,
                std::io::Error::other("directory not empty"),
            ));
        }
        ns.dirs.remove(path);
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut ns = self.ns.lock();
        let mut p = Some(path);
        while let Some(d) = p {
            ns.dirs.insert(d.to_path_buf());
            p = d.parent();
        }
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let ns = self.ns.lock();
        if !ns.dirs.contains(path) {
            return Err(Error::io(
                "readdir",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
            ));
        }
        // Files and subdirectories, as `readdir` lists them.
        Ok(ns
            .live
            .keys()
            .chain(ns.dirs.iter())
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect())
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let mut ns = self.ns.lock();
        let ns = &mut *ns;
        ns.durable.retain(|p, _| p.parent() != Some(path));
        for (p, f) in ns.live.iter() {
            if p.parent() == Some(path) {
                ns.durable.insert(p.clone(), f.clone());
            }
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut ns = self.ns.lock();
        if !ns.locks.insert(path.to_path_buf()) {
            return Err(Error::LockFileHeld {
                path: path.to_path_buf(),
            });
        }
        ns.live.entry(path.to_path_buf()).or_default();
        Ok(Box::new(MemLock {
            ns: self.ns.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_loss_drops_unsynced_bytes_and_names() {
        let fs = MemFs::new();
        let d = Path::new("/db");
        fs.create_dir_all(d).unwrap();
        let a = d.join("a");
        let mut f = fs.create(&a).unwrap();
        f.append(b"synced").unwrap();
        f.sync().unwrap();
        fs.sync_dir(d).unwrap();
        f.append(b"-lost").unwrap();
        let mut g = fs.create(&d.join("b")).unwrap();
        g.append(b"x").unwrap();
        g.sync().unwrap(); // data synced, but the name never was
        drop((f, g));
        fs.power_loss();
        assert_eq!(fs.contents(&a).unwrap(), b"synced");
        assert!(!fs.exists(&d.join("b")));
    }

    #[test]
    fn power_loss_restores_overwritten_bytes_of_a_reused_file() {
        let fs = MemFs::new();
        let d = Path::new("/db");
        fs.create_dir_all(d).unwrap();
        let mut f = fs.create(&d.join("1.log")).unwrap();
        f.append(b"old-old-old").unwrap();
        f.sync().unwrap();
        drop(f);
        let mut g = fs
            .reuse_writable(&d.join("1.log"), &d.join("2.log"))
            .unwrap();
        fs.sync_dir(d).unwrap();
        g.append(b"NEW").unwrap();
        g.sync().unwrap();
        assert_eq!(g.len(), 3);
        g.append(b"XX").unwrap(); // never synced
        assert_eq!(fs.contents(&d.join("2.log")).unwrap(), b"NEWXXld-old");
        fs.power_loss();
        assert_eq!(fs.contents(&d.join("2.log")).unwrap(), b"NEW-old-old");
    }

    #[test]
    fn rename_durable_only_after_dir_sync() {
        let fs = MemFs::new();
        let d = Path::new("/db");
        fs.create_dir_all(d).unwrap();
        fs.write_atomic(&d.join("CURRENT"), b"one").unwrap();
        let mut f = fs.create(&d.join("tmp")).unwrap();
        f.append(b"two").unwrap();
        f.sync().unwrap();
        fs.rename(&d.join("tmp"), &d.join("CURRENT")).unwrap();
        fs.power_loss();
        assert_eq!(fs.contents(&d.join("CURRENT")).unwrap(), b"one");
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let fs = MemFs::new();
        let p = Path::new("/db/LOCK");
        let l = fs.lock(p).unwrap();
        assert!(matches!(fs.lock(p), Err(Error::LockFileHeld { .. })));
        drop(l);
        fs.lock(p).unwrap();
    }

    #[test]
    fn list_dir_shows_subdirectories_and_remove_dir_wants_them_empty() -> Result<()> {
        let fs = MemFs::new();
        let sub = Path::new("/bk/private/1");
        fs.create_dir_all(sub)?;
        let mut f = fs.create(&sub.join("CURRENT"))?;
        f.append(b"x")?;
        drop(f);
        assert_eq!(
            fs.list_dir(Path::new("/bk/private"))?,
            vec!["1".to_string()]
        );
        assert!(fs.remove_dir(sub).is_err());
        fs.remove_file(&sub.join("CURRENT"))?;
        fs.remove_dir(sub)?;
        assert!(!fs.exists(sub));
        assert!(fs.list_dir(Path::new("/bk/private"))?.is_empty());
        // The default link is a copy.
        let d = Path::new("/db");
        fs.create_dir_all(d)?;
        let mut f = fs.create(&d.join("a"))?;
        f.append(b"bytes")?;
        drop(f);
        fs.link_file(&d.join("a"), &d.join("b"))?;
        assert_eq!(fs.read_all(&d.join("b"))?, b"bytes".to_vec());
        Ok(())
    }
}
