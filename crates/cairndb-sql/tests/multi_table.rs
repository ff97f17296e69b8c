//! Multi-table UPDATE and DELETE: `UPDATE t1 JOIN t2 ... SET`, `UPDATE
//! t1, t2 SET`, `DELETE t1, t2 FROM <join>`, `DELETE FROM t1 USING
//! <join>`; each matched row changed once, rows counted as MySQL counts
//! them, tables without a primary key, outer joins, derived tables,
//! constraints, prepared statements, privileges and the errors. Expected
//! results are MariaDB 10.11's for the same statements.

use std::sync::Arc;

use cairndb_sql::{Collect, Session, Value};

mod common;
use common::{err, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn affected(s: &mut Session, sql: &str) -> u64 {
    q(s, sql).ok.map(|(n, _)| n).unwrap()
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    for sql in [
        "CREATE DATABASE mt",
        "USE mt",
        "CREATE TABLE a (id INT PRIMARY KEY, k INT, x INT)",
        "CREATE TABLE b (id INT PRIMARY KEY, k INT, y INT, KEY(k))",
        "CREATE TABLE h (k INT, v INT)",
        "INSERT INTO a VALUES (1,1,10),(2,2,20),(3,NULL,30),(4,5,40)",
        "INSERT INTO b VALUES (100,1,1000),(101,1,1001),(102,3,1002),(103,NULL,1003)",
        "INSERT INTO h VALUES (1,7),(1,7),(3,8),(NULL,9)",
    ] {
        q(&mut s, sql);
    }
    (dir, s)
}

#[test]
fn update_join_changes_each_row_once_with_the_first_match() {
    let (_d, mut s) = session();
    // a.1 matches b.100 and b.101: changed once, from the first.
    assert_eq!(
        affected(&mut s, "UPDATE a JOIN b ON a.k = b.k SET a.x = b.y"),
        1
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|1000", "2|2|20", "3|NULL|30", "4|5|40"]
    );
    // The comma form, both tables changed, values from the joined row.
    assert_eq!(
        affected(
            &mut s,
            "UPDATE a, b SET a.x = a.x + 1, b.y = b.y + a.id WHERE a.k = b.k"
        ),
        3
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|1001", "2|2|20", "3|NULL|30", "4|5|40"]
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM b ORDER BY id"),
        vec!["100|1|1001", "101|1|1002", "102|3|1002", "103|NULL|1003"]
    );
    // A LEFT JOIN changes the outer side's rows that found no match too.
    q(
        &mut s,
        "UPDATE a LEFT JOIN b ON a.k = b.k SET a.x = COALESCE(b.id, -1) WHERE a.id > 1",
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|1001", "2|2|-1", "3|NULL|-1", "4|5|-1"]
    );
}

#[test]
fn update_of_a_table_without_primary_key_changes_identical_rows_alike() {
    let (_d, mut s) = session();
    q(&mut s, "UPDATE a JOIN b ON a.k = b.k SET a.x = b.y");
    q(
        &mut s,
        "UPDATE a, b SET a.x = a.x + 1, b.y = b.y + a.id WHERE a.k = b.k",
    );
    assert_eq!(
        affected(
            &mut s,
            "UPDATE a JOIN h ON a.k = h.k SET h.v = h.v * 10, a.x = 0"
        ),
        3
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM h ORDER BY k, v"),
        vec!["NULL|9", "1|70", "1|70", "3|8"]
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|0", "2|2|20", "3|NULL|30", "4|5|40"]
    );
}

#[test]
fn update_reads_a_derived_table() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "UPDATE b JOIN (SELECT k, MAX(id) m FROM a GROUP BY k) d ON b.k = d.k SET b.y = d.m",
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM b ORDER BY id"),
        vec!["100|1|1", "101|1|1", "102|3|1002", "103|NULL|1003"]
    );
    // The derived table itself is not a target.
    assert_eq!(
        err(
            &mut s,
            "UPDATE b JOIN (SELECT k FROM a) d ON b.k = d.k SET d.k = 1"
        ),
        1288
    );
}

