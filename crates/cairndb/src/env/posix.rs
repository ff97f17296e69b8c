//! The POSIX file system: buffered appends, `pread` for random reads,
//! `fdatasync` for durability, an `fcntl` record lock for the database lock.
//!
//! `PosixWritable` keeps a user-space buffer so that the many small appends of
//! a table builder become large `write` calls; `flush` and `sync` drain it.
//! Locking: none inside; a `PosixRandom` is shared by readers and `pread`
//! needs no lock. Process-wide, a set of locked paths makes a second `lock`
//! from the same process fail too (a process's own record locks never
//! conflict with each other). The record lock, unlike `flock`, is not
//! inherited by a child forked while the database is open, so a child that
//! outlives `close` cannot keep the database locked.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::{FileLock, FileSync, Fs, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

const WRITE_BUFFER: usize = 256 << 10;

/// The real file system.
#[derive(Debug, Default)]
pub struct PosixFs;

impl PosixFs {
    /// A shared handle, the default `Options::fs`.
    pub fn shared() -> Arc<dyn Fs> {
        static FS: OnceLock<Arc<PosixFs>> = OnceLock::new();
        FS.get_or_init(|| Arc::new(PosixFs)).clone()
    }
}

struct PosixWritable {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
    /// Bytes on disk (written through `write`), <= len.
    written: u64,
    allocated: u64,
    /// The file's size on disk: `written`, or more when the file was reused
    /// or zero-filled ahead.
    physical: u64,
    /// Start the device's write-back every this many bytes written (0: off;
    /// [`WritableFile::write_behind`]).
    write_behind: u64,
    /// Where the next write-back starts: bytes below it were handed to it.
    behind_from: u64,
}

impl PosixWritable {
    /// A writer appending at offset 0 of `file`, whose first `existing`
    /// bytes are already written (a reused file; 0 for a new one).
    fn new(file: File, path: &Path, existing: u64) -> PosixWritable {
        PosixWritable {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
            len: 0,
            written: 0,
            // Already written blocks need no reservation.
            allocated: existing,
            physical: existing,
            write_behind: 0,
            behind_from: existing,
        }
    }

