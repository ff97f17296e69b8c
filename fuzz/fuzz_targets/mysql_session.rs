//! Fuzz target: any bytes, cut into MySQL commands sent after a login as
//! root, run against the real stack: the protocol server, the adapter
//! (`cairndb-mysqld`'s `SqlBackend`) and the SQL layer over the engine on
//! an in-memory file system. Whatever the commands (queries, prepared
//! statements and their executions with any parameter bytes, long data,
//! resets, changes of database), the server answers, sends errors or
//! closes; never a panic, a hang or a stack overflow, and the database
//! answers a new session afterwards.
//!
//! Input: a sequence of (length byte, that many payload bytes), each sent
//! as one command packet (sequence id 0). One database serves every
//! input, so tables and rows made by earlier inputs are there for later
//! ones (a finding may need the inputs before it to reproduce); a small
//! schema with rows is made at start and again after an input that
//! dropped it.
#![no_main]

use std::io::Cursor;
use std::sync::{Arc, OnceLock};

use cairndb_mysqld::SqlBackend;
use cairndb_server::internals::drive_connection;
use cairndb_server::{Config, Executor};
use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Transport};
use libfuzzer_sys::fuzz_target;

#[path = "common/wire.rs"]
mod wire;
use wire::{login, packet, runtime};

/// The schema inputs start from, made again (when a command dropped or
/// changed it) after each input; errors ignored.
const SCHEMA: [&str; 5] = [
    "CREATE DATABASE IF NOT EXISTS d",
    "CREATE TABLE IF NOT EXISTS d.t (id INT PRIMARY KEY, k INT, c VARCHAR(20), d DOUBLE, KEY (k))",
    "INSERT IGNORE INTO d.t VALUES (1, 1, 'a', 1.5), (2, 1, 'b', NULL), (3, 2, NULL, -2.25)",
    "CREATE TABLE IF NOT EXISTS d.u (a INT, b DATETIME, e DECIMAL(10,2), j JSON)",
    "INSERT INTO d.u SELECT 1, '2024-01-02 03:04:05', 12.34, '[1]' FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM d.u)",
];

fn backend() -> &'static (Arc<SqlDb>, Arc<SqlBackend>) {
    static B: OnceLock<(Arc<SqlDb>, Arc<SqlBackend>)> = OnceLock::new();
    B.get_or_init(|| {
        let mut opts = SqlOptions::default();
        opts.engine.fs = Arc::new(cairndb::env::mem::MemFs::new());
        let db = SqlDb::open("/fuzz", opts).expect("open the in-memory database");
        db.bootstrap_accounts("").expect("make root@localhost");
        let mut s = Session::new(db.clone(), "root");
        for sql in SCHEMA {
            s.query(sql, &mut Collect::default())
                .expect("set up the fuzz schema");
        }
        let b = SqlBackend::new(db.clone(), false, Transport::default());
        (db, Arc::new(b))
    })
}

/// Commands left out: shutting down, long sleeps, account statements
/// (a changed or dropped root would refuse every later login), and
/// what writes files outside the in-memory file system (the query logs'
/// paths, backups, SELECT INTO files).
fn skipped(cmd: &[u8]) -> bool {
    let Some((&kind, rest)) = cmd.split_first() else {
        return false;
    };
    if kind == 0x08 {
        return true;
    }
    let up = String::from_utf8_lossy(rest).to_ascii_uppercase();
    [
        "SLEEP", "BENCHMARK", "SHUTDOWN", "USER", "PASSWORD", "GRANT", "REVOKE", "ACCOUNT",
        "GLOBAL", "BACKUP", "OUTFILE", "DUMPFILE",
    ]
    .iter()
    .any(|w| up.contains(w))
}

fuzz_target!(|data: &[u8]| {
    let (db, b) = backend();
    let mut input = login(b"d");
    let mut r = data;
    let mut n_cmds = 0;
    while let Some((&n, tail)) = r.split_first() {
        let n = usize::from(n).min(tail.len());
        let (cmd, tail) = tail.split_at(n);
        r = tail;
        if skipped(cmd) {
            continue;
        }
        input.extend(packet(0, cmd));
        n_cmds += 1;
        if n_cmds == 16 {
            break;
        }
    }
    let config = Config {
        max_allowed_packet: 1 << 16,
        executor: Executor::Inline,
        ..Config::default()
    };
    runtime().block_on(drive_connection(
        config,
        b.clone(),
        Cursor::new(input),
        tokio::io::sink(),
    ));
    // The database answers a new session; the schema is made again where
    // a command dropped it.
    let mut s = Session::new(db.clone(), "root");
    s.query("SELECT 1", &mut Collect::default())
        .expect("the database answers after any input");
    for sql in SCHEMA {
        let _ = s.query(sql, &mut Collect::default());
    }
});
