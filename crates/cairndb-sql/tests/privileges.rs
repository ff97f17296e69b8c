//! Accounts and privileges end to end: each statement kind allowed and
//! denied at each grant level (global, database, table, column) with
//! MySQL's error codes, SHOW GRANTS as MySQL prints it, REVOKE, DROP USER,
//! accounts kept across a reopen, and which account a host matches.

mod common;

use std::sync::Arc;

use cairndb_sql::{Collect, Plugin, Session, SqlDb};
use common::{err, open, q, rows};

/// A database with root@localhost made, a database `d` with tables `t`
/// and `u`, and root's session.
fn setup(dir: &std::path::Path) -> (Arc<SqlDb>, Session) {
    let db = open(dir);
    db.bootstrap_accounts("").unwrap();
    let mut root = Session::login(db.clone(), "root", "127.0.0.1").unwrap();
    q(&mut root, "CREATE DATABASE d");
    q(
        &mut root,
        "CREATE TABLE d.t (id INT PRIMARY KEY, a INT, b INT)",
    );
    q(&mut root, "CREATE TABLE d.u (id INT PRIMARY KEY, c INT)");
    q(
        &mut root,
        "INSERT INTO d.t VALUES (1, 10, 100), (2, 20, 200)",
    );
    q(&mut root, "INSERT INTO d.u VALUES (1, 5)");
    (db, root)
}

fn login(db: &Arc<SqlDb>, user: &str, host: &str) -> Session {
    Session::login(db.clone(), user, host).unwrap()
}

/// The error of a statement that must fail: code and message.
fn fail(s: &mut Session, sql: &str) -> (u16, String) {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{sql}: expected an error, got {:?}", rows(&c)),
        Err(e) => (e.code, e.message),
    }
}

fn grants(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

#[test]
fn each_statement_at_each_level() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER 'u'@'%' IDENTIFIED BY 'pw'");
    let mut u = login(&db, "u", "10.0.0.1");

    // Nothing granted: every kind denied, with MySQL's codes and words.
    let (code, msg) = fail(&mut u, "SELECT * FROM d.t");
    assert_eq!(code, 1142);
    assert_eq!(
        msg,
        "SELECT command denied to user 'u'@'10.0.0.1' for table 't'"
    );
    assert_eq!(err(&mut u, "INSERT INTO d.t VALUES (3, 3, 3)"), 1142);
    assert_eq!(err(&mut u, "UPDATE d.t SET a = 1"), 1142);
    assert_eq!(err(&mut u, "DELETE FROM d.t"), 1142);
    // A table that does not exist is denied alike (its absence not told).
    assert_eq!(err(&mut u, "SELECT * FROM d.nothing"), 1142);
    let (code, msg) = fail(&mut u, "USE d");
    assert_eq!(code, 1044);
    assert_eq!(msg, "Access denied for user 'u'@'10.0.0.1' to database 'd'");
    assert_eq!(err(&mut u, "CREATE DATABASE e"), 1044);
    assert_eq!(err(&mut u, "CREATE TABLE d.x (id INT PRIMARY KEY)"), 1142);
    assert_eq!(err(&mut u, "SHOW CREATE TABLE d.t"), 1142);
    assert!(rows(&q(&mut u, "SHOW DATABASES")).is_empty());
    assert_eq!(
        rows(&q(
            &mut u,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd'"
        )),
        ["0"]
    );

    // Table level: that table only, subqueries included.
    q(&mut root, "GRANT SELECT ON d.t TO 'u'@'%'");
    assert_eq!(rows(&q(&mut u, "SELECT a FROM d.t WHERE id = 1")), ["10"]);
    assert_eq!(err(&mut u, "SELECT * FROM d.u"), 1142);
    let (code, msg) = fail(&mut u, "SELECT a FROM d.t WHERE id IN (SELECT id FROM d.u)");
    assert_eq!((code, msg.ends_with("for table 'u'")), (1142, true));
    assert_eq!(err(&mut u, "INSERT INTO d.t VALUES (3, 3, 3)"), 1142);
    q(&mut u, "USE d");
    assert_eq!(rows(&q(&mut u, "SHOW TABLES")), ["t"]);
    assert_eq!(rows(&q(&mut u, "SHOW DATABASES")), ["d"]);

    // Database level.
    q(&mut root, "GRANT INSERT ON d.* TO 'u'@'%'");
    q(&mut u, "INSERT INTO d.t VALUES (3, 30, 300)");
    q(&mut u, "INSERT INTO d.u VALUES (2, 6)");
    // REPLACE also deletes: DELETE is needed.
    assert_eq!(err(&mut u, "REPLACE INTO d.u VALUES (2, 7)"), 1142);
    assert_eq!(err(&mut u, "UPDATE d.t SET a = 1 WHERE id = 1"), 1142);
    assert_eq!(err(&mut u, "DELETE FROM d.t WHERE id = 3"), 1142);

    // Global level.
    q(&mut root, "GRANT UPDATE, DELETE ON *.* TO 'u'@'%'");
    q(&mut u, "UPDATE d.t SET a = 11 WHERE id = 1");
    q(&mut u, "DELETE FROM d.t WHERE id = 3");
    assert_eq!(
        rows(&q(&mut u, "SELECT a FROM d.t ORDER BY id")),
        ["11", "20"]
    );
    // An UPDATE with a WHERE reads the table: SELECT is needed there.
    assert_eq!(err(&mut u, "UPDATE d.u SET c = 1 WHERE id = 1"), 1142);

    // DDL.
    assert_eq!(err(&mut u, "CREATE TABLE d.x (id INT PRIMARY KEY)"), 1142);
    q(&mut root, "GRANT CREATE, DROP, INDEX ON d.* TO 'u'@'%'");
    q(&mut u, "CREATE TABLE d.x (id INT PRIMARY KEY, v INT)");
    q(&mut u, "CREATE INDEX xv ON d.x (v)");
    q(&mut u, "DROP TABLE d.x");
    assert_eq!(err(&mut u, "CREATE DATABASE e"), 1044);
    q(&mut root, "GRANT CREATE ON *.* TO 'u'@'%'");
    q(&mut u, "CREATE DATABASE e");
    assert_eq!(err(&mut u, "DROP DATABASE e"), 1044);

    // Global privileges: other sessions need PROCESS to be seen and SUPER
    // or CONNECTION_ADMIN to be killed.
    let root_id = root.connection_id();
    let (code, _) = fail(&mut u, &format!("KILL {root_id}"));
    assert_eq!(code, 1095);
    let users: Vec<String> = q(&mut u, "SHOW PROCESSLIST")
        .rows
        .iter()
        .map(|r| common::text(&r[1]))
        .collect();
    assert_eq!(users, ["u"]);
    q(&mut root, "GRANT PROCESS ON *.* TO 'u'@'%'");
    assert_eq!(q(&mut u, "SHOW PROCESSLIST").rows.len(), 2);
    let other = login(&db, "root", "::1");
    q(&mut root, "GRANT CONNECTION_ADMIN ON *.* TO 'u'@'%'");
    q(&mut u, &format!("KILL QUERY {}", other.connection_id()));

    // Account statements need CREATE USER; GRANT needs GRANT OPTION.
    let (code, msg) = fail(&mut u, "CREATE USER v");
    assert_eq!(code, 1227);
    assert!(msg.contains("CREATE USER"), "{msg}");
    assert_eq!(err(&mut u, "GRANT SELECT ON d.* TO 'u'@'%'"), 1044);
    assert_eq!(err(&mut u, "GRANT SELECT ON d.t TO 'u'@'%'"), 1142);
    assert_eq!(err(&mut u, "GRANT SELECT ON *.* TO 'u'@'%'"), 1045);
    // But an account may change its own password.
    q(&mut u, "SET PASSWORD = 'new'");
    q(&mut u, "ALTER USER CURRENT_USER() IDENTIFIED BY 'newer'");
}

