//! Reads records back from a log file (`docs/format/wal.md`).
//!
//! The reader never panics on any bytes: damage is reported as
//! [`ReadEvent::Corruption`] with the file offset where it starts, after
//! which the reader resynchronises at the next block (fragments of the
//! damaged record found there are skipped silently).

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::{BLOCK_SIZE, FIRST_TYPE, FULL_TYPE, HEADER_SIZE, LAST_TYPE, MIDDLE_TYPE};
use crate::env::SequentialFile;
use crate::error::Result;
use crate::util::crc;

/// A physical record header (`docs/format/wal.md`, "Physical records"):
/// crc (4) | length (2) | type (1) | log number (4), little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Masked CRC32C of the type byte, the log number and the payload.
    pub masked_crc: u32,
    /// Payload bytes after the header.
    pub len: u16,
    /// Record type: `FULL_TYPE`, `FIRST_TYPE`, `MIDDLE_TYPE`, `LAST_TYPE`;
    /// anything else is damage.
    pub kind: u8,
    /// The low 32 bits of the number of the log the record was written for
    /// (a recycled file holds records of an older number after the new
    /// log's end).
    pub log_number: u32,
}

impl RecordHeader {
    /// Decodes the header at the start of `b`; `None` when `b` is shorter
    /// than `HEADER_SIZE`.
    pub fn decode(b: &[u8]) -> Option<RecordHeader> {
        let h: &[u8; HEADER_SIZE] = b.first_chunk()?;
        Some(RecordHeader {
            masked_crc: u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
            len: u16::from_le_bytes([h[4], h[5]]),
            kind: h[6],
            log_number: u32::from_le_bytes([h[7], h[8], h[9], h[10]]),
        })
    }

    /// True for one of the four record types.
    pub fn known_type(&self) -> bool {
        matches!(self.kind, FULL_TYPE | FIRST_TYPE | MIDDLE_TYPE | LAST_TYPE)
    }

    /// True when the header is stamped with log `number` (its low 32 bits,
    /// as the format stores them).
    pub fn is_for_log(&self, number: u64) -> bool {
        self.log_number == number as u32
    }

    /// Bytes of header and payload together.
    pub fn record_len(&self) -> usize {
        HEADER_SIZE + self.len as usize
    }

    /// Whether the checksum holds for the record starting at `record[0]`
    /// (this header, then the payload): `None` when `record` is shorter than
    /// [`RecordHeader::record_len`].
    pub fn crc_matches(&self, record: &[u8]) -> Option<bool> {
        // The crc covers the type (byte 6), the log number (7..11) and the
        // payload, which are contiguous from byte 6 of the header.
        let covered = record.get(6..self.record_len())?;
        Some(crc::unmask(self.masked_crc) == crc::crc32c(covered))
    }

