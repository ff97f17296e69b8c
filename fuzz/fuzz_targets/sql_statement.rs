//! Fuzz target: any text, run as SQL statements through the real SQL
//! layer (parser, planner, evaluator, executor) on an in-memory file
//! system, gives rows, an OK or an error, never a panic, a hang or a
//! stack overflow. One database and session serve every input, so state
//! built by earlier inputs (tables, rows, variables) is there for later
//! ones; a small schema with rows is made at start so most inputs reach
//! the planner and the executor.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use cairndb_sql::{split_statements, Collect, Session, SqlDb, SqlOptions};
use libfuzzer_sys::fuzz_target;

fn session() -> &'static Mutex<Session> {
    static S: OnceLock<Mutex<Session>> = OnceLock::new();
    S.get_or_init(|| {
        let mut opts = SqlOptions::default();
        opts.engine.fs = Arc::new(cairndb::env::mem::MemFs::new());
        let db = SqlDb::open("/fuzz", opts).expect("open the in-memory database");
        let mut s = Session::new(db, "root");
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(20), d DOUBLE, KEY (k))",
            "INSERT INTO t VALUES (1, 1, 'a', 1.5), (2, 1, 'b', NULL), (3, 2, NULL, -2.25)",
            "CREATE TABLE u (a INT, b DATETIME, e DECIMAL(10,2))",
            "INSERT INTO u VALUES (1, '2024-01-02 03:04:05', 12.34), (NULL, NULL, NULL)",
        ] {
            s.query(sql, &mut Collect::default()).expect("set up the fuzz schema");
        }
        Mutex::new(s)
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut s = match session().lock() {
        Ok(s) => s,
        Err(p) => p.into_inner(),
    };
    // Statements that would make later inputs useless or slow are left
    // out: dropping the schema, and long sleeps.
    for st in split_statements(&text).into_iter().take(8) {
        let up = st.to_ascii_uppercase();
        if up.contains("DROP DATABASE") || up.contains("SLEEP") || up.contains("BENCHMARK") {
            continue;
        }
        let mut out = Collect::default();
        let _ = s.query(st, &mut out);
    }
    // The session stays usable.
    let mut out = Collect::default();
    s.query("SELECT 1", &mut out).expect("the session answers after any input");
});