#[test]
fn prepared_statements_check_again_after_a_grant_change() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER p");
    let mut p = login(&db, "p", "10.1.1.1");
    assert_eq!(
        p.prepare("SELECT c FROM d.u WHERE id = ?")
            .unwrap_err()
            .code,
        1142
    );
    q(&mut root, "GRANT SELECT ON d.u TO p");
    let st = p.prepare("SELECT c FROM d.u WHERE id = ?").unwrap();
    let mut c = Collect::default();
    p.execute(st.id, &[cairndb_sql::Value::Int(1)], &mut c)
        .unwrap();
    assert_eq!(rows(&c), ["5"]);
    q(&mut root, "REVOKE SELECT ON d.u FROM p");
    let mut c = Collect::default();
    let e = p
        .execute(st.id, &[cairndb_sql::Value::Int(1)], &mut c)
        .unwrap_err();
    assert_eq!(e.code, 1142);
}

#[test]
fn column_grants() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER c");
    q(&mut root, "GRANT SELECT (id, a) ON d.t TO c");
    let mut c = login(&db, "c", "10.0.0.9");
    assert_eq!(rows(&q(&mut c, "SELECT a FROM d.t WHERE id = 2")), ["20"]);
    let (code, msg) = fail(&mut c, "SELECT b FROM d.t");
    assert_eq!(code, 1143);
    assert_eq!(
        msg,
        "SELECT command denied to user 'c'@'10.0.0.9' for column 'b' in table 't'"
    );
    assert_eq!(err(&mut c, "SELECT a FROM d.t WHERE b = 1"), 1143);
    assert_eq!(err(&mut c, "SELECT * FROM d.t"), 1143);
    assert_eq!(err(&mut c, "SELECT * FROM d.u"), 1142);
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR c"),
        [
            "GRANT USAGE ON *.* TO `c`@`%`",
            "GRANT SELECT (`a`, `id`) ON `d`.`t` TO `c`@`%`",
        ]
    );
    // INSERT and UPDATE granted on columns are checked on the columns
    // written (and SELECT on those a WHERE reads).
    q(&mut root, "CREATE USER w");
    q(&mut root, "GRANT INSERT (id, a), UPDATE (a) ON d.t TO w");
    let mut w = login(&db, "w", "10.0.0.9");
    q(&mut w, "INSERT INTO d.t (id, a) VALUES (3, 30)");
    q(&mut w, "INSERT INTO d.t SET id = 4, a = 40");
    let (code, msg) = fail(&mut w, "INSERT INTO d.t (id, b) VALUES (5, 1)");
    assert_eq!(code, 1143);
    assert_eq!(
        msg,
        "INSERT command denied to user 'w'@'10.0.0.9' for column 'b' in table 't'"
    );
    assert_eq!(err(&mut w, "INSERT INTO d.t VALUES (5, 1, 1)"), 1143);
    assert_eq!(err(&mut w, "INSERT INTO d.t SET id = 5, b = 1"), 1143);
    assert_eq!(err(&mut w, "REPLACE INTO d.t (id, a) VALUES (3, 31)"), 1142);
    q(&mut w, "UPDATE d.t SET a = 31");
    assert_eq!(err(&mut w, "UPDATE d.t SET b = 1"), 1143);
    assert_eq!(err(&mut w, "UPDATE d.t SET a = 1 WHERE id = 3"), 1142);
    q(&mut root, "GRANT SELECT (id) ON d.t TO w");
    q(&mut w, "UPDATE d.t SET a = 32 WHERE id = 3");
    assert_eq!(err(&mut w, "UPDATE d.t SET a = b WHERE id = 3"), 1143);
    assert_eq!(err(&mut w, "UPDATE d.t SET a = 1 WHERE b = 3"), 1143);
    q(
        &mut w,
        "INSERT INTO d.t (id, a) VALUES (3, 0) ON DUPLICATE KEY UPDATE a = 33",
    );
    assert_eq!(
        err(
            &mut w,
            "INSERT INTO d.t (id, a) VALUES (3, 0) ON DUPLICATE KEY UPDATE b = 1"
        ),
        1143
    );
    assert_eq!(err(&mut w, "DELETE FROM d.t WHERE id = 3"), 1142);
    // A multi-table UPDATE: UPDATE on the columns set, SELECT on those
    // read, each by its column grant.
    q(&mut root, "GRANT SELECT ON d.u TO w");
    q(
        &mut w,
        "UPDATE d.t JOIN d.u ON d.t.id = d.u.id SET d.t.a = d.u.c + 30",
    );
    assert_eq!(
        err(
            &mut w,
            "UPDATE d.t JOIN d.u ON d.t.id = d.u.id SET d.t.b = d.u.c"
        ),
        1143
    );
    assert_eq!(
        err(
            &mut w,
            "UPDATE d.t JOIN d.u ON d.t.b = d.u.id SET d.t.a = d.u.c"
        ),
        1143
    );
    assert_eq!(
        err(
            &mut w,
            "UPDATE d.t JOIN d.u ON d.t.id = d.u.id SET d.u.c = 1"
        ),
        1142
    );
    q(
        &mut w,
        "UPDATE d.t JOIN d.u ON d.t.id = d.u.id SET d.t.a = 31",
    );
    assert_eq!(
        rows(&q(&mut root, "SELECT * FROM d.t ORDER BY id")),
        ["1|31|100", "2|31|200", "3|33|NULL", "4|31|NULL"]
    );
    // Errors: a missing column, a privilege not of columns.
    assert_eq!(err(&mut root, "GRANT SELECT (zz) ON d.t TO c"), 1054);
    assert_eq!(err(&mut root, "GRANT DELETE (a) ON d.t TO c"), 1144);
    assert_eq!(err(&mut root, "GRANT SELECT ON d.nope TO c"), 1146);
    assert_eq!(err(&mut root, "GRANT SUPER ON d.* TO c"), 1221);
}

