//! Subqueries in expressions (scalar, IN, EXISTS, ANY / ALL) and set
//! operations (UNION, INTERSECT, EXCEPT) end to end through `Session`,
//! with MySQL 8.0's NULL rules and error codes.

use cairndb_sql::{Collect, OutType, Session, Value};

mod common;
use common::{err, open, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    q(s, "USE d");
    q(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10), KEY (a))",
    );
    q(
        s,
        "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'Z'), (4, NULL, NULL), (5, 10, 'x')",
    );
    q(
        s,
        "CREATE TABLE u (id INT PRIMARY KEY, v INT, w VARCHAR(10))",
    );
    q(s, "INSERT INTO u VALUES (1, 10, 'X'), (2, 30, 'q')");
    q(s, "CREATE TABLE n (id INT PRIMARY KEY, v INT)");
    q(s, "INSERT INTO n VALUES (1, 10), (2, NULL)");
    q(s, "CREATE TABLE e (id INT PRIMARY KEY, v INT)");
}

fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    (dir, s)
}

#[test]
fn scalar_subqueries() {
    let (_d, mut s) = session();
    assert_eq!(r(&mut s, "SELECT (SELECT MAX(v) FROM u)"), ["30"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (SELECT MIN(v) FROM u) + a FROM t WHERE id < 3 ORDER BY id"
        ),
        ["1|20", "2|30"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a = (SELECT MAX(v) FROM u)"),
        ["3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE id = (SELECT MAX(id) FROM u) + 1"
        ),
        ["3"]
    );
    // No row: NULL.
    assert_eq!(r(&mut s, "SELECT (SELECT v FROM e)"), ["NULL"]);
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a = (SELECT v FROM e)"),
        Vec::<String>::new()
    );
    assert_eq!(err(&mut s, "SELECT (SELECT v FROM u)"), 1242);
    assert_eq!(err(&mut s, "SELECT (SELECT id, v FROM u)"), 1241);
    assert_eq!(
        err(&mut s, "SELECT id FROM t WHERE a IN (SELECT id, v FROM u)"),
        1241
    );
    // HAVING, ON, nested.
    assert_eq!(
        r(&mut s, "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) >= (SELECT COUNT(*) FROM u) ORDER BY a"),
        ["10|2"]
    );
    assert_eq!(
        r(&mut s, "SELECT t.id, u.id FROM t JOIN u ON u.v = t.a AND u.id = (SELECT MIN(id) FROM u) ORDER BY t.id"),
        ["1|1", "5|1"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT (SELECT MAX(v) FROM u WHERE v < (SELECT MAX(v) FROM u))"
        ),
        ["10"]
    );
    // Column metadata of a scalar subquery follows its column.
    let c = q(&mut s, "SELECT (SELECT MAX(v) FROM u) AS m");
    assert_eq!(c.columns[0].name, "m");
}

#[test]
fn in_subqueries_follow_sql_null_rules() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a IN (SELECT v FROM u) ORDER BY id"
        ),
        ["1", "3", "5"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a NOT IN (SELECT v FROM u) ORDER BY id"
        ),
        ["2"]
    );
    // Strings under the column's collation.
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE b IN (SELECT w FROM u) ORDER BY id"
        ),
        ["1", "5"]
    );
    // A NULL in the set: NOT IN is never true.
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a NOT IN (SELECT v FROM n)"),
        Vec::<String>::new()
    );
    assert_eq!(
        r(&mut s, "SELECT a, a IN (SELECT v FROM n), a NOT IN (SELECT v FROM n) FROM t WHERE id IN (1, 2, 4) ORDER BY id"),
        ["10|1|0", "20|NULL|NULL", "NULL|NULL|NULL"]
    );
    // The empty set: IN is false and NOT IN true, even for NULL.
    assert_eq!(
        r(
            &mut s,
            "SELECT NULL IN (SELECT v FROM e), NULL NOT IN (SELECT v FROM e)"
        ),
        ["0|1"]
    );
    // NULL against a non-empty set: NULL.
    assert_eq!(r(&mut s, "SELECT NULL IN (SELECT v FROM u)"), ["NULL"]);
    // Mixed types compare as MySQL does.
    assert_eq!(
        r(
            &mut s,
            "SELECT '10' IN (SELECT v FROM u), 10.0 IN (SELECT v FROM u)"
        ),
        ["1|1"]
    );
    // Subqueries inside a derived table, a UNION part, an aggregate.
    assert_eq!(
        r(
            &mut s,
            "SELECT COUNT(*) FROM (SELECT id FROM t WHERE a IN (SELECT v FROM u)) AS x"
        ),
        ["3"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a = (SELECT MIN(v) FROM u) UNION SELECT id FROM u WHERE v IN (SELECT a FROM t WHERE id = 3) ORDER BY 1"),
        ["1", "2", "5"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a IN (SELECT v FROM u WHERE v IN (SELECT a FROM t WHERE id > 3)) ORDER BY id"),
        ["1", "5"]
    );
    assert_eq!(
        r(&mut s, "SELECT SUM(a + (SELECT MIN(v) FROM u)) FROM t"),
        ["110"]
    );
    // IN over a UNION.
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE id IN (SELECT 1 UNION SELECT 4) ORDER BY id"
        ),
        ["1", "4"]
    );
}

