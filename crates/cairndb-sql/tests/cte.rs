//! Common table expressions (`WITH`, `WITH RECURSIVE`) end to end through
//! `Session`: results as MySQL 8.0 returns them, its error codes.

use cairndb_sql::{Session, Value};

mod common;
use common::{err, open, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z'), (4, NULL, NULL)",
    );
    q(
        &mut s,
        "CREATE TABLE emp (id INT PRIMARY KEY, name VARCHAR(20), parent_id INT)",
    );
    q(
        &mut s,
        "INSERT INTO emp VALUES (1, 'ceo', NULL), (2, 'cto', 1), (3, 'cfo', 1), \
         (4, 'dev1', 2), (5, 'dev2', 2), (6, 'intern', 4), (7, 'other', NULL)",
    );
    (dir, s)
}

#[test]
fn ctes_are_named_queries_used_several_times_and_by_later_ctes() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "WITH c AS (SELECT id, a FROM t WHERE a IS NOT NULL) SELECT * FROM c ORDER BY id"
        ),
        ["1|10", "2|20", "3|30"]
    );
    // Twice in one FROM, and a later CTE over an earlier one.
    assert_eq!(
        r(
            &mut s,
            "WITH c AS (SELECT id, a FROM t WHERE a IS NOT NULL), \
             e AS (SELECT id, a * 2 AS a2 FROM c) \
             SELECT x.id, y.a2 FROM c AS x JOIN e AS y ON y.id = x.id + 1 ORDER BY x.id"
        ),
        ["1|40", "2|60"]
    );
    // Column lists name the columns.
    assert_eq!(
        r(
            &mut s,
            "WITH c(k, v) AS (SELECT id, b FROM t) SELECT v, k FROM c WHERE k <= 2 ORDER BY k"
        ),
        ["x|1", "y|2"]
    );
    let c = q(
        &mut s,
        "WITH c(k, v) AS (SELECT id, b FROM t) SELECT * FROM c",
    );
    assert_eq!(c.columns[0].name, "k");
    assert_eq!(c.columns[1].name, "v");
    // Aggregates, a UNION inside, ORDER BY / LIMIT over the CTE.
    assert_eq!(
        r(
            &mut s,
            "WITH c AS (SELECT a FROM t UNION SELECT 10 UNION SELECT 99) \
             SELECT COUNT(*), SUM(a) FROM c"
        ),
        ["5|159"]
    );
    assert_eq!(
        r(
            &mut s,
            "WITH c AS (SELECT id FROM t ORDER BY id DESC LIMIT 2) SELECT * FROM c ORDER BY id"
        ),
        ["3", "4"]
    );
    // An unreferenced CTE is not run (and its errors do not count).
    assert_eq!(
        r(
            &mut s,
            "WITH bad AS (SELECT * FROM no_such_table), ok AS (SELECT 1 AS one) SELECT * FROM ok"
        ),
        ["1"]
    );
}

#[test]
fn ctes_in_subqueries_derived_tables_and_insert_select() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a IN (WITH c AS (SELECT 20 AS v UNION SELECT 30) SELECT v FROM c) \
             ORDER BY id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT d.n FROM (WITH c AS (SELECT COUNT(*) AS n FROM t) SELECT n FROM c) AS d"
        ),
        ["4"]
    );
    // An outer CTE seen from a subquery.
    assert_eq!(
        r(
            &mut s,
            "WITH m AS (SELECT MAX(a) AS x FROM t) SELECT id FROM t WHERE a = (SELECT x FROM m)"
        ),
        ["3"]
    );
    // An inner WITH shadows an outer name.
    assert_eq!(
        r(
            &mut s,
            "WITH c AS (SELECT 1 AS v) SELECT (WITH c AS (SELECT 2 AS v) SELECT v FROM c), v FROM c"
        ),
        ["2|1"]
    );
    q(&mut s, "CREATE TABLE dst (id INT PRIMARY KEY, v INT)");
    q(
        &mut s,
        "INSERT INTO dst WITH c AS (SELECT id, a FROM t WHERE a > 10) SELECT id, a + 1 FROM c",
    );
    assert_eq!(r(&mut s, "SELECT * FROM dst ORDER BY id"), ["2|21", "3|31"]);
    q(
        &mut s,
        "INSERT INTO dst (id, v) WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < 12) \
         SELECT i, i * i FROM n",
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM dst WHERE id >= 10 ORDER BY id"),
        ["10|100", "11|121", "12|144"]
    );
}

