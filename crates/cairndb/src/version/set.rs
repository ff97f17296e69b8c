//! `VersionSet`: the current version, the counters that must survive a
//! restart, and the MANIFEST that records every change
//! (`docs/format/manifest.md`).
//!
//! Locking: the database keeps its `VersionSet` behind one mutex that is
//! held across the MANIFEST append and sync, so edits are applied one at a
//! time and in MANIFEST order. Readers never take it: they read versions
//! through the database's super-version pointer. The file-number counter is
//! an atomic shared with the write path, which allocates WAL numbers without
//! this lock.
//!
//! Durability: an edit is in effect only after its MANIFEST record is synced;
//! a new MANIFEST becomes current only after CURRENT is replaced atomically
//! (temporary file, sync, rename, directory sync).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::edit::{VersionEdit, MANIFEST_FORMAT_VERSION, MANIFEST_FORMAT_VERSION_BLOB};
use super::{BlobFileState, Version};
use crate::env::Fs;
use crate::error::{Error, Result};
use crate::filename::{current_file_name, manifest_file_name};
use crate::key::SeqNo;
use crate::options::{WalRecoveryMode, NUM_LEVELS};
use crate::wal::LogWriter;

/// A MANIFEST larger than this is rewritten as a snapshot into a new file.
const MANIFEST_ROLLOVER_BYTES: u64 = 64 << 20;

/// The version history of one database.
pub struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    current: Arc<Version>,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    /// Whether the MANIFEST being written has recorded format version 2
    /// (blob files, docs/format/blob.md).
    manifest_has_blobs: bool,
    /// WALs numbered below this hold nothing that is not in tables.
    pub log_number: u64,
    /// Last sequence number recorded in the MANIFEST.
    pub last_sequence: SeqNo,
    next_file_number: Arc<AtomicU64>,
    /// Per level: the largest key of the last size compaction (round robin).
    pub compact_pointers: [Vec<u8>; NUM_LEVELS],
}

