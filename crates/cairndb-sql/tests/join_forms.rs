//! RIGHT JOIN, JOIN ... USING and NATURAL JOIN: rows, the columns `*`
//! lists (common columns once, first), unqualified and qualified names
//! of the common columns, and errors. Expected results are MariaDB
//! 10.11's for the same statements.

use cairndb_sql::Session;

mod common;
use common::{err, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn names(s: &mut Session, sql: &str) -> Vec<String> {
    q(s, sql).columns.iter().map(|c| c.name.clone()).collect()
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    for sql in [
        "CREATE DATABASE d",
        "USE d",
        "CREATE TABLE a (id INT PRIMARY KEY, k INT, x INT)",
        "CREATE TABLE b (k INT, id INT, y INT)",
        "CREATE TABLE c (k INT, z INT)",
        "INSERT INTO a VALUES (1,1,10),(2,2,20),(3,NULL,30),(4,5,40)",
        "INSERT INTO b VALUES (1,100,1000),(1,101,1001),(3,102,1002),(NULL,103,1003)",
        "INSERT INTO c VALUES (1,7),(3,8)",
    ] {
        q(&mut s, sql);
    }
    (dir, s)
}

#[test]
fn join_using_lists_the_common_column_once_and_first() {
    let (_d, mut s) = session();
    let sql = "SELECT * FROM a JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "x", "id", "y"]);
    assert_eq!(r(&mut s, sql), vec!["1|1|10|100|1000", "1|1|10|101|1001"]);
    let sql = "SELECT * FROM a LEFT JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|100|1000",
            "1|1|10|101|1001",
            "2|2|20|NULL|NULL",
            "NULL|3|30|NULL|NULL",
            "5|4|40|NULL|NULL"
        ]
    );
    // Unqualified: the left one; qualified: each side's own.
    let sql = "SELECT k, a.k, b.k FROM a LEFT JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, sql),
        vec!["1|1|1", "1|1|1", "2|2|NULL", "NULL|NULL|NULL", "5|5|NULL"]
    );
    // `t.*` lists all of t's columns.
    let sql = "SELECT a.*, b.* FROM a JOIN b USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "k", "id", "y"]);
    // A chain: the second USING finds k among the first join's columns.
    let sql = "SELECT * FROM a JOIN b USING (k) JOIN c USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "x", "id", "y", "z"]);
    assert_eq!(
        r(&mut s, sql),
        vec!["1|1|10|100|1000|7", "1|1|10|101|1001|7"]
    );
    // A column named twice in the list counts once.
    let sql = "SELECT * FROM a JOIN b USING (k, k) ORDER BY b.id";
    assert_eq!(r(&mut s, sql), vec!["1|1|10|100|1000", "1|1|10|101|1001"]);
}

#[test]
fn right_join_is_the_mirrored_left_join() {
    let (_d, mut s) = session();
    let sql = "SELECT * FROM a RIGHT JOIN b ON a.k = b.k ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "k", "id", "y"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|1|100|1000",
            "1|1|10|1|101|1001",
            "NULL|NULL|NULL|3|102|1002",
            "NULL|NULL|NULL|NULL|103|1003"
        ]
    );
    // With USING: the right side's column, then the right's rest.
    let sql = "SELECT * FROM a RIGHT JOIN b USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "id", "x"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|100|1000|1|10",
            "1|101|1001|1|10",
            "3|102|1002|NULL|NULL",
            "NULL|103|1003|NULL|NULL"
        ]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT k FROM a RIGHT JOIN b USING (k) ORDER BY b.id"
        ),
        vec!["1", "1", "3", "NULL"]
    );
    // RIGHT OUTER JOIN, then an inner join after it.
    let sql = "SELECT b.id, a.id, c.z FROM a RIGHT OUTER JOIN b ON a.k = b.k JOIN c ON c.k = b.k ORDER BY b.id";
    assert_eq!(r(&mut s, sql), vec!["100|1|7", "101|1|7", "102|NULL|8"]);
}

#[test]
fn natural_join_uses_every_common_column() {
    let (_d, mut s) = session();
    // a and b share id and k: no row has both equal.
    assert!(r(&mut s, "SELECT * FROM a NATURAL JOIN b").is_empty());
    let sql = "SELECT * FROM a NATURAL LEFT JOIN b ORDER BY a.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "y"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|NULL",
            "2|2|20|NULL",
            "3|NULL|30|NULL",
            "4|5|40|NULL"
        ]
    );
    let sql = "SELECT * FROM b NATURAL JOIN c ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "z"]);
    assert_eq!(
        r(&mut s, sql),
        vec!["1|100|1000|7", "1|101|1001|7", "3|102|1002|8"]
    );
    let sql = "SELECT * FROM a NATURAL RIGHT JOIN b ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "x"]);
}

#[test]
fn join_using_errors() {
    let (_d, mut s) = session();
    assert_eq!(err(&mut s, "SELECT * FROM a JOIN b USING (nope)"), 1054);
    assert_eq!(err(&mut s, "SELECT * FROM a JOIN b USING (x)"), 1054);
    // k is on both a and b before c: ambiguous for c's USING.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a JOIN b ON a.k = b.k JOIN c USING (k)"
        ),
        1052
    );
    // A RIGHT JOIN after another join would need a nested join.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k"
        ),
        1235
    );
}

#[test]
fn parenthesised_leading_join_is_read_left_to_right() {
    let (_d, mut s) = session();
    // As MariaDB writes a view's joins.
    let flat = r(
        &mut s,
        "SELECT a.id, b.id, c.z FROM a LEFT JOIN b ON a.k = b.k JOIN c ON c.k = a.k ORDER BY b.id",
    );
    let nested = r(
        &mut s,
        "SELECT a.id, b.id, c.z FROM ((a LEFT JOIN b ON (a.k = b.k))) JOIN c ON c.k = a.k ORDER BY b.id",
    );
    assert_eq!(flat, nested);
    assert_eq!(flat, vec!["1|100|7", "1|101|7"]);
    // A parenthesised join on the right of a LEFT JOIN is refused.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a LEFT JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k"
        ),
        1235
    );
}
