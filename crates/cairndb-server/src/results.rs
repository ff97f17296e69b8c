//! [`Encoder`]: this crate's implementation of [`Results`] and
//! [`RowWriter`], which encodes a command's results straight into the
//! connection's [`Out`] buffer: text rows for COM_QUERY, binary rows for
//! COM_STMT_EXECUTE, EOF- or OK-terminated per CLIENT_DEPRECATE_EOF.
//!
//! Invariants: `pending` is the offset of the status flags of the last
//! terminator (OK or EOF) written, while no later packet follows it; it is
//! patched with SERVER_MORE_RESULTS_EXISTS when another result begins, and
//! with the session's final status by `finish`. The buffer is handed to the
//! [`Spill`] only after a complete row, so a pending terminator is never
//! sent before it is patched. Nothing here allocates per row: column types
//! are kept in a vector reused across commands, numbers are formatted on
//! the stack or straight into the buffer. No locking: one connection.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::io::Write as _;

use mysql_common::constants::{CapabilityFlags, ColumnType, StatusFlags};
use mysql_common::io::BufMutExt;

use crate::api::{Column, DateTime, Results, RowWriter, SqlError, Time};
use crate::wire::Out;

/// Where a large result's buffered bytes go before the command ends.
pub(crate) trait Spill {
    /// Sends (and clears) `buf`, or leaves it to grow when the connection
    /// cannot write from here.
    fn spill(&mut self, buf: &mut Vec<u8>);
}

/// A spill that keeps everything buffered (inline execution, tests).
pub(crate) struct NoSpill;

impl Spill for NoSpill {
    fn spill(&mut self, _buf: &mut Vec<u8>) {}
}

/// Buffered bytes above which a result is sent while it is produced.
pub(crate) const SPILL_ABOVE: usize = 256 * 1024;

/// What a row value must be encoded as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColMeta {
    ty: ColumnType,
    decimals: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between results (or before the first).
    Idle,
    /// In a result set, between rows.
    Rows,
    /// Writing a row.
    Row,
    /// A row written outside a result set: its values are dropped.
    StrayRow,
    /// An error was sent: the answer is over.
    Failed,
}

pub(crate) struct Encoder<'a> {
    out: &'a mut Out,
    spill: &'a mut dyn Spill,
    cols: &'a mut Vec<ColMeta>,
    caps: CapabilityFlags,
    multi: bool,
    binary: bool,
    status: StatusFlags,
    state: State,
    any: bool,
    pending: Option<usize>,
    /// Next column of the row being written.
    col: usize,
    /// Offset of the binary row's NULL bitmap.
    bitmap_at: usize,
}

impl<'a> Encoder<'a> {
    pub(crate) fn new(
        out: &'a mut Out,
        spill: &'a mut dyn Spill,
        cols: &'a mut Vec<ColMeta>,
        caps: CapabilityFlags,
        binary: bool,
        status: StatusFlags,
    ) -> Self {
        Encoder {
            out,
            spill,
            cols,
            caps,
            multi: caps.contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            binary,
            status,
            state: State::Idle,
            any: false,
            pending: None,
            col: 0,
            bitmap_at: 0,
        }
    }

    /// Ends the answer: closes what is open, answers OK if nothing was
    /// reported, and gives the last terminator the final status.
    pub(crate) fn finish(mut self, final_status: StatusFlags) {
        self.close_open();
        if !self.any {
            self.pending = Some(self.out.ok(0, 0, 0, self.status, 0, b""));
        }
        if let Some(at) = self.pending.take() {
            self.out.patch_status(at, final_status);
        }
    }

    fn close_open(&mut self) {
        match self.state {
            State::Row => {
                self.finish_row();
                self.end_rows(0);
            }
            State::Rows => self.end_rows(0),
            State::StrayRow => self.state = State::Idle,
            State::Idle | State::Failed => {}
        }
    }

    /// Prepares for a new result; false once an error has been sent.
    fn start_result(&mut self) -> bool {
        if self.state == State::Failed {
            return false;
        }
        self.close_open();
        if let Some(at) = self.pending.take() {
            let s = self.out.status_at(at) | StatusFlags::SERVER_MORE_RESULTS_EXISTS;
            self.out.patch_status(at, s);
        }
        self.any = true;
        true
    }

