//! The file-system boundary: every byte the engine reads or writes goes
//! through the [`Fs`] trait.
//!
//! Three implementations: [`posix::PosixFs`] for real disks, [`mem::MemFs`]
//! for fast tests (it also models what survives a power loss), and
//! [`fault::FaultFs`], which wraps another `Fs` and injects errors at chosen
//! points. Implementations are `Send + Sync`; file handles are used by one
//! owner at a time (`WritableFile`, `SequentialFile`) or shared read-only
//! (`RandomAccessFile`, whose `read_at` takes `&self` and no lock).

pub mod fault;
pub mod mem;
pub mod posix;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file opened for appending. Writes may be buffered until `flush`/`sync`.
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Appends `data` that the caller syncs right after. A file written
    /// through a map writes it with `pwrite` instead, which spares the
    /// write-protect fault a store into a page that the last sync cleaned
    /// would take. Default: [`WritableFile::append`].
    fn append_synced(&mut self, data: &[u8]) -> Result<()> {
        self.append(data)
    }
    /// Hands buffered bytes to the operating system (survives a process crash).
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable (fdatasync; survives a power loss).
    fn sync(&mut self) -> Result<()>;
    /// Reserves space for `len` bytes from the current end, so that later
    /// appends and syncs need not update file metadata. A hint: may do nothing.
    fn allocate(&mut self, _len: u64) -> Result<()> {
        Ok(())
    }
    /// Makes the bytes from the file's current end on disk up to offset
    /// `upto` written zeros and syncs them, without moving where appends
    /// go (they overwrite the zeros). Appends and syncs inside that range
    /// then change no file metadata: neither the size nor unwritten extents,
    /// so an `fdatasync` writes only data (docs/format/wal.md, "Zero-filled
    /// space"). A hint: may do nothing.
    fn fill_zeros(&mut self, _upto: u64) -> Result<()> {
        Ok(())
    }
    /// A handle that fdatasyncs this file from another thread, while this
    /// writer goes on appending: each call makes durable at least every byte
    /// appended (and flushed) before it began. `None` (the default) when the
    /// file cannot be synced apart from its writer; the caller then syncs
    /// through [`WritableFile::sync`].
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        None
    }
    /// Asks the file system to start writing the file's bytes to the device
    /// every `every` bytes (0: never), without waiting for them, so that the
    /// sync that ends a table build finds little left to write and the
    /// device works while the builder does (RocksDB's `bytes_per_sync`). A
    /// hint: may do nothing. Default: nothing.
    fn write_behind(&mut self, _every: u64) {}
    /// Cuts the file at the append position ([`WritableFile::len`]),
    /// dropping whatever lies past it: a reused (recycled) WAL's stale
    /// bytes, or space reserved or zero-filled ahead. A reader then finds
    /// the file's end right after the last record, under every recovery
    /// mode. The engine calls it on the live WAL at a clean close, before
    /// the final sync, which makes the new size durable. Default: nothing
    /// (for a file that never holds bytes past `len`).
    fn seal(&mut self) -> Result<()> {
        Ok(())
    }
    /// Bytes appended so far (the logical file size).
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The path this file was opened with, for error messages.
    fn path(&self) -> &Path;
}

/// Syncs one file's data apart from its writer
/// ([`WritableFile::sync_handle`]).
pub trait FileSync: Send + Sync {
    /// fdatasync: every byte written to the file before the call began is
    /// durable when it returns `Ok`.
    fn sync_data(&self) -> Result<()>;
}

/// A file read front to back.
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
    /// The path this file was opened with.
    fn path(&self) -> &Path;
}

/// A file read at arbitrary offsets by many threads at once.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`. Reading past the end is a `Corruption`
    /// error naming the file and offset (the caller asked for bytes that a
    /// correct file would have).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Reads `len` bytes at `offset` into a new vector, with the errors of
    /// [`RandomAccessFile::read_exact_at`]. Implementations may skip zeroing
    /// the buffer first (the POSIX one reads into uninitialised capacity).
    fn read_vec_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
    /// The file's size when it was opened.
    fn size(&self) -> u64;
    /// The path this file was opened with.
    fn path(&self) -> &Path;
    /// True when [`RandomAccessFile::map_all`] maps the file rather than
    /// copying it, so reading through the map is cheaper than a `pread`
    /// (block tables use the map then when `Options::mmap_reads` is on).
    fn maps_natively(&self) -> bool {
        false
    }
    /// The whole file as one byte slice, for formats read in place (zip
    /// tables). The POSIX file system maps the file (`mmap`, advised for
    /// random access; with `read_ahead`, first asked to read it all into
    /// the page cache, `MADV_WILLNEED`); the default reads it into memory.
    fn map_all(&self, _read_ahead: bool) -> Result<FileBytes> {
        let len = usize::try_from(self.size()).map_err(|_| {
            Error::corruption(self.path(), 0, "file too large to map on this platform")
        })?;
        let mut buf = vec![0u8; len];
        self.read_exact_at(0, &mut buf)?;
        Ok(Arc::new(buf))
    }
}

