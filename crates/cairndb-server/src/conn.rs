//! The command phase of one connection, without I/O: [`Core::command`]
//! takes one complete client payload, calls the [`Session`] and writes the
//! whole answer into an [`Out`]. The async driver (`server.rs`) and the
//! fuzz target feed it.
//!
//! Owns the connection's negotiated capabilities, its prepared statements
//! (parameter count, result columns, bound parameter types, long data) and
//! the scratch vectors reused by every command.
//!
//! Invariants: a malformed payload (cut short, inconsistent) gets ERR 1835
//! and [`Flow::Close`]; a well-formed request the server refuses (unknown
//! statement, unknown command) gets an ERR and the connection goes on.
//! Commands without an answer (COM_QUIT, COM_STMT_CLOSE,
//! COM_STMT_SEND_LONG_DATA) write nothing. Long data per parameter is
//! bounded by `max_allowed_packet`, long data of all the connection's
//! statements together by [`LONG_DATA_PACKETS`] times that, statements
//! per connection by [`MAX_STATEMENTS`]. No locking: the statistics are
//! atomics.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mysql_common::constants::{CapabilityFlags, ColumnType};

use crate::api::{Column, Session, SqlError, Value};
use crate::params::{self, Cur, ParamError};
use crate::results::{ColMeta, Encoder, Spill};
use crate::wire::Out;

/// Prepared statements one connection may hold (MySQL's default
/// `max_prepared_stmt_count` is 16382 for the whole server).
pub(crate) const MAX_STATEMENTS: usize = 16382;

/// Long data one connection may hold over all its statements, in
/// `max_allowed_packet`s (a statement may still take several parameters
/// of nearly that size each).
pub(crate) const LONG_DATA_PACKETS: usize = 4;

/// The largest statement id this layer hands out (ids wrap to 1 after
/// it); the SQL layer's own ids (SQL `PREPARE`) start above it.
const STMT_ID_MAX: u32 = 0x7FFF_FFFF;

/// Server-wide counters (COM_STATISTICS, [`crate::Counters`]).
#[derive(Debug)]
pub(crate) struct Stats {
    pub(crate) started: Instant,
    pub(crate) threads: AtomicU32,
    pub(crate) questions: AtomicU64,
    /// Connections that ended before logging in.
    pub(crate) aborted_connects: AtomicU64,
    /// Connections past login that ended without COM_QUIT (closed,
    /// timed out, killed, broken).
    pub(crate) aborted_clients: AtomicU64,
    /// Bytes read from and written to connections that never opened a
    /// session (a session is told its own, [`crate::Session::traffic`]).
    pub(crate) bytes_received: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    /// Connections refused with 1129 (host blocked).
    pub(crate) host_blocked: AtomicU64,
    /// Connections refused with 1040 (too many connections).
    pub(crate) max_connections: AtomicU64,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            started: Instant::now(),
            threads: AtomicU32::new(0),
            questions: AtomicU64::new(0),
            aborted_connects: AtomicU64::new(0),
            aborted_clients: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            host_blocked: AtomicU64::new(0),
            max_connections: AtomicU64::new(0),
        }
    }

    /// Counts a connection that ended before logging in, with the bytes
    /// it exchanged.
    pub(crate) fn aborted(&self, received: u64, sent: u64) {
        self.aborted_connects.fetch_add(1, Ordering::Relaxed);
        self.unlogged(received, sent);
    }

    /// Counts the bytes of a connection that opened no session.
    pub(crate) fn unlogged(&self, received: u64, sent: u64) {
        self.bytes_received.fetch_add(received, Ordering::Relaxed);
        self.bytes_sent.fetch_add(sent, Ordering::Relaxed);
    }
}

/// Whether the connection goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Close,
}

#[derive(Debug)]
struct Stmt {
    params: u16,
    /// Parameter types bound by the last execute that sent them.
    types: Vec<u8>,
    long: Vec<Option<Vec<u8>>>,
    /// An error from COM_STMT_SEND_LONG_DATA, reported by the next execute.
    long_error: Option<SqlError>,
}