    /// For a record of log `number` starting at `rest[0]` that fails its
    /// checks: the one header field whose damage explains it, if any. The
    /// record is intact under its checksum once that field alone is set
    /// to another value: a length (the payload must lie within `rest`, which
    /// the caller ends at the record's block end, and differ from the stored
    /// length in one byte), a known type, or this log's number; or the
    /// stored checksum differs from the record's in one byte. A torn write
    /// or a recycled file's stale bytes match this only by a checksum
    /// collision (odds of about 2^-22 for the checksum, 2^-23 for the 510
    /// lengths), so a match says the record was written whole and damaged
    /// since.
    pub fn damaged_field(rest: &[u8], number: u64) -> Option<&'static str> {
        let h = RecordHeader::decode(rest)?;
        let want = crc::unmask(h.masked_crc);
        let payload = rest.get(HEADER_SIZE..)?;
        let log = (number as u32).to_le_bytes();
        let head = |kind: u8, log: [u8; 4]| [kind, log[0], log[1], log[2], log[3]];
        if h.known_type() && h.is_for_log(number) {
            if let Some(covered) = rest.get(6..h.record_len()) {
                // The stored checksum differs in one byte from the record's.
                let diff = (crc::mask(crc::crc32c(covered)) ^ h.masked_crc).to_le_bytes();
                if diff.iter().filter(|&&b| b != 0).count() == 1 {
                    return Some("checksum");
                }
            }
            // Only the length can be wrong: try every length that fits and
            // differs from the stored one in one of its two bytes.
            let stored = h.len.to_le_bytes();
            let one_byte_off = |n: usize| {
                u16::try_from(n).is_ok_and(|n| {
                    let b = n.to_le_bytes();
                    (b[0] != stored[0]) != (b[1] != stored[1])
                })
            };
            let mut c = crc::crc32c(&head(h.kind, log));
            for (n, b) in payload.iter().enumerate() {
                if c == want && one_byte_off(n) {
                    return Some("length");
                }
                c = crc::extend(c, std::slice::from_ref(b));
            }
            return (c == want && one_byte_off(payload.len())).then_some("length");
        }
        let body = payload.get(..h.len as usize)?;
        let matches =
            |kind: u8, log: [u8; 4]| crc::extend(crc::crc32c(&head(kind, log)), body) == want;
        if !h.known_type()
            && h.is_for_log(number)
            && [FULL_TYPE, FIRST_TYPE, MIDDLE_TYPE, LAST_TYPE]
                .into_iter()
                .any(|k| matches(k, log))
        {
            return Some("type");
        }
        if h.known_type() && !h.is_for_log(number) && matches(h.kind, log) {
            return Some("log number");
        }
        None
    }
}

/// What [`LogReader::read_record`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadEvent {
    /// A complete record is in `out`; `offset` is where its first fragment's
    /// header starts in the file.
    Record {
        /// File offset of the record's first header.
        offset: u64,
    },
    /// The end of the log: end of file, an all-zero header (preallocated or
    /// zero-filled space), or a record of another log number (an older log
    /// in a recycled file). Every later call returns `Eof` again.
    Eof,
    /// Damaged bytes starting at `offset` were dropped.
    Corruption {
        /// File offset of the damaged record (its first fragment when known).
        offset: u64,
        /// What was wrong.
        what: String,
        /// The damaged record was written whole and one header field damaged
        /// since ([`RecordHeader::damaged_field`]): no torn write explains it.
        written_whole: bool,
    },
}

/// Result of reading one physical record.
enum Physical {
    Record {
        t: u8,
        /// Range of the payload in `buf`.
        start: usize,
        end: usize,
        /// File offset of the header.
        offset: u64,
        /// Position of the header in `buf` (to push the record back).
        pos: usize,
    },
    Eof,
    Bad {
        offset: u64,
        what: String,
        written_whole: bool,
    },
}

/// Reads a log file front to back.
pub struct LogReader {
    file: Box<dyn SequentialFile>,
    log_number: u32,
    /// The current block (up to BLOCK_SIZE bytes).
    buf: Vec<u8>,
    /// Read position in `buf`.
    pos: usize,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    /// The file returned fewer than BLOCK_SIZE bytes: no more blocks.
    file_eof: bool,
    /// The log has ended (sticky).
    ended: bool,
    /// After damage: skip MIDDLE/LAST fragments until a FULL or FIRST.
    resyncing: bool,
    dropped_bytes: u64,
}

impl LogReader {
    /// A reader of the log `log_number` (its low 32 bits are compared with
    /// each header's) stored in `file`, from its start.
    pub fn new(file: Box<dyn SequentialFile>, log_number: u64) -> LogReader {
        LogReader {
            file,
            log_number: log_number as u32,
            buf: Vec::with_capacity(BLOCK_SIZE),
            pos: 0,
            buf_offset: 0,
            file_eof: false,
            ended: false,
            resyncing: false,
            dropped_bytes: 0,
        }
    }