#[test]
fn show_grants_as_mysql_prints_them_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    let g = grants(&mut root, "SHOW GRANTS");
    assert_eq!(
        g,
        [
            "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, RELOAD, PROCESS, REFERENCES, \
             INDEX, ALTER, SHOW DATABASES, SUPER, LOCK TABLES, REPLICATION SLAVE, REPLICATION \
             CLIENT, CREATE VIEW, SHOW VIEW, CREATE USER ON *.* TO `root`@`localhost` WITH GRANT \
             OPTION",
            "GRANT CONNECTION_ADMIN ON *.* TO `root`@`localhost` WITH GRANT OPTION",
        ]
    );
    let c = q(&mut root, "SHOW GRANTS");
    assert_eq!(c.columns[0].name, "Grants for root@localhost");

    q(&mut root, "CREATE USER 'u'@'%'");
    q(&mut root, "GRANT SELECT, INSERT ON d.* TO 'u'@'%'");
    q(
        &mut root,
        "GRANT ALL PRIVILEGES ON d.t TO 'u'@'%' WITH GRANT OPTION",
    );
    q(&mut root, "GRANT REPLICATION CLIENT ON *.* TO u");
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR 'u'@'%'"),
        [
            "GRANT REPLICATION CLIENT ON *.* TO `u`@`%`",
            "GRANT SELECT, INSERT ON `d`.* TO `u`@`%`",
            "GRANT ALL PRIVILEGES ON `d`.`t` TO `u`@`%` WITH GRANT OPTION",
        ]
    );
    // The account's own grants, without FOR.
    let mut u = login(&db, "u", "10.2.3.4");
    assert_eq!(grants(&mut u, "SHOW GRANTS").len(), 3);
    assert_eq!(err(&mut u, "SHOW GRANTS FOR root@localhost"), 1044);
    assert_eq!(
        rows(&q(&mut u, "SELECT CURRENT_USER(), USER()")),
        ["u@%|u@10.2.3.4"]
    );

    q(&mut root, "REVOKE INSERT ON d.* FROM u");
    q(&mut root, "REVOKE GRANT OPTION, DELETE ON d.t FROM u");
    q(&mut root, "REVOKE BINLOG MONITOR ON *.* FROM u");
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR u"),
        [
            "GRANT USAGE ON *.* TO `u`@`%`",
            "GRANT SELECT ON `d`.* TO `u`@`%`",
            "GRANT SELECT, INSERT, UPDATE, CREATE, DROP, REFERENCES, INDEX, ALTER, CREATE VIEW, \
             SHOW VIEW ON `d`.`t` TO `u`@`%`",
        ]
    );
    // Revoking what was never granted at that level.
    assert_eq!(err(&mut root, "REVOKE SELECT ON e.* FROM u"), 1141);
    assert_eq!(err(&mut root, "REVOKE SELECT ON d.u FROM u"), 1147);
    q(&mut root, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM u");
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR u"),
        ["GRANT USAGE ON *.* TO `u`@`%`"]
    );
    // FLUSH PRIVILEGES is accepted (it starts the hourly counts again); grants are live anyway.
    q(&mut root, "FLUSH PRIVILEGES");
}

