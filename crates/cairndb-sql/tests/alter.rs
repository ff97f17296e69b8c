//! ALTER TABLE and RENAME TABLE end to end: each clause, several in one
//! statement, MySQL's errors, rows and indexes through a table copy, a
//! restart after ALTER, prepared statements compiled before it, and a
//! crash (power loss) at every durable step of a copy.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};
use common::{err, open, q, rows};

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    q(s, "USE d");
    q(
        s,
        "CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20), n INT, KEY n_ix (n))",
    );
    q(
        s,
        "INSERT INTO t (name, n) VALUES ('ann', 1), ('bob', NULL), (NULL, 3), ('dee', 3)",
    );
}

fn fresh() -> (tempfile::TempDir, Arc<SqlDb>, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    (dir, db, s)
}

fn all(s: &mut Session, t: &str) -> Vec<String> {
    rows(&q(s, &format!("SELECT * FROM {t} ORDER BY 1")))
}

fn create_text(s: &mut Session, t: &str) -> String {
    let c = q(s, &format!("SHOW CREATE TABLE {t}"));
    common::text(&c.rows[0][1])
}

fn primary_id(db: &SqlDb, t: &str) -> u32 {
    db.table("d", t).unwrap().primary.id
}

/// Every index id that has a key in the engine.
fn ids_with_keys(db: &SqlDb) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut it = db.engine().db().iter(&Default::default()).unwrap();
    it.seek(&[]);
    while it.valid() {
        out.insert(u32::from_be_bytes(it.key()[..4].try_into().unwrap()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// The index ids of the named tables, and the dictionary's.
fn live_ids(db: &SqlDb, tables: &[(&str, &str)]) -> BTreeSet<u32> {
    let mut out = BTreeSet::from([1]);
    for (d, t) in tables {
        let def = db.table(d, t).unwrap();
        out.insert(def.primary.id);
        out.extend(def.secondary.iter().map(|i| i.id));
    }
    out
}

fn assert_clean(db: &SqlDb, tables: &[(&str, &str)]) {
    assert_eq!(ids_with_keys(db), live_ids(db, tables), "orphaned keys");
    let rep = cairndb_sql::check::check(db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
}

#[test]
fn add_column_first_after_last_and_a_list() {
    let (_d, db, mut s) = fresh();
    let before = primary_id(&db, "t");
    let c = q(&mut s, "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id");
    assert_eq!(c.ok, Some((4, 0)), "a copy reports its rows");
    q(&mut s, "ALTER TABLE t ADD f VARCHAR(5) NOT NULL FIRST");
    q(&mut s, "ALTER TABLE t ADD COLUMN (e INT, g TEXT)");
    assert_ne!(primary_id(&db, "t"), before, "the rows were copied");
    assert_eq!(
        rows(&q(&mut s, "SELECT * FROM t ORDER BY id")),
        vec![
            "|1|7|ann|1|NULL|NULL",
            "|2|7|bob|NULL|NULL|NULL",
            "|3|7|NULL|3|NULL|NULL",
            "|4|7|dee|3|NULL|NULL",
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT column_name, ordinal_position, is_nullable, column_default FROM information_schema.COLUMNS WHERE table_name = 't' ORDER BY ordinal_position"
        )),
        vec![
            "f|1|NO|NULL",
            "id|2|NO|NULL",
            "c|3|YES|7",
            "name|4|YES|NULL",
            "n|5|YES|NULL",
            "e|6|YES|NULL",
            "g|7|YES|NULL",
        ]
    );
    assert_eq!(
        create_text(&mut s, "t"),
        "CREATE TABLE `t` (\n  `f` varchar(5) NOT NULL,\n  `id` int NOT NULL AUTO_INCREMENT,\n  `c` int DEFAULT '7',\n  `name` varchar(20) DEFAULT NULL,\n  `n` int DEFAULT NULL,\n  `e` int DEFAULT NULL,\n  `g` text DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `n_ix` (`n`)\n) ENGINE=CairnDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    );
    // The secondary index was rebuilt with the rows.
    assert_eq!(
        rows(&q(&mut s, "SELECT id, name FROM t WHERE n = 3 ORDER BY id")),
        vec!["3|NULL", "4|dee"]
    );
    // AUTO_INCREMENT goes on.
    let r = q(&mut s, "INSERT INTO t (f, name) VALUES ('x', 'eve')");
    assert_eq!(r.ok, Some((1, 5)));
    assert_eq!(err(&mut s, "ALTER TABLE t ADD COLUMN name INT"), 1060);
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD COLUMN z INT AFTER nosuch"),
        1054
    );
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn drop_column_and_its_place_in_keys() {
    let (_d, db, mut s) = fresh();
    q(&mut s, "ALTER TABLE t ADD INDEX name_n (name, n)");
    q(&mut s, "ALTER TABLE t DROP COLUMN n");
    assert_eq!(all(&mut s, "t"), vec!["1|ann", "2|bob", "3|NULL", "4|dee"]);
    // n_ix lost its only column and went; name_n kept `name`.
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT index_name, seq_in_index, column_name FROM information_schema.STATISTICS WHERE table_name = 't' ORDER BY index_name, seq_in_index"
        )),
        vec!["name_n|1|name", "PRIMARY|1|id"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'dee'")),
        vec!["4"]
    );
    assert_eq!(err(&mut s, "ALTER TABLE t DROP COLUMN n"), 1091);
    q(&mut s, "ALTER TABLE t DROP name");
    assert_eq!(err(&mut s, "ALTER TABLE t DROP COLUMN id"), 1090);
    assert_eq!(all(&mut s, "t"), vec!["1", "2", "3", "4"]);
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn modify_and_change_convert_values_that_fit() {
    let (_d, db, mut s) = fresh();
    q(&mut s, "UPDATE t SET name = 'cy' WHERE id = 3");
    q(&mut s, "ALTER TABLE t MODIFY n VARCHAR(10)");
    q(
        &mut s,
        "ALTER TABLE t CHANGE COLUMN name title CHAR(3) NOT NULL DEFAULT '' AFTER n",
    );
    assert_eq!(
        all(&mut s, "t"),
        vec!["1|1|ann", "2|NULL|bob", "3|3|cy", "4|3|dee"]
    );
    // Strings back to numbers; the index over n was rebuilt with them.
    q(&mut s, "ALTER TABLE t MODIFY n DECIMAL(5,1) FIRST");
    assert_eq!(
        rows(&q(&mut s, "SELECT * FROM t WHERE n = 3 ORDER BY id")),
        vec!["3.0|3|cy", "3.0|4|dee"]
    );
    assert!(create_text(&mut s, "t").contains("`title` char(3) NOT NULL DEFAULT ''"));
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn modify_errors_leave_the_table_unchanged() {
    let (_d, db, mut s) = fresh();
    q(
        &mut s,
        "INSERT INTO t (name, n) VALUES ('a-long-name', 300)",
    );
    let before = (
        create_text(&mut s, "t"),
        all(&mut s, "t"),
        primary_id(&db, "t"),
    );
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY name VARCHAR(3)"), 1265);
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY n TINYINT"), 1264);
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY n INT NOT NULL"), 1138);
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY name INT"), 1366);
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY nosuch INT"), 1054);
    assert_eq!(
        err(&mut s, "ALTER TABLE t CHANGE name n VARCHAR(20)"),
        1060,
        "the new name is another column's"
    );
    let after = (
        create_text(&mut s, "t"),
        all(&mut s, "t"),
        primary_id(&db, "t"),
    );
    assert_eq!(before, after);
    assert_clean(&db, &[("d", "t")]);
}
#[test]
fn change_modify_rename_and_defaults() {
    let (_d, db, mut s) = fresh();
    let id = primary_id(&db, "t");
    q(&mut s, "ALTER TABLE t RENAME COLUMN name TO title");
    q(&mut s, "ALTER TABLE t ALTER COLUMN n SET DEFAULT 42");
    q(&mut s, "ALTER TABLE t ALTER title SET DEFAULT 'anon'");
    q(
        &mut s,
        "ALTER TABLE t MODIFY title VARCHAR(30) DEFAULT 'anon' COMMENT 'who'",
    );
    assert_eq!(primary_id(&db, "t"), id, "metadata only: no row rewritten");
    q(&mut s, "INSERT INTO t () VALUES ()");
    assert_eq!(
        rows(&q(&mut s, "SELECT id, title, n FROM t WHERE id = 5")),
        vec!["5|anon|42"]
    );
    q(&mut s, "ALTER TABLE t ALTER COLUMN n DROP DEFAULT");
    q(&mut s, "INSERT INTO t (title) VALUES ('x')");
    assert_eq!(
        rows(&q(&mut s, "SELECT n FROM t WHERE id = 6")),
        vec!["NULL"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT title FROM t WHERE n = 3 ORDER BY id")),
        vec!["NULL", "dee"]
    );
    assert!(create_text(&mut s, "t").contains("`title` varchar(30) DEFAULT 'anon' COMMENT 'who'"));
    assert_eq!(err(&mut s, "ALTER TABLE t RENAME COLUMN nosuch TO x"), 1054);
    assert_eq!(err(&mut s, "ALTER TABLE t RENAME COLUMN title TO n"), 1060);
    assert_eq!(
        err(&mut s, "ALTER TABLE t ALTER COLUMN nosuch SET DEFAULT 1"),
        1054
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t ALTER COLUMN id SET DEFAULT NULL"),
        1067
    );
    // CHANGE keeps the column's place and data under its new name.
    q(&mut s, "ALTER TABLE t CHANGE title who VARCHAR(30)");
    assert_eq!(
        rows(&q(&mut s, "SELECT who FROM t WHERE id <= 2 ORDER BY id")),
        vec!["ann", "bob"]
    );
    assert_eq!(primary_id(&db, "t"), id, "a wider VARCHAR keeps the rows");
    assert_clean(&db, &[("d", "t")]);
}
