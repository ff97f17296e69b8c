//! Window functions: one row per input row with MySQL 8.0's values
//! (once they ran as plain aggregates, one row): ranking, value and
//! aggregate functions, ROWS / RANGE frames, named windows, windows over
//! grouped rows and in ORDER BY; MySQL's errors for misuse, 1235 for the
//! forms not implemented.

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
fn window_over_is_refused_in_writes_and_views() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, s INT)");
    // As MySQL: 3593 "You cannot use the window function .. in this
    // context".
    assert_eq!(
        err(&mut s, "UPDATE t SET g = ROW_NUMBER() OVER () WHERE id = 1"),
        3593
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM t WHERE SUM(id) OVER () > 1"),
        3593
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

/// `dt(id, d, x)`: dates and doubles with a NULL of each.
fn dated(s: &mut Session) {
    q(s, "CREATE TABLE dt (id INT PRIMARY KEY, d DATE, x DOUBLE)");
    q(
        s,
        "INSERT INTO dt VALUES (1,'2024-01-01',1.5),(2,'2024-01-02',2.5),(3,'2024-01-05',4),\
         (4,'2024-02-01',NULL),(5,NULL,8)",
    );
}

#[test]
fn window_lag_lead_take_offsets_and_defaults() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, LAG(v) OVER w, LEAD(v) OVER w, LAG(v, 2, -1) OVER w, LEAD(v, 0) OVER w, \
             LEAD(v, 3, id * 100) OVER w FROM r WINDOW w AS (ORDER BY id) ORDER BY id"
        )),
        // A NULL inside the partition is the value, not the default.
        vec![
            "1|NULL|10|-1|10|30",
            "2|10|20|-1|10|30",
            "3|10|30|10|20|NULL",
            "4|20|30|10|30|400",
            "5|30|NULL|20|30|500",
            "6|30|NULL|30|NULL|600",
        ]
    );
    // Per partition, and RESPECT NULLS is the default.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, LAG(id) RESPECT NULLS OVER (PARTITION BY g ORDER BY id), \
             LEAD(id, 1, 0) OVER (PARTITION BY g ORDER BY id) FROM t ORDER BY id"
        )),
        vec!["1|NULL|2", "2|1|0", "3|NULL|0"]
    );
}

#[test]
fn window_first_last_nth_value_read_the_frame() {
    let (_d, mut s) = session();
    ranked(&mut s);
    // The default frame: up to the current row's last peer.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, FIRST_VALUE(v) OVER w, LAST_VALUE(v) OVER w, NTH_VALUE(v, 2) OVER w, \
             NTH_VALUE(v, 5) OVER w FROM r WINDOW w AS (ORDER BY v) ORDER BY id"
        )),
        vec![
            "1|NULL|10|10|NULL",
            "2|NULL|10|10|NULL",
            "3|NULL|20|10|NULL",
            "4|NULL|30|10|30",
            "5|NULL|30|10|30",
            "6|NULL|NULL|NULL|NULL",
        ]
    );
    // FROM FIRST is the default; FROM LAST is refused.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, NTH_VALUE(v, 3) from  first OVER (ORDER BY id), \
             NTH_VALUE(v, 1) FROM FIRST RESPECT NULLS OVER w FROM r WINDOW w AS () ORDER BY id"
        )),
        vec![
            "1|NULL|10",
            "2|NULL|10",
            "3|20|10",
            "4|20|10",
            "5|20|10",
            "6|20|10"
        ]
    );
    assert_eq!(
        err(
            &mut s,
            "SELECT NTH_VALUE(v, (1)) FROM LAST OVER (ORDER BY id) FROM r"
        ),
        1235
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT 'NTH_VALUE(x) FROM LAST' FROM r WHERE id = 1"
        )),
        vec!["NTH_VALUE(x) FROM LAST"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, FIRST_VALUE(id) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), \
             LAST_VALUE(id) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), \
             NTH_VALUE(id, 2) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) \
             FROM r ORDER BY id"
        )),
        vec!["1|2|6|NULL", "2|3|6|2", "3|4|6|2", "4|5|6|3", "5|6|6|4", "6|NULL|6|5"]
    );
}