#[test]
fn delete_from_several_tables_and_with_using() {
    let (_d, mut s) = session();
    assert_eq!(
        affected(
            &mut s,
            "DELETE a, b FROM a JOIN b ON a.k = b.k WHERE a.id = 1"
        ),
        3
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM a ORDER BY id"),
        vec!["2", "3", "4"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM b ORDER BY id"),
        vec!["102", "103"]
    );
    // An anti-join through USING; h has no primary key.
    assert_eq!(
        affected(
            &mut s,
            "DELETE FROM h USING h LEFT JOIN a ON h.k = a.k WHERE a.id IS NULL"
        ),
        4
    );
    assert!(r(&mut s, "SELECT * FROM h").is_empty());
    // One target of two joined tables, by alias.
    q(&mut s, "INSERT INTO h VALUES (2, 1), (5, 2), (6, 3)");
    assert_eq!(
        affected(&mut s, "DELETE x FROM h AS x JOIN a AS y ON x.k = y.k"),
        2
    );
    assert_eq!(r(&mut s, "SELECT * FROM h"), vec!["6|3"]);
    assert_eq!(r(&mut s, "SELECT count(*) FROM a"), vec!["3"]);
    // `t.*` names the table too.
    assert_eq!(
        affected(&mut s, "DELETE h.*, a.* FROM h JOIN a ON h.v + 1 = a.id"),
        2
    );
    assert!(r(&mut s, "SELECT * FROM h").is_empty());
    assert_eq!(r(&mut s, "SELECT id FROM a"), vec!["2", "3"]);
}

#[test]
fn multi_table_statements_refuse_order_by_limit_and_unknown_targets() {
    let (_d, mut s) = session();
    for (sql, code) in [
        (
            "UPDATE a JOIN b ON a.k = b.k SET a.x = 1 ORDER BY a.id",
            1221,
        ),
        ("UPDATE a JOIN b ON a.k = b.k SET a.x = 1 LIMIT 1", 1221),
        ("DELETE a FROM a JOIN b ON a.k = b.k LIMIT 1", 1221),
        ("DELETE a FROM a JOIN b ON a.k = b.k ORDER BY a.id", 1221),
        ("UPDATE a JOIN b ON a.k = b.k SET k = 1", 1052),
        ("UPDATE a JOIN b ON a.k = b.k SET nope = 1", 1054),
        ("UPDATE a JOIN b ON a.k = b.k SET c.x = 1", 1054),
        ("DELETE c FROM a JOIN b ON a.k = b.k", 1109),
        // The join's own table in a subquery of the statement.
        (
            "UPDATE a JOIN b ON a.k = b.k SET a.x = (SELECT max(x) FROM a)",
            1093,
        ),
        ("UPDATE a JOIN b ON a.k = b.k SET a.x = count(*)", 1111),
    ] {
        assert_eq!(err(&mut s, sql), code, "{sql}");
    }
    // Nothing changed.
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|10", "2|2|20", "3|NULL|30", "4|5|40"]
    );
}

