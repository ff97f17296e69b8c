//! A mock SQL layer for the protocol tests, and a server on a background
//! runtime bound to 127.0.0.1 port 0.
//!
//! The mock answers: `SELECT 1`; `SELECT @@name, ...` (version_comment,
//! max_allowed_packet, wait_timeout, others NULL, `LIMIT 1` allowed);
//! `SELECT rows` (3 rows: id, name, score, at); `SELECT big N` (N rows of
//! 1 KiB); `SELECT length ...` (the query's own length); `SELECT sleep`
//! (300 ms, then 1); `BEGIN`, `COMMIT`, `SET autocommit = 0|1`, other
//! `SET`s; `INSERT ...` (2 rows, id 42); `bad` and anything else: ERR
//! 1064. `DURABLE WAIT N` answers OK once its commit is durable, N ms
//! later (a thread wakes the connection's task); `DURABLE FAIL` commits
//! something whose sync fails (error 1180). Prepared: `SELECT ?, ...` echoes its parameters in one row;
//! other statements run as the text query would, in binary. Database
//! `nope` does not exist.
#![allow(dead_code)]

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use cairndb_server::{
    Backend, Column, ColumnFlags, ColumnType, Config, DateTime, Prepared, Results, Server, Session,
    SqlError, StatusFlags, Value,
};

pub struct Mock;

impl Backend for Mock {
    type Session = MockSession;
    fn open_session(
        &self,
        _conn_id: u32,
        _user: &str,
        db: Option<&str>,
    ) -> Result<MockSession, SqlError> {
        if db == Some("nope") {
            return Err(SqlError::bad_db("nope"));
        }
        Ok(MockSession {
            autocommit: true,
            in_trans: false,
            stmts: Default::default(),
            durable: None,
        })
    }
}

pub struct MockSession {
    autocommit: bool,
    in_trans: bool,
    stmts: std::collections::HashMap<u32, String>,
    /// The sync the last command's commit waits for.
    durable: Option<Arc<Gate>>,
}

/// A commit's sync: its outcome once known, and the task waiting for it.
#[derive(Default)]
struct Gate(std::sync::Mutex<GateState>);

/// The outcome, once known, and the waiting task's waker.
type GateState = (Option<Result<(), SqlError>>, Option<std::task::Waker>);

impl Gate {
    fn open(&self, r: Result<(), SqlError>) {
        let mut g = self.0.lock().unwrap();
        g.0 = Some(r);
        if let Some(w) = g.1.take() {
            w.wake();
        }
    }
}

fn rows_columns() -> [Column; 4] {
    [
        Column::new("id", ColumnType::MYSQL_TYPE_LONGLONG)
            .with_table("db", "t")
            .with_flags(ColumnFlags::PRI_KEY_FLAG | ColumnFlags::NOT_NULL_FLAG),
        Column::new("name", ColumnType::MYSQL_TYPE_VAR_STRING).with_table("db", "t"),
        Column::new("score", ColumnType::MYSQL_TYPE_DOUBLE).with_table("db", "t"),
        Column::new("at", ColumnType::MYSQL_TYPE_DATETIME).with_table("db", "t"),
    ]
}