    /// Starts the device's write-back of the bytes written since the last
    /// start, once they reach `write_behind` (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`: it queues the pages and does not wait for
    /// them). Its errors are not lost by ignoring them here: a write-back
    /// that fails marks the file, and the `fdatasync` that makes the file
    /// durable reports it.
    fn start_write_behind(&mut self) {
        if self.write_behind == 0 || self.written < self.behind_from + self.write_behind {
            return;
        }
        let fd = self.file.as_raw_fd();
        // SAFETY: `fd` is a valid open descriptor owned by `self.file` for
        // the duration of the call; sync_file_range reads no memory of ours.
        let _ = unsafe {
            libc::sync_file_range(
                fd,
                self.behind_from as libc::off64_t,
                (self.written - self.behind_from) as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        self.behind_from = self.written;
    }

    fn drain(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| Error::io("write", &self.path, e))?;
            self.written += self.buf.len() as u64;
            self.physical = self.physical.max(self.written);
            self.buf.clear();
            self.start_write_behind();
        }
        Ok(())
    }
}

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.drain()?;
            if data.len() >= WRITE_BUFFER {
                self.file
                    .write_all(data)
                    .map_err(|e| Error::io("write", &self.path, e))?;
                self.written += data.len() as u64;
                self.physical = self.physical.max(self.written);
                self.start_write_behind();
                return Ok(());
            }
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.drain()
    }

    fn seal(&mut self) -> Result<()> {
        self.drain()?;
        if self.physical > self.len {
            truncate(&self.file, &self.path, self.len)?;
            self.physical = self.len;
            self.allocated = self.allocated.min(self.len);
        }
        Ok(())
    }

    fn write_behind(&mut self, every: u64) {
        self.write_behind = every;
    }

    fn sync(&mut self) -> Result<()> {
        self.drain()?;
        // fdatasync also persists a size change, so appends past the
        // preallocated region stay durable (only slower).
        fdatasync(&self.file, &self.path)
    }

    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        // Covers what `flush` has handed to the OS, not `buf`.
        sync_handle_of(&self.file, &self.path)
    }

    fn fill_zeros(&mut self, upto: u64) -> Result<()> {
        // `len` counts buffered bytes too: those are written at their own
        // offsets later.
        if zero_fill_ahead(&self.file, &self.path, &mut self.physical, self.len, upto)? {
            self.allocated = self.allocated.max(upto);
        }
        Ok(())
    }

    fn allocate(&mut self, len: u64) -> Result<()> {
        let fd = self.file.as_raw_fd();
        // FALLOC_FL_KEEP_SIZE: reserve blocks without changing the file size,
        // so readers and recovery still see the logical end.
        // SAFETY: `fd` is a valid open descriptor owned by `self.file` for the
        // duration of the call; fallocate reads no memory of ours.
        let rc = unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_KEEP_SIZE,
                self.len as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            // Not every file system supports it: then it is only a hint.
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                return Ok(());
            }
            return Err(Error::io("fallocate", &self.path, e));
        }
        self.allocated = self.allocated.max(self.len + len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PosixWritable {
    fn drop(&mut self) {
        // Best effort: a file dropped without flush still hands its bytes to
        // the OS, as a process exit would not. Errors here have no caller.
        let _ = self.drain();
    }
}

/// Bytes of a log file mapped at a time, and the step in which the file
/// is extended (with `fallocate`, so that a write through the map never
/// meets a hole it cannot fill).
const LOG_WINDOW: u64 = 4 << 20;

/// Appends of at least this many bytes go to a mapped log with `pwrite`
/// rather than through the map. Copying through the map costs a page
/// fault (about 3 µs on the reference machine, more on a fresh file) for
/// each page the copy first touches, a `pwrite` one system call
/// (about 0.9 µs) plus its copy: for 116-byte records the map is 4x
/// cheaper, from 2 KiB on `pwrite` is, and at 4 KiB it takes half the
/// time (docs/bench/engine.md, "Where the time goes").
const MAPPED_LOG_PWRITE_MIN: usize = 2 << 10;

/// A log file written through a shared map of a window of the file
/// (`Fs::create_log`). Invariants: the file's size is at least `reserved`,
/// every byte of `[0, reserved)` is allocated on disk (fallocated or
/// written), and `len <= reserved`; `map`, when present, covers
/// `[win_start, win_start + LOG_WINDOW)`, inside `reserved`. A write into
/// the map therefore never faults for lack of space (a full disk fails the
/// `fallocate` in `reserve`, before any byte of the append is copied).
struct PosixMappedLog {
    file: File,
    path: PathBuf,
    map: Option<memmap2::MmapMut>,
    win_start: u64,
    len: u64,
    /// Bytes of the file known to be allocated (and inside its size).
    reserved: u64,
    /// Bytes of the file known to be written on disk (not unwritten
    /// extents): records synced so far, zeros from `fill_zeros`, or the
    /// old contents of a reused file.
    physical: u64,
}

impl PosixMappedLog {
    /// Opens the writer over `file`, or gives the file back when its file
    /// system cannot reserve space (`fallocate` unsupported): the caller
    /// then writes it with `write`.
    fn new(file: File, path: &Path, size: u64) -> Result<std::result::Result<Self, File>> {
        let mut w = PosixMappedLog {
            file,
            path: path.to_path_buf(),
            map: None,
            win_start: 0,
            len: 0,
            reserved: size,
            physical: size,
        };
        // Past the current size, so that a file system without fallocate
        // is found out now rather than on a later append.
        match w.reserve((size + 1).max(LOG_WINDOW)) {
            Ok(()) => Ok(Ok(w)),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(Err(w.file)),
            Err(e) => Err(Error::io("fallocate", &w.path, e)),
        }
    }

    /// Makes `[0, end)` allocated and inside the file's size, in
    /// `LOG_WINDOW` steps.
    fn reserve(&mut self, end: u64) -> std::io::Result<()> {
        if end <= self.reserved {
            return Ok(());
        }
        let target = end.div_ceil(LOG_WINDOW) * LOG_WINDOW;
        // Mode 0: allocate and extend the size, so the map may cover it.
        // SAFETY: the descriptor is owned by `self.file` and open for the
        // call; fallocate reads no memory of ours.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                0,
                self.reserved as libc::off_t,
                (target - self.reserved) as libc::off_t,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.reserved = target;
        Ok(())
    }

    /// Appends `data` with one `pwrite` at `len` instead of a copy through
    /// the map. The page cache backs both: the bytes are where a store
    /// through the map would have put them.
    fn pwrite_append(&mut self, data: &[u8]) -> Result<()> {
        self.reserve_for_append(self.len + data.len() as u64)?;
        self.file
            .write_all_at(data, self.len)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    /// `reserve` for an append ending at `end`, its error the engine's.
    fn reserve_for_append(&mut self, end: u64) -> Result<()> {
        self.reserve(end)
            .map_err(|e| Error::io("fallocate", &self.path, e))
    }

    /// The mapped bytes from `len` to the end of its window, mapping the
    /// next window first when `len` has reached the current one's end
    /// (`len < reserved`).
    fn window_tail(&mut self) -> Result<&mut [u8]> {
        if self.map.is_none() || self.len >= self.win_start + LOG_WINDOW {
            let start = self.len / LOG_WINDOW * LOG_WINDOW;
            self.map = None;
            // SAFETY: a shared, writable map of `[start, start + LOG_WINDOW)`,
            // which lies inside the file (`reserve` extended it to a multiple
            // of LOG_WINDOW past `len`) and is allocated, so stores into it
            // cannot fault. Only this writer writes the file while it is open
            // (the database directory is locked); nothing truncates it.
            // Exercised by `env::posix::tests::mapped_log_*` and every
            // database test on the POSIX file system.
            let map = unsafe {
                memmap2::MmapOptions::new()
                    .offset(start)
                    .len(LOG_WINDOW as usize)
                    .map_mut(&self.file)
            }
            .map_err(|e| Error::io("mmap", &self.path, e))?;
            self.map = Some(map);
            self.win_start = start;
        }
        let off = (self.len - self.win_start) as usize;
        self.map
            .as_mut()
            .and_then(|m| m.get_mut(off..))
            .ok_or_else(|| Error::invalid("log map does not cover the append offset"))
    }
}

impl WritableFile for PosixMappedLog {
    fn append_synced(&mut self, data: &[u8]) -> Result<()> {
        self.pwrite_append(data)
    }

    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if data.len() >= MAPPED_LOG_PWRITE_MIN {
            // One `pwrite` beats a copy through the map here: the map
            // takes a fault per page it touches, a `pwrite` one call.
            return self.pwrite_append(data);
        }
        self.reserve_for_append(self.len + data.len() as u64)?;
        while !data.is_empty() {
            let tail = self.window_tail()?;
            let n = tail.len().min(data.len());
            let (head, rest) = data.split_at(n);
            if let Some(dst) = tail.get_mut(..n) {
                dst.copy_from_slice(head);
            }
            data = rest;
            self.len += n as u64;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // The bytes are in the page cache already: a process crash keeps them.
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // Dirty pages of a shared map belong to the file's page cache;
        // fdatasync writes them back like pages dirtied by `write`.
        fdatasync(&self.file, &self.path)?;
        self.physical = self.physical.max(self.len);
        Ok(())
    }

    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        sync_handle_of(&self.file, &self.path)
    }

    fn seal(&mut self) -> Result<()> {
        // Unmapped first: the window may reach past the new end, and a
        // store there would fault (SIGBUS) once the file is cut.
        self.map = None;
        truncate(&self.file, &self.path, self.len)?;
        self.reserved = self.len;
        self.physical = self.physical.min(self.len);
        Ok(())
    }

    fn fill_zeros(&mut self, upto: u64) -> Result<()> {
        // The same page-cache pages back the map, so the map sees them.
        if zero_fill_ahead(&self.file, &self.path, &mut self.physical, self.len, upto)? {
            self.reserved = self.reserved.max(upto);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Creates (or truncates) `path` for writing, and for reading too when
/// `read` (a file that will be mapped).
fn open_for_create(path: &Path, read: bool) -> Result<File> {
    OpenOptions::new()
        .read(read)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::io("create", path, e))
}

/// Renames `old` to `new` and opens it for writing without truncating
/// (readable too when `read`); returns the file and its size.
fn rename_for_reuse(old: &Path, new: &Path, read: bool) -> Result<(File, u64)> {
    std::fs::rename(old, new).map_err(|e| Error::io("rename", old, e))?;
    let file = OpenOptions::new()
        .read(read)
        .write(true)
        .truncate(false)
        .open(new)
        .map_err(|e| Error::io("open for reuse", new, e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("stat", new, e))?
        .len();
    Ok((file, size))
}

/// Writes zeros over `[from, upto)` of `file` and syncs it: written blocks
/// (not unwritten extents), so later syncs of records inside them change no
/// metadata (docs/format/wal.md, "Zero-filled space").
fn write_zeros_synced(file: &File, path: &Path, mut from: u64, upto: u64) -> Result<()> {
    let zeros = [0u8; 64 << 10];
    while from < upto {
        let n = ((upto - from) as usize).min(zeros.len());
        file.write_all_at(&zeros[..n], from)
            .map_err(|e| Error::io("write zeros", path, e))?;
        from += n as u64;
    }
    fdatasync(file, path)
}

/// `fdatasync` of `file`, its error naming `path`.
/// A second descriptor of a log file, synced from the WAL syncer thread
/// while the writer appends through the first (`WritableFile::sync_handle`).
/// fdatasync acts on the file, not the descriptor: it writes back every
/// dirty page of the file, those dirtied through a map included.
struct PosixFileSync {
    file: File,
    path: PathBuf,
}

impl FileSync for PosixFileSync {
    fn sync_data(&self) -> Result<()> {
        fdatasync(&self.file, &self.path)
    }
}

/// A [`PosixFileSync`] over a duplicate of `file`'s descriptor; `None` if
/// the descriptor cannot be duplicated (the caller syncs through the
/// writer instead).
fn sync_handle_of(file: &File, path: &Path) -> Option<Arc<dyn FileSync>> {
    let file = file.try_clone().ok()?;
    Some(Arc::new(PosixFileSync {
        file,
        path: path.to_path_buf(),
    }))
}

fn fdatasync(file: &File, path: &Path) -> Result<()> {
    file.sync_data()
        .map_err(|e| Error::io("fdatasync", path, e))
}

/// Cuts `file` (or extends it with zeros) to `len` bytes
/// (`WritableFile::seal`).
fn truncate(file: &File, path: &Path, len: u64) -> Result<()> {
    file.set_len(len)
        .map_err(|e| Error::io("truncate", path, e))
}

/// `WritableFile::fill_zeros` for a writer whose file holds written bytes
/// up to `physical` and whose appends reach `len`: writes and syncs zeros
/// from the larger of the two up to `upto` and advances `physical`. False
/// (nothing written) when that range is empty.
fn zero_fill_ahead(
    file: &File,
    path: &Path,
    physical: &mut u64,
    len: u64,
    upto: u64,
) -> Result<bool> {
    let at = (*physical).max(len);
    if upto <= at {
        return Ok(false);
    }
    write_zeros_synced(file, path, at, upto)?;
    *physical = upto;
    Ok(true)
}

struct PosixSequential {
    file: File,
    path: PathBuf,
}

impl SequentialFile for PosixSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", &self.path, e)),
            }
        }
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

struct PosixRandom {
    file: File,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for PosixRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        match self.file.read_exact_at(buf, offset) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Error::corruption(
                &self.path,
                offset,
                format!(
                    "read of {} bytes past end of file (size {})",
                    buf.len(),
                    self.size
                ),
            )),
            Err(e) => Err(Error::io("pread", &self.path, e)),
        }
    }
    fn read_vec_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        // Block reads are the hot path of every cache miss: no memset of a
        // buffer that pread overwrites anyway.
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            // SAFETY: the destination is `len - done` bytes of the vector's
            // spare capacity starting at `done` (capacity is `len`); pread
            // writes at most that many bytes there and reads nothing from
            // it. The fd stays open for the call (`self.file` is borrowed).
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    buf.as_mut_ptr().add(done) as *mut libc::c_void,
                    len - done,
                    at as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::io("pread", &self.path, e));
            }
            if n == 0 {
                return Err(Error::corruption(
                    &self.path,
                    offset,
                    format!("read of {len} bytes past end of file (size {})", self.size),
                ));
            }
            done += n as usize;
        }
        // SAFETY: the loop above initialised all `len` bytes.
        unsafe { buf.set_len(len) };
        Ok(buf)
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn maps_natively(&self) -> bool {
        true
    }
    fn map_all(&self, read_ahead: bool) -> Result<super::FileBytes> {
        if self.size == 0 {
            return Ok(Arc::new(Vec::new()));
        }
        // SAFETY: the mapping is read-only and covers the file as it was when
        // opened. Files mapped this way are finished tables: the engine never
        // writes, truncates or reuses a table file after it is written (a
        // deleted file stays mapped until the last reader drops it), and the
        // database directory is locked against other CairnDB processes. A
        // process outside that contract truncating the file could make a read
        // fault (SIGBUS), the same contract RocksDB's `allow_mmap_reads` has.
        // Exercised by `sst::zip` tests on the POSIX file system.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(self.size as usize)
                .map(&self.file)
        }
        .map_err(|e| Error::io("mmap", &self.path, e))?;
        // Asked for: the whole file read ahead once, sequentially, in the
        // background (a hint: the kernel reads what memory allows).
        if read_ahead {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
        // Point reads touch one group: do not read ahead around each fault.
        let _ = map.advise(memmap2::Advice::Random);
        Ok(Arc::new(map))
    }
}

