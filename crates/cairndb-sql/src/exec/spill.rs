//! Memory a running statement's operators hold, and sorts larger than
//! `sort_buffer_size` that go through a temporary file.
//!
//! Operators that keep rows until the statement's end (groups and their
//! DISTINCT sets, DISTINCT's set of rows seen, window partitions,
//! derived tables and set-operation results, non-spilling sort buffers)
//! count the bytes they hold in a [`Charge`] against the session's
//! [`Mem`]: past `max_session_mem_used` the statement fails with error
//! 1290 (MariaDB's for that variable) and what it held is freed. A
//! charge gives its bytes back when dropped, so a subquery run once per
//! outer row does not accumulate, and an error path frees as well.
//! What lives to the statement's end (a subquery's materialised set, a
//! CTE's rows, cached subquery results) is kept with [`Charge::keep`]
//! and given back by [`Mem::release`] when the statement's reader is
//! dropped.
//!
//! A plain sort (ORDER BY without grouping or windows) does not fail:
//! when its buffer passes `min(sort_buffer_size, max_session_mem_used)`
//! it is sorted and written as a run to an anonymous temporary file in
//! the data directory ([`Runs`]; unlinked from the start, so a crash
//! leaves nothing behind), and at the end the runs are merged, at most
//! [`FAN_IN`] at a time (more passes when there are more). The run
//! layout is docs/format/sql-spill.md; every block carries a CRC32, so a
//! bad disk is an error, never a wrong row.
//!
//! Locking: none; `Mem::held` is an atomic so that `&StmtCx` can charge.

use std::cmp::Ordering;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::error::{SqlError, SqlResult};
use crate::types::Value;

/// `max_session_mem_used`'s default: 1 GiB.
pub(crate) const DEFAULT_MAX_MEM: u64 = 1 << 30;
/// `sort_buffer_size`'s default (MariaDB's): 2 MiB.
pub(crate) const DEFAULT_SORT_BUFFER: u64 = 2 << 20;
/// The smallest either may be set to (MariaDB's floor for
/// `max_session_mem_used`).
pub(crate) const MIN_LIMIT: u64 = 8192;

/// Bytes a charge collects before it adds them to the session's count
/// (so an operator touches the shared atomic once per 64 KiB).
const PUBLISH: u64 = 64 << 10;

/// The session's memory account: what its running statement's operators
/// hold, and the limits it runs under.
#[derive(Debug)]
pub(crate) struct Mem {
    held: AtomicU64,
    /// `max_session_mem_used`.
    pub(crate) cap: u64,
    /// `sort_buffer_size`.
    pub(crate) sort_buffer: u64,
}

impl Default for Mem {
    fn default() -> Self {
        Mem {
            held: AtomicU64::new(0),
            cap: DEFAULT_MAX_MEM,
            sort_buffer: DEFAULT_SORT_BUFFER,
        }
    }
}

impl Mem {
    /// Bytes the session's operators hold now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        self.held.load(AtomicOrdering::Relaxed)
    }

    /// Counts `n` bytes held until [`Mem::release`]; error 1290, with
    /// nothing counted, when the session would hold more than its cap.
    pub(crate) fn hold(&self, n: u64) -> SqlResult<()> {
        let total = self
            .held
            .fetch_add(n, AtomicOrdering::Relaxed)
            .saturating_add(n);
        if total > self.cap {
            self.release(n);
            return Err(too_much(self.cap));
        }
        Ok(())
    }

    /// Gives back `n` bytes that [`Mem::hold`] or [`Charge::keep`] kept.
    pub(crate) fn release(&self, n: u64) {
        if n > 0 {
            self.held.fetch_sub(n, AtomicOrdering::Relaxed);
        }
    }

    /// The bytes a sort buffers before it spills.
    pub(crate) fn sort_limit(&self) -> u64 {
        self.sort_buffer.min(self.cap).max(MIN_LIMIT)
    }
}

/// Bytes one operator holds, counted against a [`Mem`]; given back when
/// dropped.
pub(crate) struct Charge<'a> {
    mem: &'a Mem,
    /// Added to `mem.held`.
    published: u64,
    /// Not added yet.
    local: u64,
}