pub(crate) struct Core<S> {
    pub(crate) session: S,
    caps: CapabilityFlags,
    max_packet: usize,
    stmts: HashMap<u32, Stmt>,
    next_stmt: u32,
    cols: Vec<ColMeta>,
    params: Vec<Value<'static>>,
    stats: Arc<Stats>,
    /// Bytes of long data held by all the statements.
    long_held: usize,
}

/// Drops a statement's long data; returns the bytes it held.
fn drop_long(st: &mut Stmt) -> usize {
    let mut n = 0;
    for l in &mut st.long {
        n += l.take().map_or(0, |b| b.len());
    }
    n
}

/// Reuses a vector's allocation for values of another lifetime (the
/// vector is emptied, so no value crosses over).
fn recycle<'b>(mut v: Vec<Value<'_>>) -> Vec<Value<'b>> {
    v.clear();
    v.into_iter().map(|_| Value::Null).collect()
}

fn param_column() -> Column {
    let mut c = Column::new("?", ColumnType::MYSQL_TYPE_VAR_STRING);
    c.charset = Column::BINARY;
    c
}

impl<S: Session> Core<S> {
    pub(crate) fn new(
        session: S,
        caps: CapabilityFlags,
        max_packet: usize,
        stats: Arc<Stats>,
    ) -> Self {
        Core {
            session,
            caps,
            max_packet,
            stmts: HashMap::new(),
            next_stmt: 1,
            cols: Vec::new(),
            params: Vec::new(),
            stats,
            long_held: 0,
        }
    }

    fn ok(&mut self, out: &mut Out) {
        out.ok(0, 0, 0, self.session.status(), 0, b"");
    }

    /// Tells the session the bytes exchanged since the last report.
    pub(crate) fn traffic(&mut self, received: u64, sent: u64) {
        if received | sent != 0 {
            self.session.traffic(received, sent);
        }
    }

    fn malformed(out: &mut Out) -> Flow {
        out.err(&SqlError::malformed_packet());
        Flow::Close
    }

    /// Whether `payload` is a COM_STMT_EXECUTE the session calls quick
    /// ([`Session::is_quick`]).
    pub(crate) fn is_quick(&self, payload: &[u8]) -> bool {
        match payload {
            [0x17, a, b, c, d, ..] => self.session.is_quick(u32::from_le_bytes([*a, *b, *c, *d])),
            _ => false,
        }
    }

