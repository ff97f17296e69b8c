//! Window functions: the implemented forms answer one row per input row
//! with MySQL 8.0's values (once they ran as plain aggregates, one row);
//! the forms not implemented are refused with 1235 wherever they appear.

mod common;
use common::{err, q, rows};

use cairndb_sql::Session;

/// A session on a fresh database `d` with `t(id)` holding 1, 2, 3.
fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT)");
    q(&mut s, "INSERT INTO t VALUES (1, 1), (2, 1), (3, 2)");
    (dir, s)
}

/// `r(id, v)`: (1,10), (2,10), (3,20), (4,30), (5,30), (6,NULL).
fn ranked(s: &mut Session) {
    q(s, "CREATE TABLE r (id INT PRIMARY KEY, v INT)");
    q(
        s,
        "INSERT INTO r VALUES (1,10),(2,10),(3,20),(4,30),(5,30),(6,NULL)",
    );
}

#[test]
fn window_sum_over_returns_every_row() {
    // A plain SUM here once gave the single row 6.
    let (_d, mut s) = session();
    assert_eq!(
        rows(&q(&mut s, "SELECT id, SUM(id) OVER (ORDER BY id) FROM t")),
        vec!["1|1", "2|3", "3|6"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id, SUM(id) OVER () FROM t ORDER BY id")),
        vec!["1|6", "2|6", "3|6"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT COUNT(*) OVER () FROM t")),
        vec!["3", "3", "3"]
    );
    // The plain aggregate is untouched.
    assert_eq!(rows(&q(&mut s, "SELECT SUM(id) FROM t")), vec!["6"]);
}

#[test]
fn window_ranking_functions_number_peers_as_mysql() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, ROW_NUMBER() OVER (ORDER BY v, id), RANK() OVER (ORDER BY v), \
             DENSE_RANK() OVER (ORDER BY v) FROM r ORDER BY id"
        )),
        // NULL sorts first.
        vec!["1|2|2|2", "2|3|2|2", "3|4|4|3", "4|5|5|4", "5|6|5|4", "6|1|1|1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY id DESC) FROM t ORDER BY id"
        )),
        vec!["1|2", "2|1", "3|1"]
    );
    // Without ORDER BY every row is a peer: RANK and DENSE_RANK are 1.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT RANK() OVER (), DENSE_RANK() OVER () FROM t"
        )),
        vec!["1|1", "1|1", "1|1"]
    );
}

#[test]
fn window_aggregates_use_the_default_frame() {
    let (_d, mut s) = session();
    ranked(&mut s);
    // With ORDER BY: up to the current row and its peers.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(v) OVER (ORDER BY v), COUNT(v) OVER (ORDER BY v), \
             COUNT(*) OVER (ORDER BY v DESC), MAX(v) OVER (ORDER BY id) FROM r ORDER BY id"
        )),
        vec![
            // DESC puts NULL last.
            "1|20|2|5|10",
            "2|20|2|5|10",
            "3|40|3|3|20",
            "4|100|5|2|30",
            "5|100|5|2|30",
            "6|NULL|0|6|30",
        ]
    );
    // Without ORDER BY: the whole partition.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, MIN(v) OVER (PARTITION BY v > 15), SUM(v) OVER () FROM r ORDER BY id"
        )),
        vec![
            "1|10|100",
            "2|10|100",
            "3|20|100",
            "4|20|100",
            "5|20|100",
            "6|NULL|100"
        ]
    );
}

#[test]
fn window_values_come_after_where_and_before_limit() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, COUNT(*) OVER () FROM r WHERE v > 10 ORDER BY id"
        )),
        vec!["3|3", "4|3", "5|3"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(v) OVER () FROM r ORDER BY id LIMIT 2"
        )),
        vec!["1|100", "2|100"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, ROW_NUMBER() OVER (ORDER BY id DESC) AS rn FROM r ORDER BY rn LIMIT 3"
        )),
        vec!["6|1", "5|2", "4|3"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT x.id FROM (SELECT id, RANK() OVER (ORDER BY v DESC) AS k FROM r) AS x \
             WHERE x.k = 1 ORDER BY x.id"
        )),
        vec!["4", "5"]
    );
}

#[test]
fn window_forms_not_implemented_are_refused() {
    let (_d, mut s) = session();
    for sql in [
        "SELECT LAG(id) OVER (ORDER BY id) FROM t",
        "SELECT NTILE(2) OVER (ORDER BY id) FROM t",
        "SELECT g, SUM(SUM(id)) OVER () FROM t GROUP BY g",
        "SELECT g, COUNT(*) OVER () FROM t GROUP BY g",
        "SELECT SUM(id), COUNT(*) OVER () FROM t",
        "SELECT COUNT(*) OVER (), SUM(id) FROM t",
        "SELECT id FROM t ORDER BY SUM(id) OVER ()",
        "SELECT id FROM t ORDER BY ROW_NUMBER() OVER (ORDER BY id DESC)",
        "SELECT SUM(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
        "SELECT COUNT(DISTINCT g) OVER () FROM t",
        "SELECT COUNT(*) OVER w FROM t WINDOW w AS ()",
        "SELECT id FROM t WINDOW w AS (ORDER BY id)",
        "SELECT SUM(ROW_NUMBER() OVER ()) OVER () FROM t",
        "SELECT SUM((SELECT 1)) OVER () FROM t",
    ] {
        assert_eq!(err(&mut s, sql), 1235, "{sql}");
    }
}

#[test]
fn window_over_is_refused_in_writes_and_views() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, s INT)");
    assert_eq!(
        err(&mut s, "UPDATE t SET g = ROW_NUMBER() OVER () WHERE id = 1"),
        1235
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM t WHERE SUM(id) OVER () > 1"),
        1235
    );
    assert_eq!(rows(&q(&mut s, "SELECT g FROM t WHERE id = 1")), vec!["1"]);
    // As MySQL: no window function in a recursive query block.
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL \
             SELECT ROW_NUMBER() OVER () + n FROM c WHERE n < 3) SELECT * FROM c"
        ),
        3575
    );
    q(
        &mut s,
        "INSERT INTO u SELECT id, SUM(id) OVER (ORDER BY id) FROM t",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT * FROM u ORDER BY id")),
        vec!["1|1", "2|3", "3|6"]
    );
}