    /// Total bytes dropped because of damage so far (damaged fragments, the
    /// rest of their blocks, and fragments of incomplete records).
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }

    /// The path of the file being read.
    pub fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// Reads the next record into `out` (replacing its contents). I/O errors
    /// are returned as `Err`; damage as `Ok(ReadEvent::Corruption)`.
    pub fn read_record(&mut self, out: &mut Vec<u8>) -> Result<ReadEvent> {
        out.clear();
        let mut in_fragment = false;
        let mut record_offset = 0u64;
        loop {
            match self.read_physical()? {
                Physical::Record {
                    t,
                    start,
                    end,
                    offset,
                    pos,
                } => {
                    let data = self.buf.get(start..end).unwrap_or_default();
                    match t {
                        FULL_TYPE | FIRST_TYPE => {
                            self.resyncing = false;
                            if in_fragment {
                                // Push this record back and report the
                                // unfinished one.
                                self.pos = pos;
                                self.dropped_bytes += out.len() as u64;
                                out.clear();
                                return Ok(ReadEvent::Corruption {
                                    offset: record_offset,
                                    what: "fragmented record has no LAST fragment".into(),
                                    written_whole: false,
                                });
                            }
                            out.extend_from_slice(data);
                            if t == FULL_TYPE {
                                return Ok(ReadEvent::Record { offset });
                            }
                            in_fragment = true;
                            record_offset = offset;
                        }
                        MIDDLE_TYPE | LAST_TYPE => {
                            if !in_fragment {
                                self.dropped_bytes += (HEADER_SIZE + data.len()) as u64;
                                if self.resyncing {
                                    continue;
                                }
                                let name = if t == MIDDLE_TYPE { "MIDDLE" } else { "LAST" };
                                return Ok(ReadEvent::Corruption {
                                    offset,
                                    what: format!("{name} fragment without a FIRST fragment"),
                                    written_whole: false,
                                });
                            }
                            out.extend_from_slice(data);
                            if t == LAST_TYPE {
                                return Ok(ReadEvent::Record {
                                    offset: record_offset,
                                });
                            }
                        }
                        _ => unreachable!("read_physical returns known types only"),
                    }
                }
                Physical::Eof => {
                    if in_fragment {
                        self.dropped_bytes += out.len() as u64;
                        out.clear();
                        return Ok(ReadEvent::Corruption {
                            offset: record_offset,
                            what: "log ends inside a fragmented record".into(),
                            written_whole: false,
                        });
                    }
                    return Ok(ReadEvent::Eof);
                }
                Physical::Bad {
                    offset,
                    what,
                    written_whole,
                } => {
                    self.resyncing = true;
                    if in_fragment {
                        self.dropped_bytes += out.len() as u64;
                        out.clear();
                        return Ok(ReadEvent::Corruption {
                            offset: record_offset,
                            what: format!("fragment at offset {offset} is damaged: {what}"),
                            written_whole,
                        });
                    }
                    return Ok(ReadEvent::Corruption {
                        offset,
                        what,
                        written_whole,
                    });
                }
            }
        }
    }

    /// Reads the next block into `buf`. Sets `file_eof` on a short block.
    fn read_block(&mut self) -> Result<()> {
        self.buf_offset += self.buf.len() as u64;
        self.buf.clear();
        self.buf.resize(BLOCK_SIZE, 0);
        self.pos = 0;
        let mut n = 0;
        while n < BLOCK_SIZE {
            let Some(free) = self.buf.get_mut(n..) else {
                break;
            };
            match self.file.read(free) {
                Ok(0) => break,
                Ok(k) => n += k.min(BLOCK_SIZE - n),
                Err(e) => {
                    self.buf.truncate(n);
                    return Err(e);
                }
            }
        }
        self.buf.truncate(n);
        if n < BLOCK_SIZE {
            self.file_eof = true;
        }
        Ok(())
    }

    /// A `Physical::Bad` for the record at `pos` of the block, at file
    /// `offset`: `what`, extended when the record was written whole and one
    /// header field damaged since.
    fn bad(&self, pos: usize, offset: u64, what: String) -> Physical {
        let rest = self.buf.get(pos..).unwrap_or_default();
        match RecordHeader::damaged_field(rest, u64::from(self.log_number)) {
            Some(field) => Physical::Bad {
                offset,
                what: format!("{what}: the record is intact but for its {field} field, so it was written whole and damaged since"),
                written_whole: true,
            },
            None => Physical::Bad {
                offset,
                what,
                written_whole: false,
            },
        }
    }

    /// Drops the rest of the current block after damage at `pos`.
    fn drop_block(&mut self, pos: usize) {
        self.dropped_bytes += (self.buf.len() - pos) as u64;
        self.pos = self.buf.len();
    }

    fn read_physical(&mut self) -> Result<Physical> {
        loop {
            if self.ended {
                return Ok(Physical::Eof);
            }
            let remaining = self.buf.len() - self.pos;
            if remaining < HEADER_SIZE {
                if !self.file_eof {
                    // The rest of a full block is padding; move on.
                    self.read_block()?;
                    continue;
                }
                self.ended = true;
                let tail = self.buf.get(self.pos..).unwrap_or_default();
                if tail.iter().all(|&b| b == 0) {
                    return Ok(Physical::Eof);
                }
                let offset = self.buf_offset + self.pos as u64;
                self.dropped_bytes += tail.len() as u64;
                self.pos = self.buf.len();
                return Ok(Physical::Bad {
                    offset,
                    what: format!(
                        "log ends inside a record header ({} of {HEADER_SIZE} bytes)",
                        tail.len()
                    ),
                    written_whole: false,
                });
            }
            let pos = self.pos;
            let offset = self.buf_offset + pos as u64;
            let rest = self.buf.get(pos..).unwrap_or_default();
            // At least HEADER_SIZE bytes remain (checked above).
            let Some(h) = RecordHeader::decode(rest) else {
                self.ended = true;
                return Ok(Physical::Eof);
            };
            if rest.iter().take(HEADER_SIZE).all(|&b| b == 0) {
                // Preallocated or zero-filled space: the end of the log.
                self.ended = true;
                return Ok(Physical::Eof);
            }
            let len = h.len as usize;
            let t = h.kind;
            let start = pos + HEADER_SIZE;
            let end = start + len;
            if end > self.buf.len() {
                if self.file_eof {
                    // The last block is short: the writer stopped mid-record
                    // (unless the length itself is what is damaged).
                    let bad = self.bad(
                        pos,
                        offset,
                        format!(
                            "log ends inside a record: header says {len} bytes, {} present",
                            self.buf.len() - start
                        ),
                    );
                    self.ended = true;
                    self.dropped_bytes += (self.buf.len() - pos) as u64;
                    self.pos = self.buf.len();
                    return Ok(bad);
                }
                let bad = self.bad(
                    pos,
                    offset,
                    format!("record length {len} runs past the end of its block"),
                );
                self.drop_block(pos);
                return Ok(bad);
            }
            if h.crc_matches(rest) != Some(true) {
                let bad = self.bad(pos, offset, "record checksum mismatch".into());
                self.drop_block(pos);
                return Ok(bad);
            }
            if h.log_number != self.log_number {
                // A valid record of another log: this file was recycled and
                // what follows is the previous log's data.
                self.ended = true;
                return Ok(Physical::Eof);
            }
            match t {
                FULL_TYPE | FIRST_TYPE | MIDDLE_TYPE | LAST_TYPE => {
                    self.pos = end;
                    return Ok(Physical::Record {
                        t,
                        start,
                        end,
                        offset,
                        pos,
                    });
                }
                _ => {
                    self.drop_block(pos);
                    return Ok(Physical::Bad {
                        offset,
                        what: format!("unknown record type {t}"),
                        written_whole: false,
                    });
                }
            }
        }
    }
}
