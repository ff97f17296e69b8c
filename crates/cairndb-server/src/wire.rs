//! Output side of the wire format: [`Out`], the connection's output
//! buffer, into which whole packets (3-byte length, sequence id, payload)
//! are written, and encoders of the generic packets (OK, EOF, ERR, column
//! definition).
//!
//! Invariants: between `begin` and `end` exactly one payload is being
//! written at the end of the buffer; `end` fills in its header and splits a
//! payload of 16 MiB - 1 bytes or more into several packets, as the
//! protocol requires. The sequence id advances by one per packet, wrapping.
//! No locking: an `Out` belongs to one connection.

// Encoders only, but they index headers they reserved themselves: keep the
// same discipline as the decoders.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use mysql_common::constants::{CapabilityFlags, StatusFlags};
use mysql_common::io::BufMutExt;

use crate::api::{Column, SqlError};

/// Largest payload of one packet; a payload this long or longer continues
/// in the next packet.
pub(crate) const MAX_CHUNK: usize = 0xFF_FFFF;

/// The connection's output buffer.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub(crate) buf: Vec<u8>,
    /// Sequence id of the next packet.
    pub(crate) seq: u8,
    /// Offset of the header of the packet being written.
    start: usize,
    /// Bytes written to the client and not yet counted
    /// (`Bytes_sent`): the connection adds each write's length and
    /// reports the total once per command.
    pub(crate) sent: u64,
}