#[test]
fn exists_and_quantified_comparisons() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT EXISTS (SELECT * FROM u), EXISTS (SELECT * FROM e)"
        ),
        ["1|0"]
    );
    assert_eq!(r(&mut s, "SELECT NOT EXISTS (SELECT 1 FROM e)"), ["1"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE EXISTS (SELECT 1 FROM u WHERE v > 20)"
        ),
        ["5"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a > ANY (SELECT v FROM u) ORDER BY id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a >= ALL (SELECT v FROM u)"),
        ["3"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a = SOME (SELECT v FROM u) ORDER BY id"
        ),
        ["1", "3", "5"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a <> ALL (SELECT v FROM u)"),
        ["2"]
    );
    // MySQL's NULL rules.
    assert_eq!(
        r(&mut s, "SELECT 5 > ALL (SELECT v FROM e), 5 > ANY (SELECT v FROM e), NULL > ALL (SELECT v FROM e)"),
        ["1|0|1"]
    );
    assert_eq!(
        r(&mut s, "SELECT 20 > ANY (SELECT v FROM n), 5 > ANY (SELECT v FROM n), 20 > ALL (SELECT v FROM n), 5 > ALL (SELECT v FROM n)"),
        ["1|NULL|NULL|0"]
    );
    assert_eq!(r(&mut s, "SELECT NULL < ANY (SELECT v FROM u)"), ["NULL"]);
}

#[test]
fn subqueries_in_update_and_delete() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "UPDATE t SET a = a + 1 WHERE a IN (SELECT v FROM u)",
    );
    assert_eq!(
        r(&mut s, "SELECT id, a FROM t ORDER BY id"),
        ["1|11", "2|20", "3|31", "4|NULL", "5|11"]
    );
    q(
        &mut s,
        "UPDATE t SET b = (SELECT w FROM u WHERE id = 2) WHERE id = 1",
    );
    assert_eq!(r(&mut s, "SELECT b FROM t WHERE id = 1"), ["q"]);
    q(
        &mut s,
        "DELETE FROM t WHERE id > (SELECT MAX(id) FROM u) + 2",
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t ORDER BY id"),
        ["1", "2", "3", "4"]
    );
    q(&mut s, "DELETE FROM t WHERE EXISTS (SELECT 1 FROM e)");
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM t"), ["4"]);
    // The changed table in its own subquery: MySQL's 1093.
    assert_eq!(
        err(&mut s, "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM t)"),
        1093
    );
    assert_eq!(
        err(&mut s, "DELETE FROM t WHERE id = (SELECT MAX(id) FROM t)"),
        1093
    );
    // ... but through a derived table it is materialised first.
    q(
        &mut s,
        "DELETE FROM t WHERE id = (SELECT m FROM (SELECT MAX(id) AS m FROM t) AS x)",
    );
    assert_eq!(r(&mut s, "SELECT id FROM t ORDER BY id"), ["1", "2", "3"]);
    // INSERT ... SELECT with a subquery.
    q(
        &mut s,
        "INSERT INTO e SELECT id, v FROM u WHERE v IN (SELECT a FROM t)",
    );
    assert_eq!(r(&mut s, "SELECT id, v FROM e"), Vec::<String>::new());
    q(
        &mut s,
        "INSERT INTO e SELECT id, v FROM u WHERE v < (SELECT MAX(a) FROM t)",
    );
    assert_eq!(r(&mut s, "SELECT id, v FROM e"), ["1|10", "2|30"]);
}

