//! Correlated subqueries end to end through `Session`: scalar, IN / NOT
//! IN, EXISTS, ANY / ALL over a subquery that names columns of an
//! enclosing query, in every clause, nested, in derived tables and
//! views, in UPDATE / DELETE, with MySQL 8.0's NULL rules and errors,
//! and the inner table read through its index.

use cairndb_sql::Session;

mod common;
use common::{err, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    q(s, "USE d");
    q(
        s,
        "CREATE TABLE t1 (id INT PRIMARY KEY, k INT, b INT, KEY (k))",
    );
    q(
        s,
        "INSERT INTO t1 VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30), (4, NULL, 40), (5, 3, NULL)",
    );
    q(
        s,
        "CREATE TABLE t2 (id INT PRIMARY KEY, k INT, v INT, KEY (k))",
    );
    q(
        s,
        "INSERT INTO t2 VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, NULL, 400), (5, 4, NULL)",
    );
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    setup(&mut s);
    (dir, s)
}

#[test]
fn scalar_correlated_subqueries() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id"
        ),
        ["1|2", "2|2", "3|1", "4|0", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT v FROM t2 WHERE t2.id = t1.id) FROM t1 ORDER BY id"
        ),
        ["1|100", "2|200", "3|300", "4|400", "5|NULL"]
    );
    // No row: NULL.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT v FROM t2 WHERE t2.k = t1.k ORDER BY v DESC LIMIT 1) FROM t1 ORDER BY id"
        ),
        ["1|200", "2|200", "3|300", "4|NULL", "5|NULL"]
    );
    // Unqualified names resolve in the innermost query that has them.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE v > b * 10) FROM t1 ORDER BY id"
        ),
        ["1|3", "2|2", "3|1", "4|0", "5|0"]
    );
    // An expression over the subquery and the outer row.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, b + (SELECT min(v) FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id"
        ),
        ["1|110", "2|120", "3|330", "4|NULL", "5|NULL"]
    );
}

#[test]
fn sqllogictest_shapes() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT b, (SELECT count(*) FROM t1 AS x WHERE x.b < t1.b) FROM t1 ORDER BY id"
        ),
        ["10|0", "20|1", "30|2", "40|3", "NULL|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE EXISTS(SELECT 1 FROM t1 AS x WHERE x.b < t1.b) ORDER BY id"
        ),
        ["2", "3", "4"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE NOT EXISTS(SELECT 1 FROM t1 AS x WHERE x.b < t1.b) ORDER BY id"
        ),
        ["1", "5"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT CASE WHEN b > (SELECT avg(b) FROM t1 AS x) THEN 1 ELSE 0 END, \
             (SELECT count(*) FROM t1 AS x WHERE x.b > t1.b) FROM t1 ORDER BY 2, id"
        ),
        ["1|0", "0|0", "1|1", "0|2", "0|3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE (SELECT count(*) FROM t1 AS x WHERE x.b < t1.b) > 1 \
             AND b > 0 ORDER BY id"
        ),
        ["3", "4"]
    );
}

#[test]
fn in_and_not_in_follow_three_valued_logic() {
    let (_d, mut s) = session();
    // id 2: no match but a NULL in the set; id 3: only a NULL; ids 4 and 5:
    // an empty set (FALSE for IN, TRUE for NOT IN, even for a NULL operand).
    assert_eq!(
        r(
            &mut s,
            "SELECT id, k IN (SELECT t2.k FROM t2 WHERE t2.v > t1.b * 10) FROM t1 ORDER BY id"
        ),
        ["1|1", "2|NULL", "3|NULL", "4|0", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, k NOT IN (SELECT t2.k FROM t2 WHERE t2.v > t1.b * 10) FROM t1 ORDER BY id"
        ),
        ["1|0", "2|NULL", "3|NULL", "4|1", "5|1"]
    );
    // A NULL operand over a non-empty set is NULL.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, k IN (SELECT k FROM t2 WHERE t2.id = t1.id) FROM t1 ORDER BY id"
        ),
        ["1|1", "2|1", "3|1", "4|NULL", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE t2.v >= t1.b * 10) ORDER BY id"
        ),
        ["1", "2", "3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE k NOT IN (SELECT t2.k FROM t2 WHERE t2.v > t1.b * 10) ORDER BY id"
        ),
        ["4", "5"]
    );
}