#[test]
fn recursive_number_series() {
    let (_d, mut s) = session();
    let got = r(
        &mut s,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) \
         SELECT COUNT(*), MIN(i), MAX(i), SUM(i) FROM n",
    );
    assert_eq!(got, ["100|1|100|5050"]);
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 5) \
             SELECT i FROM n ORDER BY i DESC"
        ),
        ["5", "4", "3", "2", "1"]
    );
    // Two columns (Fibonacci), the anchor's columns name the result.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE f (n, a, b) AS (SELECT 1, 0, 1 UNION ALL \
             SELECT n + 1, b, a + b FROM f WHERE n < 10) SELECT n, a FROM f ORDER BY n"
        ),
        ["1|0", "2|1", "3|1", "4|2", "5|3", "6|5", "7|8", "8|13", "9|21", "10|34"]
    );
    // Exactly the default depth: 1000 rows (999 iterations add rows, the
    // 1000th adds none).
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
             SELECT COUNT(*) FROM n"
        ),
        ["1000"]
    );
    // LIMIT over the recursive CTE ends the recursion.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 5) \
             SELECT i FROM n ORDER BY i"
        ),
        ["1", "2", "3", "4", "5"]
    );
    // A series joined with a table.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) \
             SELECT n.i, t.b FROM n LEFT JOIN t ON t.id = n.i ORDER BY n.i"
        ),
        ["1|x", "2|y", "3|z", "4|NULL", "5|NULL"]
    );
}

#[test]
fn recursion_depth_is_bounded_by_the_session_variable() {
    let (_d, mut s) = session();
    let e = err(
        &mut s,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n",
    );
    assert_eq!(e, 3636);
    let mut c = cairndb_sql::Collect::default();
    let e = s
        .query(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1001) \
             SELECT COUNT(*) FROM n",
            &mut c,
        )
        .unwrap_err();
    assert_eq!(e.code, 3636);
    assert_eq!(
        e.message,
        "Recursive query aborted after 1001 iterations. Try increasing \
         @@cte_max_recursion_depth to a larger value."
    );
    q(&mut s, "SET cte_max_recursion_depth = 10");
    assert_eq!(r(&mut s, "SELECT @@cte_max_recursion_depth"), ["10"]);
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 11) \
             SELECT COUNT(*) FROM n"
        ),
        3636
    );
    // As in MySQL, reading the anchor's rows is the first iteration: ten
    // iterations read the rows 1 to 10 (and the last one adds none).
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) \
             SELECT COUNT(*) FROM n"
        ),
        ["10"]
    );
    q(&mut s, "SET cte_max_recursion_depth = 100000");
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) \
             SELECT COUNT(*), SUM(i) FROM n"
        ),
        ["5000|12502500"]
    );
}

#[test]
fn materialised_rows_are_bounded_by_the_temporary_table_size() {
    let (_d, mut s) = session();
    q(&mut s, "SET cte_max_recursion_depth = 1000000");
    q(&mut s, "SET tmp_table_size = 65536");
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i, pad) AS (SELECT 1, REPEAT('x', 100) UNION ALL \
             SELECT i + 1, pad FROM n WHERE i < 100000) SELECT COUNT(*) FROM n"
        ),
        1114
    );
    q(&mut s, "SET tmp_table_size = 16777216");
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE n(i, pad) AS (SELECT 1, REPEAT('x', 100) UNION ALL \
             SELECT i + 1, pad FROM n WHERE i < 1000) SELECT COUNT(*) FROM n"
        ),
        ["1000"]
    );
}

#[test]
fn recursive_tree_walks() {
    let (_d, mut s) = session();
    // Everyone under the CEO with their depth and path.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE tree (id, name, lvl, path) AS ( \
               SELECT id, name, 0, CAST(name AS CHAR(200)) FROM emp WHERE parent_id IS NULL AND id = 1 \
               UNION ALL \
               SELECT e.id, e.name, tree.lvl + 1, CONCAT(tree.path, '/', e.name) \
               FROM tree JOIN emp AS e ON e.parent_id = tree.id) \
             SELECT id, name, lvl, path FROM tree ORDER BY path"
        ),
        [
            "1|ceo|0|ceo",
            "3|cfo|1|ceo/cfo",
            "2|cto|1|ceo/cto",
            "4|dev1|2|ceo/cto/dev1",
            "6|intern|3|ceo/cto/dev1/intern",
            "5|dev2|2|ceo/cto/dev2",
        ]
    );
    // Ancestors of the intern, the recursive table second in the join.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE up AS (SELECT id, parent_id FROM emp WHERE id = 6 \
             UNION ALL SELECT e.id, e.parent_id FROM emp AS e JOIN up ON e.id = up.parent_id) \
             SELECT id FROM up ORDER BY id"
        ),
        ["1", "2", "4", "6"]
    );
}