#[test]
fn window_ntile_percent_rank_cume_dist_as_mysql() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, NTILE(4) OVER (ORDER BY id), NTILE(2) OVER (ORDER BY id), \
             NTILE(10) OVER (ORDER BY id), PERCENT_RANK() OVER (ORDER BY v), \
             CUME_DIST() OVER (ORDER BY v) FROM r ORDER BY id"
        )),
        vec![
            "1|1|1|1|0.2|0.5",
            "2|1|1|2|0.2|0.5",
            "3|2|1|3|0.6|0.6666666666666666",
            "4|2|2|4|0.8|1",
            "5|3|2|5|0.8|1",
            "6|4|2|6|0|0.16666666666666666",
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, PERCENT_RANK() OVER (PARTITION BY v ORDER BY id), CUME_DIST() OVER () \
             FROM r ORDER BY id"
        )),
        vec!["1|0|1", "2|1|1", "3|0|1", "4|0|1", "5|1|1", "6|0|1"]
    );
    // Types: DOUBLE for the distributions, BIGINT for NTILE, the
    // argument's for the value functions.
    let c = q(
        &mut s,
        "SELECT PERCENT_RANK() OVER (), CUME_DIST() OVER (), NTILE(2) OVER (), \
         LAG(v) OVER (), FIRST_VALUE(v) OVER () FROM r",
    );
    let types: Vec<cairndb_sql::OutType> = c.columns.iter().map(|ci| ci.ty).collect();
    assert_eq!(
        types,
        vec![
            cairndb_sql::OutType::Double,
            cairndb_sql::OutType::Double,
            cairndb_sql::OutType::LongLong,
            cairndb_sql::OutType::Long,
            cairndb_sql::OutType::Long,
        ]
    );
}

#[test]
fn window_rows_frames_slide() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             COUNT(v) OVER (ORDER BY id ROWS 2 PRECEDING), \
             AVG(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), \
             MIN(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), \
             MAX(v) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM r ORDER BY id"
        )),
        vec![
            "1|20|1|20.0000|10|NULL",
            "2|40|2|22.5000|20|10",
            "3|60|3|26.6667|30|10",
            "4|80|3|30.0000|30|20",
            "5|60|3|30.0000|NULL|30",
            "6|30|2|NULL|NULL|30",
        ]
    );
    // An empty frame gives NULL (0 for COUNT).
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, COUNT(*) OVER (ORDER BY id ROWS BETWEEN 5 FOLLOWING AND 6 FOLLOWING), \
             SUM(v) OVER (ORDER BY id ROWS BETWEEN 7 PRECEDING AND 6 PRECEDING) FROM r ORDER BY id"
        )),
        vec!["1|1|NULL", "2|0|NULL", "3|0|NULL", "4|0|NULL", "5|0|NULL", "6|0|NULL"]
    );
}

#[test]
fn window_range_frames_use_key_distance_and_null_peers() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(v) OVER (ORDER BY v RANGE BETWEEN 10 PRECEDING AND CURRENT ROW), \
             COUNT(*) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND 10 FOLLOWING), \
             SUM(v) OVER (ORDER BY v DESC RANGE BETWEEN 10 PRECEDING AND 5 FOLLOWING), \
             COUNT(*) OVER (ORDER BY v RANGE UNBOUNDED PRECEDING), \
             MAX(id) OVER (ORDER BY v RANGE BETWEEN 5 FOLLOWING AND UNBOUNDED FOLLOWING) \
             FROM r ORDER BY id"
        )),
        vec![
            "1|20|3|40|3|5",
            "2|20|3|40|3|5",
            "3|40|3|80|4|5",
            "4|80|2|60|6|NULL",
            "5|80|2|60|6|NULL",
            "6|NULL|1|NULL|1|6",
        ]
    );
    dated(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(x) OVER (ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND 1 FOLLOWING), \
             COUNT(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL 3 DAY PRECEDING AND CURRENT ROW), \
             COUNT(*) OVER (ORDER BY d DESC RANGE BETWEEN CURRENT ROW AND INTERVAL 1 MONTH FOLLOWING) \
             FROM dt ORDER BY id"
        )),
        vec!["1|4|1|1", "2|4|2|2", "3|6.5|2|3", "4|NULL|1|4", "5|8|1|1"]
    );
}