#[test]
fn any_some_and_all() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id, b * 10 >= ALL (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id"
        ),
        ["1|0", "2|1", "3|1", "4|1", "5|1"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, b * 10 < ANY (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id"
        ),
        ["1|1", "2|0", "3|0", "4|0", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, b * 10 = SOME (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id"
        ),
        ["1|1", "2|1", "3|1", "4|0", "5|0"]
    );
    // A NULL among the values leaves ALL unknown where no value refutes
    // it; over no values ALL is TRUE even for a NULL operand.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, b * 10 < ALL (SELECT v FROM t2 WHERE t2.id > t1.id) FROM t1 ORDER BY id"
        ),
        ["1|NULL", "2|NULL", "3|NULL", "4|NULL", "5|1"]
    );
}

#[test]
fn correlated_subqueries_in_every_clause() {
    let (_d, mut s) = session();
    // HAVING, over a grouped column.
    assert_eq!(
        r(
            &mut s,
            "SELECT k, count(*) FROM t1 GROUP BY k \
             HAVING count(*) = (SELECT count(*) FROM t2 WHERE t2.k = t1.k) ORDER BY k"
        ),
        ["1|2", "2|1"]
    );
    // JOIN ... ON.
    assert_eq!(
        r(
            &mut s,
            "SELECT t1.id, t2.id FROM t1 JOIN t2 \
             ON t2.v = (SELECT max(v) FROM t2 AS y WHERE y.k = t1.k) ORDER BY t1.id"
        ),
        ["1|2", "2|2", "3|3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT t1.id, t2.id FROM t1 LEFT JOIN t2 \
             ON t2.id = (SELECT min(y.id) FROM t2 AS y WHERE y.k = t1.k) ORDER BY t1.id"
        ),
        ["1|1", "2|1", "3|3", "4|NULL", "5|NULL"]
    );
    // ORDER BY.
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 ORDER BY (SELECT count(*) FROM t2 WHERE t2.k = t1.k), id"
        ),
        ["4", "5", "3", "1", "2"]
    );
    // GROUP BY and an aggregate over a correlated value.
    assert_eq!(
        r(
            &mut s,
            "SELECT (SELECT count(*) FROM t2 WHERE t2.k = t1.k) AS c, count(*) FROM t1 \
             GROUP BY c ORDER BY c"
        ),
        ["0|2", "1|1", "2|2"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT sum((SELECT count(*) FROM t2 WHERE t2.k = t1.k)) FROM t1"
        ),
        ["5"]
    );
    // DISTINCT and LIMIT over correlated values.
    assert_eq!(
        r(
            &mut s,
            "SELECT DISTINCT (SELECT count(*) FROM t2 WHERE t2.k = t1.k) AS c FROM t1 ORDER BY c LIMIT 2"
        ),
        ["0", "1"]
    );
}

#[test]
fn nested_correlation_reaches_two_levels_out() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.k = t1.k AND \
             EXISTS (SELECT 1 FROM t2 AS z WHERE z.v > t1.b * 15 AND z.id <> t2.id)) ORDER BY id"
        ),
        ["1", "2"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT (SELECT t1.b + y.v FROM t2 AS y WHERE y.id = x.id) \
             FROM t2 AS x WHERE x.id = t1.id) FROM t1 ORDER BY id"
        ),
        ["1|110", "2|220", "3|330", "4|440", "5|NULL"]
    );
    // The middle query reads nothing of the outer one itself.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE \
             (SELECT count(*) FROM t2 AS z WHERE z.k = t1.k) > 1) FROM t1 ORDER BY id"
        ),
        ["1|5", "2|5", "3|0", "4|0", "5|0"]
    );
    // An uncorrelated subquery inside a correlated one.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k AND \
             t2.v < (SELECT max(v) FROM t2)) FROM t1 ORDER BY id"
        ),
        ["1|2", "2|2", "3|1", "4|0", "5|0"]
    );
}