#[test]
fn prepared_statements_rerun_their_subqueries() {
    let (_d, mut s) = session();
    let p = s
        .prepare("SELECT id FROM t WHERE a IN (SELECT v FROM u WHERE id <= ?) ORDER BY id")
        .unwrap();
    let run = |s: &mut Session, v: i64| {
        let mut c = Collect::default();
        s.execute(p.id, &[Value::Int(v)], &mut c).unwrap();
        rows(&c)
    };
    assert_eq!(run(&mut s, 1), ["1", "5"]);
    assert_eq!(run(&mut s, 2), ["1", "3", "5"]);
    assert_eq!(run(&mut s, 0), Vec::<String>::new());
    // The data changing between executions is seen.
    q(&mut s, "INSERT INTO u VALUES (0, 20, 'z')");
    assert_eq!(run(&mut s, 0), ["2"]);
    let p2 = s
        .prepare("SELECT (SELECT MAX(v) FROM u WHERE v < ?)")
        .unwrap();
    let mut c = Collect::default();
    s.execute(p2.id, &[Value::Int(25)], &mut c).unwrap();
    assert_eq!(rows(&c), ["20"]);
    s.execute(p2.id, &[Value::Int(5)], &mut c).unwrap();
    assert_eq!(rows(&c), ["NULL"]);
}

#[test]
fn refused_forms() {
    let (_d, mut s) = session();
    // Correlated subqueries run (tests/correlated.rs has the rest); a
    // string comparison in one keeps the column's collation.
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.v = t.a) ORDER BY id"
        ),
        ["1", "3", "5"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT (SELECT MAX(v) FROM u WHERE v < a) FROM t ORDER BY id"
        ),
        ["NULL", "10", "10", "NULL", "NULL"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE a IN (SELECT v FROM u WHERE w = b) ORDER BY id"
        ),
        ["1", "5"]
    );
    // Unknown names stay unknown.
    assert_eq!(
        err(&mut s, "SELECT id FROM t WHERE a IN (SELECT nope FROM u)"),
        1054
    );
    // LATERAL (row subqueries run: tests/row_subqueries.rs; subqueries in
    // INSERT: subqueries_in_insert_values_and_set).
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM t, LATERAL (SELECT v FROM u WHERE u.id = t.id) AS x"
        ),
        1235
    );
    // ANY over a list is a syntax error, as in MySQL.
    assert_eq!(err(&mut s, "SELECT id FROM t WHERE a > ANY (1, 2)"), 1064);
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM e"), ["0"]);
    // EXPLAIN plans without running the subqueries.
    q(
        &mut s,
        "EXPLAIN SELECT id FROM t WHERE a IN (SELECT v FROM u)",
    );
    q(&mut s, "EXPLAIN SELECT 1 UNION SELECT 2");
}

#[test]
fn unions() {
    let (_d, mut s) = session();
    assert_eq!(
        r(&mut s, "SELECT 1 UNION SELECT 2 UNION SELECT 1"),
        ["1", "2"]
    );
    assert_eq!(
        r(&mut s, "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 1"),
        ["1", "2", "1"]
    );
    assert_eq!(r(&mut s, "SELECT 1 UNION DISTINCT SELECT 1"), ["1"]);
    assert_eq!(
        r(&mut s, "SELECT a FROM t UNION SELECT v FROM u ORDER BY 1"),
        ["NULL", "10", "20", "30"]
    );
    assert_eq!(
        r(
            &mut s,
            "(SELECT a FROM t) UNION ALL (SELECT v FROM u) ORDER BY a DESC LIMIT 3"
        ),
        ["30", "30", "20"]
    );
    assert_eq!(
        r(&mut s, "(SELECT id FROM t ORDER BY id DESC LIMIT 2) UNION ALL (SELECT id FROM u ORDER BY id LIMIT 1)"),
        ["5", "4", "1"]
    );
    assert_eq!(
        r(&mut s, "(SELECT id FROM t ORDER BY id DESC LIMIT 2) UNION (SELECT id FROM u) ORDER BY 1 LIMIT 2 OFFSET 1"),
        ["2", "4"]
    );
    // Names from the first part.
    let c = q(
        &mut s,
        "SELECT id AS k, b FROM t WHERE id = 1 UNION SELECT v, w FROM u",
    );
    assert_eq!(c.columns[0].name, "k");
    assert_eq!(c.columns[1].name, "b");
    assert_eq!(rows(&c), ["1|x", "10|X", "30|q"]);
    // Types differing between parts give their common type.
    let c = q(&mut s, "SELECT 1 UNION SELECT 'abc'");
    assert_eq!(c.columns[0].ty, OutType::VarString);
    assert_eq!(rows(&c), ["1", "abc"]);
    let c = q(
        &mut s,
        "SELECT id FROM t WHERE id = 1 UNION SELECT id FROM u",
    );
    assert_eq!(c.columns[0].ty, OutType::Long);
    assert_eq!(err(&mut s, "SELECT 1 UNION SELECT 1, 2"), 1222);
    assert_eq!(
        err(&mut s, "SELECT id FROM t UNION SELECT id, v FROM u"),
        1222
    );
    // A UNION in a derived table and in a scalar subquery.
    assert_eq!(
        r(&mut s, "SELECT COUNT(*), SUM(x) FROM (SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 2) AS d"),
        ["3|5"]
    );
    assert_eq!(r(&mut s, "SELECT (SELECT 7 UNION SELECT 7)"), ["7"]);
    assert_eq!(err(&mut s, "SELECT (SELECT 7 UNION SELECT 8)"), 1242);
    // Mixing DISTINCT and ALL: a DISTINCT union dedupes all to its left.
    assert_eq!(
        r(
            &mut s,
            "SELECT 1 UNION ALL SELECT 1 UNION SELECT 2 UNION ALL SELECT 2"
        ),
        ["1", "2", "2"]
    );
    // Prepared, with parameters in both parts.
    let p = s
        .prepare("SELECT id FROM t WHERE id = ? UNION SELECT id FROM u WHERE id = ?")
        .unwrap();
    let mut c = Collect::default();
    s.execute(p.id, &[Value::Int(3), Value::Int(1)], &mut c)
        .unwrap();
    assert_eq!(rows(&c), ["3", "1"]);
}