    /// Handles one command payload; its answer (if any) is appended to
    /// `out`, whose sequence id the caller has set.
    pub(crate) fn command(&mut self, payload: &[u8], out: &mut Out, spill: &mut dyn Spill) -> Flow {
        let mut c = Cur(payload);
        let Some(cmd) = c.u8() else {
            return Self::malformed(out);
        };
        self.stats.questions.fetch_add(1, Ordering::Relaxed);
        match cmd {
            // COM_QUIT
            0x01 => return Flow::Close,
            // COM_INIT_DB
            0x02 => match std::str::from_utf8(c.rest()) {
                Ok(db) => match self.session.init_db(db) {
                    Ok(()) => self.ok(out),
                    Err(e) => out.err(&e),
                },
                Err(_) => out.err(&SqlError::invalid_utf8()),
            },
            // COM_QUERY
            0x03 => {
                let bytes = c.rest();
                let status = self.session.status();
                let mut enc = Encoder::new(out, spill, &mut self.cols, self.caps, false, status);
                match std::str::from_utf8(bytes) {
                    Ok(sql) => self.session.query(sql, &mut enc),
                    Err(_) => self.session.query_bytes(bytes, &mut enc),
                }
                enc.finish(self.session.status());
            }
            // COM_FIELD_LIST: deprecated; an empty list of fields.
            0x04 => {
                out.eof(self.caps, self.session.status(), 0);
            }
            // COM_STATISTICS: a bare string, no OK header.
            0x09 => self.statistics(out),
            // COM_REFRESH (mysqladmin's flush-* and refresh): the FLUSH
            // statements its bits name, as one statement (MySQL's
            // `REFRESH_*`: 1 privileges, 2 logs, 4 tables, 8 hosts, 16
            // status, 32 threads); the same privilege checks.
            0x07 => {
                let Some(bits) = c.u8() else {
                    return Self::malformed(out);
                };
                let kinds: Vec<&str> = [
                    (1, "PRIVILEGES"),
                    (2, "LOGS"),
                    (4, "TABLES"),
                    (8, "HOSTS"),
                    (16, "STATUS"),
                    (32, "THREADS"),
                ]
                .iter()
                .filter(|(b, _)| bits & b != 0)
                .map(|(_, k)| *k)
                .collect();
                if kinds.is_empty() {
                    self.ok(out);
                } else {
                    self.run_sql(&format!("FLUSH {}", kinds.join(", ")), out, spill);
                }
            }
            // COM_PROCESS_INFO: SHOW PROCESSLIST.
            0x0a => self.run_sql("SHOW PROCESSLIST", out, spill),
            // COM_PROCESS_KILL: KILL CONNECTION of a 4-byte id.
            0x0c => {
                let Some(id) = c.u32() else {
                    return Self::malformed(out);
                };
                self.run_sql(&format!("KILL CONNECTION {id}"), out, spill);
            }
            // COM_PING
            0x0e => self.ok(out),
            0x16 => return self.prepare(c.rest(), out),
            0x17 => return self.execute(c, out, spill),
            0x18 => return self.send_long_data(c, out),
            // COM_STMT_CLOSE
            0x19 => {
                let Some(id) = c.u32() else {
                    return Self::malformed(out);
                };
                if let Some(mut st) = self.stmts.remove(&id) {
                    self.long_held = self.long_held.saturating_sub(drop_long(&mut st));
                    self.session.close_statement(id);
                }
            }
            // COM_STMT_RESET
            0x1a => {
                let Some(id) = c.u32() else {
                    return Self::malformed(out);
                };
                match self.stmts.get_mut(&id) {
                    Some(st) => {
                        self.long_held = self.long_held.saturating_sub(drop_long(st));
                        st.long_error = None;
                        self.session.reset_statement(id);
                        self.ok(out);
                    }
                    None => out.err(&SqlError::unknown_statement(id, "mysqld_stmt_reset")),
                }
            }
            // COM_SET_OPTION
            0x1b => match c.u16() {
                Some(0) => {
                    self.caps.insert(CapabilityFlags::CLIENT_MULTI_STATEMENTS);
                    out.eof(self.caps, self.session.status(), 0);
                }
                Some(1) => {
                    self.caps.remove(CapabilityFlags::CLIENT_MULTI_STATEMENTS);
                    out.eof(self.caps, self.session.status(), 0);
                }
                Some(_) => out.err(&SqlError::unknown_command()),
                None => return Self::malformed(out),
            },
            // COM_RESET_CONNECTION
            0x1f => {
                self.session.reset_connection();
                self.stmts.clear();
                self.long_held = 0;
                self.ok(out);
            }
            _ => out.err(&SqlError::unknown_command()),
        }
        Flow::Continue
    }

    /// Runs `sql` as COM_QUERY would (a command the protocol names that
    /// a statement does).
    fn run_sql(&mut self, sql: &str, out: &mut Out, spill: &mut dyn Spill) {
        let status = self.session.status();
        let mut enc = Encoder::new(out, spill, &mut self.cols, self.caps, false, status);
        self.session.query(sql, &mut enc);
        enc.finish(self.session.status());
    }

    fn statistics(&mut self, out: &mut Out) {
        use std::io::Write as _;
        let up = self.stats.started.elapsed().as_secs();
        let q = self.stats.questions.load(Ordering::Relaxed);
        out.begin();
        let _ = write!(
            out.buf,
            "Uptime: {}  Threads: {}  Questions: {}  Slow queries: 0  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: {:.3}",
            up,
            self.stats.threads.load(Ordering::Relaxed),
            q,
            q as f64 / up.max(1) as f64
        );
        out.end();
    }