#[test]
fn window_functions_over_an_empty_table() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE e (id INT PRIMARY KEY, v INT)");
    assert!(rows(&q(
        &mut s,
        "SELECT id, ROW_NUMBER() OVER (), LAG(v) OVER (ORDER BY id), \
         SUM(v) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM e"
    ))
    .is_empty());
    // The one row of an aggregate without GROUP BY is windowed.
    assert_eq!(
        rows(&q(&mut s, "SELECT SUM(id), COUNT(*) OVER () FROM e")),
        vec!["NULL|1"]
    );
    // Argument errors come without rows too.
    assert_eq!(err(&mut s, "SELECT NTILE(0) OVER () FROM e"), 1210);
}

#[test]
fn window_named_windows_refine_as_mysql() {
    let (_d, mut s) = session();
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(id) OVER w2, COUNT(*) OVER (w ROWS 1 PRECEDING), \
             ROW_NUMBER() OVER (w ORDER BY id DESC) FROM t \
             WINDOW w AS (PARTITION BY g), w2 AS (w ORDER BY id) ORDER BY id"
        )),
        vec!["1|1|1|2", "2|3|2|1", "3|3|1|1"]
    );
    // Names are case-insensitive; an unused window is still checked.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, RANK() OVER W FROM t WINDOW w AS (ORDER BY g), u AS () ORDER BY id"
        )),
        vec!["1|1", "2|1", "3|3"]
    );
    for (sql, code) in [
        ("SELECT COUNT(*) OVER w FROM t", 3579),
        ("SELECT COUNT(*) OVER (w) FROM t WINDOW v AS ()", 3579),
        ("SELECT id FROM t WINDOW w AS (v), v AS (w)", 3580),
        (
            "SELECT id FROM t WINDOW w AS (), v AS (w PARTITION BY g)",
            3581,
        ),
        (
            "SELECT COUNT(*) OVER (w PARTITION BY g) FROM t WINDOW w AS ()",
            3581,
        ),
        (
            "SELECT id FROM t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING), v AS (w)",
            3582,
        ),
        (
            "SELECT COUNT(*) OVER (w) FROM t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING)",
            3582,
        ),
        (
            "SELECT COUNT(*) OVER (w ORDER BY g) FROM t WINDOW w AS (ORDER BY id)",
            3583,
        ),
        ("SELECT id FROM t WINDOW w AS (), W AS ()", 3591),
        // An unused window's frame is checked too.
        (
            "SELECT id FROM t WINDOW w AS (ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING)",
            3585,
        ),
        (
            "SELECT id FROM t WINDOW w AS (ORDER BY id ROWS INTERVAL 1 DAY PRECEDING)",
            3596,
        ),
    ] {
        assert_eq!(err(&mut s, sql), code, "{sql}");
    }
    // A window with a frame is used as it is (not refined).
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(id) OVER w FROM t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING) ORDER BY id"
        )),
        vec!["1|1", "2|3", "3|5"]
    );
}

#[test]
fn window_rows_frame_current_row_is_the_row_not_its_peers() {
    // ROWS .. CURRENT ROW once ended at the current row's last peer.
    let (_d, mut s) = session();
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, COUNT(*) OVER (PARTITION BY g ROWS 1 PRECEDING), \
             SUM(id) OVER (ORDER BY g ROWS BETWEEN CURRENT ROW AND CURRENT ROW), \
             SUM(id) OVER (ORDER BY g RANGE BETWEEN CURRENT ROW AND CURRENT ROW) FROM t ORDER BY id"
        )),
        vec!["1|1|1|3", "2|2|2|3", "3|1|3|3"]
    );
}