impl Out {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Out {
            buf: Vec::with_capacity(n),
            seq: 0,
            start: 0,
            sent: 0,
        }
    }

    /// Starts a packet; the payload is appended to `self.buf`.
    #[inline]
    pub(crate) fn begin(&mut self) {
        self.start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
    }

    /// Ends the packet started by `begin`.
    #[inline]
    pub(crate) fn end(&mut self) {
        let len = self.buf.len() - self.start - 4;
        if len < MAX_CHUNK {
            let h = (len as u32).to_le_bytes();
            if let Some(hdr) = self.buf.get_mut(self.start..self.start + 4) {
                hdr.copy_from_slice(&[h[0], h[1], h[2], self.seq]);
            }
            self.seq = self.seq.wrapping_add(1);
        } else {
            self.split_long();
        }
    }

    /// Rewrites the payload after `start` as packets of at most
    /// `MAX_CHUNK` bytes (a payload that is a multiple of it ends with an
    /// empty packet).
    #[cold]
    fn split_long(&mut self) {
        let payload = self.buf.split_off(self.start + 4);
        self.buf.truncate(self.start);
        let mut rest = &payload[..];
        loop {
            let n = rest.len().min(MAX_CHUNK);
            let h = (n as u32).to_le_bytes();
            self.buf.extend_from_slice(&[h[0], h[1], h[2], self.seq]);
            self.seq = self.seq.wrapping_add(1);
            let (chunk, tail) = rest.split_at(n);
            self.buf.extend_from_slice(chunk);
            rest = tail;
            if n < MAX_CHUNK {
                break;
            }
        }
    }

    /// Writes a whole OK packet (header 0x00) and returns the offset of
    /// its status flags, for a later patch.
    pub(crate) fn ok(
        &mut self,
        header: u8,
        affected: u64,
        last_id: u64,
        status: StatusFlags,
        warnings: u16,
        info: &[u8],
    ) -> usize {
        self.begin();
        self.buf.push(header);
        self.buf.put_lenenc_int(affected);
        self.buf.put_lenenc_int(last_id);
        let at = self.buf.len();
        self.buf.extend_from_slice(&status.bits().to_le_bytes());
        self.buf.extend_from_slice(&warnings.to_le_bytes());
        // The manual says string<EOF>, but servers write a length-encoded
        // string and clients read one (libmysqlclient, mysql_common).
        if !info.is_empty() {
            self.buf.put_lenenc_str(info);
        }
        self.end();
        at
    }

    /// Writes the end of a row sequence or of column definitions: an EOF
    /// packet, or with CLIENT_DEPRECATE_EOF an OK packet with header 0xFE.
    /// Returns the offset of its status flags.
    pub(crate) fn eof(
        &mut self,
        caps: CapabilityFlags,
        status: StatusFlags,
        warnings: u16,
    ) -> usize {
        if caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
            self.ok(0xFE, 0, 0, status, warnings, b"")
        } else {
            self.old_eof(status, warnings)
        }
    }

    /// An EOF packet in the pre-5.7 form (0xFE, warnings, status).
    pub(crate) fn old_eof(&mut self, status: StatusFlags, warnings: u16) -> usize {
        self.begin();
        self.buf.push(0xFE);
        self.buf.extend_from_slice(&warnings.to_le_bytes());
        let at = self.buf.len();
        self.buf.extend_from_slice(&status.bits().to_le_bytes());
        self.end();
        at
    }

    /// Writes an ERR packet.
    pub(crate) fn err(&mut self, e: &SqlError) {
        self.begin();
        self.buf.push(0xFF);
        self.buf.extend_from_slice(&e.code.to_le_bytes());
        self.buf.push(b'#');
        self.buf.extend_from_slice(&e.sqlstate);
        self.buf.extend_from_slice(e.message.as_bytes());
        self.end();
    }

    /// Writes a column definition (Protocol::ColumnDefinition41).
    pub(crate) fn column(&mut self, c: &Column) {
        self.begin();
        self.buf.put_lenenc_str(b"def");
        self.buf.put_lenenc_str(c.schema.as_bytes());
        self.buf.put_lenenc_str(c.table.as_bytes());
        self.buf.put_lenenc_str(c.org_table.as_bytes());
        self.buf.put_lenenc_str(c.name.as_bytes());
        self.buf.put_lenenc_str(c.org_name.as_bytes());
        self.buf.push(0x0c);
        self.buf.extend_from_slice(&c.charset.to_le_bytes());
        self.buf.extend_from_slice(&c.length.to_le_bytes());
        self.buf.push(c.col_type as u8);
        self.buf.extend_from_slice(&c.flags.bits().to_le_bytes());
        self.buf.push(c.decimals);
        self.buf.extend_from_slice(&[0, 0]);
        self.end();
    }

    /// Sets or clears status bits in the two bytes at `at`, written by
    /// `ok`/`eof`.
    pub(crate) fn patch_status(&mut self, at: usize, status: StatusFlags) {
        if let Some(b) = self.buf.get_mut(at..at + 2) {
            b.copy_from_slice(&status.bits().to_le_bytes());
        }
    }

    /// Reads back the status bits at `at`.
    pub(crate) fn status_at(&self, at: usize) -> StatusFlags {
        match self.buf.get(at..at + 2) {
            Some(&[a, b]) => StatusFlags::from_bits_retain(u16::from_le_bytes([a, b])),
            _ => StatusFlags::empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn long_payload_is_split_and_a_multiple_ends_with_an_empty_packet() {
        let mut o = Out {
            seq: 3,
            ..Default::default()
        };
        o.begin();
        o.buf.resize(4 + MAX_CHUNK, 7);
        o.end();
        assert_eq!(o.buf.len(), 4 + MAX_CHUNK + 4);
        assert_eq!(&o.buf[..4], &[0xFF, 0xFF, 0xFF, 3]);
        assert_eq!(&o.buf[4 + MAX_CHUNK..], &[0, 0, 0, 4]);
        assert_eq!(o.seq, 5);

        let mut o = Out::default();
        o.begin();
        o.buf.resize(4 + MAX_CHUNK + 10, 1);
        o.end();
        assert_eq!(o.buf.len(), 4 + MAX_CHUNK + 4 + 10);
        assert_eq!(&o.buf[4 + MAX_CHUNK..4 + MAX_CHUNK + 4], &[10, 0, 0, 1]);
    }

    #[test]
    fn ok_and_eof_layouts() {
        let mut o = Out::default();
        let at = o.ok(0, 1, 300, StatusFlags::SERVER_STATUS_AUTOCOMMIT, 2, b"hi");
        assert_eq!(
            o.buf,
            [12, 0, 0, 0, 0, 1, 0xFC, 0x2C, 0x01, 2, 0, 2, 0, 2, b'h', b'i']
        );
        assert_eq!(at, 9);
        o.patch_status(at, StatusFlags::SERVER_MORE_RESULTS_EXISTS);
        assert_eq!(o.status_at(at), StatusFlags::SERVER_MORE_RESULTS_EXISTS);
        let mut o = Out::default();
        o.eof(CapabilityFlags::empty(), StatusFlags::empty(), 1);
        assert_eq!(o.buf, [5, 0, 0, 0, 0xFE, 1, 0, 0, 0]);
    }
}