impl VersionSet {
    /// Writes the MANIFEST and CURRENT of a new, empty database.
    pub fn create_new(fs: &dyn Fs, dir: &Path) -> Result<()> {
        let number = 1;
        let path = manifest_file_name(dir, number);
        let edit = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(0),
            next_file_number: Some(number + 1),
            last_sequence: Some(0),
            ..Default::default()
        };
        let mut w = LogWriter::new(fs.create(&path)?, number);
        let mut rec = Vec::new();
        edit.encode(&mut rec);
        w.add_record(&rec)?;
        w.sync()?;
        drop(w);
        set_current(fs, dir, number)
    }

    /// Rebuilds the current version from CURRENT and its MANIFEST, then
    /// starts a fresh MANIFEST holding a snapshot of it.
    pub fn recover(
        fs: Arc<dyn Fs>,
        dir: &Path,
        next_file_number: Arc<AtomicU64>,
    ) -> Result<VersionSet> {
        let m = read_manifest(fs.as_ref(), dir)?;
        let max_number = m
            .version
            .files
            .iter()
            .flatten()
            .map(|f| f.number)
            .chain(m.version.blob_files.keys().copied())
            .chain([m.manifest_number, m.log_number])
            .max()
            .unwrap_or(0);
        next_file_number.store(m.next_file_number.max(max_number + 1), Ordering::SeqCst);
        let mut vs = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: Arc::new(m.version),
            manifest: None,
            manifest_number: m.manifest_number,
            manifest_has_blobs: false,
            log_number: m.log_number,
            last_sequence: m.last_sequence,
            next_file_number,
            compact_pointers: m.compact_pointers,
        };
        vs.write_new_manifest()?;
        Ok(vs)
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// Number of the MANIFEST being written.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Bytes written to the MANIFEST being written.
    pub fn manifest_size(&self) -> u64 {
        self.manifest.as_ref().map_or(0, |w| w.file_size())
    }

    /// Allocates a file number.
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// An edit that recreates the whole current state in an empty MANIFEST
    /// (a new MANIFEST's first record, or a checkpoint's).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut e = VersionEdit {
            format_version: Some(if self.current.blob_files.is_empty() {
                MANIFEST_FORMAT_VERSION
            } else {
                MANIFEST_FORMAT_VERSION_BLOB
            }),
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number.load(Ordering::SeqCst)),
            last_sequence: Some(self.last_sequence),
            ..Default::default()
        };
        for (level, k) in self.compact_pointers.iter().enumerate() {
            if !k.is_empty() {
                e.compact_pointers.push((level, k.clone()));
            }
        }
        for (level, files) in self.current.files.iter().enumerate() {
            for f in files {
                e.new_files.push((level, f.clone()));
            }
        }
        for b in self.current.blob_files.values() {
            e.new_blob_files.push(b.meta.clone());
            if b.garbage_count > 0 {
                e.blob_garbage.push(super::BlobGarbage {
                    number: b.meta.number,
                    count: b.garbage_count,
                    bytes: b.garbage_bytes,
                });
            }
        }
        e
    }

    /// Starts a new MANIFEST holding the whole current state and points
    /// CURRENT at it. The old MANIFEST becomes obsolete.
    fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let path = manifest_file_name(&self.dir, number);
        let mut rec = Vec::new();
        let mut w = LogWriter::new(self.fs.create(&path)?, number);
        let snapshot = self.snapshot_edit();
        snapshot.encode(&mut rec);
        w.add_record(&rec)?;
        w.sync()?;
        set_current(self.fs.as_ref(), &self.dir, number)?;
        self.manifest = Some(w);
        self.manifest_number = number;
        self.manifest_has_blobs = snapshot.format_version == Some(MANIFEST_FORMAT_VERSION_BLOB);
        Ok(())
    }

    /// Applies `edit` to the current version, records it durably in the
    /// MANIFEST, and installs the result. On error nothing is installed.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let mut v = (*self.current).clone();
        let manifest_path = manifest_file_name(&self.dir, self.manifest_number);
        apply(&mut v, &edit).map_err(|what| {
            Error::invalid(format!("internal: version edit does not apply: {what}"))
        })?;
        v.sort_levels();
        if let Err(what) = v.check_invariants() {
            return Err(Error::invalid(format!(
                "internal: version edit breaks level invariants: {what}"
            )));
        }
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        if edit.has_blob_fields() && !self.manifest_has_blobs {
            // A build that does not know blob files refuses this MANIFEST
            // by its version rather than by an unknown tag.
            edit.format_version = Some(MANIFEST_FORMAT_VERSION_BLOB);
        }
        let mut rec = Vec::new();
        edit.encode(&mut rec);
        let w = match self.manifest.as_mut() {
            Some(w) => w,
            None => {
                return Err(Error::io(
                    "append",
                    &manifest_path,
                    std::io::Error::other("MANIFEST writer lost after an earlier error"),
                ))
            }
        };
        let r = w.add_record(&rec).and_then(|_| w.sync());
        if let Err(e) = r {
            // The MANIFEST may now end in a torn record; never append after it.
            self.manifest = None;
            return Err(e);
        }
        if edit.format_version == Some(MANIFEST_FORMAT_VERSION_BLOB) {
            self.manifest_has_blobs = true;
        }
        if let Some(n) = edit.log_number {
            self.log_number = n;
        }
        if let Some(s) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(s);
        }
        for (l, k) in edit.compact_pointers {
            self.compact_pointers[l] = k;
        }
        self.current = Arc::new(v);
        if self.manifest.as_ref().map_or(0, |w| w.file_size()) > MANIFEST_ROLLOVER_BYTES {
            self.write_new_manifest()?;
        }
        Ok(self.current.clone())
    }
}

/// What a MANIFEST says, read without changing anything on disk.
#[derive(Debug)]
pub struct ManifestState {
    /// The live files.
    pub version: Version,
    /// Number of the MANIFEST read.
    pub manifest_number: u64,
    /// Its path.
    pub manifest_path: PathBuf,
    /// WALs numbered below this are flushed.
    pub log_number: u64,
    /// The next unused file number.
    pub next_file_number: u64,
    /// The last sequence number recorded.
    pub last_sequence: SeqNo,
    /// Per level: where the next size compaction starts.
    pub compact_pointers: [Vec<u8>; NUM_LEVELS],
}