/// A whole file's bytes, mapped or in memory, shared by readers.
pub type FileBytes = Arc<dyn std::ops::Deref<Target = [u8]> + Send + Sync>;

/// A held lock on a database directory; released on drop.
pub trait FileLock: Send + Sync {}

/// The file-system operations the engine needs.
pub trait Fs: Send + Sync {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Renames `old` to `new` and opens it for writing from offset 0 without
    /// truncating: appends overwrite the old bytes, which stay in place past
    /// the written end. Overwriting blocks that are already allocated and
    /// written lets `fdatasync` skip the metadata update an append needs
    /// (this is how WAL files are recycled; see docs/format/wal.md).
    fn reuse_writable(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a write-ahead log file. A file system may
    /// write it through a shared memory map (`posix`: appends are memory
    /// copies into the page cache, with no system call, and survive a
    /// process crash like a `write`; `sync` is `fdatasync`). The file may
    /// then end in zeros past the appended bytes, which log readers take
    /// for the end of the log (docs/format/wal.md). Default: [`Fs::create`].
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// [`Fs::reuse_writable`] for a write-ahead log, written as
    /// [`Fs::create_log`] writes. Default: [`Fs::reuse_writable`].
    fn reuse_log(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.reuse_writable(old, new)
    }
    /// Opens an existing file for sequential reading.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Opens an existing file for positional reads.
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// True when `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Size of the file at `path`.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of a directory.
    fn list_dir(&self, path: &Path) -> Result<Vec<String>>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing). A second lock
    /// of the same path, from this process or another, fails with `Error::LockFileHeld`.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Removes an empty directory. Default: nothing (the directory stays).
    fn remove_dir(&self, _path: &Path) -> Result<()> {
        Ok(())
    }

    /// Makes `dst` (which must not exist) hold the bytes of `src`: a hard
    /// link where the file system can make one (an immutable table or blob
    /// file then costs no copy), else a copy, synced. Default: the copy
    /// ([`copy_file`]).
    fn link_file(&self, src: &Path, dst: &Path) -> Result<()> {
        copy_file(self, src, dst, None).map(|_| ())
    }

    /// Reads a whole (small) file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let mut f = self.open_sequential(path)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        Ok(out)
    }

    /// Writes `data` to `path` atomically and durably: a temporary file is
    /// written and synced, renamed over `path`, and the directory synced.
    fn write_atomic(&self, path: &Path, data: &[u8]) -> Result<()> {
        let tmp = tmp_path(path);
        {
            let mut f = self.create(&tmp)?;
            f.append(data)?;
            f.sync()?;
        }
        self.rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            self.sync_dir(dir)?;
        }
        Ok(())
    }
}

/// Copies `src` to a new file `dst` through `fs` (the first `limit` bytes
/// when given; a file shorter than that is a `Corruption` error) and syncs
/// it. Returns the bytes copied.
pub fn copy_file<F: Fs + ?Sized>(
    fs: &F,
    src: &Path,
    dst: &Path,
    limit: Option<u64>,
) -> Result<u64> {
    let mut r = fs.open_sequential(src)?;
    let mut w = fs.create(dst)?;
    let mut buf = vec![0u8; 256 << 10];
    let mut done = 0u64;
    loop {
        let want = match limit {
            Some(l) => (l - done).min(buf.len() as u64) as usize,
            None => buf.len(),
        };
        if want == 0 {
            break;
        }
        let n = r.read(&mut buf[..want])?;
        if n == 0 {
            if let Some(l) = limit {
                return Err(Error::corruption(
                    src,
                    done,
                    format!("file ends at {done} bytes, {l} expected"),
                ));
            }
            break;
        }
        w.append(&buf[..n])?;
        done += n as u64;
    }
    w.sync()?;
    Ok(done)
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".dbtmp");
    PathBuf::from(s)
}
