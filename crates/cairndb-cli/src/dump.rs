//! `cairndb dump sst|wal|manifest|blob FILE`: prints a file's contents, in
//! the manner of RocksDB's `sst_dump`, `ldb` and `blob_dump`.
//!
//! * `sst`: the table's properties, then one line per entry: the escaped user
//!   key, sequence number, type and a value preview.
//! * `wal`: whether the log is live or obsolete (see [`wal_status`]), then one
//!   line per record (offset, first sequence number, count), then its
//!   operations.
//! * `manifest`: one line per version edit, with its offset.
//! * `blob`: the blob file's header and footer counts, then one line per
//!   record: value offset, stored size and codec, key and a value preview
//!   (`docs/format/blob.md`).
//!
//! Damage is printed where it is met (with the file offset) and makes the
//! exit status non-zero; dumping never panics on bad bytes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairndb::env::posix::PosixFs;
use cairndb::env::Fs;
use cairndb::internals::batch::BatchOp;
use cairndb::internals::blob::scan_file;
use cairndb::internals::filename::parse_file_name;
use cairndb::internals::iter::InternalIterator;
use cairndb::internals::key::{parse_internal_key, ValueType};
use cairndb::internals::sst::zip::format::{
    FLAG_HAS_DICT, FLAG_HEX_RUNS, FLAG_KEY_IN_VALUE, SECTION_NAMES,
};
use cairndb::internals::sst::Table;
use cairndb::internals::version::set::read_manifest;
use cairndb::internals::version::VersionEdit;
use cairndb::internals::wal::{LogReader, ReadEvent};
use cairndb::WriteBatch;

const USAGE: &str = "usage: cairndb dump sst|wal|manifest|blob FILE [--max-value N]";

/// Printable ASCII stays, everything else becomes `\xNN` (and `\` is `\\`).
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s
}

fn preview(v: &[u8], max: usize) -> String {
    if v.len() <= max {
        escape(v)
    } else {
        format!("{}... ({} bytes)", escape(&v[..max]), v.len())
    }
}

/// The file number in a file's name (0 when the name is not a database name).
fn number_of(path: &Path) -> u64 {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_file_name)
        .map(|(_, n)| n)
        .unwrap_or(0)
}

/// Whether WAL `number` is live or obsolete given the MANIFEST's log
/// number (`docs/format/wal.md`): a log numbered at or above it holds writes
/// not yet in a table and is replayed at the next open; an older one is
/// obsolete, left in the directory for recycling as a later log, and never
/// replayed.
pub fn wal_status(number: u64, manifest_log_number: u64) -> String {
    if number >= manifest_log_number {
        format!(
            "live (number {number} >= the MANIFEST's log number {manifest_log_number}): replayed at the next open"
        )
    } else {
        format!(
            "obsolete (number {number} < the MANIFEST's log number {manifest_log_number}): left for reuse as a recycled log, not replayed"
        )
    }
}