#[test]
fn window_functions_over_grouped_rows() {
    let (_d, mut s) = session();
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT g, SUM(id), SUM(SUM(id)) OVER (ORDER BY g), RANK() OVER (ORDER BY COUNT(*) DESC), \
             COUNT(*) OVER () FROM t GROUP BY g ORDER BY g"
        )),
        vec!["1|3|3|1|2", "2|3|6|2|2"]
    );
    // After HAVING.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT g, ROW_NUMBER() OVER (ORDER BY g DESC) FROM t GROUP BY g HAVING COUNT(*) > 1"
        )),
        vec!["1|1"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT SUM(id), COUNT(*) OVER () FROM t")),
        vec!["6|1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT COUNT(*) OVER (), SUM(id), AVG(SUM(id)) OVER () FROM t"
        )),
        vec!["1|6|6.0000"]
    );
    // DISTINCT applies to the windowed rows.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DISTINCT g, COUNT(*) OVER (PARTITION BY g) FROM t ORDER BY g"
        )),
        vec!["1|2", "2|1"]
    );
}

#[test]
fn window_functions_in_order_by() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM r ORDER BY ROW_NUMBER() OVER (ORDER BY id DESC)"
        )),
        vec!["6", "5", "4", "3", "2", "1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, v FROM r ORDER BY SUM(v) OVER (ORDER BY id) DESC, id LIMIT 3"
        )),
        vec!["5|30", "6|NULL", "4|30"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, v, SUM(v) OVER (PARTITION BY v) s FROM r ORDER BY s DESC, id"
        )),
        vec![
            "4|30|60",
            "5|30|60",
            "1|10|20",
            "2|10|20",
            "3|20|20",
            "6|NULL|NULL"
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT g FROM t GROUP BY g ORDER BY -RANK() OVER (ORDER BY COUNT(*))"
        )),
        vec!["1", "2"]
    );
}

#[test]
fn window_argument_and_frame_errors_as_mysql() {
    let (_d, mut s) = session();
    ranked(&mut s);
    dated(&mut s);
    for (sql, code) in [
        ("SELECT NTILE(0) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT NTILE(NULL) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT NTILE(id) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT LAG(v, -1) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT LEAD(v, NULL) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT LAG(v, id) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT NTH_VALUE(v, 0) OVER (ORDER BY id) FROM r", 1210),
        ("SELECT LAG() OVER () FROM r", 1582),
        ("SELECT NTILE() OVER () FROM r", 1582),
        ("SELECT ROW_NUMBER(id) OVER () FROM r", 1582),
        ("SELECT LAG(v, 1, 2, 3) OVER () FROM r", 1582),
        (
            "SELECT SUM(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM r",
            3584,
        ),
        (
            "SELECT SUM(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM r",
            3585,
        ),
        (
            "SELECT SUM(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM r",
            3586,
        ),
        (
            "SELECT SUM(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM r",
            3586,
        ),
        ("SELECT SUM(v) OVER (ORDER BY id ROWS 1.5 PRECEDING) FROM r", 3586),
        (
            "SELECT COUNT(*) OVER (ORDER BY CONCAT(id) RANGE 1 PRECEDING) FROM r",
            3587,
        ),
        ("SELECT SUM(v) OVER (RANGE 1 PRECEDING) FROM r", 3587),
        ("SELECT SUM(v) OVER (ORDER BY id, v RANGE 1 PRECEDING) FROM r", 3587),
        ("SELECT COUNT(*) OVER (ORDER BY d RANGE 1 PRECEDING) FROM dt", 3588),
        (
            "SELECT COUNT(*) OVER (ORDER BY x RANGE INTERVAL 1 DAY PRECEDING) FROM dt",
            3589,
        ),
        ("SELECT SUM(v) OVER (ORDER BY id ROWS id PRECEDING) FROM r", 3590),
        (
            "SELECT SUM(v) OVER (ORDER BY id ROWS INTERVAL 1 DAY PRECEDING) FROM r",
            3596,
        ),
        ("SELECT SUM(v) OVER (ORDER BY 1) FROM r", 3592),
        ("SELECT SUM(v) OVER (PARTITION BY 2) FROM r", 3592),
        ("SELECT id FROM r GROUP BY id HAVING RANK() OVER () > 0", 3593),
        ("SELECT id FROM r GROUP BY ROW_NUMBER() OVER ()", 3593),
        ("SELECT SUM(ROW_NUMBER() OVER ()) FROM r", 3593),
        ("SELECT SUM(ROW_NUMBER() OVER ()) OVER () FROM r", 3593),
        ("SELECT id, ROW_NUMBER() OVER () AS n FROM r HAVING n > 1", 3594),
        // Not implemented, as MySQL: DISTINCT in a window aggregate.
        ("SELECT COUNT(DISTINCT v) OVER () FROM r", 1235),
        ("SELECT LAG(v) IGNORE NULLS OVER (ORDER BY id) FROM r", 1235),
        ("SELECT SUM(v) OVER (ORDER BY id GROUPS 1 PRECEDING) FROM r", 1235),
        ("SELECT SUM((SELECT 1)) OVER () FROM r", 1235),
        ("SELECT GROUP_CONCAT(v) OVER () FROM r", 1235),
        ("SELECT BIT_OR(DISTINCT v) OVER () FROM r", 1235),
    ] {
        assert_eq!(err(&mut s, sql), code, "{sql}");
    }
}