#[test]
fn account_statements_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(
        &mut root,
        "CREATE USER 'n'@'%' IDENTIFIED WITH mysql_native_password BY 'pw'",
    );
    q(
        &mut root,
        "CREATE USER 's'@'%' IDENTIFIED BY 'pw' REQUIRE SSL",
    );
    let n = db.lookup_account("n", "10.0.0.1").unwrap();
    assert_eq!(
        (n.plugin, n.hash.len(), n.require_ssl),
        (Plugin::Native, 20, false)
    );
    let s = db.lookup_account("s", "10.0.0.1").unwrap();
    assert_eq!(
        (s.plugin, s.hash.len(), s.require_ssl),
        (Plugin::CachingSha2, 70, true)
    );
    // Only hashes: the password is nowhere in the dictionary's records.
    assert_ne!(n.hash, b"pw");

    let (code, msg) = fail(&mut root, "CREATE USER 'n'@'%'");
    assert_eq!(
        (code, msg.as_str()),
        (1396, "Operation CREATE USER failed for 'n'@'%'")
    );
    q(&mut root, "CREATE USER IF NOT EXISTS 'n'@'%'");
    assert_eq!(err(&mut root, "DROP USER nobody"), 1396);
    q(&mut root, "DROP USER IF EXISTS nobody");
    assert_eq!(err(&mut root, "GRANT SELECT ON *.* TO nobody"), 1410);
    assert_eq!(err(&mut root, "ALTER USER nobody IDENTIFIED BY 'x'"), 1396);
    assert_eq!(
        err(&mut root, "CREATE USER x IDENTIFIED WITH dialog BY 'x'"),
        1524
    );
    assert_eq!(err(&mut root, "CREATE USER"), 1064);
    assert_eq!(err(&mut root, "GRANT SELECT ON d.t"), 1064);
    assert_eq!(err(&mut root, "GRANT SELECT ON d.t TO"), 1064);
    assert_eq!(
        err(&mut root, &format!("CREATE USER '{}'", "x".repeat(33))),
        1470
    );

    // ALTER USER: password, plugin, REQUIRE.
    q(&mut root, "ALTER USER s REQUIRE NONE");
    assert!(!db.lookup_account("s", "10.0.0.1").unwrap().require_ssl);
    q(
        &mut root,
        "ALTER USER n IDENTIFIED WITH caching_sha2_password BY 'x'",
    );
    assert_eq!(
        db.lookup_account("n", "1.1.1.1").unwrap().plugin,
        Plugin::CachingSha2
    );
    q(&mut root, "SET PASSWORD FOR n = ''");
    assert!(db.lookup_account("n", "1.1.1.1").unwrap().hash.is_empty());

    // RENAME keeps the grants; DROP removes them with the account.
    q(&mut root, "GRANT SELECT ON d.* TO n");
    q(&mut root, "RENAME USER n TO m@'10.%'");
    assert!(db.lookup_account("n", "10.0.0.1").is_none());
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR m@'10.%'"),
        [
            "GRANT USAGE ON *.* TO `m`@`10.%`",
            "GRANT SELECT ON `d`.* TO `m`@`10.%`",
        ]
    );
    assert_eq!(err(&mut root, "RENAME USER m@'10.%' TO s"), 1396);
    let mut m = login(&db, "m", "10.9.9.9");
    q(&mut root, "DROP USER m@'10.%'");
    // A session of a dropped account keeps running, with no privileges.
    assert_eq!(err(&mut m, "SELECT * FROM d.t"), 1142);
    assert!(db.lookup_account("m", "10.0.0.1").is_none());
    q(&mut root, "CREATE USER m@'10.%'");
    assert_eq!(
        grants(&mut root, "SHOW GRANTS FOR m@'10.%'"),
        ["GRANT USAGE ON *.* TO `m`@`10.%`"]
    );
    assert_eq!(err(&mut root, "SHOW GRANTS FOR ghost"), 1141);
    // A login with no matching account.
    assert_eq!(
        Session::login(db.clone(), "ghost", "10.0.0.1")
            .err()
            .map(|e| e.code),
        Some(1045)
    );
    // Account statements hide their text from the process list.
    let texts: Vec<String> = q(&mut root, "SHOW FULL PROCESSLIST")
        .rows
        .iter()
        .map(|r| common::text(&r[7]))
        .collect();
    assert!(texts.iter().all(|t| !t.contains("IDENTIFIED")));
}

#[test]
fn accounts_survive_a_reopen_and_bootstrap_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut root) = setup(dir.path());
        q(&mut root, "CREATE USER 'k'@'%' IDENTIFIED BY 'pw'");
        q(&mut root, "GRANT SELECT ON d.t TO k");
        q(&mut root, "DROP USER root@localhost");
        drop(root);
        db.close().unwrap();
    }
    let db = open(dir.path());
    // No root again: the accounts were set up once.
    assert!(!db.bootstrap_accounts("").unwrap());
    assert!(db.lookup_account("root", "127.0.0.1").is_none());
    let k = db.lookup_account("k", "10.0.0.1").unwrap();
    assert_eq!(k.hash.len(), 70);
    assert!(db.check_password("k", "10.0.0.1", b"pw"));
    let mut k = login(&db, "k", "10.0.0.1");
    assert_eq!(rows(&q(&mut k, "SELECT a FROM d.t WHERE id = 1")), ["10"]);
    assert_eq!(err(&mut k, "SELECT c FROM d.u"), 1142);
}