#[test]
fn derived_tables_views_and_set_operations() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT d.id, d.c FROM (SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) AS c \
             FROM t1) AS d WHERE d.c > 0 ORDER BY d.id"
        ),
        ["1|2", "2|2", "3|1"]
    );
    // A derived table inside a correlated subquery reading the outer row.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM (SELECT v FROM t2 WHERE t2.k = t1.k) AS d) \
             FROM t1 ORDER BY id"
        ),
        ["1|2", "2|2", "3|1", "4|0", "5|0"]
    );
    q(
        &mut s,
        "CREATE VIEW vw AS SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) AS c FROM t1",
    );
    assert_eq!(
        r(&mut s, "SELECT id, c FROM vw ORDER BY id"),
        ["1|2", "2|2", "3|1", "4|0", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM vw WHERE vw.id = t1.id AND vw.c = 1)"
        ),
        ["3"]
    );
    // A UNION in a correlated subquery.
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM (SELECT v FROM t2 WHERE t2.k = t1.k \
             UNION ALL SELECT v FROM t2 WHERE t2.id = t1.id) AS u) FROM t1 ORDER BY id"
        ),
        ["1|3", "2|3", "3|2", "4|1", "5|1"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t1 WHERE b IN (SELECT v / 10 FROM t2 WHERE t2.id = t1.id \
             UNION SELECT 30) ORDER BY id"
        ),
        ["1", "2", "3", "4"]
    );
}

#[test]
fn update_and_delete_with_correlated_where() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "UPDATE t1 SET b = b + 1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.k = t1.k AND t2.v >= 300)",
    );
    assert_eq!(r(&mut s, "SELECT b FROM t1 WHERE id = 3"), ["31"]);
    q(
        &mut s,
        "UPDATE t1 SET b = (SELECT count(*) FROM t2 WHERE t2.k = t1.k) WHERE id < 3",
    );
    assert_eq!(
        r(&mut s, "SELECT id, b FROM t1 ORDER BY id"),
        ["1|2", "2|2", "3|31", "4|40", "5|NULL"]
    );
    q(
        &mut s,
        "DELETE FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.k = t1.k)",
    );
    assert_eq!(r(&mut s, "SELECT id FROM t1 ORDER BY id"), ["1", "2", "3"]);
    q(
        &mut s,
        "DELETE FROM t1 WHERE k IN (SELECT k FROM t2 WHERE t2.v > t1.b * 50)",
    );
    assert_eq!(r(&mut s, "SELECT id FROM t1 ORDER BY id"), ["3"]);
    // The target table in its own subquery is MySQL's 1093.
    assert_eq!(
        err(
            &mut s,
            "DELETE FROM t1 WHERE EXISTS (SELECT 1 FROM t1 AS x WHERE x.b < t1.b)"
        ),
        1093
    );
}

#[test]
fn correlated_subquery_errors() {
    let (_d, mut s) = session();
    // A second row for one outer row: 1242, found while running.
    assert_eq!(
        err(
            &mut s,
            "SELECT id, (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1"
        ),
        1242
    );
    // ... not where no outer row gives two.
    assert_eq!(
        r(
            &mut s,
            "SELECT (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1 WHERE id = 3"
        ),
        ["300"]
    );
    assert_eq!(
        err(
            &mut s,
            "SELECT (SELECT nosuch FROM t2 WHERE t2.k = t1.k) FROM t1"
        ),
        1054
    );
    assert_eq!(
        err(&mut s, "SELECT (SELECT t1.nosuch FROM t2) FROM t1"),
        1054
    );
    assert_eq!(
        err(
            &mut s,
            "SELECT id FROM t1 WHERE k IN (SELECT id, v FROM t2 WHERE t2.k = t1.k)"
        ),
        1241
    );
    assert_eq!(
        err(
            &mut s,
            "SELECT (SELECT id, v FROM t2 WHERE t2.k = t1.k) FROM t1"
        ),
        1241
    );
    // An aggregate of the outer query's columns only.
    assert_eq!(
        err(&mut s, "SELECT (SELECT SUM(t1.b)) FROM t1 GROUP BY k"),
        1235
    );
    // A CTE reading an outer column.
    assert_eq!(
        err(
            &mut s,
            "SELECT (WITH c AS (SELECT v FROM t2 WHERE t2.k = t1.k) SELECT count(*) FROM c) FROM t1"
        ),
        1235
    );
}

#[test]
fn results_are_kept_per_outer_value_exactly() {
    let (_d, mut s) = session();
    // 'a' and 'A' are equal under the collation but distinct values: the
    // cached result of one is not the other's.
    q(&mut s, "CREATE TABLE s (id INT PRIMARY KEY, n VARCHAR(5))");
    q(&mut s, "INSERT INTO s VALUES (1, 'a'), (2, 'A'), (3, 'a')");
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT s.n FROM t2 WHERE t2.id = 1) FROM s ORDER BY id"
        ),
        ["1|a", "2|A", "3|a"]
    );
    // Many outer rows over few distinct keys.
    q(&mut s, "CREATE TABLE big (id INT PRIMARY KEY, k INT)");
    let vals: Vec<String> = (1..=500).map(|i| format!("({i}, {})", i % 3)).collect();
    q(
        &mut s,
        &format!("INSERT INTO big VALUES {}", vals.join(", ")),
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT k, sum((SELECT count(*) FROM t2 WHERE t2.k = big.k)) FROM big GROUP BY k ORDER BY k"
        ),
        ["0|0", "1|334", "2|167"]
    );
}

