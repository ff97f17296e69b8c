//! End-to-end SQL through `Session`: DDL, DML, queries (access paths,
//! joins, aggregates, ORDER BY, DISTINCT, LIMIT), transactions and
//! savepoints, prepared statements, SHOW, errors with MySQL's codes, and
//! a restart.

use cairndb_sql::{Collect, OutType, Session, SqlDb, SqlOptions, Value};

mod common;
use common::{err, open, q, rows};

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE sbtest");
    q(s, "USE sbtest");
    q(
        s,
        "CREATE TABLE sbtest1 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB",
    );
    q(s, "CREATE INDEX k_1 ON sbtest1(k)");
    let mut vals = Vec::new();
    for i in 1..=100 {
        vals.push(format!("({i}, {}, 'c-{i:03}', 'pad{}')", i % 10, i % 7));
    }
    q(
        s,
        &format!(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES {}",
            vals.join(",")
        ),
    );
}

#[test]
fn sysbench_statements_give_mysql_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    assert_eq!(
        rows(&q(&mut s, "SELECT c FROM sbtest1 WHERE id=42")),
        vec!["c-042"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 12"
        )),
        vec!["c-010", "c-011", "c-012"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 10"
        )),
        vec!["45"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT c FROM sbtest1 WHERE id BETWEEN 20 AND 22 ORDER BY c DESC"
        )),
        vec!["c-022", "c-021", "c-020"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DISTINCT pad FROM sbtest1 WHERE id BETWEEN 1 AND 14 ORDER BY pad"
        ))
        .len(),
        7
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT count(k) FROM sbtest1")),
        vec!["100"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM sbtest1 WHERE k = 3 ORDER BY id LIMIT 3"
        )),
        vec!["3", "13", "23"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id, c FROM sbtest1 WHERE id IN (5, 1, 99, 1000)"
        )),
        vec!["1|c-001", "5|c-005", "99|c-099"]
    );
    let u = q(&mut s, "UPDATE sbtest1 SET k=k+1 WHERE id=42");
    assert_eq!(u.ok, Some((1, 0)));
    assert_eq!(
        rows(&q(&mut s, "SELECT k FROM sbtest1 WHERE id=42")),
        vec!["3"]
    );
    // The index follows the update.
    assert!(rows(&q(&mut s, "SELECT id FROM sbtest1 WHERE k=3")).contains(&"42".to_string()));
    assert!(!rows(&q(&mut s, "SELECT id FROM sbtest1 WHERE k=2")).contains(&"42".to_string()));
    q(&mut s, "UPDATE sbtest1 SET c='changed' WHERE id=43");
    assert_eq!(
        rows(&q(&mut s, "SELECT c FROM sbtest1 WHERE id=43")),
        vec!["changed"]
    );
    assert_eq!(
        q(&mut s, "DELETE FROM sbtest1 WHERE id=44").ok,
        Some((1, 0))
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT c FROM sbtest1 WHERE id=44")).len(),
        0
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT count(*) FROM sbtest1 WHERE k=4")),
        vec!["9"]
    );
    q(
        &mut s,
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (44, 4, 'again', 'p')",
    );
    assert_eq!(
        err(
            &mut s,
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (44, 4, 'x', 'p')"
        ),
        1062
    );
    // AUTO_INCREMENT continues after the largest id.
    let r = q(
        &mut s,
        "INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'auto', 'p')",
    );
    assert_eq!(r.ok, Some((1, 101)));
    assert_eq!(rows(&q(&mut s, "SELECT LAST_INSERT_ID()")), vec!["101"]);
}

#[test]
fn expressions_aggregates_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    assert_eq!(
        rows(&q(&mut s, "SELECT k, COUNT(*), MIN(id), MAX(id) FROM sbtest1 GROUP BY k HAVING COUNT(*) >= 10 ORDER BY k LIMIT 2")),
        vec!["0|10|10|100", "1|10|1|91"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT AVG(k) FROM sbtest1")),
        vec!["4.5000"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT 1 + 2, 7 / 2, 7 DIV 2, -3 % 2, CONCAT('a', 1, NULL)"
        )),
        vec!["3|3.5000|3|-1|NULL"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT 'abc' = 'ABC ', 'a' < 'B', NULL IS NULL, 2 BETWEEN 1 AND 3"
        )),
        vec!["1|1|1|1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM sbtest1 WHERE c LIKE 'C-00%' AND id > 7 ORDER BY id"
        )),
        vec!["8", "9"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT COUNT(DISTINCT k) FROM sbtest1")),
        vec!["10"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT SUM(id) FROM sbtest1 WHERE id > 1000")),
        vec!["NULL"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM sbtest1 ORDER BY id DESC LIMIT 2 OFFSET 1"
        )),
        vec!["99", "98"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM sbtest1 ORDER BY 1 LIMIT 1, 2")),
        vec!["2", "3"]
    );
    assert_eq!(err(&mut s, "SELECT 9223372036854775807 + 1"), 1690);
    assert_eq!(err(&mut s, "SELECT nope FROM sbtest1"), 1054);
    assert_eq!(err(&mut s, "SELECT * FROM missing"), 1146);
    assert_eq!(err(&mut s, "SELEC 1"), 1064);
}

#[test]
fn joins_and_derived_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    q(
        &mut s,
        "CREATE TABLE names (k INT PRIMARY KEY, name VARCHAR(20))",
    );
    q(
        &mut s,
        "INSERT INTO names VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT t.id, n.name FROM sbtest1 t JOIN names n ON n.k = t.k WHERE t.id <= 3 ORDER BY t.id")),
        vec!["1|one", "2|two", "3|three"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT t.id, n.name FROM sbtest1 t LEFT JOIN names n ON n.k = t.k WHERE t.id IN (3, 4) ORDER BY t.id")),
        vec!["3|three", "4|NULL"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT d.k, d.n FROM (SELECT k, COUNT(*) AS n FROM sbtest1 GROUP BY k) AS d WHERE d.k < 2 ORDER BY d.k")),
        vec!["0|10", "1|10"]
    );
}

#[test]
fn transactions_savepoints_and_statement_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = Session::new(db.clone(), "root");
    let mut b = Session::new(db.clone(), "root");
    setup(&mut a);
    q(&mut b, "USE sbtest");
    q(&mut a, "BEGIN");
    q(&mut a, "UPDATE sbtest1 SET c='in-txn' WHERE id=1");
    assert_eq!(
        rows(&q(&mut a, "SELECT c FROM sbtest1 WHERE id=1")),
        vec!["in-txn"]
    );
    assert_eq!(
        rows(&q(&mut b, "SELECT c FROM sbtest1 WHERE id=1")),
        vec!["c-001"]
    );
    q(&mut a, "SAVEPOINT s1");
    q(&mut a, "UPDATE sbtest1 SET c='after-s1' WHERE id=2");
    q(&mut a, "ROLLBACK TO SAVEPOINT s1");
    assert_eq!(
        rows(&q(&mut a, "SELECT c FROM sbtest1 WHERE id=2")),
        vec!["c-002"]
    );
    // A failed statement is rolled back alone.
    assert_eq!(
        err(
            &mut a,
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 0, 'x', 'y'), (1000, 0, 'x', 'y')"
        ),
        1062
    );
    assert_eq!(
        rows(&q(&mut a, "SELECT count(*) FROM sbtest1 WHERE id=1000")),
        vec!["0"]
    );
    q(&mut a, "COMMIT");
    assert_eq!(
        rows(&q(&mut b, "SELECT c FROM sbtest1 WHERE id=1")),
        vec!["in-txn"]
    );
    // Repeatable read: b's snapshot does not move inside its transaction.
    q(&mut b, "BEGIN");
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id=5")),
        vec!["5"]
    );
    q(&mut a, "UPDATE sbtest1 SET k=50 WHERE id=5");
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id=5")),
        vec!["5"]
    );
    // A locking read sees the latest.
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id=5 FOR UPDATE")),
        vec!["50"]
    );
    q(&mut b, "ROLLBACK");
    // Lock wait timeout: b holds a row lock, a waits and gets 1205.
    q(&mut a, "SET SESSION innodb_lock_wait_timeout = 1");
    q(&mut b, "BEGIN");
    q(&mut b, "UPDATE sbtest1 SET k=1 WHERE id=6");
    assert_eq!(err(&mut a, "UPDATE sbtest1 SET k=2 WHERE id=6"), 1205);
    q(&mut b, "COMMIT");
    q(&mut a, "UPDATE sbtest1 SET k=2 WHERE id=6");
}