/// MySQL's authentication string for `IDENTIFIED BY 'foobar'`, as
/// `mysql.user` keeps it (hex: its salt has control bytes).
const MYSQL_FOOBAR: &str = "0x24412430303524031A69251C34295C4B35167C7F1E5A7B63091349503974\
                            624D34504B5A424679354856336868686F52485A736E4A733368786E42757551\
                            6C73446469496537";

#[test]
fn caching_sha2_accounts_keep_salted_strings_and_mysql_made_ones_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER a IDENTIFIED BY 'same'");
    q(&mut root, "CREATE USER b IDENTIFIED BY 'same'");
    let (a, b) = (
        db.lookup_account("a", "10.0.0.1").unwrap(),
        db.lookup_account("b", "10.0.0.1").unwrap(),
    );
    // Salted: one password, two strings; MySQL's layout.
    assert_ne!(a.hash, b.hash);
    assert!(a.hash.starts_with(b"$A$005$") && a.hash.len() == 70);
    // Set in this process: fast authentication knows it already.
    assert!(a.fast_sha2.is_some());
    assert_eq!(a.fast_sha2, b.fast_sha2);
    assert!(db.check_password("a", "10.0.0.1", b"same"));
    assert!(!db.check_password("a", "10.0.0.1", b"Same"));
    assert!(!db.check_password("a", "10.0.0.1", b""));
    assert!(!db.check_password("nobody", "10.0.0.1", b"same"));

    // A string copied from MySQL: verified, then cached.
    q(
        &mut root,
        &format!(
            "CREATE USER foo IDENTIFIED WITH caching_sha2_password AS {}",
            MYSQL_FOOBAR
        ),
    );
    let foo = db.lookup_account("foo", "10.0.0.1").unwrap();
    assert_eq!(foo.fast_sha2, None);
    assert!(!db.check_password("foo", "10.0.0.1", b"not_foobar"));
    assert!(db.check_password("foo", "10.0.0.1", b"foobar"));
    assert!(db
        .lookup_account("foo", "10.0.0.1")
        .unwrap()
        .fast_sha2
        .is_some());
    // The same string quoted, as mysql.user shows a printable one.
    let made = String::from_utf8(a.hash.clone()).unwrap();
    q(
        &mut root,
        &format!(
            "CREATE USER c IDENTIFIED WITH caching_sha2_password AS '{}'",
            made.replace('\\', "\\\\").replace('\'', "\\'")
        ),
    );
    assert!(db.check_password("c", "10.0.0.1", b"same"));
    // Not a string MySQL makes: refused; empty: no password.
    for bad in ["'abc'", "'$A$005$short'", "0x2441"] {
        assert_eq!(
            err(
                &mut root,
                &format!("CREATE USER d IDENTIFIED WITH caching_sha2_password AS {bad}")
            ),
            1827,
            "{bad}"
        );
    }
    q(
        &mut root,
        "CREATE USER e IDENTIFIED WITH caching_sha2_password AS ''",
    );
    assert!(db.check_password("e", "10.0.0.1", b""));
    // caching_sha2 takes at most 256 bytes (crypt's cost is quadratic).
    let long = "p".repeat(257);
    assert_eq!(
        err(&mut root, &format!("CREATE USER f IDENTIFIED BY '{long}'")),
        1819
    );
    q(
        &mut root,
        &format!("CREATE USER f IDENTIFIED BY '{}'", "p".repeat(256)),
    );
    assert!(db.check_password("f", "10.0.0.1", "p".repeat(256).as_bytes()));
    assert!(!db.check_password("f", "10.0.0.1", long.as_bytes()));
    // mysql_native_password through the same check.
    q(
        &mut root,
        "CREATE USER n IDENTIFIED WITH mysql_native_password BY 'pw'",
    );
    assert!(db.check_password("n", "10.0.0.1", b"pw"));
    assert!(!db.check_password("n", "10.0.0.1", b"px"));
}

#[test]
fn the_most_specific_host_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER 'app'@'%'");
    q(&mut root, "CREATE USER 'app'@'10.0.%'");
    q(&mut root, "CREATE USER 'app'@'10.0.0.5'");
    q(&mut root, "CREATE USER 'app'@'localhost'");
    q(&mut root, "GRANT SELECT ON d.t TO 'app'@'10.0.%'");
    let cu = |host: &str| {
        let mut s = login(&db, "app", host);
        rows(&q(&mut s, "SELECT CURRENT_USER()"))
    };
    assert_eq!(cu("10.0.0.5"), ["app@10.0.0.5"]);
    assert_eq!(cu("10.0.7.1"), ["app@10.0.%"]);
    assert_eq!(cu("192.168.1.1"), ["app@%"]);
    assert_eq!(cu("127.0.0.1"), ["app@localhost"]);
    assert_eq!(cu("::1"), ["app@localhost"]);
    // Privileges are the matched account's.
    let mut a = login(&db, "app", "10.0.7.1");
    q(&mut a, "SELECT * FROM d.t");
    let mut b = login(&db, "app", "10.0.0.5");
    assert_eq!(err(&mut b, "SELECT * FROM d.t"), 1142);
    // `localhost` does not match a remote client.
    q(&mut root, "CREATE USER 'only'@'localhost'");
    assert!(db.lookup_account("only", "10.0.0.1").is_none());
    assert!(db.lookup_account("only", "127.0.0.1").is_some());
}