#[test]
fn correlated_subquery_sees_the_transaction() {
    let (_d, mut s) = session();
    q(&mut s, "BEGIN");
    q(&mut s, "INSERT INTO t2 VALUES (6, 3, 600)");
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1 WHERE id = 5"
        ),
        ["5|1"]
    );
    q(&mut s, "ROLLBACK");
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1 WHERE id = 5"
        ),
        ["5|0"]
    );
}

/// EXPLAIN's rows: (select_type, table, type, key).
fn explain(s: &mut Session, sql: &str) -> Vec<String> {
    let c = q(s, &format!("EXPLAIN {sql}"));
    c.rows
        .iter()
        .map(|r| {
            [1, 2, 3, 5]
                .iter()
                .map(|i| common::text(&r[*i]))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

#[test]
fn correlated_equality_reads_the_inner_index() {
    let (_d, mut s) = session();
    assert_eq!(
        explain(
            &mut s,
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1"
        ),
        ["PRIMARY|t1|index|k", "DEPENDENT SUBQUERY|t2|ref|k"]
    );
    assert_eq!(
        explain(
            &mut s,
            "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.id = t1.k)"
        ),
        ["PRIMARY|t1|index|k", "DEPENDENT SUBQUERY|t2|eq_ref|PRIMARY"]
    );
    // An uncorrelated subquery is a SUBQUERY.
    assert_eq!(
        explain(&mut s, "SELECT id FROM t1 WHERE k IN (SELECT k FROM t2)"),
        ["PRIMARY|t1|index|k", "SUBQUERY|t2|index|k"]
    );
    // Nested: the inner equality on an outer column two levels out.
    assert_eq!(
        explain(
            &mut s,
            "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE \
             EXISTS (SELECT 1 FROM t2 AS z WHERE z.k = t1.k))"
        ),
        [
            "PRIMARY|t1|index|k",
            "DEPENDENT SUBQUERY|t2|ALL|NULL",
            "DEPENDENT SUBQUERY|z|ref|k"
        ]
    );
}

/// A correlated count over 20,000 outer rows that repeat 50 keys: every
/// row's count is right although the subquery runs once per key (its
/// kept results) and reads the inner table through its index.
#[test]
fn correlated_count_over_many_rows_with_repeated_keys() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE TABLE big (id INT PRIMARY KEY, k INT, KEY (k))",
    );
    for chunk in (1..=20_000).collect::<Vec<i32>>().chunks(1000) {
        let vals: Vec<String> = chunk.iter().map(|i| format!("({i}, {})", i % 50)).collect();
        q(
            &mut s,
            &format!("INSERT INTO big VALUES {}", vals.join(", ")),
        );
    }
    // 50 keys of 400 rows each: every row counts 400.
    assert_eq!(
        r(
            &mut s,
            "SELECT sum((SELECT count(*) FROM big AS x WHERE x.k = big.k)) FROM big",
        ),
        ["8000000"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT count(*) FROM big WHERE (SELECT count(*) FROM big AS x WHERE x.k = big.k) <> 400",
        ),
        ["0"]
    );
}

#[test]
fn prepared_correlated_subquery_reruns_with_each_parameter() {
    let (_d, mut s) = session();
    let info = s
        .prepare(
            "SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k AND t2.v > ?) FROM t1 \
             WHERE id < 4 ORDER BY id",
        )
        .unwrap();
    let run = |s: &mut Session, v: i64| {
        let mut c = cairndb_sql::Collect::default();
        s.execute(info.id, &[cairndb_sql::Value::Int(v)], &mut c)
            .unwrap();
        rows(&c)
    };
    assert_eq!(run(&mut s, 0), ["1|2", "2|2", "3|1"]);
    // Results kept for one execution are not the next one's.
    assert_eq!(run(&mut s, 150), ["1|1", "2|1", "3|1"]);
    assert_eq!(run(&mut s, 1000), ["1|0", "2|0", "3|0"]);
}
