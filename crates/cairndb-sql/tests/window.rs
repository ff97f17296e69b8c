//! Window functions: CairnDB does not implement them, so every OVER clause
//! and WINDOW clause is refused with 1235 wherever it appears, never run as
//! a plain aggregate or function (which gave one row where MySQL 8.0 gives
//! one per input row).

mod common;
use common::{err, open, q, rows};

use cairndb_sql::Session;

/// A session on a fresh database `d` with `t(id)` holding 1, 2, 3.
fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db, "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT)");
    q(&mut s, "INSERT INTO t VALUES (1, 1), (2, 1), (3, 2)");
    (dir, s)
}

#[test]
fn window_sum_over_returns_every_row() {
    // MySQL 8.0 answers three rows (1|1, 2|3, 3|6); a single row of the
    // plain SUM would be a wrong answer, so until windows run it is 1235.
    let (_d, mut s) = session();
    assert_eq!(
        err(&mut s, "SELECT id, SUM(id) OVER (ORDER BY id) FROM t"),
        1235
    );
    assert_eq!(err(&mut s, "SELECT SUM(id) OVER () FROM t"), 1235);
    assert_eq!(err(&mut s, "SELECT COUNT(*) OVER () FROM t"), 1235);
    // The plain aggregate is untouched.
    assert_eq!(rows(&q(&mut s, "SELECT SUM(id) FROM t")), vec!["6"]);
}

#[test]
fn window_over_is_refused_in_every_clause() {
    let (_d, mut s) = session();
    for sql in [
        "SELECT ROW_NUMBER() OVER () FROM t",
        "SELECT RANK() OVER (ORDER BY id) FROM t",
        "SELECT LAG(id) OVER (ORDER BY id) FROM t",
        "SELECT id, MAX(id) OVER (PARTITION BY g) FROM t",
        "SELECT g, SUM(SUM(id)) OVER () FROM t GROUP BY g",
        "SELECT id FROM t ORDER BY SUM(id) OVER ()",
        "SELECT id FROM t ORDER BY ROW_NUMBER() OVER (ORDER BY id DESC)",
        "SELECT 1 + SUM(id) OVER () FROM t",
        "SELECT * FROM (SELECT id, SUM(id) OVER () AS s FROM t) AS x",
        "SELECT id FROM t WHERE id IN (SELECT SUM(id) OVER () FROM t)",
        "WITH c AS (SELECT SUM(id) OVER () AS s FROM t) SELECT * FROM c",
        "SELECT id FROM t UNION SELECT SUM(id) OVER () FROM t",
        "SELECT COUNT(*) OVER w FROM t WINDOW w AS ()",
        "SELECT id FROM t WINDOW w AS (ORDER BY id)",
    ] {
        assert_eq!(err(&mut s, sql), 1235, "{sql}");
    }
}

#[test]
fn window_over_is_refused_in_writes_and_views() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, s INT)");
    assert_eq!(
        err(&mut s, "INSERT INTO u SELECT id, SUM(id) OVER () FROM t"),
        1235
    );
    assert_eq!(
        err(&mut s, "UPDATE t SET g = ROW_NUMBER() OVER () WHERE id = 1"),
        1235
    );
    // Nothing was written by the refused statements.
    assert_eq!(rows(&q(&mut s, "SELECT COUNT(*) FROM u")), vec!["0"]);
    assert_eq!(rows(&q(&mut s, "SELECT g FROM t WHERE id = 1")), vec!["1"]);
}