#[test]
fn alter_and_rename_table_need_their_privileges() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER 'm'@'%'");
    q(&mut root, "GRANT SELECT ON d.* TO 'm'@'%'");
    let mut m = login(&db, "m", "10.0.0.1");
    // Denied by name, before the table is looked up: a missing table
    // gives the same answer.
    assert_eq!(fail(&mut m, "ALTER TABLE d.t ADD COLUMN z INT").0, 1142);
    assert_eq!(
        fail(&mut m, "ALTER TABLE d.missing ADD COLUMN z INT").0,
        1142
    );
    assert_eq!(fail(&mut m, "RENAME TABLE d.t TO d.t2").0, 1142);
    q(&mut root, "GRANT ALTER ON d.t TO 'm'@'%'");
    q(&mut m, "ALTER TABLE d.t ADD COLUMN z INT");
    assert_eq!(
        rows(&q(&mut m, "SELECT id, z FROM d.t ORDER BY id")),
        ["1|NULL", "2|NULL"]
    );
    // A rename drops the old name and creates the new one.
    assert_eq!(fail(&mut m, "ALTER TABLE d.t RENAME TO d.t2").0, 1142);
    assert_eq!(fail(&mut m, "RENAME TABLE d.t TO d.t2").0, 1142);
    q(&mut root, "GRANT DROP ON d.t TO 'm'@'%'");
    q(&mut root, "GRANT CREATE, INSERT ON d.* TO 'm'@'%'");
    q(&mut m, "RENAME TABLE d.t TO d.t2");
    assert_eq!(rows(&q(&mut root, "SELECT count(*) FROM d.t2")), ["2"]);
}

#[test]
fn views_need_create_view_drop_and_show_view() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER 'v'@'%'");
    q(&mut root, "GRANT SELECT ON d.* TO 'v'@'%'");
    let mut v = login(&db, "v", "10.0.0.1");
    assert_eq!(
        fail(&mut v, "CREATE VIEW d.w AS SELECT id FROM d.t").0,
        1142
    );
    q(&mut root, "GRANT CREATE VIEW ON d.* TO 'v'@'%'");
    q(&mut v, "CREATE VIEW d.w AS SELECT id FROM d.t");
    assert_eq!(
        rows(&q(&mut v, "SELECT * FROM d.w ORDER BY id")),
        ["1", "2"]
    );
    // Replacing drops the old definition: DROP too.
    assert_eq!(
        fail(&mut v, "CREATE OR REPLACE VIEW d.w AS SELECT a FROM d.t").0,
        1142
    );
    assert_eq!(fail(&mut v, "SHOW CREATE VIEW d.w").0, 1142);
    assert_eq!(fail(&mut v, "DROP VIEW d.w").0, 1142);
    q(&mut root, "GRANT DROP, SHOW VIEW ON d.w TO 'v'@'%'");
    q(&mut v, "CREATE OR REPLACE VIEW d.w AS SELECT a FROM d.t");
    assert_eq!(rows(&q(&mut v, "SHOW CREATE VIEW d.w")).len(), 1);
    // A view is read with the reader's privileges on its tables.
    q(&mut root, "CREATE USER 'r'@'%'");
    q(&mut root, "GRANT SELECT ON d.w TO 'r'@'%'");
    let mut r = login(&db, "r", "10.0.0.1");
    assert_eq!(fail(&mut r, "SELECT * FROM d.w").0, 1142);
    q(&mut v, "DROP VIEW d.w");
}

/// The error of a login that must be refused.
fn login_err(db: &Arc<SqlDb>, user: &str) -> (u16, String) {
    match Session::login(db.clone(), user, "127.0.0.1") {
        Ok(_) => panic!("{user}: expected a refused login"),
        Err(e) => (e.code, e.message),
    }
}

#[test]
fn account_lock_refuses_logins_until_unlocked() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(
        &mut root,
        "CREATE USER l@'%' IDENTIFIED BY 'p' ACCOUNT LOCK",
    );
    let (code, msg) = login_err(&db, "l");
    assert_eq!(code, 3118);
    assert_eq!(
        msg,
        "Access denied for user 'l'@'localhost'. Account is locked."
    );
    q(&mut root, "ALTER USER l@'%' ACCOUNT UNLOCK");
    let mut l = login(&db, "l", "127.0.0.1");
    q(&mut l, "SELECT 1");
    // Locking keeps open sessions; new logins are refused; it is kept
    // across a reopen.
    q(&mut root, "ALTER USER l@'%' ACCOUNT LOCK");
    q(&mut l, "SELECT 1");
    assert_eq!(login_err(&db, "l").0, 3118);
    drop((l, root));
    drop(db);
    let db = open(dir.path());
    assert_eq!(login_err(&db, "l").0, 3118);
    // Only an account with CREATE USER may lock another.
    let mut root = login(&db, "root", "127.0.0.1");
    q(&mut root, "CREATE USER m@'%'");
    let mut m = login(&db, "m", "127.0.0.1");
    let (code, _) = fail(&mut m, "ALTER USER m@'%' ACCOUNT UNLOCK");
    assert_eq!(code, 1227);
}