/// Reads CURRENT and replays the MANIFEST it names into a version, checking
/// every record; writes nothing (for `Db::open`, and for `cairndb verify`).
pub fn read_manifest(fs: &dyn Fs, dir: &Path) -> Result<ManifestState> {
    let cur_path = current_file_name(dir);
    let cur = fs.read_all(&cur_path)?;
    let name = std::str::from_utf8(&cur)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| !s.is_empty() && !s.contains('/') && !s.contains('\n'))
        .ok_or_else(|| {
            Error::corruption(
                &cur_path,
                0,
                "CURRENT does not hold a MANIFEST name and a newline",
            )
        })?;
    let manifest_number = match crate::filename::parse_file_name(name) {
        Some((crate::filename::FileType::Manifest, n)) => n,
        _ => {
            return Err(Error::corruption(
                &cur_path,
                0,
                format!("CURRENT names `{name}`, which is not a MANIFEST"),
            ))
        }
    };
    let path = dir.join(name);
    let mut version = Version::default();
    let mut log_number = None;
    let mut next_file = None;
    let mut last_seq = None;
    let mut compact_pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
    let mut saw_version = false;
    // A torn final record is an edit whose sync never completed: it was
    // never in effect, so dropping it is correct. Damage anywhere else is
    // an error.
    crate::wal::replay_log(
        fs,
        &path,
        manifest_number,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        |offset, rec| {
            let edit = VersionEdit::decode(rec, &path, offset)?;
            if edit.format_version.is_some() {
                saw_version = true;
            }
            apply(&mut version, &edit).map_err(|what| Error::corruption(&path, offset, what))?;
            if let Some(v) = edit.log_number {
                log_number = Some(v);
            }
            if let Some(v) = edit.next_file_number {
                next_file = Some(v);
            }
            if let Some(v) = edit.last_sequence {
                last_seq = Some(v);
            }
            for (l, k) in &edit.compact_pointers {
                compact_pointers[*l] = k.clone();
            }
            Ok(std::ops::ControlFlow::Continue(()))
        },
    )?;
    let missing = |what: &str| Error::corruption(&path, 0, format!("MANIFEST has no {what}"));
    if !saw_version {
        return Err(missing("format version record"));
    }
    let log_number = log_number.ok_or_else(|| missing("log number"))?;
    let next_file = next_file.ok_or_else(|| missing("next file number"))?;
    let last_seq = last_seq.ok_or_else(|| missing("last sequence"))?;
    version.sort_levels();
    version
        .check_invariants()
        .map_err(|what| Error::corruption(&path, 0, what))?;
    Ok(ManifestState {
        version,
        manifest_number,
        manifest_path: path,
        log_number,
        next_file_number: next_file,
        last_sequence: last_seq,
        compact_pointers,
    })
}

/// Applies an edit's file changes to a version (levels are re-sorted by the caller).
fn apply(v: &mut Version, edit: &VersionEdit) -> std::result::Result<(), String> {
    for &(level, number) in &edit.deleted_files {
        let files = &mut v.files[level];
        match files.iter().position(|f| f.number == number) {
            Some(i) => {
                files.remove(i);
            }
            None => return Err(format!("deleted file {number} is not in level {level}")),
        }
    }
    for (level, f) in &edit.new_files {
        if v.files.iter().flatten().any(|g| g.number == f.number) {
            return Err(format!("file {} added twice", f.number));
        }
        v.files[*level].push(f.clone());
    }
    for b in &edit.new_blob_files {
        if v.blob_files.contains_key(&b.number)
            || v.files.iter().flatten().any(|g| g.number == b.number)
        {
            return Err(format!("blob file {} added twice", b.number));
        }
        v.blob_files.insert(
            b.number,
            BlobFileState {
                meta: b.clone(),
                garbage_count: 0,
                garbage_bytes: 0,
            },
        );
    }
    for g in &edit.blob_garbage {
        let Some(b) = v.blob_files.get_mut(&g.number) else {
            return Err(format!(
                "garbage counted against blob file {}, which is not live",
                g.number
            ));
        };
        b.garbage_count = b.garbage_count.saturating_add(g.count);
        b.garbage_bytes = b.garbage_bytes.saturating_add(g.bytes);
        if b.garbage_count > b.meta.count {
            return Err(format!(
                "blob file {} has {} garbage records of {}",
                g.number, b.garbage_count, b.meta.count
            ));
        }
    }
    // A blob file whose every record is garbage leaves the version.
    v.blob_files.retain(|_, b| b.garbage_count < b.meta.count);
    Ok(())
}

/// The bytes of a CURRENT file naming MANIFEST `name`.
pub fn set_current_bytes(name: &str) -> Vec<u8> {
    format!("{name}\n").into_bytes()
}

/// Points CURRENT at MANIFEST-`number`, atomically and durably.
pub fn set_current(fs: &dyn Fs, dir: &Path, number: u64) -> Result<()> {
    let name = manifest_file_name(dir, number);
    let name = name
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    fs.write_atomic(&current_file_name(dir), format!("{name}\n").as_bytes())
}