    fn prepare(&mut self, sql: &[u8], out: &mut Out) -> Flow {
        let Ok(sql) = std::str::from_utf8(sql) else {
            out.err(&SqlError::invalid_utf8());
            return Flow::Continue;
        };
        if self.stmts.len() >= MAX_STATEMENTS {
            out.err(&SqlError::new(
                1461,
                b"42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: {MAX_STATEMENTS})"
                ),
            ));
            return Flow::Continue;
        }
        let id = self.next_stmt;
        // Ids stay below 2^31: the SQL layer numbers statements prepared
        // with SQL's PREPARE from there up.
        self.next_stmt = if self.next_stmt >= STMT_ID_MAX {
            1
        } else {
            self.next_stmt + 1
        };
        let p = match self.session.prepare(id, sql) {
            Ok(p) => p,
            Err(e) => {
                out.err(&e);
                return Flow::Continue;
            }
        };
        let status = self.session.status();
        out.begin();
        out.buf.push(0);
        out.buf.extend_from_slice(&id.to_le_bytes());
        out.buf
            .extend_from_slice(&(p.columns.len().min(u16::MAX as usize) as u16).to_le_bytes());
        out.buf.extend_from_slice(&p.params.to_le_bytes());
        out.buf.extend_from_slice(&[0, 0, 0]);
        out.end();
        let deprecate_eof = self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
        if p.params > 0 {
            let pc = param_column();
            for _ in 0..p.params {
                out.column(&pc);
            }
            if !deprecate_eof {
                out.old_eof(status, 0);
            }
        }
        if !p.columns.is_empty() {
            for col in &p.columns {
                out.column(col);
            }
            if !deprecate_eof {
                out.old_eof(status, 0);
            }
        }
        self.stmts.insert(
            id,
            Stmt {
                params: p.params,
                types: Vec::new(),
                long: Vec::new(),
                long_error: None,
            },
        );
        Flow::Continue
    }

    fn execute(&mut self, mut c: Cur<'_>, out: &mut Out, spill: &mut dyn Spill) -> Flow {
        let (Some(id), Some(flags), Some(_iterations)) = (c.u32(), c.u8(), c.u32()) else {
            return Self::malformed(out);
        };
        let Core {
            session,
            stmts,
            cols,
            params,
            caps,
            long_held,
            ..
        } = self;
        let Some(st) = stmts.get_mut(&id) else {
            out.err(&SqlError::unknown_statement(id, "mysqld_stmt_execute"));
            return Flow::Continue;
        };
        if flags & 0x07 != 0 {
            out.err(&SqlError::not_supported("server-side cursors"));
            return Flow::Continue;
        }
        if let Some(e) = st.long_error.take() {
            *long_held = long_held.saturating_sub(drop_long(st));
            out.err(&e);
            return Flow::Continue;
        }
        let mut values = recycle(std::mem::take(params));
        let flow = match params::decode(
            c.rest(),
            usize::from(st.params),
            &mut st.types,
            &st.long,
            &mut values,
        ) {
            Ok(()) => {
                let status = session.status();
                let mut enc = Encoder::new(out, spill, cols, *caps, true, status);
                session.execute(id, &values, &mut enc);
                enc.finish(session.status());
                Flow::Continue
            }
            Err(ParamError::Refused(e)) => {
                out.err(&e);
                Flow::Continue
            }
            Err(ParamError::Malformed) => Self::malformed(out),
        };
        *params = recycle(values);
        *long_held = long_held.saturating_sub(drop_long(st));
        flow
    }

    fn send_long_data(&mut self, mut c: Cur<'_>, out: &mut Out) -> Flow {
        let (Some(id), Some(param)) = (c.u32(), c.u16()) else {
            return Self::malformed(out);
        };
        let data = c.rest();
        let max = self.max_packet;
        let max_held = max.saturating_mul(LONG_DATA_PACKETS);
        // No answer, even to an error: it is reported by the next execute.
        if let Some(st) = self.stmts.get_mut(&id) {
            let i = usize::from(param);
            if param >= st.params {
                st.long_error = Some(SqlError::wrong_arguments("mysqld_stmt_send_long_data"));
                return Flow::Continue;
            }
            if st.long.len() < usize::from(st.params) {
                st.long.resize(usize::from(st.params), None);
            }
            if let Some(slot) = st.long.get_mut(i) {
                let buf = slot.get_or_insert_with(Vec::new);
                if buf.len() + data.len() > max {
                    self.long_held = self.long_held.saturating_sub(buf.len());
                    *slot = None;
                    st.long_error = Some(SqlError::new(
                        1153,
                        b"08S01",
                        "Parameter of prepared statement exceeds 'max_allowed_packet' bytes",
                    ));
                } else if self.long_held + data.len() > max_held {
                    // This statement's long data goes; the others keep
                    // theirs.
                    self.long_held = self.long_held.saturating_sub(drop_long(st));
                    st.long_error = Some(SqlError::new(
                        1153,
                        b"08S01",
                        format!(
                            "Long data of this connection's prepared statements exceeds {max_held} bytes ({LONG_DATA_PACKETS} times 'max_allowed_packet')"
                        ),
                    ));
                } else {
                    buf.extend_from_slice(data);
                    self.long_held += data.len();
                }
            }
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::api::{Prepared, Results};
    use crate::results::NoSpill;
    use mysql_common::constants::StatusFlags;

    #[derive(Default)]
    struct Echo {
        last: Vec<String>,
    }
    impl Session for Echo {
        fn query(&mut self, sql: &str, out: &mut dyn Results) {
            self.last.push(sql.to_string());
            out.ok(1, 2, 0, "");
        }
        fn prepare(&mut self, _stmt: u32, _sql: &str) -> Result<Prepared, SqlError> {
            Ok(Prepared {
                params: 2,
                columns: vec![Column::new("a", ColumnType::MYSQL_TYPE_LONGLONG)],
            })
        }
        fn execute(&mut self, _stmt: u32, params: &[Value<'_>], out: &mut dyn Results) {
            self.last.push(format!("{params:?}"));
            out.ok(0, 0, 0, "");
        }
        fn close_statement(&mut self, stmt: u32) {
            self.last.push(format!("close {stmt}"));
        }
        fn reset_statement(&mut self, _stmt: u32) {}
        fn init_db(&mut self, db: &str) -> Result<(), SqlError> {
            if db == "x" {
                Ok(())
            } else {
                Err(SqlError::bad_db(db))
            }
        }
        fn reset_connection(&mut self) {}
        fn status(&self) -> StatusFlags {
            StatusFlags::SERVER_STATUS_AUTOCOMMIT
        }
    }

    fn core() -> Core<Echo> {
        Core::new(
            Echo::default(),
            CapabilityFlags::CLIENT_DEPRECATE_EOF,
            1 << 20,
            Arc::new(Stats::new()),
        )
    }

    fn run(c: &mut Core<Echo>, payload: &[u8]) -> (Flow, Vec<u8>) {
        let mut out = Out::default();
        out.seq = 1;
        let f = c.command(payload, &mut out, &mut NoSpill);
        (f, out.buf)
    }

    #[test]
    fn prepare_long_data_execute_close() {
        let mut c = core();
        let (_, b) = run(&mut c, b"\x16select ?, ?");
        // PREPARE_OK then 2 param defs and 1 column def, no EOFs.
        assert_eq!(&b[4..9], &[0, 1, 0, 0, 0]);
        assert!(c.stmts.contains_key(&1));
        let (_, b) = run(&mut c, b"\x18\x01\x00\x00\x00\x01\x00abc");
        assert!(b.is_empty());
        run(&mut c, b"\x18\x01\x00\x00\x00\x01\x00def");
        let mut exec = b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00".to_vec();
        exec.extend([0, 1, 8, 0, 253, 0]);
        exec.extend(5i64.to_le_bytes());
        let (f, b) = run(&mut c, &exec);
        assert_eq!(f, Flow::Continue);
        assert_eq!(b[4], 0);
        assert_eq!(
            c.session.last.last().unwrap(),
            "[Int(5), Bytes([97, 98, 99, 100, 101, 102])]"
        );
        // Long data is gone after the execute; types are remembered.
        let mut exec2 = b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00".to_vec();
        exec2.extend([0b10, 0]);
        exec2.extend(6i64.to_le_bytes());
        run(&mut c, &exec2);
        assert_eq!(c.session.last.last().unwrap(), "[Int(6), Null]");
        let (_, b) = run(&mut c, b"\x19\x01\x00\x00\x00");
        assert!(b.is_empty());
        assert_eq!(c.session.last.last().unwrap(), "close 1");
        let (_, b) = run(&mut c, &exec2);
        assert_eq!(&b[5..7], &1243u16.to_le_bytes());
    }

    #[test]
    fn long_data_of_all_statements_is_bounded_per_connection() {
        let mut c = core();
        // Max packet 1 MiB: each statement's parameter may hold almost
        // that; five statements together may not.
        let chunk = vec![b'x'; 900 << 10];
        for id in 1..=5u32 {
            run(&mut c, b"\x16select ?, ?");
            let mut p = vec![0x18];
            p.extend(id.to_le_bytes());
            p.extend(0u16.to_le_bytes());
            p.extend(&chunk);
            let (f, b) = run(&mut c, &p);
            assert_eq!((f, b.len()), (Flow::Continue, 0));
        }
        assert_eq!(c.long_held, 4 * (900 << 10));
        let exec = |id: u32| {
            let mut e = vec![0x17];
            e.extend(id.to_le_bytes());
            // The test session's statements have two parameters: the
            // first from long data, the second NULL.
            e.extend([0, 1, 0, 0, 0, 0b10, 1, 253, 0, 8, 0]);
            e
        };
        // The fifth statement's execute says why; the others kept theirs.
        let (_, b) = run(&mut c, &exec(5));
        assert_eq!(&b[5..7], &1153u16.to_le_bytes());
        let (_, b) = run(&mut c, &exec(1));
        assert_eq!(b[4], 0, "{b:?}");
        assert_eq!(c.long_held, 3 * (900 << 10));
        // Closing and resetting statements gives their bytes back.
        run(&mut c, b"\x19\x02\x00\x00\x00");
        run(&mut c, b"\x1a\x03\x00\x00\x00");
        assert_eq!(c.long_held, 900 << 10);
        run(&mut c, b"\x1f");
        assert_eq!(c.long_held, 0);
    }

    #[test]
    fn com_process_kill_info_and_refresh_run_their_statements() {
        let mut c = core();
        let (f, b) = run(&mut c, b"\x0c\x2a\x00\x00\x00");
        assert_eq!(f, Flow::Continue);
        assert_eq!(b[4], 0, "OK");
        run(&mut c, b"\x0a");
        run(&mut c, b"\x07\x09");
        let (f, b) = run(&mut c, b"\x07\x00");
        assert_eq!((f, b[4]), (Flow::Continue, 0));
        assert_eq!(
            c.session.last,
            [
                "KILL CONNECTION 42",
                "SHOW PROCESSLIST",
                "FLUSH PRIVILEGES, HOSTS"
            ]
        );
        // Short payloads are malformed.
        for p in [&b"\x0c\x01"[..], b"\x07"] {
            let (f, b) = run(&mut c, p);
            assert_eq!(f, Flow::Close, "{p:?}");
            assert_eq!(&b[5..7], &1835u16.to_le_bytes());
        }
    }

    #[test]
    fn malformed_closes_refused_continues() {
        let mut c = core();
        for p in [&b""[..], b"\x17\x01", b"\x19\x01", b"\x1b"] {
            let (f, b) = run(&mut c, p);
            assert_eq!(f, Flow::Close, "{p:?}");
            assert_eq!(&b[5..7], &1835u16.to_le_bytes());
        }
        let (f, b) = run(&mut c, b"\x99");
        assert_eq!(f, Flow::Continue);
        assert_eq!(&b[5..7], &1047u16.to_le_bytes());
        let (f, b) = run(&mut c, b"\x03\xff\xfe");
        assert_eq!(f, Flow::Continue);
        assert_eq!(&b[5..7], &1300u16.to_le_bytes());
        let (f, b) = run(&mut c, b"\x02nope");
        assert_eq!(f, Flow::Continue);
        assert_eq!(&b[5..7], &1049u16.to_le_bytes());
        assert_eq!(run(&mut c, b"\x01").0, Flow::Close);
    }

    #[test]
    fn set_option_toggles_multi_statements() {
        let mut c = core();
        run(&mut c, b"\x1b\x00\x00");
        assert!(c.caps.contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS));
        let (_, b) = run(&mut c, b"\x1b\x01\x00");
        assert!(!c.caps.contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS));
        assert_eq!(b[4], 0xFE);
        let (_, b) = run(&mut c, b"\x09");
        assert!(b[4..].starts_with(b"Uptime: "));
    }
}