#[test]
fn window_sliding_frame_over_many_rows_is_linear() {
    let (_d, mut s) = session();
    q(&mut s, "SET SESSION cte_max_recursion_depth = 100000");
    let sql = "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000) \
               SELECT MAX(s), MIN(m), MAX(k) FROM (SELECT \
               SUM(n) OVER (ORDER BY n ROWS BETWEEN 1000 PRECEDING AND CURRENT ROW) AS s, \
               MIN(n) OVER (ORDER BY n ROWS BETWEEN 500 PRECEDING AND 500 FOLLOWING) AS m, \
               COUNT(*) OVER (ORDER BY n RANGE BETWEEN 100 PRECEDING AND 100 FOLLOWING) AS k \
               FROM c) AS x";
    let t = std::time::Instant::now();
    // The last 1001 numbers: 18,999,000 + ... ; a window of 201 in RANGE.
    assert_eq!(rows(&q(&mut s, sql)), vec!["19519500|1|201"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn window_frame_offsets_may_be_parameters() {
    let (_d, mut s) = session();
    ranked(&mut s);
    q(&mut s, "SET @n = 1");
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, SUM(v) OVER (ORDER BY id ROWS BETWEEN @n PRECEDING AND CURRENT ROW), \
             LAG(v, @n) OVER (ORDER BY id) FROM r ORDER BY id"
        )),
        vec![
            "1|10|NULL",
            "2|20|10",
            "3|30|10",
            "4|50|20",
            "5|60|30",
            "6|30|30"
        ]
    );
    q(&mut s, "SET @n = -1");
    assert_eq!(
        err(
            &mut s,
            "SELECT SUM(v) OVER (ORDER BY id ROWS @n PRECEDING) FROM r"
        ),
        3586
    );
    assert_eq!(
        err(&mut s, "SELECT LAG(v, @n) OVER (ORDER BY id) FROM r"),
        1210
    );
    q(&mut s, "SET @n = NULL");
    assert_eq!(err(&mut s, "SELECT NTILE(@n) OVER () FROM r"), 1210);
}

