//! Helpers shared by the end-to-end SQL tests: open a database, run a
//! statement that must succeed or fail, and show rows as text.
#![allow(dead_code)]

use std::sync::Arc;

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};

/// Opens (or creates) a database in `dir` with the default options.
pub fn open(dir: &std::path::Path) -> Arc<SqlDb> {
    SqlDb::open(dir, SqlOptions::default()).unwrap()
}

/// A root session on a new database in a temporary directory (kept as
/// long as the directory is).
pub fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new(open(dir.path()), "root");
    (dir, s)
}

/// Runs `sql`, which must succeed; its output.
pub fn q(s: &mut Session, sql: &str) -> Collect {
    let mut c = Collect::default();
    if let Err(e) = s.query(sql, &mut c) {
        panic!("{sql}: {e}");
    }
    c
}

/// Runs `sql`, which must fail; its MySQL error code.
pub fn err(s: &mut Session, sql: &str) -> u16 {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{sql}: expected an error, got {:?}", rows(&c)),
        Err(e) => e.code,
    }
}

/// A value as text, NULL as `NULL`.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        other => other.to_string(),
    }
}

/// Rows as strings joined by `|`, one per row.
pub fn rows(c: &Collect) -> Vec<String> {
    c.rows
        .iter()
        .map(|r| r.iter().map(text).collect::<Vec<_>>().join("|"))
        .collect()
}
