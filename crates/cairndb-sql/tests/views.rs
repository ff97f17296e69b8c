//! Views end to end through `Session`: CREATE / ALTER / DROP VIEW, SHOW
//! and `information_schema`, expansion in queries, MySQL 8.0's errors,
//! and definitions that survive a reopen.

use cairndb_sql::Session;

mod common;
use common::{err, open, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE IF NOT EXISTS d");
    q(s, "USE d");
    q(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
    );
    q(
        s,
        "INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z'), (4, NULL, NULL)",
    );
}

fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    (dir, s)
}

#[test]
fn views_are_queried_as_derived_tables() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE VIEW v AS SELECT id, a * 2 AS a2 FROM t WHERE a IS NOT NULL",
    );
    assert_eq!(
        r(&mut s, "SELECT * FROM v ORDER BY id"),
        ["1|20", "2|40", "3|60"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT v.a2, t.b FROM v JOIN t ON t.id = v.id WHERE v.a2 > 20 ORDER BY v.id"
        ),
        ["40|y", "60|z"]
    );
    assert_eq!(r(&mut s, "SELECT COUNT(*), SUM(a2) FROM v"), ["3|120"]);
    // Column list; a view over a view; a view in a subquery and a CTE.
    q(
        &mut s,
        "CREATE VIEW w (k, doubled) AS SELECT id, a2 FROM v WHERE id > 1",
    );
    assert_eq!(
        r(&mut s, "SELECT k, doubled FROM w ORDER BY k"),
        ["2|40", "3|60"]
    );
    let c = q(&mut s, "SELECT * FROM w");
    assert_eq!(c.columns[0].name, "k");
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM t WHERE id IN (SELECT k FROM w) ORDER BY id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        r(&mut s, "WITH c AS (SELECT k FROM w) SELECT COUNT(*) FROM c"),
        ["2"]
    );
    // The view follows its table's rows.
    q(&mut s, "INSERT INTO t VALUES (5, 50, 'q')");
    assert_eq!(r(&mut s, "SELECT doubled FROM w WHERE k = 5"), ["100"]);
    // Qualified from another database.
    q(&mut s, "CREATE DATABASE e");
    q(&mut s, "USE e");
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM d.v"), ["4"]);
    q(&mut s, "USE d");
    // A prepared statement over a view.
    let info = s.prepare("SELECT a2 FROM v WHERE id = ?").unwrap();
    let mut c = cairndb_sql::Collect::default();
    s.execute(info.id, &[cairndb_sql::Value::Int(2)], &mut c)
        .unwrap();
    assert_eq!(rows(&c), ["40"]);
}

#[test]
fn create_or_replace_alter_and_drop_views() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE ALGORITHM=MERGE DEFINER=`root`@`localhost` SQL SECURITY INVOKER VIEW v AS SELECT id FROM t WHERE id < 3",
    );
    assert_eq!(r(&mut s, "SELECT * FROM v ORDER BY id"), ["1", "2"]);
    assert_eq!(err(&mut s, "CREATE VIEW v AS SELECT 1"), 1050);
    q(
        &mut s,
        "CREATE OR REPLACE VIEW v AS SELECT id FROM t WHERE id > 3",
    );
    assert_eq!(r(&mut s, "SELECT * FROM v ORDER BY id"), ["4"]);
    q(&mut s, "ALTER VIEW v AS SELECT b FROM t WHERE id = 1");
    assert_eq!(r(&mut s, "SELECT * FROM v"), ["x"]);
    assert_eq!(err(&mut s, "ALTER VIEW nope AS SELECT 1"), 1146);
    q(
        &mut s,
        "CREATE VIEW v2 AS SELECT 1 AS one WITH CHECK OPTION",
    );
    assert_eq!(
        r(&mut s, "SHOW CREATE VIEW v2"),
        ["v2|CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v2` AS SELECT 1 AS one WITH CASCADED CHECK OPTION|utf8mb4|utf8mb4_general_ci"]
    );
    q(&mut s, "DROP VIEW v, v2");
    assert_eq!(err(&mut s, "SELECT * FROM v"), 1146);
    assert_eq!(err(&mut s, "DROP VIEW v"), 1051);
    q(&mut s, "DROP VIEW IF EXISTS v");
    assert_eq!(
        r(&mut s, "SHOW WARNINGS"),
        ["Note|1051|Unknown table 'd.v'"]
    );
    // All names are checked before any goes.
    q(&mut s, "CREATE VIEW v3 AS SELECT 3");
    assert_eq!(err(&mut s, "DROP VIEW v3, missing"), 1051);
    assert_eq!(r(&mut s, "SELECT * FROM v3"), ["3"]);
    // A table is not a view, nor a view a table.
    assert_eq!(err(&mut s, "DROP VIEW t"), 1347);
    assert_eq!(err(&mut s, "SHOW CREATE VIEW t"), 1347);
    assert_eq!(err(&mut s, "CREATE VIEW t AS SELECT 1"), 1050);
    assert_eq!(err(&mut s, "CREATE TABLE v3 (x INT)"), 1050);
    assert_eq!(err(&mut s, "RENAME TABLE t TO v3"), 1050);
}

