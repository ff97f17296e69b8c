//! Statements that once gave wrong answers, each checked against MySQL
//! 8.0's result (MariaDB 10.11's where MySQL has none), or against a
//! clear refusal (1235) where CairnDB does not implement the feature.

use std::sync::Arc;

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};

fn open(dir: &std::path::Path) -> Arc<SqlDb> {
    SqlDb::open(dir, SqlOptions::default()).unwrap()
}

fn q(s: &mut Session, sql: &str) -> Collect {
    let mut c = Collect::default();
    if let Err(e) = s.query(sql, &mut c) {
        panic!("{sql}: {e}");
    }
    c
}

fn err(s: &mut Session, sql: &str) -> u16 {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{sql}: expected an error, got {:?}", rows(&c)),
        Err(e) => e.code,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        other => other.to_string(),
    }
}

/// Rows as strings joined by `|`, one per row.
fn rows(c: &Collect) -> Vec<String> {
    c.rows
        .iter()
        .map(|r| r.iter().map(text).collect::<Vec<_>>().join("|"))
        .collect()
}

/// The single value of a one-row, one-column result.
fn one(s: &mut Session, sql: &str) -> String {
    let r = rows(&q(s, sql));
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r.into_iter().next().unwrap_or_default()
}

/// A session on a fresh database `d` (the directory lives as long as the
/// returned guard).
fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db, "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    (dir, s)
}

#[test]
fn window_functions_are_refused() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    q(&mut s, "INSERT INTO t VALUES (1), (2), (3)");
    assert_eq!(
        err(&mut s, "SELECT id, SUM(id) OVER (ORDER BY id) FROM t"),
        1235
    );
    assert_eq!(err(&mut s, "SELECT ROW_NUMBER() OVER () FROM t"), 1235);
    assert_eq!(
        err(&mut s, "SELECT COUNT(*) OVER w FROM t WINDOW w AS ()"),
        1235
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM t WHERE id > 0 WINDOW w AS ()"),
        1235
    );
    assert_eq!(rows(&q(&mut s, "SELECT SUM(id) FROM t")), vec!["6"]);
}