#[test]
fn sql_prepare_execute_and_deallocate_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    // A literal with doubled quotes inside, and a text from a variable.
    q(
        &mut s,
        "PREPARE p FROM 'SELECT ''x'', c FROM sbtest1 WHERE id = ?'",
    );
    q(&mut s, "SET @id = 42");
    assert_eq!(rows(&q(&mut s, "EXECUTE p USING @id")), vec!["x|c-042"]);
    q(&mut s, "SET @id = 7");
    assert_eq!(rows(&q(&mut s, "EXECUTE p USING @id")), vec!["x|c-007"]);
    q(
        &mut s,
        "SET @q = 'UPDATE sbtest1 SET k = ? WHERE id = ?', @k = 900",
    );
    q(&mut s, "PREPARE u FROM @q");
    q(&mut s, "EXECUTE u USING @k, @id");
    assert_eq!(
        rows(&q(&mut s, "SELECT k FROM sbtest1 WHERE id = 7")),
        vec!["900"]
    );
    // Names are case-insensitive; preparing a name again replaces it.
    q(&mut s, "PREPARE P FROM 'SELECT 1'");
    assert_eq!(rows(&q(&mut s, "EXECUTE p")), vec!["1"]);
    assert_eq!(err_of(&mut s, "EXECUTE u USING @k").code, 1210);
    assert_eq!(err_of(&mut s, "EXECUTE nope").code, 1243);
    q(&mut s, "DEALLOCATE PREPARE u");
    assert_eq!(err_of(&mut s, "EXECUTE u USING @k, @id").code, 1243);
    q(&mut s, "DROP PREPARE p");
    assert_eq!(err_of(&mut s, "DROP PREPARE p").code, 1243);
    assert_eq!(err_of(&mut s, "PREPARE x FROM 'EXECUTE p'").code, 1295);
    assert_eq!(
        err_of(&mut s, "PREPARE x FROM 'SELECT 1; SELECT 2'").code,
        1064
    );
    assert_eq!(err_of(&mut s, "PREPARE x FROM 'SELEC 1'").code, 1064);
    assert_eq!(err_of(&mut s, "EXECUTE x").code, 1243);
}

#[test]
fn prepared_statements_cache_their_plan_and_follow_ddl() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    let p = s.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    assert_eq!(p.params, 1);
    assert_eq!(p.columns.len(), 1);
    for id in [7i64, 8, 9] {
        let mut c = Collect::default();
        s.execute(p.id, &[Value::Int(id)], &mut c).unwrap();
        assert_eq!(rows(&c), vec![format!("c-{id:03}")]);
    }
    let u = s.prepare("UPDATE sbtest1 SET k=k+? WHERE id=?").unwrap();
    let mut c = Collect::default();
    s.execute(u.id, &[Value::Int(10), Value::Int(7)], &mut c)
        .unwrap();
    assert_eq!(
        rows(&q(&mut s, "SELECT k FROM sbtest1 WHERE id=7")),
        vec!["17"]
    );
    let r = s
        .prepare("SELECT id FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT ?")
        .unwrap();
    let mut c = Collect::default();
    s.execute(
        r.id,
        &[Value::Int(1), Value::Int(10), Value::Int(2)],
        &mut c,
    )
    .unwrap();
    assert_eq!(rows(&c), vec!["10", "9"]);
    // DDL invalidates the cached plan.
    q(&mut s, "DROP INDEX k_1 ON sbtest1");
    let mut c = Collect::default();
    s.execute(p.id, &[Value::Int(7)], &mut c).unwrap();
    assert_eq!(rows(&c), vec!["c-007"]);
    let mut c = Collect::default();
    assert!(
        s.execute(p.id, &[], &mut c).is_err(),
        "wrong parameter count"
    );
}

#[test]
fn prepared_statement_survives_an_execute_that_fails_to_plan() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    let p = s.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    let mut c = Collect::default();
    s.execute(p.id, &[Value::Int(7)], &mut c).unwrap();
    q(&mut s, "DROP TABLE sbtest1");
    let mut c = Collect::default();
    let e = s.execute(p.id, &[Value::Int(7)], &mut c).unwrap_err();
    assert_eq!(e.code, 1146, "{e:?}");
    // The statement is still prepared: once the table is back, it runs.
    q(
        &mut s,
        "CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER, c CHAR(120), pad CHAR(60))",
    );
    q(&mut s, "INSERT INTO sbtest1 VALUES (7, 0, 'c-007', '')");
    let mut c = Collect::default();
    s.execute(p.id, &[Value::Int(7)], &mut c).unwrap();
    assert_eq!(rows(&c), vec!["c-007"]);
}

#[test]
fn unique_secondary_index_and_insert_variants() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE u (id INT PRIMARY KEY, email VARCHAR(50), n INT, UNIQUE KEY (email))",
    );
    q(
        &mut s,
        "INSERT INTO u VALUES (1, 'a@x', 1), (2, 'b@x', 1), (3, NULL, 1), (4, NULL, 1)",
    );
    assert_eq!(err(&mut s, "INSERT INTO u VALUES (5, 'A@X', 1)"), 1062);
    assert_eq!(err(&mut s, "UPDATE u SET email='b@x' WHERE id=1"), 1062);
    q(&mut s, "INSERT IGNORE INTO u VALUES (1, 'z', 9)");
    q(
        &mut s,
        "INSERT INTO u VALUES (1, 'a@x', 1) ON DUPLICATE KEY UPDATE n = n + VALUES(n)",
    );
    assert_eq!(rows(&q(&mut s, "SELECT n FROM u WHERE id=1")), vec!["2"]);
    q(&mut s, "REPLACE INTO u VALUES (2, 'c@x', 7)");
    assert_eq!(
        rows(&q(&mut s, "SELECT email, n FROM u WHERE id=2")),
        vec!["c@x|7"]
    );
    q(&mut s, "INSERT INTO u VALUES (6, 'b@x', 0)");
    assert_eq!(
        err(&mut s, "INSERT INTO u (id, n) VALUES (7, 99999999999)"),
        1264
    );
    assert_eq!(err(&mut s, "INSERT INTO u (email) VALUES ('q')"), 1364);
    q(&mut s, "CREATE TABLE nopk (a INT, b VARCHAR(10))");
    q(
        &mut s,
        "INSERT INTO nopk VALUES (1, 'x'), (1, 'x'), (2, 'y')",
    );
    assert_eq!(q(&mut s, "DELETE FROM nopk WHERE a = 1").ok, Some((2, 0)));
    assert_eq!(rows(&q(&mut s, "SELECT * FROM nopk")), vec!["2|y"]);
}

#[test]
fn show_statements_and_variables() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    assert_eq!(
        rows(&q(&mut s, "SELECT @@version_comment")),
        vec!["CairnDB"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT @@session.autocommit, @@tx_isolation")),
        vec!["1|REPEATABLE-READ"]
    );
    q(&mut s, "SET autocommit=0, NAMES utf8mb4");
    assert!(!s.autocommit());
    q(
        &mut s,
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT @@transaction_isolation")),
        vec!["READ-COMMITTED"]
    );
    q(&mut s, "SET autocommit=1");
    assert_eq!(
        rows(&q(&mut s, "SHOW VARIABLES LIKE 'autocommit'")),
        vec!["autocommit|ON"]
    );
    assert_eq!(rows(&q(&mut s, "SHOW TABLES")), vec!["sbtest1"]);
    assert!(rows(&q(&mut s, "SHOW DATABASES")).contains(&"sbtest".to_string()));
    let ct = rows(&q(&mut s, "SHOW CREATE TABLE sbtest1"));
    assert!(ct[0].contains("KEY `k_1` (`k`)"), "{ct:?}");
    assert_eq!(rows(&q(&mut s, "SHOW INDEX FROM sbtest1")).len(), 2);
    let ex = rows(&q(&mut s, "EXPLAIN SELECT c FROM sbtest1 WHERE id = 5"));
    assert!(
        ex[0].contains("const") && ex[0].contains("PRIMARY"),
        "{ex:?}"
    );
    let ex = rows(&q(
        &mut s,
        "EXPLAIN SELECT count(k) FROM sbtest1 WHERE k BETWEEN 1 AND 3",
    ));
    assert!(
        ex[0].contains("k_1") && ex[0].contains("Using index"),
        "{ex:?}"
    );
    assert_eq!(err(&mut s, "SET nonsense = 1"), 1193);
}

