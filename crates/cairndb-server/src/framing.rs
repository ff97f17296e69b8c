//! Input side of the wire format: [`Framer`] cuts the client's byte stream
//! into payloads (3-byte little-endian length, sequence id, payload; a
//! payload of 16 MiB - 1 bytes continues in the next packet).
//!
//! Invariants: bytes `buf[start..]` are received and not yet consumed; a
//! payload is handed out only when all its packets are in, each with the
//! expected sequence id, and its total length is checked against
//! `max_allowed_packet` from the headers alone, before its bytes are
//! buffered. A single-packet payload is borrowed from the buffer; only a
//! multi-packet one is copied (into `joined`). No locking: one connection.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ops::Range;

use crate::wire::MAX_CHUNK;

/// Capacity of an idle connection's input buffer.
pub(crate) const INITIAL: usize = 4096;
/// Room reserved ahead of the received bytes, at most.
const MAX_RESERVE: usize = 256 * 1024;
/// A buffer grown beyond this for a large packet is given back afterwards.
pub(crate) const SHRINK_ABOVE: usize = 64 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// The payload's length exceeds `max_allowed_packet`.
    TooLarge,
    /// A packet's sequence id is not the expected one.
    OutOfOrder,
}

/// Progress through a payload being discarded ([`Framer::discard`]).
#[derive(Debug, Default)]
pub(crate) struct Discard {
    /// Payload bytes of the current packet still to drop.
    skip: usize,
    /// Sequence id of the last packet, once its header was seen.
    last: Option<u8>,
}

impl Discard {
    /// The sequence id of the payload's last packet, once its header has
    /// been seen (its bytes may still be arriving).
    pub(crate) fn last_seq(&self) -> Option<u8> {
        self.last
    }
}

/// A complete payload in the framer's buffer.
#[derive(Debug)]
pub(crate) struct Frame {
    /// `Some(range of buf)` for a single packet, `None` when in `joined`.
    single: Option<Range<usize>>,
    /// Offset in `buf` just past the last packet.
    end: usize,
    /// Sequence id of the last packet (the reply continues after it).
    pub(crate) last_seq: u8,
}

#[derive(Debug, Default)]
pub(crate) struct Framer {
    buf: Vec<u8>,
    start: usize,
    joined: Vec<u8>,
    /// Bytes still missing for the frame being received (0: unknown).
    need: usize,
}

fn header(b: &[u8]) -> Option<(usize, u8)> {
    match b {
        [a, b, c, s, ..] => Some((u32::from_le_bytes([*a, *b, *c, 0]) as usize, *s)),
        _ => None,
    }
}

impl Framer {
    pub(crate) fn new() -> Self {
        Framer {
            buf: Vec::with_capacity(INITIAL),
            ..Default::default()
        }
    }

