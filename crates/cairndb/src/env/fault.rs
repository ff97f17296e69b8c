//! A fault-injecting file system for tests: wraps another [`Fs`] and makes
//! chosen operations fail.
//!
//! A [`FaultRule`] names an operation, an optional substring of the path, how
//! many matching calls pass before it fires, how many times it fires, and the
//! OS error it returns (EIO, ENOSPC, ...). A `Write` rule can make a *short*
//! write: half the bytes reach the inner file before the error, as a full
//! disk does. Locking: the rule list is behind one mutex taken per call.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, Fs, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

/// An operation that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `Fs::create`.
    Create,
    /// Any read (sequential or positional) and opening for read.
    Read,
    /// `WritableFile::append` / `flush`.
    Write,
    /// `WritableFile::sync`.
    Sync,
    /// `WritableFile::allocate`.
    Allocate,
    /// `Fs::rename`.
    Rename,
    /// `Fs::sync_dir`.
    SyncDir,
    /// `Fs::remove_file`.
    Remove,
}

/// When and how an operation fails.
#[derive(Debug, Clone)]
pub struct FaultRule {
    /// The operation.
    pub op: FaultOp,
    /// Only paths containing this string (None: every path).
    pub path_contains: Option<String>,
    /// Matching calls that succeed before the rule fires.
    pub after: u64,
    /// How many times it fires (None: forever).
    pub times: Option<u64>,
    /// The raw OS error returned (libc::EIO, libc::ENOSPC, ...).
    pub errno: i32,
    /// For `Write`: let half of the bytes through before failing.
    pub short_write: bool,
}

impl FaultRule {
    /// A rule that fails `op` on every matching path forever with `errno`.
    pub fn new(op: FaultOp, errno: i32) -> Self {
        FaultRule {
            op,
            path_contains: None,
            after: 0,
            times: None,
            errno,
            short_write: false,
        }
    }
    /// Restricts the rule to paths containing `s`.
    pub fn on_path(mut self, s: &str) -> Self {
        self.path_contains = Some(s.to_string());
        self
    }
    /// Lets `n` matching calls through first.
    pub fn after(mut self, n: u64) -> Self {
        self.after = n;
        self
    }
    /// Fires at most `n` times.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }
    /// Makes a write short (half the bytes land).
    pub fn short(mut self) -> Self {
        self.short_write = true;
        self
    }
}

struct RuleState {
    rule: FaultRule,
    seen: u64,
    fired: u64,
}

#[derive(Default)]
struct Shared {
    rules: Mutex<Vec<RuleState>>,
    injected: AtomicU64,
}

impl Shared {
    /// Returns the matching rule's error and short-write flag if one fires.
    fn check(&self, op: FaultOp, path: &Path) -> Option<(std::io::Error, bool)> {
        let mut rules = self.rules.lock();
        let p = path.to_string_lossy();
        for st in rules.iter_mut() {
            if st.rule.op != op {
                continue;
            }
            if let Some(s) = &st.rule.path_contains {
                if !p.contains(s.as_str()) {
                    continue;
                }
            }
            st.seen += 1;
            if st.seen <= st.rule.after {
                continue;
            }
            if let Some(t) = st.rule.times {
                if st.fired >= t {
                    continue;
                }
            }
            st.fired += 1;
            self.injected.fetch_add(1, Ordering::Relaxed);
            return Some((
                std::io::Error::from_raw_os_error(st.rule.errno),
                st.rule.short_write,
            ));
        }
        None
    }
}

/// Wraps an `Fs` and injects failures.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn Fs>,
    shared: Arc<Shared>,
}