#[test]
fn catalog_and_rows_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        setup(&mut s);
        db.close().unwrap();
    }
    let db = open(dir.path());
    let mut s = Session::new(db, "root");
    q(&mut s, "USE sbtest");
    assert_eq!(
        rows(&q(&mut s, "SELECT c FROM sbtest1 WHERE id=77")),
        vec!["c-077"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT count(*) FROM sbtest1 WHERE k=7")),
        vec!["10"]
    );
    let r = q(
        &mut s,
        "INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'auto', 'p')",
    );
    assert_eq!(r.ok, Some((1, 101)));
    q(&mut s, "DROP TABLE sbtest1");
    assert_eq!(err(&mut s, "SELECT * FROM sbtest1"), 1146);
    q(&mut s, "DROP DATABASE sbtest");
}

#[test]
fn sql_check_reports_an_index_entry_without_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    let t = db.table("sbtest", "sbtest1").unwrap();
    let k1 = t.secondary[0].id;
    let mut stray = k1.to_be_bytes().to_vec();
    stray.extend_from_slice(&[0x80, 0, 0, 9, 0x80, 0, 0x10, 0]);
    db.engine()
        .db()
        .put(&Default::default(), &stray, b"")
        .unwrap();
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert_eq!(rep.problems.len(), 1, "{:?}", rep.problems);
    assert!(rep.problems[0].contains("k_1"), "{:?}", rep.problems);
}

#[test]
fn information_schema_describes_tables_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    assert_eq!(
        rows(&q(&mut s, "SELECT TABLE_NAME, ENGINE FROM information_schema.tables WHERE table_schema = 'sbtest'")),
        vec!["sbtest1|CairnDB"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT column_name, data_type, column_key FROM information_schema.COLUMNS WHERE table_name = 'sbtest1' ORDER BY ordinal_position")),
        vec!["id|int|PRI", "k|int|MUL", "c|char|", "pad|char|"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT COUNT(*) FROM information_schema.statistics WHERE table_name = 'sbtest1'"
        )),
        vec!["2"]
    );
}

#[test]
fn keys_of_an_index_id_no_table_owns_are_swept_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let orphan = 9_999u32.to_be_bytes();
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        setup(&mut s);
        // What a crash during a CREATE INDEX back-fill or after a DROP's
        // dictionary change leaves behind.
        for i in 0..100u32 {
            let mut k = orphan.to_vec();
            k.extend_from_slice(&i.to_be_bytes());
            db.engine().db().put(&Default::default(), &k, b"x").unwrap();
        }
        db.close().unwrap();
    }
    let db = open(dir.path());
    let mut it = db.engine().db().iter(&Default::default()).unwrap();
    it.seek(&orphan);
    assert!(
        !it.valid() || !it.key().starts_with(&orphan),
        "orphan keys survived the open"
    );
    let mut s = Session::new(db, "root");
    q(&mut s, "USE sbtest");
    assert_eq!(
        rows(&q(&mut s, "SELECT count(*) FROM sbtest1")),
        vec!["100"]
    );
}

#[test]
fn create_index_waits_for_open_writers_so_their_rows_are_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = Session::new(db.clone(), "root");
    let mut b = Session::new(db.clone(), "root");
    setup(&mut a);
    q(&mut b, "USE sbtest");
    q(&mut a, "BEGIN");
    q(
        &mut a,
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (500, 5, 'late', 'p')",
    );
    q(&mut b, "SET SESSION innodb_lock_wait_timeout = 1");
    assert_eq!(err(&mut b, "CREATE INDEX c_1 ON sbtest1(c)"), 1205);
    q(&mut a, "COMMIT");
    q(&mut b, "CREATE INDEX c_1 ON sbtest1(c)");
    assert_eq!(
        rows(&q(&mut b, "SELECT id FROM sbtest1 WHERE c = 'late'")),
        vec!["500"]
    );
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
}

#[test]
fn autocommit_off_keeps_one_snapshot_until_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = Session::new(db.clone(), "root");
    let mut b = Session::new(db.clone(), "root");
    setup(&mut a);
    q(&mut b, "USE sbtest");
    q(&mut b, "SET autocommit = 0");
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id = 9")),
        vec!["9"]
    );
    q(&mut a, "UPDATE sbtest1 SET k = 90 WHERE id = 9");
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id = 9")),
        vec!["9"]
    );
    q(&mut b, "COMMIT");
    assert_eq!(
        rows(&q(&mut b, "SELECT k FROM sbtest1 WHERE id = 9")),
        vec!["90"]
    );
}

fn err_of(s: &mut Session, sql: &str) -> cairndb_sql::SqlError {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{sql}: expected an error"),
        Err(e) => e,
    }
}

fn types_of(c: &Collect) -> Vec<OutType> {
    c.columns.iter().map(|c| c.ty).collect()
}

fn shop(s: &mut Session) {
    q(s, "CREATE DATABASE shop");
    q(s, "USE shop");
    q(
        s,
        "CREATE TABLE acct (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, balance INT, \
         price DECIMAL(10,2), ratio DOUBLE, d DATE, name VARCHAR(10) NOT NULL DEFAULT '', \
         code INT, flag BOOL, grp INT, UNIQUE KEY (code), KEY (grp, code))",
    );
    q(
        s,
        "INSERT INTO acct (id, balance, price, ratio, d, name, code, flag, grp) \
         VALUES (1, 100, 2.50, 0.5, '2024-02-29', 'ann', 7, 1, 1)",
    );
}

#[test]
fn function_and_expression_results_have_mysql_types_not_var_string() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    use OutType::*;
    let cases: &[(&str, OutType, &str)] = &[
        ("LENGTH('ab')", LongLong, "2"),
        ("CHAR_LENGTH('ab')", LongLong, "2"),
        ("ABS(-1)", LongLong, "1"),
        ("ABS(price)", NewDecimal, "2.50"),
        ("CAST('42' AS SIGNED)", LongLong, "42"),
        ("CAST(1.5 AS DECIMAL(5,2))", NewDecimal, "1.50"),
        ("CAST(balance AS DOUBLE)", Double, "100"),
        ("CAST(balance AS CHAR)", VarString, "100"),
        ("ROUND(2.567, 1)", NewDecimal, "2.6"),
        ("ROUND(ratio)", Double, "1"),
        ("FLOOR(2.5)", LongLong, "2"),
        ("IF(1, 2, 3)", LongLong, "2"),
        ("IF(1, 2, 'x')", VarString, "2"),
        ("IFNULL(NULL, 3)", LongLong, "3"),
        ("IFNULL(balance, 0)", LongLong, "100"),
        ("IFNULL(d, 'never')", VarString, "2024-02-29"),
        ("IFNULL(d, d)", Date, "2024-02-29"),
        ("COALESCE(NULL, 1.5)", NewDecimal, "1.5"),
        ("GREATEST(1, 2)", LongLong, "2"),
        ("GREATEST(1, 2.5e0)", Double, "2.5"),
        ("CASE WHEN id = 1 THEN 2 END", LongLong, "2"),
        ("CASE WHEN id = 1 THEN price ELSE 0 END", NewDecimal, "2.50"),
        ("LAST_INSERT_ID()", LongLong, "0"),
        ("balance + 1", LongLong, "101"),
        ("COUNT(*)", LongLong, "1"),
        ("SUM(balance)", NewDecimal, "100"),
        ("AVG(balance)", NewDecimal, "100.0000"),
        ("CONCAT(name, 'x')", VarString, "annx"),
        ("UNIX_TIMESTAMP() > 0", LongLong, "1"),
    ];
    for (expr, ty, want) in cases {
        let c = q(&mut s, &format!("SELECT {expr} FROM acct WHERE id = 1"));
        assert_eq!(types_of(&c), vec![*ty], "type of {expr}");
        assert_eq!(rows(&c), vec![want.to_string()], "value of {expr}");
    }
    let c = q(
        &mut s,
        "SELECT CAST(-1 AS UNSIGNED), @@sql_select_limit, CAST(1 AS DECIMAL(6,3))",
    );
    assert_eq!(types_of(&c), vec![LongLong, LongLong, NewDecimal]);
    let meta: Vec<(bool, u8)> = c.columns.iter().map(|c| (c.unsigned, c.decimals)).collect();
    assert_eq!(meta, [(true, 0), (true, 0), (false, 3)]);
    assert_eq!(
        rows(&c),
        vec!["18446744073709551615|18446744073709551615|1.000"]
    );
    let c = q(&mut s, "SELECT NOW(), CURDATE(), CONNECTION_ID()");
    assert_eq!(types_of(&c), vec![DateTime, Date, LongLong]);
    assert!(matches!(c.rows[0][1], Value::Date(_)), "{:?}", c.rows[0]);
}