#[test]
fn intersect_and_except() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT a FROM t INTERSECT SELECT v FROM u ORDER BY 1"
        ),
        ["10", "30"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT a FROM t INTERSECT ALL SELECT v FROM u ORDER BY 1"
        ),
        ["10", "30"]
    );
    assert_eq!(
        r(&mut s, "SELECT a FROM t EXCEPT SELECT v FROM u ORDER BY 1"),
        ["NULL", "20"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT a FROM t EXCEPT ALL SELECT v FROM u ORDER BY 1"
        ),
        ["NULL", "10", "20"]
    );
    // INTERSECT binds tighter than UNION.
    assert_eq!(
        r(
            &mut s,
            "SELECT 5 UNION SELECT 10 INTERSECT SELECT v FROM u ORDER BY 1"
        ),
        ["5", "10"]
    );
    // NULLs are equal in set operations.
    assert_eq!(r(&mut s, "SELECT NULL INTERSECT SELECT NULL"), ["NULL"]);
}

#[test]
fn deep_nesting_answers_or_refuses() {
    let (_d, mut s) = session();
    for n in [10usize, 30, 60, 200, 2000] {
        let sql = format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        let mut c = Collect::default();
        match s.query(&sql, &mut c) {
            Ok(()) => assert_eq!(rows(&c), ["1"]),
            Err(e) => assert!(matches!(e.code, 1436 | 1064 | 1473), "{n}: {e}"),
        }
        let sql = format!(
            "SELECT id FROM t WHERE a IN {}SELECT 10{}",
            "(SELECT v FROM u WHERE v IN ".repeat(n),
            ")".repeat(n)
        );
        let mut c = Collect::default();
        if let Err(e) = s.query(&sql, &mut c) {
            assert!(matches!(e.code, 1436 | 1064 | 1473), "{n}: {e}");
        }
        let sql = format!(
            "SELECT * FROM {}SELECT 1 AS x{}",
            "(SELECT * FROM ".repeat(n),
            ") AS d".repeat(n)
        );
        let mut c = Collect::default();
        if let Err(e) = s.query(&sql, &mut c) {
            assert!(matches!(e.code, 1436 | 1064 | 1473), "{n}: {e}");
        }
        let sql = format!("{}SELECT 1{} UNION SELECT 2", "(".repeat(n), ")".repeat(n));
        let mut c = Collect::default();
        if let Err(e) = s.query(&sql, &mut c) {
            assert!(matches!(e.code, 1436 | 1064 | 1473), "{n}: {e}");
        }
        let sql = vec!["SELECT 1"; n].join(" UNION ");
        let mut c = Collect::default();
        match s.query(&sql, &mut c) {
            Ok(()) => assert_eq!(rows(&c), ["1"]),
            Err(e) => assert!(e.code == 1436 || e.code == 1064, "{n}: {e}"),
        }
    }
    assert_eq!(r(&mut s, "SELECT 1"), ["1"]);
}