#[test]
fn max_user_connections_caps_sessions_of_one_account() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER c@'%' WITH MAX_USER_CONNECTIONS 2");
    let a = login(&db, "c", "127.0.0.1");
    let b = login(&db, "c", "127.0.0.1");
    let (code, msg) = login_err(&db, "c");
    assert_eq!(code, 1226);
    assert_eq!(
        msg,
        "User 'c' has exceeded the 'max_user_connections' resource (current value: 2)"
    );
    // Other accounts are not counted against it; a closed session frees
    // its place.
    let _r2 = login(&db, "root", "127.0.0.1");
    drop(a);
    let _c = login(&db, "c", "127.0.0.1");
    // 0 lifts the limit.
    q(&mut root, "ALTER USER c@'%' WITH MAX_USER_CONNECTIONS 0");
    let _d = login(&db, "c", "127.0.0.1");
    drop(b);
}

#[test]
fn global_max_user_connections_caps_accounts_without_their_own_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER g@'%'");
    q(&mut root, "CREATE USER own@'%' WITH MAX_USER_CONNECTIONS 3");
    assert_eq!(
        rows(&q(&mut root, "SELECT @@GLOBAL.max_user_connections")),
        vec!["0"]
    );
    q(&mut root, "SET GLOBAL max_user_connections = 1");
    assert_eq!(
        rows(&q(&mut root, "SELECT @@max_user_connections")),
        vec!["1"]
    );
    assert_eq!(
        fail(&mut root, "SET SESSION max_user_connections = 5").0,
        1229
    );
    let _a = login(&db, "g", "127.0.0.1");
    let (code, msg) = login_err(&db, "g");
    assert_eq!(code, 1203);
    assert_eq!(
        msg,
        "User g already has more than 'max_user_connections' active connections"
    );
    // An account's own limit takes the global one's place.
    let _o1 = login(&db, "own", "127.0.0.1");
    let _o2 = login(&db, "own", "127.0.0.1");
    let o3 = login(&db, "own", "127.0.0.1");
    assert_eq!(login_err(&db, "own").0, 1226);
    drop(o3);
    // 0 lifts it; setting it needs SUPER.
    q(&mut root, "SET GLOBAL max_user_connections = 0");
    let _b = login(&db, "g", "127.0.0.1");
    q(&mut root, "GRANT SELECT ON *.* TO own@'%'");
    assert_eq!(
        fail(
            &mut login(&db, "own", "127.0.0.1"),
            "SET GLOBAL max_user_connections = 9"
        )
        .0,
        1227
    );
}

#[test]
fn hourly_limits_count_statements_updates_and_logins_per_account() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE DATABASE h");
    q(&mut root, "CREATE TABLE h.t (id INT PRIMARY KEY)");
    q(
        &mut root,
        "CREATE USER hq@'%' WITH MAX_QUERIES_PER_HOUR 3 MAX_UPDATES_PER_HOUR 1",
    );
    q(&mut root, "GRANT ALL ON h.* TO hq@'%'");
    let mut a = login(&db, "hq", "127.0.0.1");
    q(&mut a, "INSERT INTO h.t VALUES (1)");
    // A second change is over max_updates, and is not made.
    let (code, msg) = fail(&mut a, "INSERT INTO h.t VALUES (2)");
    assert_eq!(code, 1226);
    assert_eq!(
        msg,
        "User 'hq' has exceeded the 'max_updates' resource (current value: 1)"
    );
    assert_eq!(rows(&q(&mut root, "SELECT id FROM h.t")), vec!["1"]);
    // Reads still count as queries, in every session of the account.
    q(&mut a, "SELECT 1");
    let mut b = login(&db, "hq", "127.0.0.1");
    q(&mut b, "SELECT 1");
    let (code, msg) = fail(&mut a, "SELECT 1");
    assert_eq!(code, 1226);
    assert_eq!(
        msg,
        "User 'hq' has exceeded the 'max_questions' resource (current value: 3)"
    );
    // Other accounts are not charged.
    q(&mut root, "SELECT 1");
    // FLUSH USER_RESOURCES starts every count again.
    q(&mut root, "FLUSH USER_RESOURCES");
    q(&mut b, "SELECT 1");
    // Setting a limit again starts that account's counts again.
    q(&mut b, "SELECT 1");
    q(&mut b, "SELECT 1");
    assert_eq!(fail(&mut b, "SELECT 1").0, 1226);
    q(&mut root, "ALTER USER hq@'%' WITH MAX_QUERIES_PER_HOUR 3");
    q(&mut b, "SELECT 1");
    // Logins per hour.
    q(
        &mut root,
        "CREATE USER hc@'%' WITH MAX_CONNECTIONS_PER_HOUR 2",
    );
    drop(login(&db, "hc", "127.0.0.1"));
    let _c = login(&db, "hc", "127.0.0.1");
    let (code, msg) = login_err(&db, "hc");
    assert_eq!(code, 1226);
    assert_eq!(
        msg,
        "User 'hc' has exceeded the 'max_connections_per_hour' resource (current value: 2)"
    );
    // 0 lifts a limit.
    q(
        &mut root,
        "ALTER USER hc@'%' WITH MAX_CONNECTIONS_PER_HOUR 0",
    );
    let _d = login(&db, "hc", "127.0.0.1");
    // Prepared statements are counted too.
    q(&mut root, "ALTER USER hq@'%' WITH MAX_QUERIES_PER_HOUR 2");
    let mut e = login(&db, "hq", "127.0.0.1");
    let id = e.prepare("SELECT ?").unwrap().id;
    e.execute(id, &[cairndb_sql::Value::Int(1)], &mut Collect::default())
        .unwrap();
    e.execute(id, &[cairndb_sql::Value::Int(1)], &mut Collect::default())
        .unwrap();
    let r = e.execute(id, &[cairndb_sql::Value::Int(1)], &mut Collect::default());
    assert_eq!(r.err().map(|e| e.code), Some(1226));
}