#[test]
fn integer_system_variables_are_bigint_and_labelled_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    let c = q(
        &mut s,
        "SELECT @@autocommit, @@session.autocommit, @@innodb_lock_wait_timeout, @@version",
    );
    let names: Vec<&str> = c.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "@@autocommit",
            "@@session.autocommit",
            "@@innodb_lock_wait_timeout",
            "@@version"
        ]
    );
    use OutType::*;
    assert_eq!(types_of(&c), vec![LongLong, LongLong, LongLong, VarString]);
    assert_eq!(&rows(&c)[0][..8], "1|1|50|8");
    // A string set on an integer variable is read as the integer.
    q(&mut s, "SET foreign_key_checks = OFF");
    q(&mut s, "SET SESSION unique_checks = '0'");
    assert_eq!(
        rows(&q(&mut s, "SELECT @@foreign_key_checks, @@unique_checks")),
        vec!["0|0"]
    );
    assert_eq!(err(&mut s, "SET unique_checks = 'maybe'"), 1231);
}

#[test]
fn update_with_order_by_and_limit_is_not_a_syntax_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    // k = id % 10: ids 3, 13, 23, .. have k = 3; the two highest change.
    let c = q(
        &mut s,
        "UPDATE sbtest1 SET pad = 'top' WHERE k = 3 ORDER BY id DESC LIMIT 2",
    );
    assert_eq!(c.ok.map(|o| o.0), Some(2));
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM sbtest1 WHERE pad = 'top' ORDER BY id"
        )),
        vec!["83", "93"]
    );
    // Without LIMIT, with an expression and a column list, and prepared.
    q(
        &mut s,
        "UPDATE sbtest1 SET k = k + 100 WHERE id <= 3 ORDER BY (id * -1), c",
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT k FROM sbtest1 WHERE id <= 3 ORDER BY id"
        )),
        vec!["101", "102", "103"]
    );
    let p = s
        .prepare("UPDATE sbtest1 SET pad = ? WHERE k = ? ORDER BY id LIMIT ?")
        .unwrap();
    assert_eq!(p.params, 3);
    let mut c = Collect::default();
    s.execute(
        p.id,
        &[Value::Str(b"low".to_vec()), Value::Int(4), Value::Int(1)],
        &mut c,
    )
    .unwrap();
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM sbtest1 WHERE pad = 'low'")),
        vec!["4"]
    );
    // An ORDER BY inside a string or a subquery is not the UPDATE's.
    q(
        &mut s,
        "UPDATE sbtest1 SET pad = 'ORDER BY x LIMIT 1' WHERE id = 5",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT pad FROM sbtest1 WHERE id = 5")),
        vec!["ORDER BY x LIMIT 1"]
    );
    assert_eq!(
        err(&mut s, "UPDATE sbtest1 SET k = 1 ORDER BY nope LIMIT 1"),
        1054
    );
    assert_eq!(
        err(&mut s, "UPDATE sbtest1 SET k = 1 LIMIT 1 ORDER BY id"),
        1064
    );
}

#[test]
fn insert_ignore_of_a_duplicate_and_a_truncating_cast_give_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    let c = q(
        &mut s,
        "INSERT IGNORE INTO acct (id, name, code) VALUES (1, 'dup', 70), (2, 'new', 7), (3, 'ok', 8)",
    );
    assert_eq!(c.ok.map(|o| o.0), Some(1));
    assert_eq!(c.warnings, 2);
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        vec![
            "Warning|1062|Duplicate entry '1' for key 'acct.PRIMARY'",
            "Warning|1062|Duplicate entry '7' for key 'acct.code'",
        ]
    );
    let c = q(
        &mut s,
        "SELECT CAST('12abc' AS SIGNED), CAST(' 5 ' AS SIGNED)",
    );
    assert_eq!(rows(&c), vec!["12|5"]);
    assert_eq!(c.warnings, 1);
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        vec!["Warning|1292|Truncated incorrect INTEGER value: '12abc'"]
    );
    // The next statement starts without warnings.
    let c = q(&mut s, "SELECT 1");
    assert_eq!(c.warnings, 0);
    assert!(rows(&q(&mut s, "SHOW WARNINGS")).is_empty());
}

#[test]
fn insert_ignore_of_a_too_long_string_truncates_with_warning_1265() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    let c = q(
        &mut s,
        "INSERT IGNORE INTO acct (id, name, balance) VALUES (40, 'a-name-far-too-long', 99999999999)",
    );
    assert_eq!(c.ok.map(|o| o.0), Some(1));
    assert_eq!(c.warnings, 2);
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        vec![
            "Warning|1264|Out of range value for column 'balance' at row 1",
            "Warning|1265|Data truncated for column 'name' at row 1",
        ]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT name, balance FROM acct WHERE id = 40")),
        vec!["a-name-far|2147483647"]
    );
    // Without IGNORE, strict mode still refuses.
    let e = err_of(
        &mut s,
        "INSERT INTO acct (id, name) VALUES (41, 'a-name-far-too-long')",
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (1406, "Data too long for column 'name' at row 1")
    );
}

#[test]
fn drop_table_of_a_missing_table_names_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    let e = err_of(&mut s, "DROP TABLE nope");
    assert_eq!(
        (e.code, e.message.as_str()),
        (1051, "Unknown table 'shop.nope'")
    );
    q(&mut s, "DROP TABLE IF EXISTS nope");
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        vec!["Note|1051|Unknown table 'shop.nope'"]
    );
}

#[test]
fn table_columns_in_results_carry_their_flags_and_origin() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    q(&mut s, "CREATE TABLE u (n INT UNSIGNED NOT NULL, m INT)");
    let c = q(
        &mut s,
        "SELECT a.id, a.balance, a.name AS label, a.code, a.grp, a.flag, u.n, 1 + a.id \
         FROM acct a LEFT JOIN u ON u.m = a.id",
    );
    let flags: Vec<String> = c
        .columns
        .iter()
        .map(|c| {
            let mut f = String::new();
            for (on, n) in [
                (c.not_null, "N"),
                (c.primary_key, "P"),
                (c.auto_increment, "A"),
                (c.unique_key, "U"),
                (c.multiple_key, "M"),
                (c.unsigned, "u"),
            ] {
                if on {
                    f.push_str(n);
                }
            }
            format!(
                "{}.{}.{}/{}.{}:{f}",
                c.schema, c.org_table, c.org_name, c.table, c.name
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            "shop.acct.id/a.id:NPA",
            "shop.acct.balance/a.balance:",
            "shop.acct.name/a.label:N",
            "shop.acct.code/a.code:U",
            "shop.acct.grp/a.grp:M",
            "shop.acct.flag/a.flag:",
            // LEFT JOINed: NULL when no row matches, so not NOT NULL
            // (as MariaDB flags it).
            "shop.u.n/u.n:u",
            "../.1 + a.id:",
        ]
    );
}