/// An uncorrelated EXISTS reads one row of its subquery and a scalar
/// subquery two (the second makes 1242), also under a LIMIT of its own:
/// the rows after them are never read (here, the third row's select list
/// would overflow, 1690), so `EXISTS (SELECT ... FROM big LIMIT 1000)`
/// does not copy a thousand rows.
#[test]
fn uncorrelated_exists_and_scalar_subqueries_stop_reading_early() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE e");
    q(&mut s, "USE e");
    q(&mut s, "CREATE TABLE big (id BIGINT PRIMARY KEY)");
    q(&mut s, "INSERT INTO big VALUES (0), (1), (2)");
    let over = "id * 9223372036854775807";
    assert_eq!(err(&mut s, &format!("SELECT {over} FROM big")), 1690);
    assert_eq!(
        r(&mut s, &format!("SELECT EXISTS (SELECT {over} FROM big)")),
        vec!["1"]
    );
    assert_eq!(
        r(
            &mut s,
            &format!("SELECT EXISTS (SELECT {over} FROM big LIMIT 1000)")
        ),
        vec!["1"]
    );
    assert_eq!(
        r(
            &mut s,
            &format!("SELECT 1 FROM DUAL WHERE NOT EXISTS (SELECT {over} FROM big)")
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        err(&mut s, &format!("SELECT (SELECT {over} FROM big)")),
        1242
    );
}

/// Subqueries in INSERT's VALUES and SET: run once per execution, before
/// any row is written (scalar, EXISTS, IN, with parameters in a prepared
/// statement); 1242 for more than one row; 1093 when one reads the table
/// inserted into, as in MySQL.
#[test]
fn subqueries_in_insert_values_and_set() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE g (x INT, y INT)");
    q(
        &mut s,
        "INSERT INTO g VALUES ((SELECT MAX(id) FROM t), 2), \
         ((SELECT id FROM t WHERE id = 99), (SELECT COUNT(*) FROM u))",
    );
    q(
        &mut s,
        "INSERT INTO g SET x = (SELECT MIN(v) FROM u), y = 3",
    );
    q(
        &mut s,
        "INSERT INTO g VALUES (EXISTS (SELECT * FROM e), 10 IN (SELECT v FROM n))",
    );
    assert_eq!(
        r(&mut s, "SELECT x, y FROM g"),
        ["5|2", "NULL|2", "10|3", "0|1"]
    );
    let st = s
        .prepare("INSERT INTO g VALUES ((SELECT a FROM t WHERE id = ?), ?)")
        .unwrap();
    for (id, y) in [(2, 7), (3, 8)] {
        let mut c = Collect::default();
        s.execute(st.id, &[Value::Int(id), Value::Int(y)], &mut c)
            .unwrap();
    }
    assert_eq!(
        r(&mut s, "SELECT x, y FROM g WHERE y > 5 ORDER BY y"),
        ["20|7", "30|8"]
    );
    assert_eq!(
        err(&mut s, "INSERT INTO g VALUES ((SELECT id FROM t), 1)"),
        1242
    );
    assert_eq!(
        err(&mut s, "INSERT INTO g VALUES ((SELECT MAX(x) FROM g), 1)"),
        1093
    );
    assert_eq!(
        err(&mut s, "INSERT INTO g SET x = (SELECT COUNT(*) FROM g)"),
        1093
    );
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM g"), ["6"]);
    // ON DUPLICATE KEY UPDATE: a subquery that reads no column of the row.
    q(&mut s, "CREATE TABLE k (id INT PRIMARY KEY, x INT)");
    q(&mut s, "INSERT INTO k VALUES (1, 0)");
    q(
        &mut s,
        "INSERT INTO k VALUES (1, 5), (2, 6) \
         ON DUPLICATE KEY UPDATE x = (SELECT MAX(v) FROM u) + VALUES(x)",
    );
    assert_eq!(
        r(&mut s, "SELECT id, x FROM k ORDER BY id"),
        ["1|35", "2|6"]
    );
    assert_eq!(
        err(
            &mut s,
            "INSERT INTO k VALUES (1, 5) ON DUPLICATE KEY UPDATE x = (SELECT COUNT(*) FROM k)"
        ),
        1093
    );
    assert_eq!(
        err(
            &mut s,
            "INSERT INTO k VALUES (1, 5) \
             ON DUPLICATE KEY UPDATE x = (SELECT v FROM u WHERE u.id = k.id)"
        ),
        1235
    );
}
