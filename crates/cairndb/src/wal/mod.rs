//! The write-ahead log: every write batch is appended here before it reaches
//! the memtable, and replayed from here after a crash.
//!
//! The byte format (LevelDB's log format with RocksDB's recyclable headers)
//! is specified in `docs/format/wal.md`; [`LogWriter`] writes it,
//! [`LogReader`] reads it back, and [`replay_log`] applies a log's records
//! under a [`WalRecoveryMode`].

mod reader;
mod writer;

use std::ops::ControlFlow;
use std::path::Path;

pub use reader::{LogReader, ReadEvent, RecordHeader};
pub use writer::LogWriter;

use crate::env::Fs;
use crate::error::{Error, Result};
use crate::options::WalRecoveryMode;

// Format constants: `docs/format/wal.md`, "Blocks" and "Physical records".

/// Logs are framed in blocks of this many bytes.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Physical record header: crc (4) + length (2) + type (1) + log number (4).
pub const HEADER_SIZE: usize = 4 + 2 + 1 + 4;
/// A whole record in one fragment.
pub const FULL_TYPE: u8 = 5;
/// First fragment of a record.
pub const FIRST_TYPE: u8 = 6;
/// Interior fragment of a record.
pub const MIDDLE_TYPE: u8 = 7;
/// Last fragment of a record.
pub const LAST_TYPE: u8 = 8;
/// Largest type value used.
pub const MAX_TYPE: u8 = LAST_TYPE;

/// What [`replay_log`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Records handed to `apply`.
    pub records: u64,
    /// Payload bytes handed to `apply`.
    pub bytes: u64,
    /// Bytes dropped because of damage (tolerated tails, skipped records).
    pub dropped_bytes: u64,
    /// Under `PointInTimeRecovery`: offset of the first damage, where replay
    /// stopped. The caller must not replay any later log.
    pub stopped_at: Option<u64>,
    /// Damaged regions met (each reported once).
    pub corruptions: u64,
    /// `apply` returned `ControlFlow::Break`: replay stopped there, at the
    /// caller's request, with the rest of the log unread.
    pub halted: bool,
}

/// Replays the log at `path` (number `log_number`), calling `apply(offset,
/// payload)` for each record in order, and handling damage per `mode`:
///
/// * `TolerateCorruptedTailRecords`: damage with no valid record after it in
///   this file (a torn tail) is dropped; damage followed by a valid record,
///   or a tail record that was written whole and damaged since
///   ([`RecordHeader::damaged_field`]), is `Err(Corruption)` naming the file
///   and the damage's offset.
/// * `AbsoluteConsistency`: any damage, even a torn tail, is `Err(Corruption)`.
/// * `PointInTimeRecovery`: replay stops at the first damage; everything
///   before it was applied; `stopped_at` is set to its offset.
/// * `SkipAnyCorruptedRecords`: damaged records are skipped and replay
///   continues.
///
/// The end of the log is the end of the file, an all-zero header, or a record
/// stamped with another log number (a recycled file). I/O errors and errors
/// returned by `apply` are returned as they are; `apply` returning
/// `Ok(ControlFlow::Break(()))` stops the replay with `halted` set.
pub fn replay_log(
    fs: &dyn Fs,
    path: &Path,
    log_number: u64,
    mode: WalRecoveryMode,
    mut apply: impl FnMut(u64, &[u8]) -> Result<ControlFlow<()>>,
) -> Result<ReplayStats> {
    let file = fs.open_sequential(path)?;
    let mut reader = LogReader::new(file, log_number);
    let mut stats = ReplayStats::default();
    let mut record = Vec::new();
    // Under TolerateCorruptedTailRecords: the first damage seen, pending
    // the decision whether it is a tail.
    let mut pending: Option<(u64, String)> = None;
    // A damage met so far was a record written whole: no torn tail.
    let mut written_whole_damage = false;
    loop {
        match reader.read_record(&mut record)? {
            ReadEvent::Record { offset } => {
                if let Some((at, what)) = pending.take() {
                    return Err(Error::corruption(
                        path,
                        at,
                        format!(
                            "{what} (not at the tail: a valid record follows at offset {offset})"
                        ),
                    ));
                }
                let flow = apply(offset, &record)?;
                stats.records += 1;
                stats.bytes += record.len() as u64;
                if flow.is_break() {
                    stats.halted = true;
                    break;
                }
            }
            ReadEvent::Eof => break,
            ReadEvent::Corruption {
                offset,
                what,
                written_whole,
            } => {
                stats.corruptions += 1;
                written_whole_damage |= written_whole;
                match mode {
                    WalRecoveryMode::AbsoluteConsistency => {
                        return Err(Error::corruption(path, offset, what));
                    }
                    WalRecoveryMode::PointInTimeRecovery => {
                        stats.stopped_at = Some(offset);
                        break;
                    }
                    WalRecoveryMode::TolerateCorruptedTailRecords => {
                        // Keep scanning: only a tail may be dropped.
                        if pending.is_none() {
                            pending = Some((offset, what));
                        }
                    }
                    WalRecoveryMode::SkipAnyCorruptedRecords => {}
                }
            }
        }
    }
    if let Some((at, what)) = pending {
        // Damage at the tail is dropped only when it can be a torn write: a
        // record written whole and damaged since was acted on.
        if written_whole_damage {
            return Err(Error::corruption(path, at, what));
        }
    }
    stats.dropped_bytes = reader.dropped_bytes();
    Ok(stats)
}

#[cfg(test)]
mod tests;