#[test]
fn bool_columns_have_display_length_1_like_tinyint_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    q(
        &mut s,
        "CREATE TABLE b (id INT PRIMARY KEY, t TINYINT, t1 TINYINT(1), bb BOOLEAN)",
    );
    let c = q(&mut s, "SELECT t, t1, bb FROM b");
    let lens: Vec<u32> = c.columns.iter().map(|c| c.length).collect();
    assert_eq!(lens, [4, 1, 1]);
    let c = q(&mut s, "SELECT flag FROM acct");
    assert_eq!((c.columns[0].ty, c.columns[0].length), (OutType::Tiny, 1));
    let create = rows(&q(&mut s, "SHOW CREATE TABLE b")).join("\n");
    assert!(create.contains("`bb` tinyint(1)"), "{create}");
    assert!(
        create.contains("`t` tinyint,") || create.contains("`t` tinyint DEFAULT"),
        "{create}"
    );
}

#[test]
fn prepare_of_a_statement_on_a_missing_table_fails_with_1146() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    shop(&mut s);
    let e = s.prepare("SELECT * FROM nope WHERE id = ?").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (1146, "Table 'shop.nope' doesn't exist")
    );
    assert_eq!(
        s.prepare("INSERT INTO nope VALUES (?)").unwrap_err().code,
        1146
    );
    assert_eq!(
        s.prepare("SELECT nope FROM acct WHERE id = ?")
            .unwrap_err()
            .code,
        1054
    );
    // DDL is still prepared without a table to check.
    assert!(s.prepare("CREATE TABLE later (id INT PRIMARY KEY)").is_ok());
}

#[test]
fn or_of_ranges_and_in_lists_read_merged_ranges_each_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    // sysbench's select_random_ranges: a range read of k_1, not a full
    // scan (type range), covering.
    let sql = "SELECT count(k) FROM sbtest1 WHERE k BETWEEN 1 AND 2 OR k BETWEEN 2 AND 3";
    let plan = rows(&q(&mut s, &format!("EXPLAIN {sql}")));
    assert_eq!(
        plan,
        vec!["1|SIMPLE|sbtest1|range|k_1|k_1|NULL|NULL|NULL|100.00|Using index; Using where"]
    );
    // k = id % 10, ten rows per value: overlapping ranges count once.
    assert_eq!(rows(&q(&mut s, sql)), vec!["30"]);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT count(*) FROM sbtest1 WHERE k BETWEEN 5 AND 9 OR k BETWEEN 6 AND 7 OR k = 8 \
             OR k IN (1, 9, 1) OR k > 8"
        )),
        vec!["60"]
    );
    // Open ends, exclusive bounds, NULL bounds (match nothing) and an
    // AND inside a disjunct (the range of its k condition, narrowed by
    // the WHERE).
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT count(*) FROM sbtest1 WHERE k < 1 OR (k > 8 AND id < 50) OR k BETWEEN NULL AND 5"
        )),
        vec!["15"]
    );
    // Primary-key alternatives, also read in index order for ORDER BY
    // (both directions) without a sort.
    let sql = "SELECT id FROM sbtest1 WHERE id IN (7, 3) OR id BETWEEN 50 AND 52 OR id = 51 \
               OR id > 98 ORDER BY id";
    assert_eq!(
        rows(&q(&mut s, sql)),
        vec!["3", "7", "50", "51", "52", "99", "100"]
    );
    let plan = rows(&q(&mut s, &format!("EXPLAIN {sql} DESC")));
    assert_eq!(
        plan,
        vec!["1|SIMPLE|sbtest1|range|PRIMARY|PRIMARY|NULL|NULL|NULL|100.00|Using where"]
    );
    assert_eq!(
        rows(&q(&mut s, &format!("{sql} DESC LIMIT 4"))),
        vec!["100", "99", "52", "51"]
    );
    // Equal ranges of a secondary index in order: k, then id.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT k, id FROM sbtest1 WHERE k = 4 OR k BETWEEN 3 AND 3 OR k = 3 ORDER BY k DESC, id DESC LIMIT 3"
        )),
        vec!["4|94", "4|84", "4|74"]
    );
    // A disjunct on another column leaves k unbounded: a whole-index
    // scan (of the covering k_1), still right.
    let sql = "SELECT count(*) FROM sbtest1 WHERE k BETWEEN 1 AND 2 OR id = 100";
    assert_eq!(rows(&q(&mut s, sql)), vec!["21"]);
    assert_eq!(
        rows(&q(&mut s, &format!("EXPLAIN {sql}")))[0]
            .split('|')
            .nth(3),
        Some("index")
    );
    // Prepared, as sysbench sends it, and an UPDATE and a DELETE through
    // the same path.
    let p = s
        .prepare("SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ?")
        .unwrap();
    let mut c = Collect::default();
    s.execute(
        p.id,
        &[Value::Int(7), Value::Int(9), Value::Int(0), Value::Int(8)],
        &mut c,
    )
    .unwrap();
    assert_eq!(rows(&c), vec!["100"]);
    let c = q(
        &mut s,
        "UPDATE sbtest1 SET pad = 'x' WHERE k BETWEEN 1 AND 2 OR k BETWEEN 2 AND 3",
    );
    assert_eq!(c.ok.map(|o| o.0), Some(30));
    let c = q(
        &mut s,
        "DELETE FROM sbtest1 WHERE id IN (1, 2) OR id BETWEEN 2 AND 4",
    );
    assert_eq!(c.ok.map(|o| o.0), Some(4));
    assert_eq!(rows(&q(&mut s, "SELECT count(*) FROM sbtest1")), vec!["96"]);
}