#[test]
fn views_are_listed_by_show_and_information_schema() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE VIEW v AS SELECT id FROM t");
    assert_eq!(r(&mut s, "SHOW TABLES"), ["t", "v"]);
    assert_eq!(r(&mut s, "SHOW FULL TABLES"), ["t|BASE TABLE", "v|VIEW"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COMMENT FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'd' ORDER BY TABLE_NAME"
        ),
        ["t|BASE TABLE|CairnDB|", "v|VIEW|NULL|VIEW"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, CHECK_OPTION, IS_UPDATABLE, \
             SECURITY_TYPE FROM information_schema.VIEWS"
        ),
        ["d|v|SELECT id FROM t|NONE|NO|DEFINER"]
    );
    // SHOW CREATE TABLE of a view shows the view.
    assert_eq!(q(&mut s, "SHOW CREATE TABLE v").columns[0].name, "View");
}

#[test]
fn views_are_read_only_and_refused_as_mysql_refuses_them() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE VIEW v AS SELECT id, a FROM t");
    assert_eq!(err(&mut s, "INSERT INTO v VALUES (9, 9)"), 1471);
    assert_eq!(err(&mut s, "UPDATE v SET a = 1"), 1288);
    assert_eq!(err(&mut s, "DELETE FROM v WHERE id = 1"), 1288);
    // A missing table at creation, a column list of the wrong length,
    // duplicate names, a parameter.
    assert_eq!(err(&mut s, "CREATE VIEW bad AS SELECT * FROM nope"), 1146);
    assert_eq!(err(&mut s, "CREATE VIEW bad (x) AS SELECT 1, 2"), 1353);
    assert_eq!(
        err(&mut s, "CREATE VIEW bad AS SELECT 1 AS a, 2 AS a"),
        1060
    );
    assert_eq!(err(&mut s, "CREATE VIEW bad AS SELECT @x"), 1351);
    assert_eq!(
        err(
            &mut s,
            "CREATE VIEW bad AS SELECT id FROM t WHERE a > @@max_connections"
        ),
        1351
    );
    assert_eq!(
        err(&mut s, "CREATE VIEW bad AS SELECT @@global.wait_timeout"),
        1351
    );
    // An `@` or a `?` in a string is neither a variable nor a parameter
    // (they once refused the view).
    q(
        &mut s,
        "CREATE VIEW mails AS SELECT id, 'a@example.com' AS m, '?' AS q FROM t WHERE 'x@y' LIKE '%@%'",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT m, q FROM mails WHERE id = 1")),
        ["a@example.com|?"]
    );
    assert_eq!(
        err(
            &mut s,
            &format!("CREATE VIEW `{}` AS SELECT 1", "x".repeat(65))
        ),
        1059
    );
    // A view over a dropped table, or a dropped column.
    q(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, c INT)");
    q(&mut s, "CREATE VIEW vu AS SELECT c FROM u");
    q(&mut s, "ALTER TABLE u DROP COLUMN c");
    assert_eq!(err(&mut s, "SELECT * FROM vu"), 1356);
    q(&mut s, "DROP TABLE u");
    assert_eq!(err(&mut s, "SELECT * FROM vu"), 1356);
    q(&mut s, "CREATE VIEW vv AS SELECT * FROM v");
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM vv"), ["4"]);
}

#[test]
fn a_view_reaching_itself_fails_cleanly() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE VIEW a AS SELECT 1 AS x");
    q(&mut s, "CREATE VIEW b AS SELECT x FROM a");
    q(&mut s, "CREATE OR REPLACE VIEW a AS SELECT x FROM b");
    assert_eq!(err(&mut s, "SELECT * FROM a"), 1462);
    assert_eq!(err(&mut s, "SELECT * FROM b"), 1462);
    // A chain deeper than the limit.
    q(&mut s, "CREATE VIEW c0 AS SELECT 1 AS x");
    for i in 1..40 {
        let sql = format!("CREATE VIEW c{i} AS SELECT x FROM c{}", i - 1);
        let mut c = cairndb_sql::Collect::default();
        if let Err(e) = s.query(&sql, &mut c) {
            assert!(matches!(e.code, 1473 | 1436), "{e}");
            break;
        }
    }
    assert_eq!(r(&mut s, "SELECT x FROM c5"), ["1"]);
    let e = {
        let mut c = cairndb_sql::Collect::default();
        s.query("SELECT x FROM c39", &mut c).err()
    };
    if let Some(e) = e {
        assert!(matches!(e.code, 1473 | 1436 | 1146), "{e}");
    }
}

#[test]
fn views_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Session::new(open(dir.path()), "root");
        setup(&mut s);
        q(
            &mut s,
            "CREATE VIEW v (k) AS SELECT id FROM t WHERE id <= 2",
        );
        q(&mut s, "CREATE VIEW gone AS SELECT 1");
        q(&mut s, "DROP VIEW gone");
    }
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "USE d");
    assert_eq!(r(&mut s, "SELECT k FROM v ORDER BY k"), ["1", "2"]);
    assert_eq!(r(&mut s, "SHOW FULL TABLES"), ["t|BASE TABLE", "v|VIEW"]);
    q(&mut s, "DROP DATABASE d");
    drop(s);
    let mut s = Session::new(open(dir.path()), "root");
    setup(&mut s);
    assert_eq!(r(&mut s, "SHOW TABLES"), ["t"]);
}