#[test]
fn window_frames_over_strings_and_decimals_as_mariadb() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(10), p DECIMAL(6,2))",
    );
    q(
        &mut s,
        "INSERT INTO s VALUES (1,'b',1.10),(2,'A',2.25),(3,'c',NULL),(4,'a',4.00),(5,'B',0.50),\
         (6,NULL,3.30)",
    );
    // MIN / MAX under the column's collation (case-insensitive); of
    // equal values the first (a sliding MIN once gave the last, 'a').
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, MIN(name) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             MAX(name) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), \
             AVG(p) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             SUM(p) OVER (ORDER BY p DESC RANGE BETWEEN 1 PRECEDING AND 1.5 FOLLOWING), \
             SUM(p) OVER (ORDER BY name, id ROWS 1 PRECEDING) FROM s ORDER BY id"
        )),
        vec![
            "1|A|b|1.675000|1.60|5.10",
            "2|A|b|1.675000|3.35|5.55",
            "3|A|c|3.125000|NULL|0.50",
            "4|a|c|2.250000|7.30|6.25",
            "5|a|c|2.600000|1.60|1.60",
            "6|B|B|1.900000|9.55|3.30",
        ]
    );
}

#[test]
fn window_in_a_view_and_a_derived_table() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE VIEW vw AS SELECT id, g, LAG(id) OVER (PARTITION BY g ORDER BY id) AS prev, \
         SUM(id) OVER w AS run FROM t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING)",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT * FROM vw ORDER BY id")),
        vec!["1|1|NULL|1", "2|1|1|3", "3|2|NULL|5"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT MAX(c) FROM (SELECT CUME_DIST() OVER (ORDER BY g) AS c FROM t) AS x"
        )),
        vec!["1"]
    );
}

#[test]
fn window_prepared_offsets_are_checked_per_execution() {
    let (_d, mut s) = session();
    ranked(&mut s);
    let p = s
        .prepare(
            "SELECT id, SUM(v) OVER (ORDER BY id ROWS BETWEEN ? PRECEDING AND CURRENT ROW), \
             NTILE(?) OVER (ORDER BY id) FROM r ORDER BY id",
        )
        .unwrap();
    assert_eq!(p.params, 2);
    let run = |s: &mut Session, params: &[cairndb_sql::Value]| {
        let mut c = cairndb_sql::Collect::default();
        s.execute(p.id, params, &mut c).map(|_| rows(&c))
    };
    use cairndb_sql::Value as V;
    assert_eq!(
        run(&mut s, &[V::Int(0), V::Int(3)]).unwrap(),
        vec!["1|10|1", "2|10|1", "3|20|2", "4|30|2", "5|30|3", "6|NULL|3"]
    );
    assert_eq!(
        run(&mut s, &[V::Int(5), V::Int(1)]).unwrap(),
        vec!["1|10|1", "2|20|1", "3|40|1", "4|70|1", "5|100|1", "6|100|1"]
    );
    assert_eq!(
        run(&mut s, &[V::Int(-1), V::Int(1)]).unwrap_err().code,
        3586
    );
    assert_eq!(run(&mut s, &[V::Int(1), V::Int(0)]).unwrap_err().code, 1210);
}

#[test]
fn window_frame_ignored_by_a_ranking_function_gives_note_3599() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "SELECT RANK() OVER (ORDER BY id ROWS 1 PRECEDING), SUM(id) OVER (ORDER BY id ROWS 1 PRECEDING) FROM t",
    );
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        vec![
            "Note|3599|Window function 'rank' ignores the frame clause of window \
             '<unnamed window>' and aggregates over the whole partition"
        ]
    );
}

#[test]
fn window_bit_and_variance_aggregates_over_frames() {
    let (_d, mut s) = session();
    ranked(&mut s);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, BIT_OR(v) OVER (ORDER BY id), BIT_XOR(v) OVER (ORDER BY id ROWS 1 PRECEDING), \
             BIT_AND(v) OVER (), VAR_POP(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             STDDEV_SAMP(v) OVER (PARTITION BY v) FROM r ORDER BY id"
        )),
        vec![
            "1|10|10|0|0|0",
            "2|10|0|0|22.222222222222218|0",
            "3|30|30|0|66.66666666666667|NULL",
            "4|30|10|0|22.222222222222218|0",
            "5|30|0|0|0|0",
            "6|30|30|0|0|NULL",
        ]
    );
}