impl FaultFs {
    /// Wraps `inner` with no rules.
    pub fn new(inner: Arc<dyn Fs>) -> Self {
        FaultFs {
            inner,
            shared: Arc::default(),
        }
    }
    /// Adds a rule.
    pub fn inject(&self, rule: FaultRule) {
        self.shared.rules.lock().push(RuleState {
            rule,
            seen: 0,
            fired: 0,
        });
    }
    /// Removes every rule (the fault "clears").
    pub fn clear(&self) {
        self.shared.rules.lock().clear();
    }
    /// How many faults have fired so far.
    pub fn injected(&self) -> u64 {
        self.shared.injected.load(Ordering::Relaxed)
    }
    fn fail(&self, op: FaultOp, what: &'static str, path: &Path) -> Result<()> {
        match self.shared.check(op, path) {
            Some((e, _)) => Err(Error::io(what, path, e)),
            None => Ok(()),
        }
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    shared: Arc<Shared>,
    path: PathBuf,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Some((e, short)) = self.shared.check(FaultOp::Write, &self.path) {
            if short {
                self.inner.append(&data[..data.len() / 2])?;
                self.inner.flush()?;
            }
            return Err(Error::io("write", &self.path, e));
        }
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Write, &self.path) {
            return Err(Error::io("write", &self.path, e));
        }
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Sync, &self.path) {
            return Err(Error::io("fdatasync", &self.path, e));
        }
        self.inner.sync()
    }
    fn write_behind(&mut self, every: u64) {
        self.inner.write_behind(every)
    }
    fn seal(&mut self) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Write, &self.path) {
            return Err(Error::io("truncate", &self.path, e));
        }
        self.inner.seal()
    }
    fn allocate(&mut self, len: u64) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Allocate, &self.path) {
            return Err(Error::io("fallocate", &self.path, e));
        }
        self.inner.allocate(len)
    }
    fn fill_zeros(&mut self, upto: u64) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Write, &self.path) {
            return Err(Error::io("write zeros", &self.path, e));
        }
        if let Some((e, _)) = self.shared.check(FaultOp::Sync, &self.path) {
            return Err(Error::io("fdatasync", &self.path, e));
        }
        self.inner.fill_zeros(upto)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

struct FaultSequential {
    inner: Box<dyn SequentialFile>,
    shared: Arc<Shared>,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        if let Some((e, _)) = self.shared.check(FaultOp::Read, self.inner.path()) {
            return Err(Error::io("read", self.inner.path(), e));
        }
        self.inner.read(buf)
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    shared: Arc<Shared>,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if let Some((e, _)) = self.shared.check(FaultOp::Read, self.inner.path()) {
            return Err(Error::io("pread", self.inner.path(), e));
        }
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.fail(FaultOp::Create, "create", path)?;
        Ok(Box::new(FaultWritable {
            inner: self.inner.create(path)?,
            shared: self.shared.clone(),
            path: path.to_path_buf(),
        }))
    }
    fn reuse_writable(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.fail(FaultOp::Rename, "rename", old)?;
        self.fail(FaultOp::Create, "open for reuse", new)?;
        Ok(Box::new(FaultWritable {
            inner: self.inner.reuse_writable(old, new)?,
            shared: self.shared.clone(),
            path: new.to_path_buf(),
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.fail(FaultOp::Read, "open", path)?;
        Ok(Box::new(FaultSequential {
            inner: self.inner.open_sequential(path)?,
            shared: self.shared.clone(),
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.fail(FaultOp::Read, "open", path)?;
        Ok(Arc::new(FaultRandom {
            inner: self.inner.open_random(path)?,
            shared: self.shared.clone(),
        }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.fail(FaultOp::Remove, "unlink", path)?;
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.fail(FaultOp::Rename, "rename", from)?;
        self.inner.rename(from, to)
    }
    fn remove_dir(&self, path: &Path) -> Result<()> {
        self.fail(FaultOp::Remove, "rmdir", path)?;
        self.inner.remove_dir(path)
    }
    fn link_file(&self, src: &Path, dst: &Path) -> Result<()> {
        // A copy through this file system, so that its reads, writes and
        // sync can fail too.
        self.fail(FaultOp::Create, "link", dst)?;
        super::copy_file(self, src, dst, None).map(|_| ())
    }
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> Result<()> {
        self.fail(FaultOp::SyncDir, "fsync dir", path)?;
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::mem::MemFs;

    #[test]
    fn rule_fires_after_n_and_times() {
        let mem = MemFs::new();
        let fs = FaultFs::new(Arc::new(mem.clone()));
        fs.inject(
            FaultRule::new(FaultOp::Write, libc::ENOSPC)
                .on_path(".log")
                .after(1)
                .times(1),
        );
        let mut f = fs.create(Path::new("/x.log")).unwrap();
        f.append(b"a").unwrap();
        let e = f.append(b"b").unwrap_err();
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull));
        f.append(b"c").unwrap();
        assert_eq!(mem.contents(Path::new("/x.log")).unwrap(), b"ac");
        assert_eq!(fs.injected(), 1);
        // Other paths are untouched.
        let mut g = fs.create(Path::new("/y.sst")).unwrap();
        g.append(b"ok").unwrap();
    }

    #[test]
    fn short_write_lands_half() {
        let mem = MemFs::new();
        let fs = FaultFs::new(Arc::new(mem.clone()));
        fs.inject(FaultRule::new(FaultOp::Write, libc::EIO).short().times(1));
        let mut f = fs.create(Path::new("/z")).unwrap();
        assert!(f.append(b"abcdef").is_err());
        assert_eq!(mem.contents(Path::new("/z")).unwrap(), b"abc");
        fs.clear();
        f.append(b"g").unwrap();
    }
}