impl<'a> Charge<'a> {
    pub(crate) fn new(mem: &'a Mem) -> Charge<'a> {
        Charge {
            mem,
            published: 0,
            local: 0,
        }
    }

    /// Counts `n` more bytes; error 1290 once the session holds more
    /// than its cap.
    pub(crate) fn add(&mut self, n: usize) -> SqlResult<()> {
        self.local = self.local.saturating_add(n as u64);
        if self.local < PUBLISH {
            return Ok(());
        }
        let n = std::mem::take(&mut self.local);
        self.mem.hold(n)?;
        self.published = self.published.saturating_add(n);
        Ok(())
    }

    /// Ends the charge without giving its bytes back: they stay counted
    /// until [`Mem::release`] (for what a statement keeps to its end,
    /// such as a subquery's materialised set). Returns the bytes kept;
    /// error 1290 once the session holds more than its cap.
    pub(crate) fn keep(mut self) -> SqlResult<u64> {
        let n = std::mem::take(&mut self.local);
        // On error the drop gives back what was published.
        self.mem.hold(n)?;
        Ok(std::mem::take(&mut self.published).saturating_add(n))
    }
}

impl Drop for Charge<'_> {
    /// Gives back what was added to the session's count (nothing, and no
    /// atomic, for an operator that held less than 64 KiB: a point
    /// select's).
    fn drop(&mut self) {
        if self.published > 0 {
            self.mem
                .held
                .fetch_sub(self.published, AtomicOrdering::Relaxed);
        }
    }
}

/// Error 1290 for a statement past `max_session_mem_used`.
pub(crate) fn too_much(cap: u64) -> SqlError {
    SqlError::new(
        1290,
        "HY000",
        format!(
            "The CairnDB server is running with the --max-session-mem-used={cap} option so it cannot execute this statement"
        ),
    )
}

/// Bytes a buffered row holds (its vector, its values, their strings).
pub(crate) fn row_bytes(r: &[Value]) -> usize {
    let mut n = std::mem::size_of::<Vec<Value>>() + std::mem::size_of_val(r);
    for v in r {
        if let Value::Str(b) | Value::Json(b) | Value::Member(_, b) = v {
            n += b.capacity();
        }
    }
    n
}

/// Bytes of a hash-set entry holding `key` (the key, its vector, and
/// the table's slot).
pub(crate) fn key_bytes(key: &[u8]) -> usize {
    key.len() + 2 * std::mem::size_of::<Vec<u8>>()
}

// ---- Spill files (docs/format/sql-spill.md) ----

/// Payload bytes after which a block is written out.
const BLOCK: usize = 64 << 10;
/// Block header: payload length (u32 LE) and its CRC32 (u32 LE).
const HEADER: usize = 8;
/// Runs merged at once (each holds one block while merging).
const FAN_IN: usize = 64;

const TAG_NULL: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_UINT: u8 = 2;
const TAG_DOUBLE: u8 = 3;
const TAG_DECIMAL: u8 = 4;
const TAG_STR: u8 = 5;
const TAG_DATE: u8 = 6;
const TAG_DATETIME: u8 = 7;
const TAG_TIME: u8 = 8;
const TAG_MEMBER: u8 = 9;
const TAG_JSON: u8 = 10;

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// A tag and its fixed-width payload.
fn put_fixed(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    out.extend_from_slice(payload);
}

/// Appends `v` to `out` (docs/format/sql-spill.md, "Values").
fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(TAG_NULL),
        Value::Int(i) => put_fixed(out, TAG_INT, &i.to_le_bytes()),
        Value::UInt(u) => put_fixed(out, TAG_UINT, &u.to_le_bytes()),
        Value::Double(f) => put_fixed(out, TAG_DOUBLE, &f.to_bits().to_le_bytes()),
        Value::Decimal(d, scale) => {
            put_fixed(out, TAG_DECIMAL, &d.to_le_bytes());
            out.push(*scale);
        }
        Value::Date(d) => put_fixed(out, TAG_DATE, &d.to_le_bytes()),
        Value::DateTime(d) => put_fixed(out, TAG_DATETIME, &d.to_le_bytes()),
        Value::Time(t) => put_fixed(out, TAG_TIME, &t.to_le_bytes()),
        Value::Str(b) => {
            out.push(TAG_STR);
            put_bytes(out, b);
        }
        Value::Member(i, b) => {
            put_fixed(out, TAG_MEMBER, &i.to_le_bytes());
            put_bytes(out, b);
        }
        Value::Json(b) => {
            out.push(TAG_JSON);
            put_bytes(out, b);
        }
    }
}