impl MockSession {
    fn statement(&mut self, stmt: &str, sql_len: usize, out: &mut dyn Results) {
        let s = stmt.trim();
        let l = s.to_ascii_lowercase();
        if let Some(ms) = l.strip_prefix("durable wait ") {
            let ms: u64 = ms.trim().parse().unwrap_or(0);
            let gate = Arc::new(Gate::default());
            let g = gate.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(ms));
                g.open(Ok(()));
            });
            self.durable = Some(gate);
            out.ok(1, 0, 0, "");
        } else if l == "durable fail" {
            let gate = Arc::new(Gate::default());
            gate.open(Err(SqlError::new(
                1180,
                b"HY000",
                "Got error 5 during COMMIT",
            )));
            self.durable = Some(gate);
            out.ok(1, 0, 0, "");
        } else if l == "select 1" {
            out.begin_result_set(&[Column::new("1", ColumnType::MYSQL_TYPE_LONGLONG)]);
            let r = out.row();
            r.int(1);
            r.finish();
            out.end_result_set(0);
        } else if let Some(vars) = l.strip_prefix("select @@") {
            let vars = vars.trim_end_matches(" limit 1");
            let names: Vec<&str> = vars
                .split(',')
                .map(|v| v.trim().trim_start_matches("@@"))
                .collect();
            let cols: Vec<Column> = names
                .iter()
                .map(|n| Column::new(format!("@@{n}"), ColumnType::MYSQL_TYPE_VAR_STRING))
                .collect();
            out.begin_result_set(&cols);
            let r = out.row();
            for n in &names {
                match *n {
                    "version_comment" => r.bytes(b"CairnDB"),
                    "max_allowed_packet" => r.bytes(b"67108864"),
                    "wait_timeout" => r.bytes(b"28800"),
                    _ => r.null(),
                }
            }
            r.finish();
            out.end_result_set(0);
        } else if l == "select rows" {
            out.begin_result_set(&rows_columns());
            for i in 1..=3i64 {
                let r = out.row();
                r.int(i);
                if i == 2 {
                    r.null();
                } else {
                    r.bytes(format!("name{i}").as_bytes());
                }
                r.double(i as f64 + 0.5);
                r.datetime(DateTime {
                    year: 2024,
                    month: 1,
                    day: i as u8,
                    hour: 12,
                    minute: 30,
                    second: 15,
                    micros: 0,
                });
                r.finish();
            }
            out.end_result_set(0);
        } else if let Some(n) = l.strip_prefix("select big ") {
            let n: usize = n.trim().parse().unwrap_or(0);
            out.begin_result_set(&[
                Column::new("i", ColumnType::MYSQL_TYPE_LONG),
                Column::new("pad", ColumnType::MYSQL_TYPE_BLOB),
            ]);
            let pad = [b'x'; 1024];
            for i in 0..n {
                let r = out.row();
                r.int(i as i64);
                r.bytes(&pad);
                r.finish();
            }
            out.end_result_set(0);
        } else if l.starts_with("select length") {
            out.begin_result_set(&[Column::new("len", ColumnType::MYSQL_TYPE_LONGLONG)]);
            out.row().uint(sql_len as u64);
            out.end_result_set(0);
        } else if l == "select sleep" {
            std::thread::sleep(Duration::from_millis(300));
            out.begin_result_set(&[Column::new("slept", ColumnType::MYSQL_TYPE_LONGLONG)]);
            out.row().int(1);
            out.end_result_set(0);
        } else if l == "begin" || l == "start transaction" {
            self.in_trans = true;
            out.set_status(self.status());
            out.ok(0, 0, 0, "");
        } else if l == "commit" || l == "rollback" {
            self.in_trans = false;
            out.set_status(self.status());
            out.ok(0, 0, 0, "");
        } else if let Some(v) = l.strip_prefix("set autocommit") {
            self.autocommit = v.trim_start_matches([' ', '=']).trim() != "0";
            out.set_status(self.status());
            out.ok(0, 0, 0, "");
        } else if l.starts_with("set ") {
            out.ok(0, 0, 0, "");
        } else if l.starts_with("insert") {
            out.ok(2, 42, 1, "Records: 2  Duplicates: 0  Warnings: 1");
        } else {
            out.error(SqlError::syntax(s));
        }
    }
}

fn value_column(i: usize, v: &Value<'_>) -> Column {
    let name = format!("p{i}");
    match v {
        Value::Null => Column::new(name, ColumnType::MYSQL_TYPE_NULL),
        Value::Int(_) => Column::new(name, ColumnType::MYSQL_TYPE_LONGLONG),
        Value::UInt(_) => Column::new(name, ColumnType::MYSQL_TYPE_LONGLONG)
            .with_flags(ColumnFlags::UNSIGNED_FLAG),
        Value::Float(_) => Column::new(name, ColumnType::MYSQL_TYPE_FLOAT),
        Value::Double(_) => Column::new(name, ColumnType::MYSQL_TYPE_DOUBLE),
        Value::Bytes(_) => Column::new(name, ColumnType::MYSQL_TYPE_BLOB),
        Value::DateTime(_) => {
            let mut c = Column::new(name, ColumnType::MYSQL_TYPE_DATETIME);
            c.decimals = 6;
            c
        }
        Value::Time(_) => {
            let mut c = Column::new(name, ColumnType::MYSQL_TYPE_TIME);
            c.decimals = 6;
            c
        }
    }
}

