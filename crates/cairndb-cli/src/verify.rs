//! `cairndb verify DB`: checks a closed database's files without changing
//! them, and names the file and byte offset of every problem.
//!
//! Checks: CURRENT and the MANIFEST decode (every record, the torn-tail
//! tolerance of recovery notwithstanding); every table the MANIFEST lists
//! exists with the recorded size, every block checksum holds
//! (`Table::verify_checksums`), its entries are in strictly ascending
//! internal-key order, and its first and last keys equal both the MANIFEST's
//! smallest/largest and the table's properties; files of a level >= 1 do not
//! overlap; every live WAL's records pass their checksums and decode as write
//! batches. Each WAL file is listed as live (replayed at the next open) or
//! obsolete (left for recycling, not replayed, not checked). A torn tail (a log that ends inside a record, as a crash leaves
//! it) is a note, not a problem. Blob files (`docs/format/blob.md`): every
//! live one exists, its header, records and footer check out, and its counts
//! and checksum equal the MANIFEST's; every blob reference in a table names
//! a live blob file and the offset, size and crc of one of its records; and
//! each file has exactly as many references as its records less the
//! MANIFEST's garbage count. Exit status is non-zero on any problem.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairndb::env::posix::PosixFs;
use cairndb::env::Fs;
use cairndb::internals::blob::{scan_file, BlobIndex};
use cairndb::internals::filename::{self, FileType};
use cairndb::internals::iter::InternalIterator;
use cairndb::internals::key::{compare_internal, parse_internal_key, user_key, ValueType};
use cairndb::internals::sst::Table;
use cairndb::internals::version::set::read_manifest;
use cairndb::internals::wal::{LogReader, ReadEvent, RecordHeader};
use cairndb::{Error, WriteBatch};

/// Everything verify found.
#[derive(Default)]
struct Report {
    problems: Vec<String>,
    notes: Vec<String>,
    /// One line per WAL file: live or obsolete.
    wals: Vec<String>,
    tables: u64,
    blob_files: u64,
    blob_refs: u64,
    blocks: u64,
    entries: u64,
    wal_records: u64,
    manifest_records: u64,
}

impl Report {
    fn problem(&mut self, file: &Path, offset: Option<u64>, what: impl AsRef<str>) {
        let at = offset.map(|o| format!(" offset {o}")).unwrap_or_default();
        self.problems
            .push(format!("{}{at}: {}", file.display(), what.as_ref()));
    }
    fn error(&mut self, fallback: &Path, e: &Error) {
        match e {
            Error::Corruption { file, offset, what } => self.problem(file, Some(*offset), what),
            Error::Io { op, path, source } => self.problem(path, None, format!("{op}: {source}")),
            other => self.problem(fallback, None, other.to_string()),
        }
    }
}

fn esc(b: &[u8]) -> String {
    crate::dump::escape(b)
}

/// Reads a log file strictly: every damaged record is a problem unless it is
/// a torn tail. Calls `each(offset, payload)` for every good record.
fn check_log(
    fs: &dyn Fs,
    path: &Path,
    number: u64,
    rep: &mut Report,
    mut each: impl FnMut(&mut Report, u64, &[u8]),
) {
    let file = match fs.open_sequential(path) {
        Ok(f) => f,
        Err(e) => return rep.error(path, &e),
    };
    let mut r = LogReader::new(file, number);
    let mut rec = Vec::new();
    loop {
        match r.read_record(&mut rec) {
            Ok(ReadEvent::Record { offset }) => each(rep, offset, &rec),
            Ok(ReadEvent::Eof) => break,
            Ok(ReadEvent::Corruption {
                offset,
                what,
                written_whole,
            }) => {
                // Damage with no intact record of this log after it is the
                // log's end: a torn last write, or the stale bytes of a
                // recycled WAL's previous use (docs/format/wal.md,
                // "Recycling"), which recovery also reads as the end.
                // Damage followed by an intact record is real damage.
                // A damaged record whose header still carries this log's
                // number and a valid type is this log's own last record,
                // damaged (or torn by a power loss); stale bytes of a recycled
                // file do not line up with this log's record boundaries.
                // A record whose checksum holds once one header field is
                // repaired was written whole: its damage is no torn write.
                let ours = !what.starts_with("log ends inside")
                    && header_is_ours(fs, path, offset, number);
                match valid_record_after(fs, path, offset, number) {
                    Some(at) => rep.problem(
                        path,
                        Some(offset),
                        format!("{what}, but a valid record follows at offset {at}: damage, not a torn tail"),
                    ),
                    None if written_whole => rep.problem(
                        path,
                        Some(offset),
                        format!("{what} in this log's last record"),
                    ),
                    None if ours => rep.problem(
                        path,
                        Some(offset),
                        format!("{what} in this log's last record (damage, or a write torn by a power loss)"),
                    ),
                    None => rep.notes.push(format!(
                        "{} offset {offset}: end of the log ({what}): a torn last write or a recycled WAL's stale tail; recovery stops here",
                        path.display()
                    )),
                }
            }
            Err(e) => {
                rep.error(path, &e);
                break;
            }
        }
    }
}