    fn end_rows(&mut self, warnings: u16) {
        self.pending = Some(self.out.eof(self.caps, self.status, warnings));
        self.state = State::Idle;
    }

    fn finish_row(&mut self) {
        while self.col < self.cols.len() {
            self.null();
        }
        self.out.end();
        self.state = State::Rows;
        if self.out.buf.len() >= SPILL_ABOVE {
            self.spill.spill(&mut self.out.buf);
        }
    }

    /// The column the next value goes to, if a row is being written.
    #[inline]
    fn next_col(&mut self) -> Option<ColMeta> {
        if self.state != State::Row {
            return None;
        }
        let c = self.cols.get(self.col).copied();
        if c.is_some() {
            self.col += 1;
        }
        c
    }

    #[inline]
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.out.buf
    }
}

impl Results for Encoder<'_> {
    fn client_found_rows(&self) -> bool {
        self.caps.contains(CapabilityFlags::CLIENT_FOUND_ROWS)
    }

    fn multi_statements(&self) -> bool {
        self.multi
    }

    fn set_status(&mut self, status: StatusFlags) {
        self.status = status;
    }

    fn ok(&mut self, affected_rows: u64, last_insert_id: u64, warnings: u16, info: &str) {
        if !self.start_result() {
            return;
        }
        self.pending = Some(self.out.ok(
            0,
            affected_rows,
            last_insert_id,
            self.status,
            warnings,
            info.as_bytes(),
        ));
    }

    fn error(&mut self, err: SqlError) {
        match self.state {
            State::Failed => return,
            // An error while a result set's rows are sent (a statement
            // killed, timed out or failing mid-scan) takes the place of
            // its terminator, as in MySQL: the client reads it as that
            // statement's error, not as a complete result set followed by
            // another answer.
            State::Rows => {}
            State::Row => self.finish_row(),
            State::Idle | State::StrayRow => {
                if !self.start_result() {
                    return;
                }
            }
        }
        self.out.err(&err);
        self.any = true;
        self.state = State::Failed;
    }

    fn begin_result_set(&mut self, columns: &[Column]) {
        if !self.start_result() {
            return;
        }
        self.out.begin();
        self.out.buf.put_lenenc_int(columns.len() as u64);
        self.out.end();
        self.cols.clear();
        for c in columns {
            self.out.column(c);
            self.cols.push(ColMeta {
                ty: c.col_type,
                decimals: c.decimals,
            });
        }
        if !self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
            self.out.old_eof(self.status, 0);
        }
        self.state = State::Rows;
    }

    fn row(&mut self) -> &mut dyn RowWriter {
        match self.state {
            State::Row => self.finish_row(),
            State::StrayRow => self.state = State::Idle,
            _ => {}
        }
        if self.state != State::Rows {
            if self.state == State::Idle {
                self.state = State::StrayRow;
            }
            return self;
        }
        self.state = State::Row;
        self.col = 0;
        self.out.begin();
        if self.binary {
            self.out.buf.push(0);
            self.bitmap_at = self.out.buf.len();
            let n = (self.cols.len() + 7 + 2) / 8;
            self.out.buf.resize(self.bitmap_at + n, 0);
        }
        self
    }

    fn end_result_set(&mut self, warnings: u16) {
        match self.state {
            State::Row => {
                self.finish_row();
                self.end_rows(warnings);
            }
            State::Rows => self.end_rows(warnings),
            State::StrayRow => self.state = State::Idle,
            State::Idle | State::Failed => {}
        }
    }
}

/// Integer column types and their binary width.
fn int_width(ty: ColumnType) -> Option<usize> {
    use ColumnType::*;
    match ty {
        MYSQL_TYPE_TINY => Some(1),
        MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => Some(2),
        MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => Some(4),
        MYSQL_TYPE_LONGLONG => Some(8),
        _ => None,
    }
}