fn dump_sst(fs: &dyn Fs, path: &Path, max_value: usize) -> Result<(), String> {
    let table = fs
        .open_random(path)
        .and_then(|f| Table::open(f, number_of(path), None, None))
        .map_err(|e| e.to_string())?;
    let table = Arc::new(table);
    let p = table.properties();
    println!("file: {} ({} bytes)", path.display(), table.file_size());
    println!("properties:");
    println!(
        "  entries: {} (deletions {})",
        p.num_entries, p.num_deletions
    );
    println!(
        "  raw key bytes: {} raw value bytes: {}",
        p.raw_key_size, p.raw_value_size
    );
    println!(
        "  data bytes: {} in {} blocks, index bytes: {}, filter bytes: {}",
        p.data_size, p.num_data_blocks, p.index_size, p.filter_size
    );
    println!("  sequence numbers: {}..{}", p.smallest_seq, p.largest_seq);
    println!("  compression: {}", p.compression);
    println!("  smallest key: {}", escape(&p.smallest_key));
    println!("  largest key: {}", escape(&p.largest_key));
    println!("  prefix extractor: {}", p.prefix_extractor_name);
    if let Table::Zip(z) = &*table {
        let m = z.meta();
        println!(
            "zip: version {}, {} records, {} keys, {} groups of {}, level {}",
            z.format_version(),
            m.num_records,
            m.num_keys,
            m.num_groups,
            m.group_size,
            m.compression_level
        );
        println!(
            "  flags: dictionary {}, keys cut out of values {}, hex runs packed {}",
            yes_no(m.flags & FLAG_HAS_DICT != 0),
            yes_no(m.flags & FLAG_KEY_IN_VALUE != 0),
            if m.flags & FLAG_HEX_RUNS != 0 {
                format!("yes (escape byte 0x{:02x})", m.hex_escape)
            } else {
                "no".to_string()
            }
        );
        for (s, name) in m.sections.iter().zip(SECTION_NAMES) {
            println!("  {name} section: {} bytes at {}", s.size, s.offset);
        }
        println!(
            "  resident when open: {} bytes (key index {}{}, dictionary {})",
            z.index_memory(),
            z.key_index_len(),
            if z.key_index_in_place() {
                ", read in place from the file"
            } else {
                ", decoded into memory"
            },
            z.dictionary_len()
        );
    }
    println!("entries:");
    let mut it = table.iter(false);
    it.seek_to_first();
    while it.valid() {
        match parse_internal_key(it.key()) {
            Some(k) => {
                let (t, v) = match k.vtype {
                    ValueType::Value => ("PUT", preview(it.value(), max_value)),
                    ValueType::Deletion => ("DEL", preview(it.value(), max_value)),
                    ValueType::BlobIndex => (
                        "BLOB",
                        match cairndb::internals::blob::BlobIndex::decode(it.value()) {
                            Ok(b) => format!(
                                "file {} offset {} size {} compression {}",
                                b.file_number, b.offset, b.size, b.compression
                            ),
                            Err(e) => format!("bad blob reference: {e}"),
                        },
                    ),
                };
                println!("  '{}' @ {} : {t} => '{v}'", escape(k.user_key), k.seq);
            }
            None => println!("  malformed internal key '{}'", escape(it.key())),
        }
        it.next();
    }
    it.status().map_err(|e| e.to_string())
}

/// Reads every record of a log file, calling `each(offset, payload)`;
/// damage is printed and counted.
fn read_log(
    fs: &dyn Fs,
    path: &Path,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), String>,
) -> Result<u64, String> {
    let file = fs.open_sequential(path).map_err(|e| e.to_string())?;
    let mut r = LogReader::new(file, number_of(path));
    let mut rec = Vec::new();
    let mut damage = 0u64;
    loop {
        match r.read_record(&mut rec).map_err(|e| e.to_string())? {
            ReadEvent::Record { offset } => {
                if let Err(e) = each(offset, &rec) {
                    println!("  DAMAGE: {e}");
                    damage += 1;
                }
            }
            ReadEvent::Eof => break,
            ReadEvent::Corruption { offset, what, .. } => {
                println!("DAMAGE at offset {offset}: {what}");
                damage += 1;
            }
        }
    }
    Ok(damage)
}

fn dump_wal(fs: &dyn Fs, path: &Path, max_value: usize) -> Result<u64, String> {
    println!("file: {}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match read_manifest(fs, dir) {
        Ok(state) => println!("status: {}", wal_status(number_of(path), state.log_number)),
        Err(e) => println!("status: unknown (no readable MANIFEST beside the file: {e})"),
    }
    read_log(fs, path, |offset, rec| {
        let b = WriteBatch::from_data(rec, path, offset).map_err(|e| e.to_string())?;
        println!(
            "record at offset {offset}: sequence {} count {} ({} bytes)",
            b.sequence(),
            b.count(),
            rec.len()
        );
        let mut i = 0u64;
        for op in b.iter() {
            let seq = b.sequence() + i;
            if !matches!(op, Ok(BatchOp::Marker(..))) {
                i += 1;
            }
            match op {
                Ok(BatchOp::Marker(m, name)) => println!("  {m:?} transaction '{}'", escape(name)),
                Ok(BatchOp::Put(k, v)) => {
                    println!(
                        "  PUT '{}' @ {seq} => '{}'",
                        escape(k),
                        preview(v, max_value)
                    )
                }
                Ok(BatchOp::Delete(k)) => println!("  DEL '{}' @ {seq}", escape(k)),
                Err(e) => return Err(format!("offset {offset}: {e}")),
            }
        }
        Ok(())
    })
}