/// Key ranges that say a WHERE's conjuncts exactly let the executor skip
/// re-checking them (`IndexAccess::residual`). Every answer through the
/// indexes must equal the answer of a full scan of an unindexed copy, for
/// bounds of every type (fractions and strings widen the ranges and bring
/// the whole WHERE back), NULL bounds, nullable columns read by ranges open
/// below, BETWEEN and comparisons mixed, and ORs with extra conditions.
#[test]
fn exact_key_ranges_answer_as_a_full_scan_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT NOT NULL, a INT NOT NULL, n INT NULL, u TINYINT UNSIGNED NOT NULL, PRIMARY KEY (id, a), KEY n_1 (n), KEY u_1 (u))",
    );
    q(
        &mut s,
        "CREATE TABLE plain (id INT NOT NULL, a INT NOT NULL, n INT NULL, u TINYINT UNSIGNED NOT NULL)",
    );
    let mut vals = Vec::new();
    for i in 0..60 {
        let n = if i % 7 == 0 {
            "NULL".to_string()
        } else {
            ((i * 13) % 50 - 10).to_string()
        };
        vals.push(format!("({}, {}, {n}, {})", i / 3, i % 3, (i * 37) % 256));
    }
    let vals = vals.join(",");
    q(&mut s, &format!("INSERT INTO t VALUES {vals}"));
    q(&mut s, &format!("INSERT INTO plain VALUES {vals}"));
    let wheres = [
        "id = 4",
        "id = 4 AND a = 1",
        "id = 4 AND a >= 1",
        "id BETWEEN 3 AND 6",
        "id BETWEEN 3 AND 6 AND a <> 1",
        "id > 3 AND id < 6 AND id BETWEEN 0 AND 4",
        "id BETWEEN 2 AND 4 AND id BETWEEN 3 AND 9",
        "id IN (1, 5, 9, 5)",
        "id IN (1, NULL, 9)",
        "id = 2 OR id BETWEEN 7 AND 8 OR id > 18",
        "id = 2 OR (id BETWEEN 7 AND 8 AND a = 2)",
        "n < 5",
        "n <= 5 AND n > -3",
        "n BETWEEN -100 AND 100",
        "n = 3 OR n < 0",
        "n IN (3, 16, 29)",
        "n > NULL",
        "n BETWEEN NULL AND 5",
        "id BETWEEN 2.5 AND 4",
        "id = 3.0",
        "id >= '3' AND id < '5x'",
        "n < 4.5",
        "u < 40",
        "u BETWEEN 250 AND 300",
        "u > -1",
        "u = 300",
        "id > 2147483647",
    ];
    for w in wheres {
        for proj in ["id, a, n, u", "COUNT(*)", "COUNT(n)"] {
            let sql_t = format!("SELECT {proj} FROM t WHERE {w} ORDER BY id, a");
            let sql_p = format!("SELECT {proj} FROM plain WHERE {w} ORDER BY id, a");
            let (sql_t, sql_p) = if proj.starts_with("COUNT") {
                (
                    format!("SELECT {proj} FROM t WHERE {w}"),
                    format!("SELECT {proj} FROM plain WHERE {w}"),
                )
            } else {
                (sql_t, sql_p)
            };
            assert_eq!(
                rows(&q(&mut s, &sql_t)),
                rows(&q(&mut s, &sql_p)),
                "{sql_t}"
            );
        }
    }
    // One prepared plan run with bounds of several types.
    let pt = s
        .prepare("SELECT id, a FROM t WHERE id BETWEEN ? AND ? OR n < ? ORDER BY id, a")
        .unwrap()
        .id;
    let pp = s
        .prepare("SELECT id, a FROM plain WHERE id BETWEEN ? AND ? OR n < ? ORDER BY id, a")
        .unwrap()
        .id;
    let r = s
        .prepare("SELECT id, a FROM t WHERE id BETWEEN ? AND ? ORDER BY id, a")
        .unwrap()
        .id;
    let rp = s
        .prepare("SELECT id, a FROM plain WHERE id BETWEEN ? AND ? ORDER BY id, a")
        .unwrap()
        .id;
    let bounds = [
        vec![Value::Int(2), Value::Int(4), Value::Int(0)],
        vec![Value::Double(2.5), Value::Int(4), Value::Int(-5)],
        vec![
            Value::Str(b"3".to_vec()),
            Value::Str(b"4.5".to_vec()),
            Value::Null,
        ],
        vec![Value::Null, Value::Int(4), Value::Double(1.5)],
        vec![Value::UInt(1), Value::UInt(u64::MAX), Value::Int(3)],
    ];
    for b in &bounds {
        let run = |s: &mut Session, id: u32, params: &[Value]| {
            let mut c = Collect::default();
            s.execute(id, params, &mut c).unwrap();
            rows(&c)
        };
        assert_eq!(run(&mut s, pt, b), run(&mut s, pp, b), "{b:?}");
        assert_eq!(run(&mut s, r, &b[..2]), run(&mut s, rp, &b[..2]), "{b:?}");
    }
}

/// Prepares `sql` and executes it once with 5 for every parameter (so its
/// plan is cached); returns its id.
fn prep(s: &mut Session, sql: &str) -> u32 {
    let id = s.prepare(sql).unwrap().id;
    let n = sql.matches('?').count();
    let mut c = Collect::default();
    s.execute(id, &vec![Value::Int(5); n], &mut c).unwrap();
    id
}

/// The server runs a prepared statement on its network thread only when
/// it is a keyed read that cannot wait: no lock, key points only, and a
/// plan that is current.
#[test]
fn only_current_lockless_key_point_reads_are_quick() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    let point = prep(&mut s, "SELECT c FROM sbtest1 WHERE id=?");
    let points = prep(
        &mut s,
        "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?)",
    );
    let range = prep(&mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?");
    let locking = prep(&mut s, "SELECT c FROM sbtest1 WHERE id=? FOR UPDATE");
    let write = prep(&mut s, "UPDATE sbtest1 SET k=k+1 WHERE id=?");
    let full = prep(&mut s, "SELECT COUNT(*) FROM sbtest1 WHERE pad = ?");
    assert!(s.is_quick_read(point));
    assert!(s.is_quick_read(points));
    for id in [range, locking, write, full, 9999] {
        assert!(!s.is_quick_read(id), "statement {id}");
    }
    // A schema change makes every cached plan stale until re-planned.
    q(&mut s, "CREATE INDEX c_1 ON sbtest1(c)");
    assert!(!s.is_quick_read(point));
    let mut c = Collect::default();
    s.execute(point, &[Value::Int(7)], &mut c).unwrap();
    assert!(s.is_quick_read(point));
}

/// Writes run on the network thread only when they are keyed, current,
/// in autocommit, and their commit will not sync on that thread.
#[test]
fn only_keyed_autocommit_writes_that_do_not_sync_on_the_thread_are_quick() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    let update = prep(&mut s, "UPDATE sbtest1 SET k=k+1 WHERE id=?");
    let delete = prep(&mut s, "DELETE FROM sbtest1 WHERE id=?");
    let insert = prep(
        &mut s,
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
    );
    let by_k = prep(&mut s, "UPDATE sbtest1 SET c='x' WHERE k BETWEEN ? AND ?");
    let copy = prep(
        &mut s,
        "INSERT INTO sbtest1 (k, c, pad) SELECT k, c, pad FROM sbtest1 WHERE id=?",
    );
    let read = prep(&mut s, "SELECT c FROM sbtest1 WHERE id=?");
    // Synced commits (flush_log_at_trx_commit 1) on the thread: never quick.
    for id in [update, delete, insert, by_k, copy, read] {
        assert!(
            !s.is_quick_write(id),
            "statement {id}, synced on the thread"
        );
    }
    // Their sync left to the driver: the keyed ones are.
    s.set_deferred_durability(true);
    assert!(s.is_quick_write(update));
    assert!(s.is_quick_write(delete));
    assert!(s.is_quick_write(insert));
    for id in [by_k, copy, read, 9999] {
        assert!(!s.is_quick_write(id), "statement {id}");
    }
    // Not inside a transaction (its locks and undo span statements).
    q(&mut s, "BEGIN");
    assert!(!s.is_quick_write(update));
    q(&mut s, "COMMIT");
    q(&mut s, "SET autocommit=0");
    assert!(!s.is_quick_write(update));
    q(&mut s, "SET autocommit=1");
    assert!(s.is_quick_write(update));
    // Stale after a schema change until re-planned.
    q(&mut s, "CREATE INDEX c_1 ON sbtest1(c)");
    assert!(!s.is_quick_write(update));
    let mut c = Collect::default();
    s.execute(update, &[Value::Int(7)], &mut c).unwrap();
    assert!(s.is_quick_write(update));
}

/// A keyed write with nothing to wait for ran the engine's blocking hook
/// anyway: taking the schema lock (free unless DDL holds it) went through
/// it every time, so a server handed its network thread off for every
/// quick write.
#[test]
fn a_write_that_waits_for_nothing_does_not_run_the_blocking_hook() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HOOKED: AtomicUsize = AtomicUsize::new(0);
    fn counting(w: &mut dyn FnMut()) {
        HOOKED.fetch_add(1, Ordering::SeqCst);
        w();
    }
    let dir = tempfile::tempdir().unwrap();
    let db = SqlDb::open(
        dir.path(),
        SqlOptions {
            flush_log_at_trx_commit: cairndb_sql::FlushLogAtCommit::Never,
            ..SqlOptions::default()
        },
    )
    .unwrap();
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    let up = prep(&mut s, "UPDATE sbtest1 SET k=k+1 WHERE id=?");
    assert!(s.is_quick_write(up));
    std::thread::scope(|t| {
        t.spawn(|| {
            cairndb::set_thread_blocking_hook(Some(counting));
            let mut c = Collect::default();
            for id in 1..=20 {
                s.execute(up, &[Value::Int(id)], &mut c).unwrap();
            }
            cairndb::set_thread_blocking_hook(None);
        });
    });
    assert_eq!(HOOKED.load(Ordering::SeqCst), 0);
}