    /// Appends received bytes (tests).
    #[cfg(test)]
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(data);
    }

    /// Moves unconsumed bytes to the front and reserves room for the next
    /// read; returns the buffer to read into (append only). At most
    /// `MAX_RESERVE` is reserved ahead of the bytes received, so a header
    /// announcing a large payload costs memory only as the payload arrives.
    pub(crate) fn read_buf(&mut self) -> &mut Vec<u8> {
        self.compact();
        let want = self.need.clamp(INITIAL / 2, MAX_RESERVE);
        if self.buf.capacity() - self.buf.len() < want {
            self.buf.reserve(want);
        }
        &mut self.buf
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// Takes the unconsumed bytes out (what followed an SSLRequest).
    pub(crate) fn take_pending(&mut self) -> Vec<u8> {
        let rest = self.buf.get(self.start..).unwrap_or_default().to_vec();
        self.buf.clear();
        self.start = 0;
        self.need = 0;
        rest
    }

    /// Whether unconsumed bytes are buffered (pipelined commands, or
    /// the start of a payload still arriving).
    pub(crate) fn has_pending(&self) -> bool {
        self.start < self.buf.len()
    }

    /// The next complete payload, if all of it is buffered. `expect` is
    /// the sequence id its first packet must carry.
    pub(crate) fn next(&mut self, expect: u8, max: usize) -> Result<Option<Frame>, FrameError> {
        let mut pos = self.start;
        let mut seq = expect;
        let mut total = 0usize;
        let mut chunks = 0usize;
        let first_len;
        loop {
            let Some((len, s)) = self.buf.get(pos..).and_then(header) else {
                self.need = 4 - (self.buf.len() - pos);
                return Ok(None);
            };
            if s != seq {
                return Err(FrameError::OutOfOrder);
            }
            total = total.saturating_add(len);
            if total > max {
                return Err(FrameError::TooLarge);
            }
            let end = pos + 4 + len;
            if end > self.buf.len() {
                // Room for the rest of this packet and the next header.
                self.need = end - self.buf.len() + 4;
                return Ok(None);
            }
            chunks += 1;
            pos = end;
            seq = seq.wrapping_add(1);
            if len < MAX_CHUNK {
                first_len = if chunks == 1 { Some(len) } else { None };
                break;
            }
        }
        self.need = 0;
        let last_seq = seq.wrapping_sub(1);
        if let Some(len) = first_len {
            let p = self.start + 4;
            return Ok(Some(Frame {
                single: Some(p..p + len),
                end: pos,
                last_seq,
            }));
        }
        self.joined.clear();
        self.joined.reserve(total);
        let mut p = self.start;
        while p < pos {
            let Some((len, _)) = self.buf.get(p..).and_then(header) else {
                break;
            };
            if let Some(chunk) = self.buf.get(p + 4..p + 4 + len) {
                self.joined.extend_from_slice(chunk);
            }
            p += 4 + len;
        }
        Ok(Some(Frame {
            single: None,
            end: pos,
            last_seq,
        }))
    }

    /// The payload of a frame returned by `next`.
    pub(crate) fn payload(&self, f: &Frame) -> &[u8] {
        match &f.single {
            Some(r) => self.buf.get(r.clone()).unwrap_or(&[]),
            None => &self.joined,
        }
    }

    /// Drops a handled frame's bytes.
    pub(crate) fn consume(&mut self, f: Frame) {
        self.start = f.end.min(self.buf.len());
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Gives back memory taken for a large packet.
    pub(crate) fn shrink(&mut self) {
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() - self.start <= INITIAL {
            self.compact();
            self.buf.shrink_to(INITIAL);
        }
        if self.joined.capacity() > SHRINK_ABOVE {
            self.joined = Vec::new();
        }
    }

    /// Drops the buffered bytes of a payload refused as too large, packet
    /// by packet; `Some(sequence id of its last packet)` once that packet
    /// is gone, `None` while more must be read (the reply to the refused
    /// command carries the next sequence id, as to any other).
    pub(crate) fn discard(&mut self, d: &mut Discard) -> Option<u8> {
        loop {
            let avail = self.buf.len() - self.start;
            if d.skip > 0 {
                let n = d.skip.min(avail);
                self.start += n;
                d.skip -= n;
                if d.skip > 0 {
                    self.buf.clear();
                    self.start = 0;
                    self.need = MAX_RESERVE;
                    return None;
                }
            }
            if d.last.is_some() {
                return d.last;
            }
            let Some((len, seq)) = self.buf.get(self.start..).and_then(header) else {
                self.need = MAX_RESERVE;
                return None;
            };
            self.start += 4;
            d.skip = len;
            if len < MAX_CHUNK {
                d.last = Some(seq);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.capacity() + self.joined.capacity()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let l = (payload.len() as u32).to_le_bytes();
        let mut v = vec![l[0], l[1], l[2], seq];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn single_packets_arrive_byte_by_byte() {
        let mut f = Framer::new();
        let p = packet(0, b"\x03select 1");
        for (i, b) in p.iter().enumerate() {
            assert!(f.next(0, 1 << 20).unwrap().is_none(), "at {i}");
            f.push(&[*b]);
        }
        let fr = f.next(0, 1 << 20).unwrap().unwrap();
        assert_eq!(f.payload(&fr), b"\x03select 1");
        assert_eq!(fr.last_seq, 0);
        f.consume(fr);
        assert!(!f.has_pending());
    }

    #[test]
    fn multi_packet_payload_is_joined_and_checked() {
        let big = vec![9u8; MAX_CHUNK];
        let mut stream = packet(0, &big);
        stream.extend(packet(1, b"tail"));
        let mut f = Framer::new();
        f.push(&stream);
        let fr = f.next(0, 1 << 26).unwrap().unwrap();
        assert_eq!(fr.last_seq, 1);
        let p = f.payload(&fr);
        assert_eq!(p.len(), MAX_CHUNK + 4);
        assert_eq!(&p[MAX_CHUNK..], b"tail");
        f.consume(fr);
        f.shrink();
        assert!(f.capacity() <= 2 * SHRINK_ABOVE);

        let mut f = Framer::new();
        f.push(&stream);
        assert_eq!(f.next(0, MAX_CHUNK).unwrap_err(), FrameError::TooLarge);
    }

    #[test]
    fn discard_drops_a_multi_packet_payload_and_names_its_last_sequence_id() {
        let mut stream = packet(0, &vec![1u8; MAX_CHUNK]);
        stream.extend(packet(1, &vec![2u8; MAX_CHUNK]));
        stream.extend(packet(2, b"tail"));
        stream.extend(packet(0, b"\x0e"));
        let mut f = Framer::new();
        let mut d = Discard::default();
        let mut fed = 0;
        let last = loop {
            if let Some(s) = f.discard(&mut d) {
                break s;
            }
            let n = 100_000.min(stream.len() - fed);
            assert!(n > 0, "ran out of input");
            f.push(&stream[fed..fed + n]);
            fed += n;
        };
        assert_eq!(last, 2);
        // What follows the refused payload is still framed.
        if fed < stream.len() {
            f.push(&stream[fed..]);
        }
        let fr = f.next(0, 100).unwrap().unwrap();
        assert_eq!(f.payload(&fr), b"\x0e");
    }

    #[test]
    fn too_large_is_seen_from_the_header_alone() {
        let mut f = Framer::new();
        f.push(&[0xFF, 0xFF, 0x10, 0]);
        assert_eq!(f.next(0, 1 << 20).unwrap_err(), FrameError::TooLarge);
    }

    #[test]
    fn a_large_announced_length_reserves_little_until_bytes_arrive() {
        let mut f = Framer::new();
        f.push(&[0xFF, 0xFF, 0x7F, 0]); // 8 MiB announced
        assert!(f.next(0, 1 << 26).unwrap().is_none());
        let b = f.read_buf();
        assert!(b.capacity() <= INITIAL + MAX_RESERVE);
    }

    #[test]
    fn wrong_sequence_is_refused() {
        let mut f = Framer::new();
        f.push(&packet(5, b"\x0e"));
        assert_eq!(f.next(0, 100).unwrap_err(), FrameError::OutOfOrder);
        let mut stream = packet(0, &vec![1u8; MAX_CHUNK]);
        stream.extend(packet(7, b""));
        let mut f = Framer::new();
        f.push(&stream);
        assert_eq!(f.next(0, 1 << 26).unwrap_err(), FrameError::OutOfOrder);
    }
}