fn take<'b>(inp: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
    let (head, rest) = inp.split_at_checked(n)?;
    *inp = rest;
    Some(head)
}

fn take8(inp: &mut &[u8]) -> Option<[u8; 8]> {
    take(inp, 8)?.try_into().ok()
}

fn take_bytes(inp: &mut &[u8], reuse: Option<Vec<u8>>) -> Option<Vec<u8>> {
    let n = u32::from_le_bytes(take(inp, 4)?.try_into().ok()?) as usize;
    let b = take(inp, n)?;
    let mut out = reuse.unwrap_or_default();
    out.clear();
    out.extend_from_slice(b);
    Some(out)
}

/// Reads a value written by [`put_value`]; None when the bytes are not
/// one (`slot`'s old string buffer is reused).
fn get_value(inp: &mut &[u8], slot: Value) -> Option<Value> {
    let reuse = match slot {
        Value::Str(b) | Value::Json(b) | Value::Member(_, b) => Some(b),
        _ => None,
    };
    let tag = *take(inp, 1)?.first()?;
    Some(match tag {
        TAG_NULL => Value::Null,
        TAG_INT => Value::Int(i64::from_le_bytes(take8(inp)?)),
        TAG_UINT => Value::UInt(u64::from_le_bytes(take8(inp)?)),
        TAG_DOUBLE => Value::Double(f64::from_bits(u64::from_le_bytes(take8(inp)?))),
        TAG_DECIMAL => {
            let d = i128::from_le_bytes(take(inp, 16)?.try_into().ok()?);
            let scale = *take(inp, 1)?.first()?;
            Value::Decimal(d, scale)
        }
        TAG_STR => Value::Str(take_bytes(inp, reuse)?),
        TAG_DATE => Value::Date(i64::from_le_bytes(take8(inp)?)),
        TAG_DATETIME => Value::DateTime(i64::from_le_bytes(take8(inp)?)),
        TAG_TIME => Value::Time(i64::from_le_bytes(take8(inp)?)),
        TAG_MEMBER => {
            let i = u64::from_le_bytes(take8(inp)?);
            Value::Member(i, take_bytes(inp, reuse)?)
        }
        TAG_JSON => Value::Json(take_bytes(inp, reuse)?),
        _ => return None,
    })
}

/// Appends a row: its value count (u32 LE), then its values.
fn put_row(out: &mut Vec<u8>, r: &[Value]) {
    out.extend_from_slice(&(r.len() as u32).to_le_bytes());
    for v in r {
        put_value(out, v);
    }
}

/// Reads a row written by [`put_row`] into `row` (its buffers reused).
fn get_row(inp: &mut &[u8], row: &mut Vec<Value>) -> Option<()> {
    let n = u32::from_le_bytes(take(inp, 4)?.try_into().ok()?) as usize;
    // Each value takes at least its tag byte: a count past the bytes
    // left is damage, not a reason to allocate.
    if n > inp.len() {
        return None;
    }
    row.truncate(n);
    for k in 0..n {
        match row.get_mut(k) {
            Some(slot) => {
                let old = std::mem::replace(slot, Value::Null);
                *slot = get_value(inp, old)?;
            }
            None => row.push(get_value(inp, Value::Null)?),
        }
    }
    Some(())
}

fn io_error(what: &str, e: &std::io::Error) -> SqlError {
    let code = if what == "read" { 1024 } else { 1026 };
    SqlError::new(
        code,
        "HY000",
        format!(
            "Error {}ing a sort's temporary file (errno: {} \"{e}\")",
            if what == "read" { "read" } else { "writ" },
            e.raw_os_error().unwrap_or(0)
        ),
    )
}

fn damaged(at: u64, why: &str) -> SqlError {
    SqlError::new(
        1024,
        "HY000",
        format!("Error reading a sort's temporary file: {why} in the block at byte {at}"),
    )
}

/// A sort's sorted runs in one anonymous temporary file.
pub(crate) struct Runs {
    file: File,
    /// Bytes written.
    end: u64,
    /// Each run's `[start, end)` in the file, in the order written.
    runs: Vec<(u64, u64)>,
    /// The block being filled.
    block: Vec<u8>,
}