#[test]
fn multi_table_changes_keep_constraints_and_indexes() {
    let (_d, mut s) = session();
    for sql in [
        "CREATE TABLE p (id INT PRIMARY KEY, n INT UNIQUE)",
        "CREATE TABLE c (id INT PRIMARY KEY, pid INT, w INT, CHECK (w < 100), \
         FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)",
        "INSERT INTO p VALUES (1, 10), (2, 20), (3, 30)",
        "INSERT INTO c VALUES (10, 1, 0), (11, 1, 0), (12, 2, 0)",
    ] {
        q(&mut s, sql);
    }
    // A cascade from a multi-table DELETE.
    assert_eq!(
        affected(
            &mut s,
            "DELETE p FROM p JOIN a ON p.id = a.id WHERE a.k = 1"
        ),
        1
    );
    assert_eq!(r(&mut s, "SELECT id FROM c ORDER BY id"), vec!["12"]);
    // A CHECK and a UNIQUE index violated: the statement changes nothing.
    assert_eq!(
        err(&mut s, "UPDATE c JOIN p ON c.pid = p.id SET c.w = 200"),
        3819
    );
    assert_eq!(
        err(&mut s, "UPDATE p JOIN a ON p.id = a.id SET p.n = 30"),
        1062
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM p ORDER BY id"),
        vec!["2|20", "3|30"]
    );
    // A secondary index follows a changed key, and the primary key may
    // change.
    q(
        &mut s,
        "UPDATE b JOIN a ON a.k = b.k SET b.k = a.id + 50, b.id = b.id + 1000 WHERE a.id = 1",
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id, k FROM b FORCE INDEX (k) WHERE k > 50 ORDER BY id"
        ),
        vec!["1100|51", "1101|51"]
    );
    assert_eq!(r(&mut s, "SELECT count(*) FROM b WHERE k = 1"), vec!["0"]);
}

#[test]
fn prepared_multi_table_update_takes_parameters_in_text_order() {
    let (_d, mut s) = session();
    let info = s
        .prepare("UPDATE a JOIN b ON a.k = b.k SET a.x = ?, b.y = ? WHERE b.id = ?")
        .unwrap();
    assert_eq!(info.params, 3);
    for (x, y, id) in [(7, 70, 100), (8, 80, 102)] {
        let mut c = Collect::default();
        s.execute(
            info.id,
            &[Value::Int(x), Value::Int(y), Value::Int(id)],
            &mut c,
        )
        .unwrap();
    }
    assert_eq!(
        r(&mut s, "SELECT * FROM a ORDER BY id"),
        vec!["1|1|7", "2|2|20", "3|NULL|30", "4|5|40"]
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM b ORDER BY id"),
        vec!["100|1|70", "101|1|1001", "102|3|1002", "103|NULL|1003"]
    );
    // Parameters in both the ON and the SET list are refused, not
    // numbered out of order.
    let e = s
        .prepare("UPDATE a JOIN b ON a.k = b.k + ? SET a.x = ?")
        .err()
        .map(|e| e.code);
    assert_eq!(e, Some(1235));
}

#[test]
fn multi_table_targets_need_the_change_privilege() {
    let dir = tempfile::tempdir().unwrap();
    let db: Arc<cairndb_sql::SqlDb> = common::open(dir.path());
    db.bootstrap_accounts("").unwrap();
    let mut root = Session::login(db.clone(), "root", "127.0.0.1").unwrap();
    for sql in [
        "CREATE DATABASE d",
        "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE d.u (id INT PRIMARY KEY, v INT)",
        "INSERT INTO d.t VALUES (1, 1)",
        "INSERT INTO d.u VALUES (1, 2)",
        "CREATE USER w@'%'",
        "GRANT SELECT ON d.* TO w@'%'",
        "GRANT UPDATE, DELETE ON d.t TO w@'%'",
    ] {
        q(&mut root, sql);
    }
    let mut w = Session::login(db.clone(), "w", "127.0.0.1").unwrap();
    q(&mut w, "UPDATE d.t JOIN d.u USING (id) SET t.v = u.v");
    assert_eq!(
        err(&mut w, "UPDATE d.t JOIN d.u USING (id) SET u.v = t.v"),
        1142
    );
    assert_eq!(
        err(&mut w, "DELETE t, u FROM d.t JOIN d.u USING (id)"),
        1142
    );
    q(&mut w, "DELETE t FROM d.t JOIN d.u USING (id)");
    assert!(r(&mut root, "SELECT * FROM d.t").is_empty());
    assert_eq!(r(&mut root, "SELECT * FROM d.u"), vec!["1|2"]);
}
