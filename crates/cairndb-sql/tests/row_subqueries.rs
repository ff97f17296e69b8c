//! Row subqueries: `(a, b) [NOT] IN (SELECT x, y ...)`, `(a, b) = ANY /
//! <> ALL (...)`, `(a, b) op (SELECT x, y ...)`, correlated and not,
//! with MySQL's NULL semantics and 1241 / 1242; and a derived table's
//! column list. Expected results are MariaDB 10.11's for the same
//! statements.

use cairndb_sql::Session;

mod common;
use common::{err, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    for sql in [
        "CREATE DATABASE rs",
        "USE rs",
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
        "CREATE TABLE u (x INT, y VARCHAR(10), z INT)",
        "INSERT INTO t VALUES (1,1,'p'),(2,2,'Q'),(3,NULL,'r'),(4,4,NULL),(5,5,'s')",
        "INSERT INTO u VALUES (1,'P',1),(2,'q',2),(4,'zz',3),(NULL,'s',4),(6,NULL,5)",
    ] {
        q(&mut s, sql);
    }
    (dir, s)
}

#[test]
fn row_in_subquery_with_nulls() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a,b) IN (SELECT x,y FROM u) FROM t ORDER BY id"
        ),
        vec!["1|1", "2|1", "3|NULL", "4|NULL", "5|NULL"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a,b) NOT IN (SELECT x,y FROM u) FROM t ORDER BY id"
        ),
        vec!["1|0", "2|0", "3|NULL", "4|NULL", "5|NULL"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE (a,b) IN (SELECT x,y FROM u) ORDER BY id"
        ),
        vec!["1", "2"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a,b) = ANY (SELECT x,y FROM u), (a,b) <> ALL (SELECT x,y FROM u) \
             FROM t ORDER BY id"
        ),
        vec![
            "1|1|0",
            "2|1|0",
            "3|NULL|NULL",
            "4|NULL|NULL",
            "5|NULL|NULL"
        ]
    );
    // Over no rows: IN is false, NOT IN true.
    assert_eq!(
        r(
            &mut s,
            "SELECT (1,'p') IN (SELECT x,y FROM u WHERE 0), (1,'p') NOT IN (SELECT x,y FROM u WHERE 0)"
        ),
        vec!["0|1"]
    );
}

#[test]
fn row_in_a_set_without_nulls_uses_its_index_and_the_collation() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE big (x INT, y VARCHAR(10))");
    let values: Vec<String> = (0..2000).map(|i| format!("({i}, 'k{}')", i % 7)).collect();
    q(
        &mut s,
        &format!("INSERT INTO big VALUES {}", values.join(",")),
    );
    // 'K3' equals 'k3' under utf8mb4_general_ci; 3 % 7 = 3.
    assert_eq!(
        r(
            &mut s,
            "SELECT (3, 'K3') IN (SELECT x, y FROM big), (3, 'k4') IN (SELECT x, y FROM big), \
             (3, 'k4') NOT IN (SELECT x, y FROM big), (NULL, 'k3') IN (SELECT x, y FROM big)"
        ),
        vec!["1|0|1|NULL"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT count(*) FROM big WHERE (x + 1, y) IN (SELECT x, y FROM big)"
        ),
        // x + 1 has residue (x % 7) + 1: equal to y's only when the
        // residues line up, i.e. x % 7 = 6 and (x + 1) % 7 = 0: never.
        vec!["0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT count(*) FROM big WHERE (x, y) IN (SELECT x, y FROM big WHERE x < 100)"
        ),
        vec!["100"]
    );
}

#[test]
fn correlated_row_subqueries() {
    let (_d, mut s) = session();
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a,b) = (SELECT x,y FROM u WHERE z = t.id) FROM t ORDER BY id"
        ),
        vec!["1|1", "2|1", "3|0", "4|NULL", "5|0"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a,b) < (SELECT x,y FROM u WHERE z = t.id) FROM t ORDER BY id"
        ),
        vec!["1|0", "2|0", "3|NULL", "4|NULL", "5|1"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, (a, b) IN (SELECT x, y FROM u WHERE u.z >= t.id) FROM t ORDER BY id"
        ),
        vec!["1|1", "2|1", "3|NULL", "4|NULL", "5|0"]
    );
}

#[test]
fn scalar_row_subquery_on_either_side() {
    let (_d, mut s) = session();
    assert_eq!(
        r(&mut s, "SELECT (SELECT x, y FROM u WHERE z = 2) = (2, 'Q')"),
        vec!["1"]
    );
    assert_eq!(
        r(&mut s, "SELECT (SELECT x, y FROM u WHERE z = 2) > (1, 'Q')"),
        vec!["1"]
    );
    assert_eq!(
        r(&mut s, "SELECT (1, 'a') = (SELECT x, y FROM u WHERE z = 9)"),
        vec!["NULL"]
    );
    assert_eq!(
        err(&mut s, "SELECT (a, b) = (SELECT x, y FROM u) FROM t"),
        1242
    );
    assert_eq!(
        err(&mut s, "SELECT (a) IN (SELECT x, y FROM u) FROM t"),
        1241
    );
    assert_eq!(
        err(&mut s, "SELECT (a, b) IN (SELECT x FROM u) FROM t"),
        1241
    );
    assert_eq!(
        err(&mut s, "SELECT (a, b) > ANY (SELECT x, y FROM u) FROM t"),
        1235
    );
}

#[test]
fn row_subqueries_in_update_and_delete() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "UPDATE t SET a = 0 WHERE (a, b) IN (SELECT x, y FROM u)",
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM t WHERE a = 0 ORDER BY id"),
        vec!["1", "2"]
    );
    q(
        &mut s,
        "DELETE FROM u WHERE (x, y) NOT IN (SELECT a, b FROM t WHERE b IS NOT NULL)",
    );
    assert_eq!(r(&mut s, "SELECT count(*) FROM u"), vec!["2"]);
}

/// `(SELECT ...) AS d (x, y)` once kept the subquery's own column names:
/// `d.x` was unknown and `*` showed the inner names.
#[test]
fn derived_table_column_list_names_its_columns() {
    let (_d, mut s) = session();
    let c = q(
        &mut s,
        "SELECT * FROM (SELECT a, b FROM t WHERE id = 1) AS d (p, q)",
    );
    let names: Vec<String> = c.columns.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, vec!["p", "q"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT d.q, p FROM (SELECT a, b FROM t WHERE id = 1) AS d (p, q)"
        ),
        vec!["p|1"]
    );
    assert_eq!(
        err(&mut s, "SELECT * FROM (SELECT a, b FROM t) AS d (p)"),
        1353
    );
    assert_eq!(
        err(&mut s, "SELECT * FROM (SELECT a, b FROM t) AS d (p, p)"),
        1060
    );
}