impl Runs {
    /// A new, empty temporary file in `dir`.
    pub(crate) fn create(dir: &Path) -> SqlResult<Runs> {
        let file = tempfile::tempfile_in(dir).map_err(|e| {
            SqlError::new(
                1004,
                "HY000",
                format!(
                    "Can't create a sort's temporary file in '{}' (errno: {} \"{e}\")",
                    dir.display(),
                    e.raw_os_error().unwrap_or(0)
                ),
            )
        })?;
        Ok(Runs {
            file,
            end: 0,
            runs: Vec::new(),
            block: Vec::with_capacity(BLOCK + 1024),
        })
    }

    /// How many runs the file holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }

    fn flush_block(&mut self) -> SqlResult<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(self.block.len())
            .map_err(|_| SqlError::new(1026, "HY000", "a sorted row is larger than 4 GiB"))?;
        let mut head = [0u8; HEADER];
        head[..4].copy_from_slice(&len.to_le_bytes());
        head[4..].copy_from_slice(&crc32fast::hash(&self.block).to_le_bytes());
        self.file
            .write_all_at(&head, self.end)
            .and_then(|()| {
                self.file
                    .write_all_at(&self.block, self.end + HEADER as u64)
            })
            .map_err(|e| io_error("write", &e))?;
        self.end += (HEADER + self.block.len()) as u64;
        self.block.clear();
        Ok(())
    }

    /// Appends one row to the run being written.
    fn push(&mut self, r: &[Value]) -> SqlResult<()> {
        put_row(&mut self.block, r);
        if self.block.len() >= BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Ends the run being written (started at `start`).
    fn end_run(&mut self, start: u64) -> SqlResult<()> {
        self.flush_block()?;
        if self.end > start {
            self.runs.push((start, self.end));
        }
        Ok(())
    }

    /// Writes `rows` (sorted) as one run.
    pub(crate) fn write_run(&mut self, rows: &[Vec<Value>]) -> SqlResult<()> {
        let start = self.end;
        for r in rows {
            self.push(r)?;
        }
        self.end_run(start)
    }

    /// Merges every run in order of `cmp` (equal rows: the earlier run's
    /// first, so the whole sort stays stable), passing each row to `emit`
    /// until it returns false; returns the number of merge passes.
    pub(crate) fn merge(
        mut self,
        cmp: &dyn Fn(&[Value], &[Value]) -> Ordering,
        emit: &mut dyn FnMut(&[Value]) -> SqlResult<bool>,
    ) -> SqlResult<u64> {
        let mut passes = 1;
        // Earlier passes: groups of FAN_IN runs into one run each, until
        // one pass can merge them all.
        while self.runs.len() > FAN_IN {
            passes += 1;
            let groups: Vec<Vec<(u64, u64)>> =
                self.runs.chunks(FAN_IN).map(|c| c.to_vec()).collect();
            self.runs.clear();
            for g in groups {
                let start = self.end;
                let file = self.file.try_clone().map_err(|e| io_error("read", &e))?;
                merge_runs(&file, &g, cmp, &mut |r| self.push(r).map(|()| true))?;
                self.end_run(start)?;
            }
        }
        merge_runs(&self.file, &self.runs, cmp, emit)?;
        Ok(passes)
    }
}

/// A run being read back: its next block's offset, and the block.
struct RunReader {
    next: u64,
    end: u64,
    buf: Vec<u8>,
    at: usize,
}

impl RunReader {
    /// Reads the run's next row into `row`; false at the run's end.
    fn next_row(&mut self, file: &File, row: &mut Vec<Value>) -> SqlResult<bool> {
        if self.at >= self.buf.len() {
            if self.next >= self.end {
                return Ok(false);
            }
            let at = self.next;
            let mut head = [0u8; HEADER];
            file.read_exact_at(&mut head, at)
                .map_err(|e| io_error("read", &e))?;
            let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as u64;
            let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
            if at + HEADER as u64 + len > self.end || len == 0 {
                return Err(damaged(at, "a block length past its run"));
            }
            self.buf.resize(len as usize, 0);
            file.read_exact_at(&mut self.buf, at + HEADER as u64)
                .map_err(|e| io_error("read", &e))?;
            if crc32fast::hash(&self.buf) != crc {
                return Err(damaged(at, "a checksum mismatch"));
            }
            self.next = at + HEADER as u64 + len;
            self.at = 0;
        }
        let mut inp = self.buf.get(self.at..).unwrap_or_default();
        let before = inp.len();
        get_row(&mut inp, row).ok_or_else(|| damaged(self.next, "a row that does not decode"))?;
        self.at += before - inp.len();
        Ok(true)
    }
}