/// With deferred durability a commit by a quick write leaves its sync to
/// the driver; the next statement waits for it first, and so does
/// `poll_durable`.
#[test]
fn deferred_commits_are_durable_once_polled_or_before_the_next_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    s.set_deferred_durability(true);
    let up = s.prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?").unwrap().id;
    let mut c = Collect::default();
    s.execute(up, &[Value::Int(3)], &mut c).unwrap();
    let engine = db.engine().db();
    let pos = engine.log_position();
    // Whether or not it was synced yet, polling reaches durable.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let t = std::time::Instant::now();
    loop {
        match s.poll_durable(&mut cx) {
            std::task::Poll::Ready(r) => break r.unwrap(),
            std::task::Poll::Pending => {
                assert!(t.elapsed() < std::time::Duration::from_secs(10));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    assert!(engine.is_durable(pos));
    // The next statement settles what an unpolled commit left.
    s.execute(up, &[Value::Int(4)], &mut c).unwrap();
    let pos = engine.log_position();
    q(&mut s, "SELECT 1");
    assert!(engine.is_durable(pos));
}

#[test]
fn optimize_table_compacts_the_tables_rows_to_the_last_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    q(&mut s, "DELETE FROM sbtest1 WHERE id > 50");
    db.engine().db().flush().unwrap();
    let at = |level: usize| {
        db.engine()
            .db()
            .property(&format!("cairndb.num-files-at-level{level}"))
            .unwrap()
    };
    assert_ne!(at(0), "0", "the flush left a level-0 file");
    let c = q(&mut s, "OPTIMIZE TABLE sbtest1");
    assert_eq!(rows(&c), vec!["sbtest.sbtest1|optimize|status|OK"]);
    assert_eq!(at(0), "0", "OPTIMIZE left files in level 0");
    assert_eq!(
        rows(&q(&mut s, "SELECT COUNT(*), SUM(id) FROM sbtest1")),
        vec!["50|1275"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT COUNT(*) FROM sbtest1 WHERE k = 3")),
        vec!["5"]
    );
    // A missing table: an Error row and a failed status; the others run.
    let c = q(
        &mut s,
        "OPTIMIZE NO_WRITE_TO_BINLOG TABLE nope, sbtest.sbtest1",
    );
    assert_eq!(
        rows(&c),
        vec![
            "sbtest.nope|optimize|Error|Table 'sbtest.nope' doesn't exist",
            "sbtest.nope|optimize|status|Operation failed",
            "sbtest.sbtest1|optimize|status|OK",
        ]
    );
    assert_eq!(err(&mut s, "OPTIMIZE sbtest1"), 1064);
}

/// A session reuses the string buffers of one statement's rows for the
/// next statement's: NULLs stay NULL, shorter strings are not padded by
/// longer ones before them, and a LEFT JOIN's missing side is NULL.
#[test]
fn string_buffers_reused_across_statements_keep_nulls_and_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(100), b VARCHAR(100))",
    );
    q(
        &mut s,
        "CREATE TABLE u (id INT PRIMARY KEY, x VARCHAR(100))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, 'a-long-string-one', 'b1'), (2, NULL, 'b'), (3, 'x', NULL), (4, '', '')",
    );
    q(&mut s, "INSERT INTO u VALUES (1, 'u-one'), (3, 'u3')");
    let p = s.prepare("SELECT a, b FROM t WHERE id=?").unwrap();
    let expect = [
        (1, "a-long-string-one|b1"),
        (2, "NULL|b"),
        (3, "x|NULL"),
        (4, "|"),
        (1, "a-long-string-one|b1"),
        (4, "|"),
        (2, "NULL|b"),
    ];
    for (id, want) in expect {
        let mut c = Collect::default();
        s.execute(p.id, &[Value::Int(id)], &mut c).unwrap();
        assert_eq!(rows(&c), vec![want.to_string()], "id {id}");
        // Another statement's rows in between.
        assert_eq!(
            rows(&q(
                &mut s,
                "SELECT t.id, t.a, u.x FROM t LEFT JOIN u ON u.id = t.id ORDER BY t.id"
            )),
            vec![
                "1|a-long-string-one|u-one",
                "2|NULL|NULL",
                "3|x|u3",
                "4||NULL"
            ]
        );
    }
}

/// Primary-key point reads, plain and prepared: a present and a missing
/// key, `= NULL` (no row), a value of another type that has no exact key
/// form (scanned and compared as MySQL does), and a composite key.
#[test]
fn primary_key_points_match_what_a_scan_would() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))");
    q(
        &mut s,
        "INSERT INTO t VALUES (0, 'zero'), (1, 'one'), (2, 'two')",
    );
    q(
        &mut s,
        "CREATE TABLE c (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
    );
    q(
        &mut s,
        "INSERT INTO c VALUES (1, 'x', 10), (1, 'y', 11), (2, 'x', 20)",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT v FROM t WHERE id = 1")),
        vec!["one"]
    );
    assert!(rows(&q(&mut s, "SELECT v FROM t WHERE id = 7")).is_empty());
    assert!(rows(&q(&mut s, "SELECT v FROM t WHERE id = NULL")).is_empty());
    assert_eq!(
        rows(&q(&mut s, "SELECT v FROM t WHERE id = 1.0")),
        vec!["one"]
    );
    assert!(rows(&q(&mut s, "SELECT v FROM t WHERE id = 1.5")).is_empty());
    assert_eq!(
        rows(&q(&mut s, "SELECT v FROM c WHERE a = 1 AND b = 'Y'")),
        vec!["11"]
    );
    let p = s.prepare("SELECT v FROM t WHERE id = ?").unwrap();
    for (arg, want) in [
        (Value::Int(2), vec!["two"]),
        (Value::Int(9), vec![]),
        (Value::Null, vec![]),
        (Value::Str(b"0".to_vec()), vec!["zero"]),
    ] {
        let mut out = Collect::default();
        s.execute(p.id, std::slice::from_ref(&arg), &mut out)
            .unwrap();
        assert_eq!(rows(&out), want, "{arg:?}");
    }
}

#[test]
fn sorted_rows_reused_by_later_sorts_hold_only_their_own_values() {
    // A session keeps the rows one sort buffered for the next sort: rows
    // of another width, other types, ORDER BY values that are not
    // selected and strings longer and shorter than before must not leak
    // from one statement into the next.
    let (_d, mut s) = common::session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(40), b INT)",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, 'a long string value here', 3), (2, 'bb', 1), (3, NULL, 2)",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT a, b FROM t ORDER BY b")),
        vec!["bb|1", "NULL|2", "a long string value here|3"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t ORDER BY a DESC")),
        vec!["2", "1", "3"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT b, a, id FROM t ORDER BY id DESC")),
        vec!["2|NULL|3", "1|bb|2", "3|a long string value here|1"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT b % 2 FROM t ORDER BY b % 2")),
        vec!["0", "1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT a FROM t WHERE id < 3 ORDER BY CHAR_LENGTH(a)"
        )),
        vec!["bb", "a long string value here"]
    );
}

#[test]
fn text_sorts_and_comparisons_follow_the_index_key_order() {
    // A sort, a filtered full scan and a primary-key range must agree:
    // trailing spaces do not count and a string sorts before its own
    // extensions, as the index keys order them. (Padding the shorter
    // string with spaces, as MariaDB does, made `k < 'abc\n'` through the
    // key range miss 'abc', which a full scan returned.) The ASCII fast
    // path stops at the first difference; a non-ASCII character after a
    // common ASCII prefix compares by weight.
    let (_d, mut s) = common::session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(20) COLLATE utf8mb4_general_ci)",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, 'abz'), (2, 'ABc'), (3, 'ab'), (4, 'abé'), (5, 'abe '), (6, 'abD'), (7, 'ab\\0'), (8, 'ab\t')",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t ORDER BY c, id")),
        vec!["3", "7", "8", "2", "6", "4", "5", "1"]
    );
    q(
        &mut s,
        "CREATE TABLE b (id INT PRIMARY KEY, c VARCHAR(20) COLLATE utf8mb4_bin)",
    );
    q(&mut s, "INSERT INTO b SELECT * FROM t");
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM b ORDER BY c, id")),
        vec!["2", "3", "7", "8", "6", "5", "1", "4"]
    );
    q(
        &mut s,
        "CREATE TABLE k (k VARCHAR(10) PRIMARY KEY, v VARCHAR(10))",
    );
    q(
        &mut s,
        "INSERT INTO k VALUES ('abc', 'abc'), ('abc\n', 'abc\n')",
    );
    // k is read through its key range, v by a filtered full scan.
    for (range, scan) in [
        (
            "SELECT HEX(k) FROM k WHERE k < 'abc\n' ORDER BY k",
            "SELECT HEX(v) FROM k WHERE v < 'abc\n' ORDER BY v",
        ),
        (
            "SELECT HEX(k) FROM k WHERE k > 'abc' ORDER BY k",
            "SELECT HEX(v) FROM k WHERE v > 'abc' ORDER BY v",
        ),
    ] {
        assert_eq!(rows(&q(&mut s, range)), rows(&q(&mut s, scan)), "{range}");
    }
    assert_eq!(
        rows(&q(&mut s, "SELECT HEX(k) FROM k WHERE k < 'abc\n'")),
        vec!["616263"]
    );
}