impl Session for MockSession {
    fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), SqlError>> {
        let Some(gate) = self.durable.clone() else {
            return std::task::Poll::Ready(Ok(()));
        };
        let mut g = gate.0.lock().unwrap();
        match g.0.take() {
            Some(r) => {
                drop(g);
                self.durable = None;
                std::task::Poll::Ready(r)
            }
            None => {
                g.1 = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        }
    }

    fn query(&mut self, sql: &str, out: &mut dyn Results) {
        let stmts: Vec<&str> = sql.split(';').filter(|s| !s.trim().is_empty()).collect();
        if stmts.len() > 1 && !out.multi_statements() {
            out.error(SqlError::syntax(stmts[1]));
            return;
        }
        if stmts.is_empty() {
            out.error(SqlError::new(1065, b"42000", "Query was empty"));
            return;
        }
        for s in stmts {
            self.statement(s, sql.len(), out);
        }
    }

    fn prepare(&mut self, stmt: u32, sql: &str) -> Result<Prepared, SqlError> {
        let l = sql.trim().to_ascii_lowercase();
        if l == "bad" {
            return Err(SqlError::syntax(sql));
        }
        let params = sql.matches('?').count() as u16;
        let columns = if l.starts_with("select") {
            (0..params.max(1))
                .map(|i| Column::new(format!("p{i}"), ColumnType::MYSQL_TYPE_VAR_STRING))
                .collect()
        } else {
            Vec::new()
        };
        self.stmts.insert(stmt, sql.to_string());
        Ok(Prepared { params, columns })
    }

    fn execute(&mut self, stmt: u32, params: &[Value<'_>], out: &mut dyn Results) {
        let Some(sql) = self.stmts.get(&stmt).cloned() else {
            out.error(SqlError::unknown_statement(stmt, "mock"));
            return;
        };
        if params.is_empty() {
            return self.statement(&sql, sql.len(), out);
        }
        let cols: Vec<Column> = params
            .iter()
            .enumerate()
            .map(|(i, v)| value_column(i, v))
            .collect();
        out.begin_result_set(&cols);
        let r = out.row();
        for v in params {
            match *v {
                Value::Null => r.null(),
                Value::Int(x) => r.int(x),
                Value::UInt(x) => r.uint(x),
                Value::Float(x) => r.double(f64::from(x)),
                Value::Double(x) => r.double(x),
                Value::Bytes(b) => r.bytes(b),
                Value::DateTime(d) => r.datetime(d),
                Value::Time(t) => r.time(t),
            }
        }
        r.finish();
        out.end_result_set(0);
    }

    fn close_statement(&mut self, stmt: u32) {
        self.stmts.remove(&stmt);
    }
    fn reset_statement(&mut self, _stmt: u32) {}
    fn init_db(&mut self, db: &str) -> Result<(), SqlError> {
        if db == "nope" {
            Err(SqlError::bad_db(db))
        } else {
            Ok(())
        }
    }
    fn reset_connection(&mut self) {
        self.in_trans = false;
        self.autocommit = true;
        self.stmts.clear();
    }
    fn status(&self) -> StatusFlags {
        let mut s = StatusFlags::empty();
        if self.autocommit {
            s |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
        }
        if self.in_trans {
            s |= StatusFlags::SERVER_STATUS_IN_TRANS;
        }
        s
    }
}

/// A config on 127.0.0.1 port 0 with `root` (no password) and `u`
/// (password `secret`).
pub fn config() -> Config {
    let mut c = Config {
        port: 0,
        ..Config::default()
    };
    c.users.insert("u".into(), "secret".into());
    c
}

/// A server running on its own two-thread runtime until stopped or
/// dropped.
pub struct Running {
    pub port: u16,
    /// The server's host cache and counters.
    pub hosts: cairndb_server::Hosts,
    pub counters: cairndb_server::Counters,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Stops the server and waits until every connection has ended.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_inner()
    }

    /// Sends the shutdown signal without waiting.
    pub fn signal(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    fn stop_inner(&mut self) -> io::Result<()> {
        self.signal();
        match self.thread.take() {
            Some(t) => t.join().expect("server thread panicked"),
            None => Ok(()),
        }
    }

    pub fn url(&self, user: &str, pass: &str) -> String {
        format!("mysql://{user}:{pass}@127.0.0.1:{}/db", self.port)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

pub fn start(config: Config) -> Running {
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let server = Server::bind(config, Arc::new(Mock)).await?;
            let _ = port_tx.send((
                server.local_addr()?.port(),
                server.hosts(),
                server.counters(),
            ));
            server
                .run(async {
                    let _ = stop_rx.await;
                })
                .await
        })
    });
    let (port, hosts, counters) = port_rx.recv().expect("server did not start");
    Running {
        port,
        hosts,
        counters,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

/// A minimal blocking client speaking raw packets, for what a real client
/// library would never send.
pub mod raw {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    pub struct Raw {
        pub s: TcpStream,
    }

    pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let l = (payload.len() as u32).to_le_bytes();
        let mut v = vec![l[0], l[1], l[2], seq];
        v.extend_from_slice(payload);
        v
    }

    impl Raw {
        pub fn connect(port: u16) -> Raw {
            let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.set_nodelay(true).unwrap();
            Raw { s }
        }

        /// Reads one packet: (seq, payload); None at end of stream.
        pub fn read(&mut self) -> Option<(u8, Vec<u8>)> {
            let mut h = [0u8; 4];
            self.s.read_exact(&mut h).ok()?;
            let n = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            let mut p = vec![0u8; n];
            self.s.read_exact(&mut p).ok()?;
            Some((h[3], p))
        }

        /// True if the server closed the connection (end of stream or
        /// reset) without sending more.
        pub fn closed(&mut self) -> bool {
            let mut b = [0u8; 1];
            matches!(self.s.read(&mut b), Ok(0) | Err(_))
        }

        pub fn send(&mut self, bytes: &[u8]) {
            let _ = self.s.write_all(bytes);
        }

        /// The greeting's nonce.
        pub fn greeting(&mut self) -> Vec<u8> {
            let (seq, g) = self.read().expect("greeting");
            assert_eq!(seq, 0);
            assert_eq!(g[0], 10, "protocol 10");
            let v_end = g.iter().position(|&b| b == 0).unwrap();
            let rest = &g[v_end + 1..];
            let mut nonce = rest[4..12].to_vec();
            nonce.extend_from_slice(&rest[4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10..][..12]);
            nonce
        }

        /// A HandshakeResponse41 payload.
        pub fn response(user: &str, data: &[u8], plugin: &str) -> Vec<u8> {
            // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | DEPRECATE_EOF | TRANSACTIONS
            let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0100_0000 | 0x2000;
            let mut p = caps.to_le_bytes().to_vec();
            p.extend((1u32 << 24).to_le_bytes());
            p.push(45);
            p.extend([0u8; 23]);
            p.extend(user.as_bytes());
            p.push(0);
            p.push(data.len() as u8);
            p.extend(data);
            p.extend(plugin.as_bytes());
            p.push(0);
            p
        }

        /// Connects as root (empty password) and reads the OK.
        pub fn login(port: u16) -> Raw {
            let mut r = Raw::connect(port);
            r.greeting();
            r.send(&packet(
                1,
                &Raw::response("root", b"", "mysql_native_password"),
            ));
            let (seq, ok) = r.read().expect("login answer");
            assert_eq!((seq, ok[0]), (2, 0), "login OK: {ok:?}");
            r
        }

        /// Sends a command (sequence 0) and returns the answer's packets
        /// until an OK/EOF without MORE_RESULTS or an ERR (for simple
        /// commands: the first packet).
        pub fn command(&mut self, payload: &[u8]) -> Vec<(u8, Vec<u8>)> {
            self.send(&packet(0, payload));
            let first = self.read().expect("answer");
            vec![first]
        }
    }

    /// The error code of an ERR payload.
    pub fn err_code(p: &[u8]) -> Option<u16> {
        (p.first() == Some(&0xFF)).then(|| u16::from_le_bytes([p[1], p[2]]))
    }
}