/// Merges `runs` of `file` into `emit` (a binary heap of the runs by
/// their current rows).
fn merge_runs(
    file: &File,
    runs: &[(u64, u64)],
    cmp: &dyn Fn(&[Value], &[Value]) -> Ordering,
    emit: &mut dyn FnMut(&[Value]) -> SqlResult<bool>,
) -> SqlResult<()> {
    let mut readers: Vec<RunReader> = runs
        .iter()
        .map(|&(start, end)| RunReader {
            next: start,
            end,
            buf: Vec::new(),
            at: 0,
        })
        .collect();
    let mut heads: Vec<Vec<Value>> = vec![Vec::new(); readers.len()];
    let mut heap: Vec<usize> = Vec::with_capacity(readers.len());
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(h) = heads.get_mut(i) {
            if r.next_row(file, h)? {
                heap.push(i);
            }
        }
    }
    // `a` goes before `b`: the smaller row, or the earlier run.
    let before = |heads: &[Vec<Value>], a: usize, b: usize| -> bool {
        let (x, y) = (heads.get(a), heads.get(b));
        match (x, y) {
            (Some(x), Some(y)) => cmp(x, y).then(a.cmp(&b)) == Ordering::Less,
            _ => a < b,
        }
    };
    // Heapify.
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, i, &heads, &before);
    }
    while let Some(&top) = heap.first() {
        let more = match heads.get(top) {
            Some(h) => emit(h)?,
            None => false,
        };
        if !more {
            return Ok(());
        }
        let alive = match (readers.get_mut(top), heads.get_mut(top)) {
            (Some(r), Some(h)) => r.next_row(file, h)?,
            _ => false,
        };
        if !alive {
            let last = heap.len() - 1;
            heap.swap(0, last);
            heap.pop();
        }
        sift_down(&mut heap, 0, &heads, &before);
    }
    Ok(())
}

/// Whether run `a`'s current row goes before run `b`'s.
type Before<'a> = dyn Fn(&[Vec<Value>], usize, usize) -> bool + 'a;