#[test]
fn sql_prepare_execute_and_deallocate_are_not_prepared_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    // The protocol cannot prepare PREPARE/EXECUTE/DEALLOCATE (1295).
    for text in [
        "PREPARE x FROM 'SELECT 1'",
        "EXECUTE x",
        "DEALLOCATE PREPARE x",
    ] {
        assert_eq!(
            s.prepare(text).map(|_| ()).unwrap_err().code,
            1295,
            "{text}"
        );
    }
}

#[test]
fn analyze_table_counts_rows_bytes_and_distinct_key_prefixes_and_they_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    for sql in [
        "CREATE DATABASE st",
        "USE st",
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20), c INT, \
         KEY ab (a, b), UNIQUE KEY uc (c), KEY bp (b(2)))",
        "INSERT INTO t VALUES (1,1,'xa',10),(2,1,'xb',20),(3,2,'xa',30),\
         (4,2,'XA',NULL),(5,3,NULL,NULL),(6,3,'yy',60)",
        "CREATE TABLE h (v INT)",
        "INSERT INTO h VALUES (1),(1),(2)",
    ] {
        q(&mut s, sql);
    }
    let card = |s: &mut Session| {
        rows(&q(s, "SHOW INDEX FROM t"))
            .iter()
            .map(|r| {
                let f: Vec<&str> = r.split('|').collect();
                format!("{}.{}={}", f[2], f[3], f[6])
            })
            .collect::<Vec<_>>()
    };
    // Before ANALYZE: unknown.
    assert_eq!(
        card(&mut s),
        [
            "PRIMARY.1=NULL",
            "uc.1=NULL",
            "ab.1=NULL",
            "ab.2=NULL",
            "bp.1=NULL"
        ]
    );
    assert_eq!(
        rows(&q(&mut s, "ANALYZE TABLE t, h, nope")),
        [
            "st.t|analyze|status|OK",
            "st.h|analyze|status|OK",
            "st.nope|analyze|Error|Table 'st.nope' doesn't exist",
            "st.nope|analyze|status|Operation failed",
        ]
    );
    // NULLs count as one value; 'xa' and 'XA' are one under the
    // collation; a prefix part counts its prefixes.
    let after = ["PRIMARY.1=6", "uc.1=5", "ab.1=3", "ab.2=5", "bp.1=4"];
    assert_eq!(card(&mut s), after);
    let status = "SELECT table_name, table_rows, avg_row_length > 0, data_length > 0, \
                  index_length > 0 FROM information_schema.tables WHERE table_schema = 'st' \
                  ORDER BY 1";
    assert_eq!(rows(&q(&mut s, status)), ["h|3|1|1|0", "t|6|1|1|1"]);
    let stat = rows(&q(&mut s, "SHOW TABLE STATUS LIKE 't'"));
    assert!(stat[0].starts_with("t|CairnDB|10|Dynamic|6|"), "{stat:?}");
    drop(s);
    // Kept across a restart; a table copy starts without statistics.
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "USE st");
    assert_eq!(card(&mut s), after);
    q(&mut s, "ALTER TABLE t ADD COLUMN d INT, ALGORITHM=COPY");
    assert_eq!(card(&mut s)[0], "PRIMARY.1=NULL");
    q(&mut s, "ANALYZE TABLE t");
    assert_eq!(card(&mut s), after);
    // MariaDB's and MySQL's extra clauses run the plain count.
    for sql in [
        "ANALYZE TABLE t PERSISTENT FOR ALL",
        "ANALYZE LOCAL TABLE t UPDATE HISTOGRAM ON a WITH 8 BUCKETS",
        "ANALYZE TABLE t DROP HISTOGRAM ON a",
    ] {
        assert_eq!(rows(&q(&mut s, sql)), ["st.t|analyze|status|OK"], "{sql}");
    }
    // Needs SELECT and INSERT.
    q(&mut s, "CREATE USER r IDENTIFIED BY 'pw'");
    q(&mut s, "GRANT SELECT ON st.* TO r");
    let mut r = Session::login(db, "r", "localhost").unwrap();
    assert_eq!(err(&mut r, "ANALYZE TABLE st.t"), 1142);
}

#[test]
fn analyzed_row_counts_let_the_smaller_table_drive_a_join() {
    let (_d, mut s) = common::session();
    q(&mut s, "CREATE DATABASE j");
    q(&mut s, "USE j");
    q(
        &mut s,
        "CREATE TABLE big (id INT PRIMARY KEY, k INT, KEY (k))",
    );
    q(&mut s, "CREATE TABLE small (id INT PRIMARY KEY, k INT)");
    let vals: Vec<String> = (0..500).map(|i| format!("({i},{})", i % 50)).collect();
    q(
        &mut s,
        &format!("INSERT INTO big VALUES {}", vals.join(",")),
    );
    q(&mut s, "INSERT INTO small VALUES (1,1),(2,2),(3,3)");
    let sql = "SELECT count(*) FROM big, small WHERE big.k = small.k";
    let order = |s: &mut Session| {
        rows(&q(s, &format!("EXPLAIN {sql}")))
            .iter()
            .map(|r| r.split('|').nth(2).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    // Without statistics, a tie keeps FROM order.
    assert_eq!(order(&mut s), ["big", "small"]);
    assert_eq!(rows(&q(&mut s, sql)), ["30"]);
    // EXPLAIN's rows: unknown before ANALYZE, then from its counts.
    let estimates = |s: &mut Session, sql: &str| {
        rows(&q(s, &format!("EXPLAIN {sql}")))
            .iter()
            .map(|r| {
                let f: Vec<&str> = r.split('|').collect();
                format!("{}:{}:{}", f[2], f[3], f[8])
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(estimates(&mut s, sql), ["big:index:NULL", "small:ALL:NULL"]);
    q(&mut s, "ANALYZE TABLE big, small");
    assert_eq!(order(&mut s), ["small", "big"]);
    assert_eq!(rows(&q(&mut s, sql)), ["30"]);
    // 500 rows over 50 distinct k: 10 per key; three IN values, 30.
    assert_eq!(estimates(&mut s, sql), ["small:ALL:3", "big:ref:10"]);
    assert_eq!(
        estimates(&mut s, "SELECT id FROM big WHERE k IN (1, 2, 3)"),
        ["big:range:30"]
    );
    assert_eq!(
        estimates(&mut s, "SELECT k FROM big WHERE id = 7"),
        ["big:const:1"]
    );
    // Not when the larger table would lose its key lookups: here the
    // small one is read by primary key from the large one's rows.
    q(&mut s, "CREATE TABLE plain (id INT PRIMARY KEY, v INT)");
    q(&mut s, "INSERT INTO plain SELECT id, k FROM big");
    q(&mut s, "ANALYZE TABLE plain");
    let sql = "SELECT count(*) FROM plain, small WHERE small.id = plain.v";
    assert_eq!(
        rows(&q(&mut s, &format!("EXPLAIN {sql}")))
            .iter()
            .map(|r| r.split('|').nth(2).unwrap().to_string())
            .collect::<Vec<_>>(),
        ["plain", "small"]
    );
    assert_eq!(rows(&q(&mut s, sql)), ["30"]);
}