fn dump_blob(fs: &dyn Fs, path: &Path, max_value: usize) -> Result<(), String> {
    use cairndb::internals::sst::format::decompress_block;
    println!("file: {}", path.display());
    println!("records:");
    let summary = scan_file(fs, path, |key, stored, idx| {
        let value = if idx.compression == 0 {
            preview(stored, max_value)
        } else {
            match decompress_block(path, idx.offset, idx.compression, stored) {
                Ok(v) => preview(&v, max_value),
                Err(e) => format!("<{e}>"),
            }
        };
        println!(
            "  @{} size {} compression {} '{}' => '{value}'",
            idx.offset,
            idx.size,
            idx.compression,
            escape(key)
        );
    })
    .map_err(|e| e.to_string())?;
    println!(
        "footer: {} records, {} record bytes; header compression {}; file checksum {:#010x}",
        summary.count, summary.bytes, summary.compression, summary.checksum
    );
    Ok(())
}

fn dump_manifest(fs: &dyn Fs, path: &Path) -> Result<u64, String> {
    println!("file: {}", path.display());
    read_log(fs, path, |offset, rec| {
        let e = VersionEdit::decode(rec, path, offset).map_err(|e| e.to_string())?;
        let mut line = format!("edit at offset {offset}:");
        if let Some(v) = e.format_version {
            let _ = write!(line, " format_version {v}");
        }
        if let Some(v) = e.log_number {
            let _ = write!(line, " log_number {v}");
        }
        if let Some(v) = e.next_file_number {
            let _ = write!(line, " next_file_number {v}");
        }
        if let Some(v) = e.last_sequence {
            let _ = write!(line, " last_sequence {v}");
        }
        println!("{line}");
        for (l, k) in &e.compact_pointers {
            println!("  compact_pointer level {l} '{}'", escape(k));
        }
        for (l, n) in &e.deleted_files {
            println!("  delete file {n} from level {l}");
        }
        for (l, f) in &e.new_files {
            println!(
                "  add file {} to level {l}: {} bytes, keys '{}' .. '{}', seq {}..{}{}",
                f.number,
                f.size,
                escape(&f.smallest),
                escape(&f.largest),
                f.smallest_seq,
                f.largest_seq,
                if f.oldest_blob_file != 0 {
                    format!(", oldest blob file {}", f.oldest_blob_file)
                } else {
                    String::new()
                }
            );
        }
        for b in &e.new_blob_files {
            println!(
                "  add blob file {}: {} records, {} bytes, checksum {:#010x}",
                b.number, b.count, b.bytes, b.checksum
            );
        }
        for g in &e.blob_garbage {
            println!(
                "  blob garbage in file {}: {} records, {} bytes",
                g.number, g.count, g.bytes
            );
        }
        Ok(())
    })
}

/// `cairndb dump`'s arguments.
#[derive(clap::Parser, Debug)]
#[command(about = "Print an sst, wal, manifest or blob file, record by record")]
struct DumpArgs {
    /// What the file is: sst, wal (or log), manifest or blob.
    #[arg(value_parser = ["sst", "wal", "log", "manifest", "blob"])]
    kind: String,
    /// The file.
    file: PathBuf,
    /// Values longer than this are cut when printed.
    #[arg(long = "max-value", alias = "max_value", default_value_t = 64)]
    max_value: usize,
}

/// Entry point: `args` are the arguments after `dump`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let Some(DumpArgs {
        kind,
        file,
        max_value,
    }) = crate::parse_args("dump", args)?
    else {
        return Ok(());
    };
    let path = file;
    let fs = PosixFs::shared();
    let damage = match kind.as_str() {
        "sst" => dump_sst(&*fs, &path, max_value).map(|_| 0)?,
        "wal" | "log" => dump_wal(&*fs, &path, max_value)?,
        "manifest" => dump_manifest(&*fs, &path)?,
        "blob" => dump_blob(&*fs, &path, max_value).map(|_| 0)?,
        _ => return Err(USAGE.into()),
    };
    if damage > 0 {
        return Err(format!("{}: {damage} damaged records", path.display()));
    }
    Ok(())
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