fn locked_paths() -> &'static Mutex<HashSet<PathBuf>> {
    static LOCKED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    LOCKED.get_or_init(|| Mutex::new(HashSet::new()))
}

struct PosixLock {
    _file: File,
    path: PathBuf,
}

impl FileLock for PosixLock {}

impl Drop for PosixLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the record lock.
        locked_paths().lock().remove(&self.path);
    }
}

impl Fs for PosixFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = open_for_create(path, false)?;
        Ok(Box::new(PosixWritable::new(file, path, 0)))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        // Readable too: a shared writable map needs it.
        let file = open_for_create(path, true)?;
        match PosixMappedLog::new(file, path, 0)? {
            Ok(w) => Ok(Box::new(w)),
            Err(file) => Ok(Box::new(PosixWritable::new(file, path, 0))),
        }
    }

    fn reuse_log(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        let (file, size) = rename_for_reuse(old, new, true)?;
        match PosixMappedLog::new(file, new, size)? {
            Ok(w) => Ok(Box::new(w)),
            Err(file) => Ok(Box::new(PosixWritable::new(file, new, size))),
        }
    }

    fn reuse_writable(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        let (file, size) = rename_for_reuse(old, new, false)?;
        Ok(Box::new(PosixWritable::new(file, new, size)))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        Ok(Box::new(PosixSequential {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOATIME: a table read must not make the kernel update the
        // file's access time (2% of a random-read profile). Allowed only to
        // the file's owner; anyone else opens without it.
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOATIME)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                File::open(path).map_err(|e| Error::io("open", path, e))?
            }
            Err(e) => return Err(Error::io("open", path, e)),
        };
        let size = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        Ok(Arc::new(PosixRandom {
            file,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path)
            .map_err(|e| Error::io("stat", path, e))?
            .len())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io("unlink", path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        std::fs::remove_dir(path).map_err(|e| Error::io("rmdir", path, e))
    }

    fn link_file(&self, src: &Path, dst: &Path) -> Result<()> {
        // Another file system (EXDEV), or one without hard links: copy.
        match std::fs::hard_link(src, dst) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(Error::io("link", dst, e))
            }
            Err(_) => super::copy_file(self, src, dst, None).map(|_| ()),
        }
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        std::fs::create_dir_all(path).map_err(|e| Error::io("mkdir", path, e))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path).map_err(|e| Error::io("readdir", path, e))? {
            let entry = entry.map_err(|e| Error::io("readdir", path, e))?;
            if let Some(name) = entry.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        Ok(out)
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let dir = File::open(path).map_err(|e| Error::io("open dir", path, e))?;
        dir.sync_all().map_err(|e| Error::io("fsync dir", path, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let canonical = path
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .map(|p| p.join(path.file_name().unwrap_or_default()))
            .unwrap_or_else(|| path.to_path_buf());
        {
            let mut set = locked_paths().lock();
            if !set.insert(canonical.clone()) {
                return Err(Error::LockFileHeld {
                    path: path.to_path_buf(),
                });
            }
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
        {
            Ok(f) => f,
            Err(e) => {
                locked_paths().lock().remove(&canonical);
                return Err(Error::io("open lock", path, e));
            }
        };
        // A write lock on the whole file (length 0: to its end, however
        // long), not waiting.
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are
        // a valid value; the fields used are set below.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = 0;
        fl.l_len = 0;
        // SAFETY: the descriptor is valid and owned by `file` for the call;
        // `fl` is a valid `struct flock` that outlives it.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            locked_paths().lock().remove(&canonical);
            if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EAGAIN)) {
                return Err(Error::LockFileHeld {
                    path: path.to_path_buf(),
                });
            }
            return Err(Error::io("fcntl(F_SETLK)", path, e));
        }
        Ok(Box::new(PosixLock {
            _file: file,
            path: canonical,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
            .collect()
    }

    #[test]
    fn mapped_log_appends_across_windows_and_ends_in_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("000005.log");
        let mut f = fs.create_log(&p).unwrap();
        let mut want = Vec::new();
        // Small appends, one that straddles a window edge, and one larger
        // than a whole window.
        for i in 0..1000 {
            let d = pattern(100 + i % 7, i as u8);
            f.append(&d).unwrap();
            want.extend_from_slice(&d);
        }
        f.flush().unwrap();
        let big = pattern(LOG_WINDOW as usize + 12345, 9);
        f.append(&big).unwrap();
        want.extend_from_slice(&big);
        let edge = LOG_WINDOW as usize * 2 - want.len() - 10;
        let d = pattern(edge, 3);
        f.append(&d).unwrap();
        want.extend_from_slice(&d);
        let d = pattern(100, 4);
        f.append(&d).unwrap();
        want.extend_from_slice(&d);
        f.sync().unwrap();
        assert_eq!(f.len(), want.len() as u64);
        drop(f);
        let got = std::fs::read(&p).unwrap();
        assert_eq!(got.len() as u64 % LOG_WINDOW, 0);
        assert_eq!(&got[..want.len()], &want[..]);
        assert!(got[want.len()..].iter().all(|&b| b == 0));
    }

    /// Appends below `MAPPED_LOG_PWRITE_MIN` are copied through the map,
    /// larger ones written with `pwrite`: interleaved at unaligned offsets
    /// (sharing pages, crossing a window edge, in a fresh and in a reused
    /// file), the file holds every byte in order.
    #[test]
    fn mapped_log_interleaves_map_copies_and_pwrites() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let first = dir.path().join("000005.log");
        let mut want = Vec::new();
        let mut f = fs.create_log(&first).unwrap();
        let mut i = 0u8;
        while want.len() < 2 * LOG_WINDOW as usize + 5000 {
            let n = match i % 4 {
                0 => 37,
                1 => MAPPED_LOG_PWRITE_MIN,
                2 => MAPPED_LOG_PWRITE_MIN - 1,
                _ => 3 * MAPPED_LOG_PWRITE_MIN + 11,
            };
            let d = pattern(n, i);
            f.append(&d).unwrap();
            want.extend_from_slice(&d);
            i = i.wrapping_add(1);
        }
        f.flush().unwrap();
        drop(f);
        let got = std::fs::read(&first).unwrap();
        assert_eq!(&got[..want.len()], &want[..]);
        assert!(got[want.len()..].iter().all(|&b| b == 0));

        // Reused: the old bytes are overwritten in place by both paths.
        let second = dir.path().join("000007.log");
        let mut f = fs.reuse_log(&first, &second).unwrap();
        let mut again = Vec::new();
        for j in 0..500u32 {
            let d = pattern(if j % 3 == 0 { 9000 } else { 101 }, j as u8 ^ 0x5A);
            f.append(&d).unwrap();
            again.extend_from_slice(&d);
        }
        f.sync().unwrap();
        drop(f);
        let got = std::fs::read(&second).unwrap();
        assert_eq!(&got[..again.len()], &again[..]);
    }

    #[test]
    fn mapped_log_reuse_overwrites_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let old = dir.path().join("000003.log");
        std::fs::write(&old, vec![0xAB; 5 << 20]).unwrap();
        let new = dir.path().join("000009.log");
        let mut f = fs.reuse_log(&old, &new).unwrap();
        assert!(!old.exists());
        let d = pattern((5 << 20) + 100, 1);
        f.append(&d).unwrap();
        f.sync().unwrap();
        drop(f);
        let got = std::fs::read(&new).unwrap();
        assert_eq!(&got[..d.len()], &d[..]);
        assert!(got[d.len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn mapped_log_reads_back_through_the_log_reader() {
        use crate::wal::{LogReader, LogWriter, ReadEvent};
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("000011.log");
        let mut w = LogWriter::new(fs.create_log(&p).unwrap(), 11);
        let records: Vec<Vec<u8>> = (0..3000)
            .map(|i| pattern(1 + (i * 37) % 9000, i as u8))
            .collect();
        for (i, r) in records.iter().enumerate() {
            if i % 100 == 0 {
                w.prepare_synced_record(r.len()).unwrap();
            }
            w.add_record(r).unwrap();
            if i % 100 == 0 {
                w.sync().unwrap();
            } else {
                w.flush().unwrap();
            }
        }
        drop(w);
        let mut r = LogReader::new(fs.open_sequential(&p).unwrap(), 11);
        let mut out = Vec::new();
        for want in &records {
            assert!(matches!(
                r.read_record(&mut out).unwrap(),
                ReadEvent::Record { .. }
            ));
            assert_eq!(&out, want);
        }
        assert_eq!(r.read_record(&mut out).unwrap(), ReadEvent::Eof);
    }

    /// A file written with write-behind hands its bytes to the device's
    /// write-back as it goes (through buffered and direct appends alike),
    /// and reads back exactly what was appended, before and after its sync.
    #[test]
    fn write_behind_starts_write_back_as_bytes_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let writer = |p: &Path| {
            let file = File::create(p).unwrap();
            PosixWritable::new(file, p, 0)
        };
        let p = dir.path().join("t.sst");
        let mut w = writer(&p);
        w.write_behind(64 << 10);
        let mut want = Vec::new();
        for i in 0..40u32 {
            // Small appends (buffered) and ones larger than the buffer
            // (written at once).
            let len = if i % 7 == 0 {
                WRITE_BUFFER + 123
            } else {
                5000 + i as usize
            };
            let chunk: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j) as u8).collect();
            w.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            assert!(w.behind_from <= w.written);
            assert!(
                w.written - w.behind_from < (64 << 10) + WRITE_BUFFER as u64 + 5000 + 40,
                "write-back not started: {} bytes written, started up to {}",
                w.written,
                w.behind_from
            );
        }
        assert!(w.behind_from > 0, "no write-back was started");
        w.flush().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), want);
        w.sync().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), want);

        // Off (0): nothing is handed over before the sync.
        let q = dir.path().join("u.sst");
        let mut w = writer(&q);
        w.write_behind(0);
        w.append(&want).unwrap();
        w.sync().unwrap();
        assert_eq!(w.behind_from, 0);
        assert_eq!(std::fs::read(&q).unwrap(), want);
    }

    #[test]
    fn write_read_sync_allocate() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("a");
        let mut f = fs.create(&p).unwrap();
        f.allocate(1 << 20).unwrap();
        f.append(b"hello ").unwrap();
        f.append(&vec![7u8; WRITE_BUFFER + 5]).unwrap();
        f.append(b"world").unwrap();
        f.sync().unwrap();
        let total = 6 + WRITE_BUFFER as u64 + 5 + 5;
        assert_eq!(f.len(), total);
        // KEEP_SIZE: the logical size is what was written.
        assert_eq!(fs.file_size(&p).unwrap(), total);
        let r = fs.open_random(&p).unwrap();
        let mut b = [0u8; 5];
        r.read_exact_at(total - 5, &mut b).unwrap();
        assert_eq!(&b, b"world");
        let e = r.read_exact_at(total - 2, &mut b).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert_eq!(fs.read_all(&p).unwrap().len() as u64, total);
    }

    /// `read_vec_at` reads into uninitialised capacity (unsafe): every
    /// byte must come from the file, at any offset and length, and reads
    /// past the end must be a Corruption error naming the file.
    #[test]
    fn read_vec_at_reads_exact_bytes_and_rejects_past_end() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("000001.sst");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut w = fs.create(&p).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        let f = fs.open_random(&p).unwrap();
        for (off, len) in [
            (0usize, 0usize),
            (0, 1),
            (7, 4096),
            (65_535, 70_000),
            (0, 300_000),
            (299_999, 1),
        ] {
            let got = f.read_vec_at(off as u64, len).unwrap();
            assert_eq!(got, &data[off..off + len], "offset {off} length {len}");
        }
        for (off, len) in [(299_999u64, 2usize), (300_000, 1), (1 << 40, 10)] {
            let e = f.read_vec_at(off, len).unwrap_err();
            assert!(matches!(e, Error::Corruption { .. }), "{e}");
            assert!(e.to_string().contains("000001.sst"), "{e}");
        }
    }

    #[test]
    fn second_lock_in_same_process_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("LOCK");
        let l = fs.lock(&p).unwrap();
        match fs.lock(&p) {
            Err(Error::LockFileHeld { path }) => assert_eq!(path, p),
            Err(e) => panic!("expected busy, got {e}"),
            Ok(_) => panic!("expected busy, got a lock"),
        }
        drop(l);
        fs.lock(&p).unwrap();
    }

    /// Forks a child that runs `child` (async-signal-safe calls only) and
    /// exits with its value; returns that exit status.
    fn in_child(child: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the child calls only async-signal-safe functions (open,
        // fcntl, nanosleep, _exit) on data prepared before the fork, and
        // leaves with _exit, running no destructor and no atexit handler.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                libc::_exit(child());
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            assert!(libc::WIFEXITED(status));
            libc::WEXITSTATUS(status)
        }
    }

    #[test]
    fn lock_held_by_this_process_is_seen_by_another() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("LOCK");
        let _l = PosixFs.lock(&p).unwrap();
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let status = in_child(|| {
            // SAFETY: `c` is a NUL-terminated path; `fl` a valid struct.
            unsafe {
                let fd = libc::open(c.as_ptr(), libc::O_RDWR);
                if fd < 0 {
                    return 2;
                }
                let mut fl: libc::flock = std::mem::zeroed();
                fl.l_type = libc::F_WRLCK as libc::c_short;
                fl.l_whence = libc::SEEK_SET as libc::c_short;
                if libc::fcntl(fd, libc::F_SETLK, &fl) == 0 {
                    0
                } else {
                    1
                }
            }
        });
        assert_eq!(status, 1, "another process took the held lock");
    }

    /// With `flock`, a child forked while the database was open inherited
    /// the lock, and a reopen after `close` failed until the child exited.
    #[test]
    fn lock_is_not_kept_by_a_child_forked_while_it_was_held() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("LOCK");
        let l = PosixFs.lock(&p).unwrap();
        // SAFETY: fork in a test; the child only sleeps and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ts = libc::timespec {
                tv_sec: 1,
                tv_nsec: 0,
            };
            // SAFETY: nanosleep and _exit are async-signal-safe.
            unsafe {
                libc::nanosleep(&ts, std::ptr::null_mut());
                libc::_exit(0);
            }
        }
        drop(l);
        let relocked = PosixFs.lock(&p);
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        relocked.expect("the forked child kept the lock");
    }

    #[test]
    fn write_atomic_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let p = dir.path().join("CURRENT");
        fs.write_atomic(&p, b"one").unwrap();
        fs.write_atomic(&p, b"two").unwrap();
        assert_eq!(fs.read_all(&p).unwrap(), b"two");
        assert_eq!(
            fs.list_dir(dir.path()).unwrap(),
            vec!["CURRENT".to_string()]
        );
    }
}