fn is_temporal(ty: ColumnType) -> bool {
    use ColumnType::*;
    matches!(
        ty,
        MYSQL_TYPE_DATE
            | MYSQL_TYPE_NEWDATE
            | MYSQL_TYPE_DATETIME
            | MYSQL_TYPE_DATETIME2
            | MYSQL_TYPE_TIMESTAMP
            | MYSQL_TYPE_TIMESTAMP2
            | MYSQL_TYPE_TIME
            | MYSQL_TYPE_TIME2
    )
}

fn is_time(ty: ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::MYSQL_TYPE_TIME | ColumnType::MYSQL_TYPE_TIME2
    )
}

fn is_date_only(ty: ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
    )
}

/// Appends `v` as a length-encoded decimal string.
fn put_text_u64(buf: &mut Vec<u8>, neg: bool, mut v: u64) {
    let mut tmp = [0u8; 21];
    let mut i = tmp.len();
    loop {
        i -= 1;
        if let Some(d) = tmp.get_mut(i) {
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        if let Some(d) = tmp.get_mut(i) {
            *d = b'-';
        }
    }
    let digits = tmp.get(i..).unwrap_or(&[]);
    buf.push(digits.len() as u8);
    buf.extend_from_slice(digits);
}

fn put_text_i64(buf: &mut Vec<u8>, v: i64) {
    put_text_u64(buf, v < 0, v.unsigned_abs());
}

/// Appends what `f` writes as a length-encoded string, formatting in
/// place (no temporary string).
fn put_lenenc_with(buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    let at = buf.len();
    buf.push(0);
    f(buf);
    let n = buf.len() - at - 1;
    if n < 251 {
        if let Some(b) = buf.get_mut(at) {
            *b = n as u8;
        }
    } else {
        let mut hdr = Vec::with_capacity(9);
        hdr.put_lenenc_int(n as u64);
        buf.splice(at..at + 1, hdr);
    }
}

fn write_double(buf: &mut Vec<u8>, v: f64) {
    let a = v.abs();
    let _ = if a == 0.0 || (1e-5..1e15).contains(&a) {
        write!(buf, "{v}")
    } else {
        write!(buf, "{v:e}")
    };
}

fn write_frac(buf: &mut Vec<u8>, micros: u32, decimals: u8) {
    let digits = match decimals {
        1..=6 => decimals as u32,
        _ if micros != 0 => 6,
        _ => return,
    };
    let v = micros.min(999_999) / 10u32.pow(6 - digits);
    let _ = write!(buf, ".{:0width$}", v, width = digits as usize);
}

fn write_text_datetime(buf: &mut Vec<u8>, d: &DateTime, date_only: bool, decimals: u8) {
    let _ = write!(buf, "{:04}-{:02}-{:02}", d.year, d.month, d.day);
    if !date_only {
        let _ = write!(buf, " {:02}:{:02}:{:02}", d.hour, d.minute, d.second);
        write_frac(buf, d.micros, decimals);
    }
}

fn write_text_time(buf: &mut Vec<u8>, t: &Time, decimals: u8) {
    let hours = u64::from(t.days) * 24 + u64::from(t.hours);
    let sign = if t.negative { "-" } else { "" };
    let _ = write!(buf, "{sign}{hours:02}:{:02}:{:02}", t.minutes, t.seconds);
    write_frac(buf, t.micros, decimals);
}

fn put_bin_datetime(buf: &mut Vec<u8>, d: &DateTime, date_only: bool) {
    let zero_time = date_only || (d.hour == 0 && d.minute == 0 && d.second == 0 && d.micros == 0);
    if zero_time && d.year == 0 && d.month == 0 && d.day == 0 {
        buf.push(0);
        return;
    }
    let len = if zero_time {
        4
    } else if d.micros == 0 {
        7
    } else {
        11
    };
    buf.push(len);
    buf.extend_from_slice(&d.year.to_le_bytes());
    buf.extend_from_slice(&[d.month, d.day]);
    if len >= 7 {
        buf.extend_from_slice(&[d.hour, d.minute, d.second]);
    }
    if len == 11 {
        buf.extend_from_slice(&d.micros.to_le_bytes());
    }
}

fn put_bin_time(buf: &mut Vec<u8>, t: &Time) {
    if t.days == 0 && t.hours == 0 && t.minutes == 0 && t.seconds == 0 && t.micros == 0 {
        buf.push(0);
        return;
    }
    let len = if t.micros == 0 { 8 } else { 12 };
    buf.push(len);
    buf.push(u8::from(t.negative));
    buf.extend_from_slice(&t.days.to_le_bytes());
    buf.extend_from_slice(&[t.hours, t.minutes, t.seconds]);
    if len == 12 {
        buf.extend_from_slice(&t.micros.to_le_bytes());
    }
}

fn put_bin_int(buf: &mut Vec<u8>, width: usize, v: u64) {
    let b = v.to_le_bytes();
    buf.extend_from_slice(b.get(..width).unwrap_or(&b));
}

/// Parses "YYYY-MM-DD[ HH:MM:SS[.ffffff]]"; None if it is not that.
fn parse_datetime(s: &[u8]) -> Option<DateTime> {
    let s = std::str::from_utf8(s).ok()?;
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut it = date.splitn(3, '-');
    let mut d = DateTime {
        year: it.next()?.parse().ok()?,
        month: it.next()?.parse().ok()?,
        day: it.next()?.parse().ok()?,
        ..Default::default()
    };
    if let Some(t) = time {
        let t = parse_time(t.as_bytes())?;
        d.hour = t.hours;
        d.minute = t.minutes;
        d.second = t.seconds;
        d.micros = t.micros;
    }
    Some(d)
}

/// Parses "[-]H+:MM:SS[.ffffff]"; None if it is not that.
fn parse_time(s: &[u8]) -> Option<Time> {
    let s = std::str::from_utf8(s).ok()?;
    let (negative, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (hms, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let mut it = hms.splitn(3, ':');
    let h: u32 = it.next()?.parse().ok()?;
    let m: u8 = it.next()?.parse().ok()?;
    let sec: u8 = it.next()?.parse().ok()?;
    let micros = match frac {
        Some(f) if !f.is_empty() && f.len() <= 6 => {
            f.parse::<u32>().ok()? * 10u32.pow(6 - f.len() as u32)
        }
        Some(_) => return None,
        None => 0,
    };
    Some(Time {
        negative,
        days: h / 24,
        hours: (h % 24) as u8,
        minutes: m,
        seconds: sec,
        micros,
    })
}

impl RowWriter for Encoder<'_> {
    fn null(&mut self) {
        if self.next_col().is_none() {
            return;
        }
        if self.binary {
            let bit = self.col - 1 + 2;
            if let Some(b) = self.out.buf.get_mut(self.bitmap_at + bit / 8) {
                *b |= 1 << (bit % 8);
            }
        } else {
            self.out.buf.push(0xFB);
        }
    }

    fn int(&mut self, v: i64) {
        let Some(c) = self.next_col() else { return };
        if !self.binary_enc() {
            return put_text_i64(&mut self.out.buf, v);
        }
        let buf = self.buf();
        match (int_width(c.ty), c.ty) {
            (Some(w), _) => put_bin_int(buf, w, v as u64),
            (None, ColumnType::MYSQL_TYPE_FLOAT) => {
                buf.extend_from_slice(&(v as f32).to_le_bytes())
            }
            (None, ColumnType::MYSQL_TYPE_DOUBLE) => {
                buf.extend_from_slice(&(v as f64).to_le_bytes())
            }
            (None, ty) if is_temporal(ty) => buf.push(0),
            _ => put_text_i64(buf, v),
        }
    }

    fn uint(&mut self, v: u64) {
        let Some(c) = self.next_col() else { return };
        if !self.binary_enc() {
            return put_text_u64(&mut self.out.buf, false, v);
        }
        let buf = self.buf();
        match (int_width(c.ty), c.ty) {
            (Some(w), _) => put_bin_int(buf, w, v),
            (None, ColumnType::MYSQL_TYPE_FLOAT) => {
                buf.extend_from_slice(&(v as f32).to_le_bytes())
            }
            (None, ColumnType::MYSQL_TYPE_DOUBLE) => {
                buf.extend_from_slice(&(v as f64).to_le_bytes())
            }
            (None, ty) if is_temporal(ty) => buf.push(0),
            _ => put_text_u64(buf, false, v),
        }
    }

    fn double(&mut self, v: f64) {
        let Some(c) = self.next_col() else { return };
        if !self.binary_enc() {
            return put_lenenc_with(&mut self.out.buf, |b| write_double(b, v));
        }
        let buf = self.buf();
        match (int_width(c.ty), c.ty) {
            (Some(w), _) => put_bin_int(buf, w, v as i64 as u64),
            (None, ColumnType::MYSQL_TYPE_FLOAT) => {
                buf.extend_from_slice(&(v as f32).to_le_bytes())
            }
            (None, ColumnType::MYSQL_TYPE_DOUBLE) => buf.extend_from_slice(&v.to_le_bytes()),
            (None, ty) if is_temporal(ty) => buf.push(0),
            _ => put_lenenc_with(buf, |b| write_double(b, v)),
        }
    }

    fn bytes(&mut self, v: &[u8]) {
        let Some(c) = self.next_col() else { return };
        if !self.binary_enc() {
            return self.out.buf.put_lenenc_str(v);
        }
        // Only numbers are read as text; a string column (the common
        // case) goes out as its bytes, never validated or parsed.
        let text = || std::str::from_utf8(v).unwrap_or("").trim();
        let buf = self.buf();
        match (int_width(c.ty), c.ty) {
            (Some(w), _) => {
                let text = text();
                let n = text
                    .parse::<i64>()
                    .map(|x| x as u64)
                    .or_else(|_| text.parse::<u64>())
                    .unwrap_or(0);
                put_bin_int(buf, w, n)
            }
            (None, ColumnType::MYSQL_TYPE_FLOAT) => {
                buf.extend_from_slice(&text().parse::<f32>().unwrap_or(0.0).to_le_bytes())
            }
            (None, ColumnType::MYSQL_TYPE_DOUBLE) => {
                buf.extend_from_slice(&text().parse::<f64>().unwrap_or(0.0).to_le_bytes())
            }
            (None, ty) if is_time(ty) => put_bin_time(buf, &parse_time(v).unwrap_or_default()),
            (None, ty) if is_temporal(ty) => put_bin_datetime(
                buf,
                &parse_datetime(v).unwrap_or_default(),
                is_date_only(ty),
            ),
            _ => buf.put_lenenc_str(v),
        }
    }

    fn date(&mut self, year: u16, month: u8, day: u8) {
        // A date is a datetime at midnight in a DATETIME or TIMESTAMP
        // column, and `YYYY-MM-DD` in any other (a string context).
        let v = DateTime {
            year,
            month,
            day,
            ..Default::default()
        };
        self.write_datetime(v, true);
    }

    fn datetime(&mut self, v: DateTime) {
        self.write_datetime(v, false);
    }

    fn time(&mut self, v: Time) {
        let Some(c) = self.next_col() else { return };
        if self.binary_enc() && is_time(c.ty) {
            put_bin_time(self.buf(), &v);
        } else if self.binary_enc() && (int_width(c.ty).is_some() || is_temporal(c.ty)) {
            match int_width(c.ty) {
                Some(w) => put_bin_int(self.buf(), w, 0),
                None => self.buf().push(0),
            }
        } else {
            let dec = c.decimals;
            put_lenenc_with(self.buf(), |b| write_text_time(b, &v, dec));
        }
    }

    fn finish(&mut self) {
        match self.state {
            State::Row => self.finish_row(),
            State::StrayRow => self.state = State::Idle,
            _ => {}
        }
    }
}

impl Encoder<'_> {
    #[inline]
    fn binary_enc(&self) -> bool {
        self.binary
    }

    /// A date or datetime value into the next column; `is_date`: the
    /// value is a DATE, written without a time outside DATETIME and
    /// TIMESTAMP columns.
    fn write_datetime(&mut self, v: DateTime, is_date: bool) {
        let Some(c) = self.next_col() else { return };
        let date_only = is_date_only(c.ty) || (is_date && !is_temporal(c.ty));
        if self.binary_enc() && is_temporal(c.ty) && !is_time(c.ty) {
            put_bin_datetime(self.buf(), &v, date_only);
        } else if self.binary_enc() && (int_width(c.ty).is_some() || is_time(c.ty)) {
            // No cheap conversion: a zero of the column's type.
            match int_width(c.ty) {
                Some(w) => put_bin_int(self.buf(), w, 0),
                None => self.buf().push(0),
            }
        } else {
            let dec = c.decimals;
            put_lenenc_with(self.buf(), |b| write_text_datetime(b, &v, date_only, dec));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    fn enc_text(f: impl FnOnce(&mut Encoder<'_>), caps: CapabilityFlags) -> Vec<u8> {
        let mut out = Out::default();
        out.seq = 1;
        let mut cols = Vec::new();
        let mut spill = NoSpill;
        let mut e = Encoder::new(
            &mut out,
            &mut spill,
            &mut cols,
            caps,
            false,
            StatusFlags::SERVER_STATUS_AUTOCOMMIT,
        );
        f(&mut e);
        e.finish(StatusFlags::SERVER_STATUS_AUTOCOMMIT);
        out.buf
    }

    /// The payload of the one binary-protocol row `f` writes under `cols`.
    fn binary_row(cols: &[Column], f: impl FnOnce(&mut Encoder<'_>)) -> Vec<u8> {
        let mut out = Out::default();
        let mut metas = Vec::new();
        let mut spill = NoSpill;
        let mut e = Encoder::new(
            &mut out,
            &mut spill,
            &mut metas,
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
            true,
            StatusFlags::empty(),
        );
        e.begin_result_set(cols);
        f(&mut e);
        e.end_result_set(0);
        e.finish(StatusFlags::empty());
        packets(&out.buf)
            .get(1 + cols.len())
            .map(|p| p.1.clone())
            .unwrap_or_default()
    }

    /// Splits a buffer into (seq, payload) packets.
    fn packets(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        while b.len() >= 4 {
            let n = u32::from_le_bytes([b[0], b[1], b[2], 0]) as usize;
            v.push((b[3], b[4..4 + n].to_vec()));
            b = &b[4 + n..];
        }
        v
    }

    #[test]
    fn text_result_then_ok_marks_more_results_and_sequence_runs_on() {
        let cols = [Column::new("a", ColumnType::MYSQL_TYPE_LONGLONG)];
        let b = enc_text(
            |e| {
                e.begin_result_set(&cols);
                let r = e.row();
                r.int(-42);
                r.finish();
                e.row().null();
                e.end_result_set(7);
                e.ok(3, 0, 0, "");
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
        );
        let p = packets(&b);
        // count, coldef, row, row, terminator, ok
        assert_eq!(p.len(), 6);
        assert_eq!(
            p.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5, 6]
        );
        assert_eq!(p[0].1, [1]);
        assert_eq!(p[2].1, b"\x03-42");
        assert_eq!(p[3].1, [0xFB]);
        // The terminator is an OK with header 0xFE and MORE_RESULTS set.
        assert_eq!(p[4].1[0], 0xFE);
        assert_eq!(u16::from_le_bytes([p[4].1[3], p[4].1[4]]) & 0x0008, 0x0008);
        assert_eq!(u16::from_le_bytes([p[4].1[5], p[4].1[6]]), 7);
        // The final OK has only AUTOCOMMIT.
        assert_eq!(p[5].1, [0, 3, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn column_definition_carries_alias_and_origin_and_found_rows_is_the_clients() {
        let mut col = Column::new("c", ColumnType::MYSQL_TYPE_LONG).with_table("db", "tbl");
        col.table = "t".into();
        col.name = "label".into();
        let cols = [col];
        let mut found = None;
        let b = enc_text(
            |e| {
                found = Some(e.client_found_rows());
                e.begin_result_set(&cols);
                e.end_result_set(0);
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF | CapabilityFlags::CLIENT_FOUND_ROWS,
        );
        assert_eq!(found, Some(true));
        let p = packets(&b);
        // catalog, schema, table, org_table, name, org_name
        let mut def: &[u8] = &p[1].1;
        let mut strs = Vec::new();
        for _ in 0..6 {
            let n = def[0] as usize;
            strs.push(String::from_utf8(def[1..1 + n].to_vec()).unwrap());
            def = &def[1 + n..];
        }
        assert_eq!(strs, ["def", "db", "t", "tbl", "label", "c"]);
        let mut found = None;
        enc_text(
            |e| found = Some(e.client_found_rows()),
            CapabilityFlags::empty(),
        );
        assert_eq!(found, Some(false));
    }

    #[test]
    fn old_eof_form_and_error_stops_the_answer() {
        let cols = [Column::new("s", ColumnType::MYSQL_TYPE_VAR_STRING)];
        let b = enc_text(
            |e| {
                e.begin_result_set(&cols);
                e.row().bytes(b"x");
                e.error(SqlError::syntax("bad"));
                e.ok(1, 0, 0, "");
            },
            CapabilityFlags::empty(),
        );
        let p = packets(&b);
        // count, coldef, eof, row, err: the error takes the place of the
        // result set's terminator (as MySQL sends it), and the OK after
        // it is dropped.
        assert_eq!(p.len(), 5);
        assert_eq!(p[2].1, [0xFE, 0, 0, 2, 0]);
        assert_eq!(p[3].1, b"\x01x");
        assert_eq!(p[4].1[0], 0xFF);
        assert_eq!(&p[4].1[1..3], &1064u16.to_le_bytes());
    }

    #[test]
    fn an_error_after_finished_rows_ends_the_result_set_in_place_of_its_terminator() {
        let cols = [Column::new("s", ColumnType::MYSQL_TYPE_VAR_STRING)];
        let b = enc_text(
            |e| {
                e.begin_result_set(&cols);
                let r = e.row();
                r.bytes(b"x");
                r.finish();
                e.error(SqlError::new(3024, b"HY000", "timed out"));
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
        );
        let p = packets(&b);
        // count, coldef, row, err: no OK terminator before the ERR.
        assert_eq!(p.len(), 4);
        assert_eq!(p[2].1, b"\x01x");
        assert_eq!(p[3].1.first(), Some(&0xFF));
        assert_eq!(p[3].1.get(1..3), Some(&3024u16.to_le_bytes()[..]));
    }

    #[test]
    fn binary_row_layout() {
        let cols = [
            Column::new("a", ColumnType::MYSQL_TYPE_LONG),
            Column::new("b", ColumnType::MYSQL_TYPE_VAR_STRING),
            Column::new("c", ColumnType::MYSQL_TYPE_DOUBLE),
            Column::new("d", ColumnType::MYSQL_TYPE_DATETIME),
            Column::new("e", ColumnType::MYSQL_TYPE_TIME),
        ];
        let row = binary_row(&cols, |e| {
            let r = e.row();
            r.int(7);
            r.null();
            r.double(1.5);
            r.datetime(DateTime {
                year: 2024,
                month: 2,
                day: 29,
                hour: 1,
                minute: 2,
                second: 3,
                micros: 0,
            });
            r.time(Time {
                negative: true,
                days: 1,
                hours: 2,
                minutes: 3,
                seconds: 4,
                micros: 5,
            });
            r.finish();
        });
        let mut want = vec![0u8, 0b0000_1000];
        want.extend(7i32.to_le_bytes());
        want.extend(1.5f64.to_le_bytes());
        want.extend([7, 0xE8, 0x07, 2, 29, 1, 2, 3]);
        want.extend([12, 1, 1, 0, 0, 0, 2, 3, 4, 5, 0, 0, 0]);
        assert_eq!(row, want);
    }

    #[test]
    fn binary_string_values_are_sent_byte_for_byte() {
        // Strings skip the text parsing numbers and times need: padding,
        // bytes that are not UTF-8 and digits all go out unchanged.
        let cols = [
            Column::new("a", ColumnType::MYSQL_TYPE_VAR_STRING),
            Column::new("b", ColumnType::MYSQL_TYPE_BLOB),
            Column::new("c", ColumnType::MYSQL_TYPE_LONG),
        ];
        let row = binary_row(&cols, |e| {
            let r = e.row();
            r.bytes(b" 42 ");
            r.bytes(&[0xFF, 0x00, 0x80]);
            r.bytes(b" 42 ");
            r.finish();
        });
        let mut want = vec![0u8, 0];
        want.extend([4, b' ', b'4', b'2', b' ']);
        want.extend([3, 0xFF, 0x00, 0x80]);
        want.extend(42i32.to_le_bytes());
        assert_eq!(row, want);
    }

    #[test]
    fn text_values_and_long_doubles() {
        let cols = [
            Column::new("a", ColumnType::MYSQL_TYPE_DOUBLE),
            Column::new("b", ColumnType::MYSQL_TYPE_DOUBLE),
            Column::new("c", ColumnType::MYSQL_TYPE_DATE),
            Column::new("d", ColumnType::MYSQL_TYPE_TIME),
            Column::new("e", ColumnType::MYSQL_TYPE_LONGLONG),
        ];
        let b = enc_text(
            |e| {
                e.begin_result_set(&cols);
                let r = e.row();
                r.double(0.25);
                r.double(1e300);
                r.date(2024, 1, 2);
                r.time(Time {
                    negative: true,
                    days: 2,
                    hours: 1,
                    minutes: 0,
                    seconds: 9,
                    micros: 0,
                });
                r.uint(u64::MAX);
                r.finish();
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
        );
        let p = packets(&b);
        let row = &p[6].1;
        let mut want = b"\x040.25\x051e300\x0a2024-01-02\x09-49:00:09".to_vec();
        want.push(20);
        want.extend(b"18446744073709551615");
        assert_eq!(row, &want);
    }

    #[test]
    fn a_date_in_a_string_column_has_no_time_part() {
        let mut str_col = Column::new("s", ColumnType::MYSQL_TYPE_VAR_STRING);
        str_col.decimals = 31;
        let cols = [
            str_col,
            Column::new("dt", ColumnType::MYSQL_TYPE_DATETIME),
            Column::new("s2", ColumnType::MYSQL_TYPE_VAR_STRING),
        ];
        let b = enc_text(
            |e| {
                e.begin_result_set(&cols);
                let r = e.row();
                r.date(2020, 1, 15);
                r.date(2020, 1, 15);
                r.datetime(DateTime {
                    year: 2020,
                    month: 1,
                    day: 15,
                    hour: 1,
                    ..Default::default()
                });
                r.finish();
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
        );
        let p = packets(&b);
        let row = &p[4].1;
        assert_eq!(
            row,
            b"\x0a2020-01-15\x132020-01-15 00:00:00\x132020-01-15 01:00:00"
        );
    }

    #[test]
    fn nothing_reported_is_ok_and_missing_values_are_null() {
        let b = enc_text(|_| {}, CapabilityFlags::empty());
        assert_eq!(packets(&b)[0].1, [0, 0, 0, 2, 0, 0, 0]);
        let cols = [
            Column::new("a", ColumnType::MYSQL_TYPE_LONG),
            Column::new("b", ColumnType::MYSQL_TYPE_LONG),
        ];
        let b = enc_text(
            |e| {
                e.row().int(1); // outside a result set: dropped
                e.begin_result_set(&cols);
                let r = e.row();
                r.int(1);
                r.int(2);
                r.int(3); // past the last column: dropped
                e.row().int(4);
            },
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
        );
        let p = packets(&b);
        assert_eq!(p.len(), 6);
        assert_eq!(p[3].1, b"\x011\x012");
        assert_eq!(p[4].1, b"\x014\xFB");
    }

    #[test]
    fn date_and_time_text_parsing_round_trips() {
        let d = parse_datetime(b"2023-12-31 23:59:58.5").unwrap();
        assert_eq!(
            (d.year, d.month, d.day, d.second, d.micros),
            (2023, 12, 31, 58, 500_000)
        );
        let t = parse_time(b"-100:01:02.000003").unwrap();
        assert_eq!((t.negative, t.days, t.hours, t.micros), (true, 4, 4, 3));
        assert!(parse_time(b"1:2").is_none());
    }
}