/// True when the physical record header at `offset` names log `number`
/// with a known record type.
fn header_is_ours(fs: &dyn Fs, path: &Path, offset: u64, number: u64) -> bool {
    let Ok(bytes) = fs.read_all(path) else {
        return false;
    };
    let Ok(pos) = usize::try_from(offset) else {
        return false;
    };
    bytes
        .get(pos..)
        .and_then(RecordHeader::decode)
        .is_some_and(|h| h.known_type() && h.is_for_log(number))
}

/// The offset of the first intact physical record of log `number` that
/// starts after `from`, searching every byte position (a damaged length field
/// can hide the records after it, which then look like a torn tail).
fn valid_record_after(fs: &dyn Fs, path: &Path, from: u64, number: u64) -> Option<u64> {
    let bytes = fs.read_all(path).ok()?;
    let start = usize::try_from(from).ok()?.checked_add(1)?;
    (start..bytes.len()).find_map(|pos| {
        let rest = bytes.get(pos..)?;
        let h = RecordHeader::decode(rest)?;
        (h.known_type() && h.is_for_log(number) && h.crc_matches(rest)?).then_some(pos as u64)
    })
}

fn verify_db(dir: &Path) -> Report {
    let fs: Arc<dyn Fs> = PosixFs::shared();
    let mut rep = Report::default();
    let _lock = match fs.lock(&filename::lock_file_name(dir)) {
        Ok(l) => l,
        Err(e) => {
            rep.problems
                .push(format!("{}: cannot lock (is it open?): {e}", dir.display()));
            return rep;
        }
    };
    let cur = filename::current_file_name(dir);
    let state = match read_manifest(&*fs, dir) {
        Ok(s) => s,
        Err(e) => {
            rep.error(&cur, &e);
            if let Error::Io { path, .. } = &e {
                if path != &cur {
                    rep.problem(
                        &cur,
                        Some(0),
                        "CURRENT names a MANIFEST that cannot be read",
                    );
                }
            }
            return rep;
        }
    };
    // Every MANIFEST record, including a last one recovery would drop.
    check_log(
        &*fs,
        &state.manifest_path,
        state.manifest_number,
        &mut rep,
        |rep, offset, rec| {
            rep.manifest_records += 1;
            if let Err(e) =
                cairndb::internals::version::VersionEdit::decode(rec, &state.manifest_path, offset)
            {
                rep.error(&state.manifest_path, &e);
            }
        },
    );

    let names = fs.list_dir(dir).unwrap_or_default();
    let mut blobs = Blobs::default();
    for (&number, b) in &state.version.blob_files {
        let path = filename::blob_file_name(dir, number);
        rep.blob_files += 1;
        let mut records = HashMap::new();
        match scan_file(&*fs, &path, |_, _, idx| {
            records.insert(idx.offset, (idx.size, idx.crc));
        }) {
            Ok(s) => {
                if (s.count, s.bytes, s.checksum) != (b.meta.count, b.meta.bytes, b.meta.checksum) {
                    rep.problem(
                        &path,
                        None,
                        format!(
                            "{} records of {} bytes, checksum {:#010x}; the MANIFEST records {} of {}, checksum {:#010x}",
                            s.count, s.bytes, s.checksum, b.meta.count, b.meta.bytes, b.meta.checksum
                        ),
                    );
                }
            }
            Err(e) => rep.error(&path, &e),
        }
        blobs.records.insert(number, records);
    }
    let mut live_tables = std::collections::HashSet::new();
    for (level, files) in state.version.files.iter().enumerate() {
        for f in files {
            live_tables.insert(f.number);
            check_table(&*fs, dir, level, f, &mut blobs, &mut rep);
        }
        if level >= 1 {
            for w in files.windows(2) {
                if w[0].largest_user_key() >= w[1].smallest_user_key() {
                    rep.problem(
                        &state.manifest_path,
                        None,
                        format!(
                            "level {level}: table {} (largest {}) overlaps table {} (smallest {})",
                            w[0].number,
                            esc(w[0].largest_user_key()),
                            w[1].number,
                            esc(w[1].smallest_user_key())
                        ),
                    );
                }
            }
        }
    }
    for (&number, b) in &state.version.blob_files {
        let refs = blobs.refs.get(&number).copied().unwrap_or(0);
        rep.blob_refs += refs;
        let live = b.meta.count.saturating_sub(b.garbage_count);
        if refs != live {
            rep.problem(
                &filename::blob_file_name(dir, number),
                None,
                format!(
                    "{refs} references in the tables, but the MANIFEST counts {} records of which {} garbage",
                    b.meta.count, b.garbage_count
                ),
            );
        }
    }
    let mut names_sorted = names.clone();
    names_sorted.sort();
    for name in &names_sorted {
        let path = dir.join(name);
        match filename::parse_file_name(name) {
            Some((FileType::Table, n)) if !live_tables.contains(&n) => rep.notes.push(format!(
                "{}: not in the MANIFEST (left by a crash; the next open deletes it)",
                path.display()
            )),
            Some((FileType::Blob, n)) if !state.version.blob_files.contains_key(&n) => {
                rep.notes.push(format!(
                    "{}: blob file not in the MANIFEST (left by a crash, or all garbage; the next open deletes it)",
                    path.display()
                ))
            }
            Some((FileType::Log, n)) => {
                rep.wals.push(format!(
                    "{}: {}",
                    path.display(),
                    crate::dump::wal_status(n, state.log_number)
                ));
                if n < state.log_number {
                    continue;
                }
                check_log(&*fs, &path, n, &mut rep, |rep, offset, rec| {
                    rep.wal_records += 1;
                    if let Err(e) = WriteBatch::from_data(rec, &path, offset) {
                        rep.error(&path, &e);
                    }
                });
            }
            _ => {}
        }
    }
    rep
}