#[test]
fn lock_tables_needs_lock_tables_on_the_database_and_select_on_each_table() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER l");
    q(&mut root, "GRANT SELECT ON d.t TO l");
    let mut l = login(&db, "l", "10.0.0.9");
    assert_eq!(err(&mut l, "LOCK TABLES d.t READ"), 1044);
    q(&mut root, "GRANT LOCK TABLES ON d.* TO l");
    q(&mut l, "LOCK TABLES d.t READ");
    q(&mut l, "USE d");
    q(&mut l, "LOCK TABLES t AS x READ LOCAL");
    q(&mut l, "UNLOCK TABLES");
    assert_eq!(err(&mut l, "LOCK TABLES t READ, u WRITE"), 1142);
    assert_eq!(err(&mut l, "LOCK TABLES d.nope WRITE"), 1142);
    // mysqldump's form, with its executable comment.
    q(
        &mut root,
        "LOCK TABLES `d`.`u` READ /*!32311 LOCAL */, d.t LOW_PRIORITY WRITE",
    );
    assert_eq!(err(&mut root, "LOCK TABLES d.nope WRITE"), 1146);
    assert_eq!(err(&mut root, "LOCK TABLES d.t READ u WRITE"), 1064);
    let mut none = Session::login(db.clone(), "root", "127.0.0.1").unwrap();
    assert_eq!(err(&mut none, "LOCK TABLES t READ"), 1046);
}

#[test]
fn a_foreign_key_needs_references_on_the_parent_or_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER f");
    q(&mut root, "GRANT CREATE, ALTER, SELECT, INSERT ON d.* TO f");
    let mut f = login(&db, "f", "10.0.0.9");
    let (code, msg) = fail(
        &mut f,
        "CREATE TABLE d.c1 (x INT, FOREIGN KEY (x) REFERENCES d.t (id))",
    );
    assert_eq!(code, 1142);
    assert!(msg.starts_with("REFERENCES command denied"), "{msg}");
    q(&mut root, "GRANT REFERENCES (id) ON d.t TO f");
    q(
        &mut f,
        "CREATE TABLE d.c1 (x INT, FOREIGN KEY (x) REFERENCES d.t (id))",
    );
    q(&mut root, "CREATE UNIQUE INDEX a_u ON d.t (a)");
    assert_eq!(
        err(
            &mut f,
            "CREATE TABLE d.c2 (y INT, FOREIGN KEY (y) REFERENCES d.t (a))"
        ),
        1143
    );
    q(&mut f, "CREATE TABLE d.c2 (y INT)");
    assert_eq!(
        err(
            &mut f,
            "ALTER TABLE d.c2 ADD FOREIGN KEY (y) REFERENCES d.t (a)"
        ),
        1143
    );
    q(&mut root, "GRANT REFERENCES ON d.t TO f");
    q(
        &mut f,
        "ALTER TABLE d.c2 ADD FOREIGN KEY (y) REFERENCES d.t (a)",
    );
}

#[test]
fn every_flush_needs_reload() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER plain@'%'");
    q(&mut root, "GRANT SELECT ON d.* TO plain@'%'");
    let mut u = login(&db, "plain", "127.0.0.1");
    for sql in [
        "FLUSH TABLES",
        "FLUSH STATUS",
        "FLUSH HOSTS",
        "FLUSH PRIVILEGES",
    ] {
        assert_eq!(err(&mut u, sql), 1227, "{sql}");
        q(&mut root, sql);
    }
    q(&mut root, "GRANT RELOAD ON *.* TO plain@'%'");
    q(&mut u, "FLUSH TABLES");
}

/// A parenthesised join under an outer join runs as a query of its own
/// over all its tables' columns: under column grants, only the columns
/// the statement reads are checked (it asked for every column: a false
/// 1143).
#[test]
fn a_nest_under_column_grants_checks_only_the_columns_read() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut root) = setup(dir.path());
    q(&mut root, "CREATE USER n");
    q(&mut root, "GRANT SELECT (id, a) ON d.t TO n");
    q(&mut root, "GRANT SELECT ON d.u TO n");
    let mut n = login(&db, "n", "10.0.0.9");
    assert_eq!(
        rows(&q(
            &mut n,
            "SELECT u.c, t.a FROM d.u AS u LEFT JOIN (d.t AS t JOIN d.u AS u2 ON u2.id = t.id) \
             ON t.id = u.id"
        )),
        ["5|10"]
    );
    // A column without the grant, read around the nest or inside it.
    for sql in [
        "SELECT u.c, t.b FROM d.u AS u LEFT JOIN (d.t AS t JOIN d.u AS u2 ON u2.id = t.id) \
         ON t.id = u.id",
        "SELECT u.c FROM d.u AS u LEFT JOIN (d.t AS t JOIN d.u AS u2 ON u2.id = t.b) \
         ON t.id = u.id",
        "SELECT u.c FROM d.u AS u LEFT JOIN (d.t AS t JOIN d.u AS u2 ON u2.id = t.id) \
         ON t.b = u.id",
        "SELECT * FROM d.u AS u LEFT JOIN (d.t AS t JOIN d.u AS u2 ON u2.id = t.id) \
         ON t.id = u.id",
    ] {
        assert_eq!(err(&mut n, sql), 1143, "{sql}");
    }
}