#[test]
fn union_distinct_stops_at_rows_already_seen() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE edge (a INT, b INT)");
    q(
        &mut s,
        "INSERT INTO edge VALUES (1, 2), (2, 3), (3, 1), (3, 4)",
    );
    // A cycle: UNION ALL would never end, UNION DISTINCT does.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE reach(n) AS (SELECT 1 UNION SELECT edge.b FROM reach JOIN edge ON edge.a = reach.n) \
             SELECT n FROM reach ORDER BY n"
        ),
        ["1", "2", "3", "4"]
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE reach(n) AS (SELECT 1 UNION ALL SELECT edge.b FROM reach JOIN edge ON edge.a = reach.n) \
             SELECT n FROM reach"
        ),
        3636
    );
    // Several anchors and several recursive parts.
    assert_eq!(
        r(
            &mut s,
            "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT 100 \
             UNION ALL SELECT n + 1 FROM x WHERE n < 3 \
             UNION ALL SELECT n + 10 FROM x WHERE n BETWEEN 100 AND 110) \
             SELECT n FROM x ORDER BY n"
        ),
        ["1", "2", "3", "100", "110", "120"]
    );
}

#[test]
fn ctes_are_refused_as_mysql_refuses_them() {
    let (_d, mut s) = session();
    // Same name twice in one WITH.
    assert_eq!(
        err(
            &mut s,
            "WITH c AS (SELECT 1), c AS (SELECT 2) SELECT * FROM c"
        ),
        1066
    );
    // Column list of the wrong length; duplicate column names.
    assert_eq!(
        err(&mut s, "WITH c(a, b) AS (SELECT 1) SELECT * FROM c"),
        1353
    );
    assert_eq!(
        err(&mut s, "WITH c AS (SELECT 1 AS a, 2 AS a) SELECT * FROM c"),
        1060
    );
    // Without RECURSIVE a CTE cannot name itself: it is a table lookup.
    assert_eq!(
        err(
            &mut s,
            "WITH n AS (SELECT 1 UNION ALL SELECT 1 FROM n) SELECT * FROM n"
        ),
        1146
    );
    // A later CTE is not visible to an earlier one.
    assert_eq!(
        err(
            &mut s,
            "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a"
        ),
        1146
    );
    // Recursive CTEs.
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n AS (SELECT * FROM n) SELECT * FROM n"
        ),
        3573
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT i FROM n UNION ALL SELECT 1) SELECT * FROM n"
        ),
        3574
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3 \
             UNION ALL SELECT 7) SELECT * FROM n"
        ),
        3574
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT MAX(i) + 1 FROM n) SELECT * FROM n"
        ),
        3575
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT t.id FROM t LEFT JOIN n ON n.i = t.id) \
             SELECT * FROM n"
        ),
        3576
    );
    // Inside a parenthesised join on the inner side of a LEFT JOIN too.
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT t.id FROM t \
             LEFT JOIN (n JOIN t AS t2 ON t2.id = n.i) ON n.i = t.id) SELECT * FROM n"
        ),
        3576
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT t.id FROM t \
             JOIN (t AS t3 LEFT JOIN n ON n.i = t3.id) ON t3.id = t.id) SELECT * FROM n"
        ),
        3576
    );
    // On the outer side it recurses.
    assert_eq!(
        rows(&q(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT n.i + 1 FROM n \
             LEFT JOIN (t JOIN t AS t2 ON t2.id = t.id) ON t.id = n.i WHERE n.i < 3) \
             SELECT * FROM n"
        )),
        ["1", "2", "3"]
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT a.i + 1 FROM n AS a JOIN n AS b \
             WHERE a.i < 3) SELECT * FROM n"
        ),
        3577
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT id FROM t WHERE id IN (SELECT i FROM n)) \
             SELECT * FROM n"
        ),
        3577
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT DISTINCT i + 1 FROM n WHERE i < 3) \
             SELECT * FROM n"
        ),
        1235
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL (SELECT i + 1 FROM n WHERE i < 3 ORDER BY i LIMIT 1)) \
             SELECT * FROM n"
        ),
        1235
    );
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3 ORDER BY i) \
             SELECT * FROM n"
        ),
        1235
    );
    // The session is fine after each refusal.
    assert_eq!(r(&mut s, "WITH c AS (SELECT 5) SELECT * FROM c"), ["5"]);
}

#[test]
fn prepared_statements_run_ctes_with_their_parameters() {
    let (_d, mut s) = session();
    let info = s
        .prepare(
            "WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?) \
             SELECT i FROM n ORDER BY i",
        )
        .unwrap();
    assert_eq!(info.params, 2);
    for (a, b, want) in [(1, 3, vec!["1", "2", "3"]), (5, 6, vec!["5", "6"])] {
        let mut c = cairndb_sql::Collect::default();
        s.execute(info.id, &[Value::Int(a), Value::Int(b)], &mut c)
            .unwrap();
        assert_eq!(rows(&c), want);
    }
}