/// The records of the live blob files (value offset -> size, crc) and the
/// references the tables hold to each file.
#[derive(Default)]
struct Blobs {
    records: HashMap<u64, HashMap<u64, (u64, u32)>>,
    refs: HashMap<u64, u64>,
}

impl Blobs {
    /// Checks one blob reference of a table; `Err` says what is wrong.
    fn check(&mut self, value: &[u8]) -> Result<(), String> {
        let idx = BlobIndex::decode(value)?;
        let records = self.records.get(&idx.file_number).ok_or_else(|| {
            format!(
                "blob reference to file {}, which the MANIFEST does not list",
                idx.file_number
            )
        })?;
        match records.get(&idx.offset) {
            None => Err(format!(
                "blob reference to file {} offset {}, where no record's value starts",
                idx.file_number, idx.offset
            )),
            Some(&(size, crc)) if (size, crc) != (idx.size, idx.crc) => Err(format!(
                "blob reference to file {} offset {}: size {} crc {:#010x}, the record has size {size} crc {crc:#010x}",
                idx.file_number, idx.offset, idx.size, idx.crc
            )),
            Some(_) => {
                *self.refs.entry(idx.file_number).or_default() += 1;
                Ok(())
            }
        }
    }
}

fn check_table(
    fs: &dyn Fs,
    dir: &Path,
    level: usize,
    meta: &cairndb::internals::version::edit::FileMeta,
    blobs: &mut Blobs,
    rep: &mut Report,
) {
    let path: PathBuf = filename::table_file_name(dir, meta.number);
    rep.tables += 1;
    match fs.file_size(&path) {
        Ok(sz) if sz != meta.size => {
            return rep.problem(
                &path,
                None,
                format!("size {sz}, but the MANIFEST records {}", meta.size),
            )
        }
        Ok(_) => {}
        Err(_) => {
            return rep.problem(
                &path,
                None,
                format!("listed in the MANIFEST at level {level} but missing"),
            )
        }
    }
    let table = match fs
        .open_random(&path)
        .and_then(|f| Table::open(f, meta.number, None, None))
    {
        Ok(t) => Arc::new(t),
        Err(e) => return rep.error(&path, &e),
    };
    match table.verify_checksums() {
        Ok(n) => rep.blocks += n,
        Err(e) => return rep.error(&path, &e),
    }
    let props = table.properties();
    if props.smallest_key != meta.smallest || props.largest_key != meta.largest {
        rep.problem(
            &path,
            None,
            format!(
                "properties say keys {}..{}, the MANIFEST says {}..{}",
                esc(&props.smallest_key),
                esc(&props.largest_key),
                esc(&meta.smallest),
                esc(&meta.largest)
            ),
        );
    }
    let mut it = table.iter(false);
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    let mut n = 0u64;
    while it.valid() {
        let k = it.key();
        let at = it.data_block_offset();
        match parse_internal_key(k) {
            None => rep.problem(
                &path,
                at,
                format!("entry {n}: malformed internal key {}", esc(k)),
            ),
            Some(p) if p.seq < meta.smallest_seq || p.seq > meta.largest_seq => rep.problem(
                &path,
                at,
                format!(
                    "entry {n}: sequence {} outside the MANIFEST's {}..{}",
                    p.seq, meta.smallest_seq, meta.largest_seq
                ),
            ),
            Some(p) if p.vtype == ValueType::BlobIndex => {
                if let Err(what) = blobs.check(it.value()) {
                    rep.problem(
                        &path,
                        at,
                        format!("entry {n} (key {}): {what}", esc(p.user_key)),
                    );
                }
            }
            _ => {}
        }
        match &prev {
            None if k != meta.smallest.as_slice() => rep.problem(
                &path,
                at,
                format!(
                    "first key {} is not the recorded smallest {}",
                    esc(k),
                    esc(&meta.smallest)
                ),
            ),
            Some(p) if compare_internal(p, k) != std::cmp::Ordering::Less => rep.problem(
                &path,
                at,
                format!(
                    "entry {n}: key {} (user key {}) does not sort after the previous {}",
                    esc(k),
                    esc(user_key(k)),
                    esc(p)
                ),
            ),
            _ => {}
        }
        prev = Some(k.to_vec());
        n += 1;
        it.next();
    }
    if let Err(e) = it.status() {
        rep.error(&path, &e);
    }
    if let Some(p) = prev {
        if p != meta.largest {
            rep.problem(
                &path,
                None,
                format!(
                    "last key {} is not the recorded largest {}",
                    esc(&p),
                    esc(&meta.largest)
                ),
            );
        }
    } else {
        rep.problem(&path, None, "table has no entries");
    }
    if n != props.num_entries {
        rep.problem(
            &path,
            None,
            format!("{n} entries, but the properties say {}", props.num_entries),
        );
    }
    rep.entries += n;
}

/// `cairndb verify`'s arguments.
#[derive(clap::Parser, Debug)]
#[command(about = "Check every checksum, the MANIFEST and the key order of a database")]
struct VerifyArgs {
    /// Print notes as well as problems.
    #[arg(short, long)]
    verbose: bool,
    /// The database's directory.
    dir: PathBuf,
}

/// Entry point: `args` are the arguments after `verify`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let Some(VerifyArgs { verbose, dir }) = crate::parse_args("verify", args)? else {
        return Ok(());
    };
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let rep = verify_db(&dir);
    if verbose {
        for n in &rep.notes {
            println!("note: {n}");
        }
    }
    for w in &rep.wals {
        println!("wal {w}");
    }
    for p in &rep.problems {
        println!("PROBLEM: {p}");
    }
    println!(
        "verify: {} tables, {} blocks, {} entries, {} blob files, {} blob references, {} MANIFEST records, {} WAL records, {} notes, {} problems",
        rep.tables,
        rep.blocks,
        rep.entries,
        rep.blob_files,
        rep.blob_refs,
        rep.manifest_records,
        rep.wal_records,
        rep.notes.len(),
        rep.problems.len()
    );
    if rep.problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problems found", rep.problems.len()))
    }
}