fn sift_down(heap: &mut [usize], mut i: usize, heads: &[Vec<Value>], before: &Before<'_>) {
    loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut m = i;
        if let (Some(&a), Some(&b)) = (heap.get(l), heap.get(m)) {
            if before(heads, a, b) {
                m = l;
            }
        }
        if let (Some(&a), Some(&b)) = (heap.get(r), heap.get(m)) {
            if before(heads, a, b) {
                m = r;
            }
        }
        if m == i {
            return;
        }
        heap.swap(i, m);
        i = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Int(-7),
            Value::UInt(u64::MAX),
            Value::Double(1.5),
            Value::Decimal(-12345, 2),
            Value::Str(b"abc".to_vec()),
            Value::Date(20261129),
            Value::DateTime(1),
            Value::Time(-5),
            Value::Member(3, b"x".to_vec()),
            Value::Json(vec![0, 1, 2]),
        ]
    }

    #[test]
    fn rows_round_trip_through_the_spill_encoding() {
        let r = sample();
        let mut b = Vec::new();
        put_row(&mut b, &r);
        let mut inp = b.as_slice();
        let mut back = vec![Value::Str(b"old buffer".to_vec())];
        assert_eq!(get_row(&mut inp, &mut back), Some(()));
        assert_eq!(back, r);
        assert!(inp.is_empty());
    }

    #[test]
    fn cut_or_bad_spill_bytes_do_not_decode() {
        let mut b = Vec::new();
        put_row(&mut b, &sample());
        for n in 0..b.len() {
            let mut inp = b.get(..n).unwrap_or_default();
            assert_eq!(get_row(&mut inp, &mut Vec::new()), None, "cut at {n}");
        }
        let mut huge = Vec::new();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(get_row(&mut huge.as_slice(), &mut Vec::new()), None);
        let bad = [1u8, 0, 0, 0, 99];
        assert_eq!(get_row(&mut bad.as_slice(), &mut Vec::new()), None);
    }

    fn by_int(a: &[Value], b: &[Value]) -> Ordering {
        match (a.first(), b.first()) {
            (Some(Value::Int(x)), Some(Value::Int(y))) => x.cmp(y),
            _ => Ordering::Equal,
        }
    }

    /// Runs of `rows` split `per` rows a run, merged back.
    fn spill_and_merge(rows: &[Vec<Value>], per: usize) -> SqlResult<(usize, Vec<Vec<Value>>)> {
        let dir = tempfile::tempdir().map_err(|e| SqlError::new(1, "HY000", e.to_string()))?;
        let mut runs = Runs::create(dir.path())?;
        for chunk in rows.chunks(per) {
            let mut c = chunk.to_vec();
            c.sort_by(|a, b| by_int(a, b));
            runs.write_run(&c)?;
        }
        let n = runs.len();
        let mut out = Vec::new();
        let passes = runs.merge(&by_int, &mut |r| {
            out.push(r.to_vec());
            Ok(true)
        })?;
        let (mut left, mut want) = (n, 1);
        while left > FAN_IN {
            left = left.div_ceil(FAN_IN);
            want += 1;
        }
        assert_eq!(passes, want);
        Ok((n, out))
    }

    #[test]
    fn merged_runs_give_a_stable_sort_in_one_pass_and_in_several() -> SqlResult<()> {
        // Keys repeat, and the second value says where the row was, so
        // stability is checked too.
        let rows: Vec<Vec<Value>> = (0..5000i64)
            .map(|i| vec![Value::Int((i * 7919) % 97), Value::Int(i)])
            .collect();
        let mut want = rows.clone();
        want.sort_by(|a, b| by_int(a, b));
        for per in [5000, 700, 37, 1] {
            let (n, got) = spill_and_merge(&rows, per)?;
            assert_eq!(n, 5000usize.div_ceil(per));
            assert_eq!(got, want, "{per} rows a run");
        }
        Ok(())
    }

    #[test]
    fn a_damaged_spill_block_is_an_error_not_a_row() -> SqlResult<()> {
        let dir = tempfile::tempdir().map_err(|e| SqlError::new(1, "HY000", e.to_string()))?;
        let mut runs = Runs::create(dir.path())?;
        let rows: Vec<Vec<Value>> = (0..100).map(|i| vec![Value::Int(i)]).collect();
        runs.write_run(&rows)?;
        runs.file
            .write_all_at(&[0xff], 20)
            .map_err(|e| io_error("write", &e))?;
        let e = runs.merge(&by_int, &mut |_| Ok(true)).err();
        assert!(
            matches!(&e, Some(e) if e.code == 1024 && e.message.contains("checksum")),
            "{e:?}"
        );
        Ok(())
    }

    #[test]
    fn charges_are_given_back_when_dropped_and_capped() {
        let mem = Mem {
            cap: 1 << 20,
            ..Mem::default()
        };
        {
            let mut c = Charge::new(&mem);
            assert!(c.add(512 << 10).is_ok());
            assert_eq!(mem.held(), 512 << 10);
            let e = c.add(600 << 10).err();
            assert!(matches!(&e, Some(e) if e.code == 1290), "{e:?}");
        }
        assert_eq!(mem.held(), 0);
    }

    #[test]
    fn kept_charges_stay_counted_until_released() {
        let mem = Mem {
            cap: 1 << 20,
            ..Mem::default()
        };
        let mut c = Charge::new(&mem);
        assert!(c.add(100 << 10).is_ok());
        assert!(c.add(10).is_ok());
        let kept = c.keep().ok();
        assert_eq!(kept, Some((100 << 10) + 10));
        assert_eq!(mem.held(), (100 << 10) + 10);
        let mut d = Charge::new(&mem);
        assert!(
            d.add(1 << 20).is_err(),
            "the kept bytes count against the cap"
        );
        drop(d);
        mem.release((100 << 10) + 10);
        assert_eq!(mem.held(), 0);
        let mut e = Charge::new(&mem);
        assert!(e.add(2 << 20).is_err());
        let mut f = Charge::new(&mem);
        assert!(f.add(1000).is_ok());
        drop(e);
        assert!(matches!(f.keep(), Ok(1000)));
        mem.release(1000);
        assert_eq!(mem.held(), 0);
    }
}
