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
    let live = live_ids(db, tables);
    let orphans: Vec<u32> = ids_with_keys(db)
        .into_iter()
        .filter(|id| !live.contains(id))
        .collect();
    assert!(
        orphans.is_empty(),
        "keys of index ids no table owns: {orphans:?}"
    );
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

#[test]
fn add_and_drop_secondary_indexes_without_copying_rows() {
    let (_d, db, mut s) = fresh();
    let id = primary_id(&db, "t");
    q(
        &mut s,
        "ALTER TABLE t ADD INDEX name_ix (name), ADD UNIQUE KEY u_n_name (n, name)",
    );
    q(&mut s, "ALTER TABLE t ADD KEY (name, n)");
    q(&mut s, "ALTER TABLE t ADD INDEX (name)");
    assert_eq!(primary_id(&db, "t"), id, "no row was rewritten");
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT index_name, non_unique, seq_in_index, column_name FROM information_schema.STATISTICS WHERE table_name = 't' ORDER BY index_name, seq_in_index"
        )),
        vec![
            "name|1|1|name",
            "name|1|2|n",
            "name_2|1|1|name",
            "name_ix|1|1|name",
            "n_ix|1|1|n",
            "PRIMARY|0|1|id",
            "u_n_name|0|1|n",
            "u_n_name|0|2|name",
        ]
    );
    let ex = rows(&q(&mut s, "EXPLAIN SELECT id FROM t WHERE name = 'dee'"));
    assert!(ex[0].contains("name"), "{ex:?}");
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'dee'")),
        vec!["4"]
    );
    // The new unique key is enforced.
    assert_eq!(
        err(&mut s, "INSERT INTO t (name, n) VALUES ('dee', 3)"),
        1062
    );
    q(
        &mut s,
        "ALTER TABLE t DROP INDEX name_ix, DROP KEY name, RENAME INDEX name_2 TO by_name",
    );
    assert_eq!(primary_id(&db, "t"), id);
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DISTINCT index_name FROM information_schema.STATISTICS WHERE table_name = 't' ORDER BY index_name"
        )),
        vec!["by_name", "n_ix", "PRIMARY", "u_n_name"],
        "by the general collation, `_` after letters"
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'bob'")),
        vec!["2"]
    );
    assert_eq!(err(&mut s, "ALTER TABLE t ADD INDEX n_ix (name)"), 1061);
    assert_eq!(err(&mut s, "ALTER TABLE t ADD INDEX x (nosuch)"), 1072);
    assert_eq!(err(&mut s, "ALTER TABLE t DROP INDEX nosuch"), 1091);
    assert_eq!(err(&mut s, "ALTER TABLE t DROP FOREIGN KEY fk"), 1091);
    assert_eq!(err(&mut s, "ALTER TABLE t RENAME INDEX nosuch TO y"), 1176);
    assert_eq!(
        err(&mut s, "ALTER TABLE t RENAME INDEX by_name TO n_ix"),
        1061
    );
    q(&mut s, "ALTER TABLE t DROP CONSTRAINT u_n_name");
    q(&mut s, "INSERT INTO t (name, n) VALUES ('dee', 3)");
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn add_unique_over_duplicates_is_1062_and_changes_nothing() {
    let (_d, db, mut s) = fresh();
    let before = (create_text(&mut s, "t"), primary_id(&db, "t"));
    // In place (a back-fill) and with a copy in the same statement.
    assert_eq!(err(&mut s, "ALTER TABLE t ADD UNIQUE u (n)"), 1062);
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD COLUMN z INT, ADD UNIQUE u (n)"),
        1062
    );
    let e = {
        let mut c = Collect::default();
        s.query("ALTER TABLE t ADD UNIQUE INDEX u (n)", &mut c)
            .unwrap_err()
    };
    assert_eq!(e.message, "Duplicate entry '3' for key 't.u'");
    let repk = "ALTER TABLE t MODIFY id INT NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (n)";
    assert_eq!(err(&mut s, repk), 1138, "bob's n is NULL");
    q(&mut s, "UPDATE t SET n = 2 WHERE id = 2");
    assert_eq!(err(&mut s, repk), 1062);
    assert_eq!(before, (create_text(&mut s, "t"), primary_id(&db, "t")));
    assert_eq!(
        all(&mut s, "t"),
        vec!["1|ann|1", "2|bob|2", "3|NULL|3", "4|dee|3"]
    );
    assert_clean(&db, &[("d", "t")]);
}

/// CREATE INDEX's duplicate error named the key without its table, where
/// MySQL 8.0 (and INSERT here) say `table.key`.
#[test]
fn create_index_duplicate_names_the_table_and_key() {
    let (_d, _db, mut s) = fresh();
    let mut c = Collect::default();
    let e = s
        .query("CREATE UNIQUE INDEX u ON t (n)", &mut c)
        .unwrap_err();
    assert_eq!(e.code, 1062);
    assert_eq!(e.message, "Duplicate entry '3' for key 't.u'");
}

#[test]
fn primary_key_added_dropped_and_replaced() {
    let (_d, db, mut s) = fresh();
    q(&mut s, "CREATE TABLE h (a INT, b VARCHAR(10))");
    q(
        &mut s,
        "INSERT INTO h VALUES (2, 'two'), (1, 'one'), (3, NULL)",
    );
    q(&mut s, "ALTER TABLE h ADD PRIMARY KEY (a)");
    assert!(create_text(&mut s, "h").contains("`a` int NOT NULL"));
    assert!(create_text(&mut s, "h").contains("PRIMARY KEY (`a`)"));
    assert_eq!(all(&mut s, "h"), vec!["1|one", "2|two", "3|NULL"]);
    let ex = rows(&q(&mut s, "EXPLAIN SELECT b FROM h WHERE a = 2"));
    assert!(ex[0].contains("const"), "{ex:?}");
    assert_eq!(err(&mut s, "ALTER TABLE h ADD PRIMARY KEY (b)"), 1068);
    assert_eq!(err(&mut s, "INSERT INTO h VALUES (2, 'again')"), 1062);
    q(&mut s, "ALTER TABLE h DROP PRIMARY KEY");
    assert!(!create_text(&mut s, "h").contains("PRIMARY"));
    q(&mut s, "INSERT INTO h VALUES (2, 'again')");
    assert_eq!(err(&mut s, "ALTER TABLE h DROP PRIMARY KEY"), 1091);
    q(&mut s, "DELETE FROM h WHERE b = 'again'");
    assert_eq!(
        err(&mut s, "ALTER TABLE h MODIFY b VARCHAR(10) NOT NULL"),
        1138
    );
    q(&mut s, "UPDATE h SET b = '' WHERE b IS NULL");
    q(
        &mut s,
        "ALTER TABLE h MODIFY b VARCHAR(10) NOT NULL DEFAULT '', ADD PRIMARY KEY (b, a)",
    );
    assert_eq!(all(&mut s, "h"), vec!["1|one", "2|two", "3|"]);
    assert_eq!(
        rows(&q(&mut s, "SELECT a, b FROM h")),
        vec!["3|", "1|one", "2|two"],
        "in primary key order"
    );
    // The auto-increment column must lead the primary key.
    assert_eq!(err(&mut s, "ALTER TABLE t DROP PRIMARY KEY"), 1075);
    assert_eq!(
        err(
            &mut s,
            "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, name)"
        ),
        1138,
        "a NULL name"
    );
    q(&mut s, "UPDATE t SET name = 'cy' WHERE id = 3");
    q(
        &mut s,
        "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, name)",
    );
    assert!(create_text(&mut s, "t").contains("PRIMARY KEY (`id`,`name`)"));
    assert_eq!(
        err(&mut s, "ALTER TABLE t MODIFY name VARCHAR(20) NULL"),
        1171
    );
    assert_clean(&db, &[("d", "t"), ("d", "h")]);
}

#[test]
fn an_added_auto_increment_key_numbers_the_rows() {
    let (_d, db, mut s) = fresh();
    q(&mut s, "CREATE TABLE h (b VARCHAR(10))");
    q(&mut s, "INSERT INTO h VALUES ('x'), ('y'), ('z')");
    q(
        &mut s,
        "ALTER TABLE h ADD COLUMN id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY FIRST",
    );
    assert_eq!(all(&mut s, "h"), vec!["1|x", "2|y", "3|z"]);
    let r = q(&mut s, "INSERT INTO h (b) VALUES ('w')");
    assert_eq!(r.ok, Some((1, 4)));
    assert_eq!(
        err(&mut s, "ALTER TABLE h ADD COLUMN n INT AUTO_INCREMENT"),
        1075
    );
    assert_clean(&db, &[("d", "t"), ("d", "h")]);
}

#[test]
fn rename_table_in_alter_and_as_a_statement() {
    let (_d, db, mut s) = fresh();
    let id = primary_id(&db, "t");
    q(&mut s, "ALTER TABLE t RENAME TO t2");
    assert_eq!(err(&mut s, "SELECT * FROM t"), 1146);
    assert_eq!(primary_id(&db, "t2"), id, "a rename moves no key");
    q(
        &mut s,
        "ALTER TABLE t2 RENAME AS t3, ADD COLUMN z INT DEFAULT 1",
    );
    q(&mut s, "ALTER TABLE t3 RENAME t");
    assert_eq!(
        all(&mut s, "t"),
        vec!["1|ann|1|1", "2|bob|NULL|1", "3|NULL|3|1", "4|dee|3|1"]
    );
    q(&mut s, "CREATE TABLE u (x INT)");
    q(&mut s, "INSERT INTO u VALUES (9)");
    assert_eq!(err(&mut s, "ALTER TABLE t RENAME TO u"), 1050);
    assert_eq!(err(&mut s, "RENAME TABLE t TO u"), 1050);
    assert_eq!(err(&mut s, "RENAME TABLE nosuch TO v"), 1146);
    assert_eq!(err(&mut s, "ALTER TABLE nosuch ADD COLUMN a INT"), 1146);
    assert_eq!(err(&mut s, "RENAME TABLE t TO nodb.t"), 1049);
    // A swap through a temporary name, in one statement.
    q(&mut s, "RENAME TABLE t TO tmp, u TO t, tmp TO u");
    assert_eq!(all(&mut s, "t"), vec!["9"]);
    assert_eq!(all(&mut s, "u").len(), 4);
    // Across databases, keys and all.
    q(&mut s, "CREATE DATABASE e");
    q(&mut s, "RENAME TABLE u TO e.moved");
    q(&mut s, "ALTER TABLE e.moved RENAME TO e.moved2");
    assert_eq!(
        rows(&q(&mut s, "SELECT name FROM e.moved2 WHERE n = 1")),
        vec!["ann"]
    );
    assert_eq!(rows(&q(&mut s, "SHOW TABLES")), vec!["t"]);
    assert_eq!(rows(&q(&mut s, "SHOW TABLES FROM e")), vec!["moved2"]);
    assert_clean(&db, &[("d", "t"), ("e", "moved2")]);
}

#[test]
fn table_options_comment_auto_increment_engine_charset() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        setup(&mut s);
        let id = primary_id(&db, "t");
        q(&mut s, "ALTER TABLE t COMMENT = 'people', ENGINE=InnoDB");
        q(&mut s, "ALTER TABLE t AUTO_INCREMENT = 100");
        q(
            &mut s,
            "ALTER TABLE t DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci ROW_FORMAT=DYNAMIC",
        );
        q(&mut s, "ALTER TABLE t CHARACTER SET latin1");
        q(&mut s, "ALTER TABLE t DISABLE KEYS");
        assert_eq!(primary_id(&db, "t"), id, "options rewrite no row");
        assert!(create_text(&mut s, "t").ends_with(" COMMENT='people'"));
        assert_eq!(err(&mut s, "ALTER TABLE t CHARACTER SET klingon"), 1115);
        assert_eq!(
            err(
                &mut s,
                "ALTER TABLE t CONVERT TO CHARACTER SET latin1 COLLATE utf8mb4_bin"
            ),
            1253
        );
        db.close().unwrap();
    }
    // The floor survives a restart; AUTO_INCREMENT = n below the largest
    // value gives the value after it.
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "USE d");
    assert_eq!(
        q(&mut s, "INSERT INTO t (name) VALUES ('x')").ok,
        Some((1, 100))
    );
    q(&mut s, "ALTER TABLE t AUTO_INCREMENT = 50");
    assert_eq!(
        q(&mut s, "INSERT INTO t (name) VALUES ('y')").ok,
        Some((1, 101))
    );
    // CONVERT changes the collation of the text columns: a copy.
    q(&mut s, "ALTER TABLE t ADD INDEX name_ix (name)");
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'ANN'")),
        vec!["1"]
    );
    q(
        &mut s,
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    );
    assert!(
        create_text(&mut s, "t").contains("`name` varchar(20) COLLATE utf8mb4_bin DEFAULT NULL")
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'ANN'")),
        Vec::<String>::new()
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE name = 'ann'")),
        vec!["1"]
    );
    q(&mut s, "ALTER TABLE t CONVERT TO CHARACTER SET binary");
    assert!(create_text(&mut s, "t").contains("`name` varbinary(80) DEFAULT NULL"));
    assert_eq!(
        rows(&q(&mut s, "SELECT name FROM t WHERE id = 4")),
        vec!["dee"]
    );
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn algorithm_and_lock_are_honoured_or_refused() {
    let (_d, db, mut s) = fresh();
    let id = primary_id(&db, "t");
    q(
        &mut s,
        "ALTER TABLE t RENAME COLUMN name TO who, ALGORITHM=INSTANT",
    );
    q(
        &mut s,
        "ALTER TABLE t ALTER COLUMN n SET DEFAULT 1, ALGORITHM = INSTANT, LOCK = NONE",
    );
    q(
        &mut s,
        "ALTER TABLE t ADD INDEX w (who), ALGORITHM=INPLACE, LOCK=SHARED",
    );
    assert_eq!(primary_id(&db, "t"), id);
    let e = {
        let mut c = Collect::default();
        s.query("ALTER TABLE t ADD COLUMN z INT, ALGORITHM=INSTANT", &mut c)
            .unwrap_err()
    };
    assert_eq!(e.code, 1845);
    assert_eq!(
        e.message,
        "ALGORITHM=INSTANT is not supported for this operation. Try ALGORITHM=COPY/INPLACE."
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD INDEX z (n), ALGORITHM=INSTANT"),
        1845
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t MODIFY n BIGINT, ALGORITHM=INPLACE"),
        1846
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD INDEX z (n), LOCK=NONE"),
        1846
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD COLUMN z INT, LOCK=NONE"),
        1846
    );
    assert_eq!(primary_id(&db, "t"), id, "refused: nothing changed");
    q(
        &mut s,
        "ALTER TABLE t ADD COLUMN z INT, ALGORITHM=INPLACE, LOCK=EXCLUSIVE",
    );
    q(&mut s, "ALTER TABLE t MODIFY n BIGINT, ALGORITHM=COPY");
    // COPY copies even what could be done in place; so does FORCE.
    let id = primary_id(&db, "t");
    q(&mut s, "ALTER TABLE t COMMENT 'c', ALGORITHM=COPY");
    assert_ne!(primary_id(&db, "t"), id);
    let id = primary_id(&db, "t");
    q(&mut s, "ALTER TABLE t FORCE");
    assert_ne!(primary_id(&db, "t"), id);
    q(&mut s, "ALTER TABLE t ALGORITHM=DEFAULT, LOCK=DEFAULT");
    assert_eq!(
        all(&mut s, "t"),
        vec![
            "1|ann|1|NULL",
            "2|bob|NULL|NULL",
            "3|NULL|3|NULL",
            "4|dee|3|NULL"
        ]
    );
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn several_clauses_apply_together_or_not_at_all() {
    let (_d, db, mut s) = fresh();
    q(
        &mut s,
        "ALTER TABLE t ADD COLUMN z INT NOT NULL DEFAULT 0 AFTER id, DROP COLUMN n, RENAME COLUMN name TO who, ADD UNIQUE KEY who_u (who), COMMENT 'all at once'",
    );
    assert_eq!(
        all(&mut s, "t"),
        vec!["1|0|ann", "2|0|bob", "3|0|NULL", "4|0|dee"]
    );
    assert!(create_text(&mut s, "t").contains("UNIQUE KEY `who_u` (`who`)"));
    assert!(!create_text(&mut s, "t").contains("n_ix"));
    let before = (create_text(&mut s, "t"), primary_id(&db, "t"));
    // The last clause fails: the first ones are not applied.
    assert_eq!(
        err(
            &mut s,
            "ALTER TABLE t ADD COLUMN y INT, ADD INDEX y_ix (y), DROP COLUMN nosuch"
        ),
        1091
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t DROP COLUMN who, ADD INDEX (who)"),
        1072
    );
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD COLUMN y INT, ADD COLUMN y INT"),
        1060
    );
    assert_eq!(err(&mut s, "ALTER TABLE t ADD PRIMARY KEY (z)"), 1068);
    assert_eq!(
        err(&mut s, "ALTER TABLE t ADD COLUMN y INT DROP COLUMN z"),
        1064
    );
    assert_eq!(before, (create_text(&mut s, "t"), primary_id(&db, "t")));
    assert_clean(&db, &[("d", "t")]);
}

#[test]
fn a_copy_keeps_every_row_and_index_entry() {
    let dir = tempfile::tempdir().unwrap();
    let want: Vec<String>;
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        q(&mut s, "CREATE DATABASE d");
        q(&mut s, "USE d");
        q(
            &mut s,
            "CREATE TABLE big (id INT PRIMARY KEY, k INT, s VARCHAR(30), d DATE, KEY k_ix (k))",
        );
        // More rows than a copy batch.
        for chunk in 0..25 {
            let vals: Vec<String> = (0..1000)
                .map(|j| {
                    let i = chunk * 1000 + j;
                    let s = if i % 7 == 0 {
                        "NULL".to_string()
                    } else {
                        format!("'s{i}'")
                    };
                    format!("({i}, {}, {s}, '2024-01-{:02}')", i % 100, i % 28 + 1)
                })
                .collect();
            q(
                &mut s,
                &format!("INSERT INTO big VALUES {}", vals.join(",")),
            );
        }
        let before = rows(&q(&mut s, "SELECT id, k, s, d FROM big ORDER BY id"));
        q(
            &mut s,
            "ALTER TABLE big ADD COLUMN extra VARCHAR(5) DEFAULT 'e' AFTER id, MODIFY k BIGINT, ADD UNIQUE KEY s_u (s)",
        );
        assert_eq!(
            rows(&q(&mut s, "SELECT id, k, s, d FROM big ORDER BY id")),
            before
        );
        assert_eq!(
            rows(&q(
                &mut s,
                "SELECT count(*), count(s), min(extra), max(extra) FROM big"
            )),
            vec!["25000|21428|e|e"]
        );
        want = rows(&q(&mut s, "SELECT * FROM big WHERE k = 42 ORDER BY id"));
        assert_eq!(want.len(), 250);
        assert_eq!(want[0], "42|e|42|NULL|2024-01-15");
        assert_eq!(want[1], "142|e|42|s142|2024-01-03");
        assert_eq!(
            rows(&q(&mut s, "SELECT id FROM big WHERE s = 's24999'")),
            vec!["24999"]
        );
        assert_eq!(
            err(&mut s, "INSERT INTO big (id, s) VALUES (99999, 's5')"),
            1062
        );
        assert_clean(&db, &[("d", "big")]);
        db.close().unwrap();
    }
    // After a restart: the same definition, rows and index lookups.
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "USE d");
    assert_eq!(
        rows(&q(&mut s, "SELECT * FROM big WHERE k = 42 ORDER BY id")),
        want
    );
    assert!(create_text(&mut s, "big").contains("`k` bigint DEFAULT NULL"));
    assert!(create_text(&mut s, "big").contains("UNIQUE KEY `s_u` (`s`)"));
    assert_clean(&db, &[("d", "big")]);
}

#[test]
fn prepared_statements_compiled_before_an_alter_are_compiled_again() {
    let (_d, _db, mut s) = fresh();
    let sel = s.prepare("SELECT * FROM t WHERE id = ?").unwrap();
    let ins = s.prepare("INSERT INTO t (name, n) VALUES (?, ?)").unwrap();
    let run = |s: &mut Session, id: u32, p: &[Value]| {
        let mut c = Collect::default();
        s.execute(id, p, &mut c).map(|_| rows(&c))
    };
    assert_eq!(
        run(&mut s, sel.id, &[Value::Int(1)]).unwrap(),
        vec!["1|ann|1"]
    );
    q(&mut s, "ALTER TABLE t ADD COLUMN z INT DEFAULT 9 AFTER id");
    assert_eq!(
        run(&mut s, sel.id, &[Value::Int(1)]).unwrap(),
        vec!["1|9|ann|1"]
    );
    run(
        &mut s,
        ins.id,
        &[Value::Str(b"eve".to_vec()), Value::Int(5)],
    )
    .unwrap();
    assert_eq!(
        run(&mut s, sel.id, &[Value::Int(5)]).unwrap(),
        vec!["5|9|eve|5"]
    );
    q(&mut s, "ALTER TABLE t DROP COLUMN n");
    assert_eq!(
        run(
            &mut s,
            ins.id,
            &[Value::Str(b"fay".to_vec()), Value::Int(6)]
        )
        .unwrap_err()
        .code,
        1054
    );
    q(&mut s, "ALTER TABLE t RENAME TO gone");
    assert_eq!(
        run(&mut s, sel.id, &[Value::Int(1)]).unwrap_err().code,
        1146
    );
}

#[test]
fn alter_waits_for_open_writers_and_they_see_the_new_table() {
    let (_d, db, mut a) = fresh();
    let mut b = Session::new(db.clone(), "root");
    q(&mut b, "USE d");
    q(&mut b, "SET innodb_lock_wait_timeout = 1");
    q(&mut a, "BEGIN");
    q(&mut a, "INSERT INTO t (name, n) VALUES ('open', 7)");
    // The writer's transaction holds the schema lock: 1205 after the wait.
    assert_eq!(err(&mut b, "ALTER TABLE t ADD COLUMN z INT"), 1205);
    q(&mut a, "COMMIT");
    q(&mut b, "ALTER TABLE t ADD COLUMN z INT DEFAULT 3");
    assert_eq!(
        rows(&q(&mut a, "SELECT name, z FROM t WHERE n = 7")),
        vec!["open|3"]
    );
}

/// The file system of a database and its options.
fn mem_options(fs: &cairndb::env::mem::MemFs) -> SqlOptions {
    let mut o = SqlOptions::default();
    o.engine.fs = Arc::new(fs.clone());
    o
}

/// Each DDL step's name with the file system's power-loss image there.
type Images = Arc<Mutex<Vec<(String, cairndb::env::mem::MemFs)>>>;

/// A DDL hook that keeps, at each step, the image of `fs` as the power
/// fails there (`step`) and as it fails after the engine synced
/// everything written so far (`step+sync`).
fn power_loss_at_each_step(
    db: &Arc<SqlDb>,
    fs: &cairndb::env::mem::MemFs,
    images: &Images,
) -> Arc<dyn Fn(&str) + Send + Sync> {
    let (shots, fs, weak) = (images.clone(), fs.clone(), Arc::downgrade(db));
    Arc::new(move |step: &str| {
        shots
            .lock()
            .unwrap()
            .push((step.to_string(), fs.power_loss_image()));
        if let Some(db) = weak.upgrade() {
            let e = db.engine().db();
            e.try_sync_durable(e.log_position()).unwrap();
        }
        shots
            .lock()
            .unwrap()
            .push((format!("{step}+sync"), fs.power_loss_image()));
    })
}

#[test]
fn a_crash_at_any_step_of_an_alter_leaves_the_old_table_or_the_new() {
    let statements = [
        // A copy (new ids for every index) ...
        "ALTER TABLE t ADD COLUMN z INT DEFAULT 5, ADD UNIQUE KEY name_u (name)",
        // ... and a back-fill.
        "ALTER TABLE t ADD INDEX z_ix (z), DROP INDEX n_ix",
    ];
    let fs = cairndb::env::mem::MemFs::new();
    let db = SqlDb::open("/db", mem_options(&fs)).unwrap();
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    let vals: Vec<String> = (10..500).map(|i| format!("('p{i}', {i})")).collect();
    q(
        &mut s,
        &format!("INSERT INTO t (name, n) VALUES {}", vals.join(",")),
    );
    let mut states = vec![(create_text(&mut s, "t"), all(&mut s, "t"))];
    let images: Images = Arc::default();
    for st in statements {
        db.set_ddl_hook(Some(power_loss_at_each_step(&db, &fs, &images)));
        q(&mut s, st);
        db.set_ddl_hook(None);
        states.push((create_text(&mut s, "t"), all(&mut s, "t")));
    }
    assert_ne!(states[0], states[1]);
    assert_ne!(states[1], states[2]);
    let images = std::mem::take(&mut *images.lock().unwrap());
    let steps: Vec<&str> = images.iter().map(|(s, _)| s.as_str()).collect();
    // The old keys are deleted in batches of 10,000 after the switch:
    // the copy deletes two indexes' keys, the back-fill one.
    let batch = ["delete:batch", "delete:batch+sync"];
    let (ids, copied, switched, done) = (
        ["alter:ids", "alter:ids+sync"],
        ["alter:copied", "alter:copied+sync"],
        ["alter:switched", "alter:switched+sync"],
        ["alter:done", "alter:done+sync"],
    );
    let want: Vec<&str> = [
        &ids[..],
        &copied,
        &switched,
        &batch,
        &batch,
        &done,
        &ids,
        &copied,
        &switched,
        &batch,
        &done,
    ]
    .concat();
    assert_eq!(steps, want);
    let mut statement = 0;
    for (i, (step, image)) in images.into_iter().enumerate() {
        // Before the switch the statement's table is the one before it.
        if step == "alter:ids" && i > 0 {
            statement += 1;
        }
        let switched = step.starts_with("alter:switched")
            || step.starts_with("delete:")
            || step.starts_with("alter:done");
        let want = &states[statement + usize::from(switched)];
        let db = SqlDb::open("/db", mem_options(&image)).unwrap();
        let mut s = Session::new(db.clone(), "root");
        q(&mut s, "USE d");
        let got = (create_text(&mut s, "t"), all(&mut s, "t"));
        assert!(
            got == *want,
            "after a crash at {step} of statement {statement}"
        );
        // No orphaned keys once open: the sweep took the other side's.
        assert_clean(&db, &[("d", "t")]);
        db.close().unwrap();
    }
}

/// What a crash test compares: the databases, d's tables, and each
/// table's definition and rows.
fn ddl_state(s: &mut Session) -> Vec<String> {
    let mut out = rows(&q(s, "SHOW DATABASES"));
    for d in ["d", "e"] {
        if !out.iter().any(|x| x == d) {
            continue;
        }
        for t in rows(&q(s, &format!("SHOW TABLES FROM {d}"))) {
            let name = format!("{d}.{t}");
            out.push(create_text(s, &name));
            out.extend(all(s, &name));
        }
    }
    out
}

/// The tables of `ddl_state`'s databases that exist now.
fn ddl_tables(s: &mut Session) -> Vec<(String, String)> {
    let dbs = rows(&q(s, "SHOW DATABASES"));
    let mut out = Vec::new();
    for d in ["d", "e"] {
        if dbs.iter().any(|x| x == d) {
            for t in rows(&q(s, &format!("SHOW TABLES FROM {d}"))) {
                out.push((d.to_string(), t));
            }
        }
    }
    out
}

#[test]
fn a_crash_at_any_step_of_create_index_drop_or_truncate_leaves_before_or_after() {
    // Each statement's steps before the dictionary switch keep the state
    // before it; from the switch on, the state after it.
    let statements = [
        // Over 10,000 rows: the back-fill writes a batch before the end.
        "CREATE INDEX name_ix ON t (name)",
        "DROP INDEX n_ix ON t",
        "DROP TABLE u",
        "DROP DATABASE e",
        "TRUNCATE TABLE t",
    ];
    let fs = cairndb::env::mem::MemFs::new();
    let db = SqlDb::open("/db", mem_options(&fs)).unwrap();
    let mut s = Session::new(db.clone(), "root");
    setup(&mut s);
    for start in (0..10_200).step_by(1_700) {
        let vals: Vec<String> = (start..start + 1_700)
            .map(|i| format!("('p{i}', {})", i % 37))
            .collect();
        q(
            &mut s,
            &format!("INSERT INTO t (name, n) VALUES {}", vals.join(",")),
        );
    }
    q(
        &mut s,
        "CREATE TABLE u (a INT PRIMARY KEY, b VARCHAR(5), KEY (b))",
    );
    q(&mut s, "INSERT INTO u VALUES (1, 'x'), (2, 'y')");
    q(&mut s, "CREATE DATABASE e");
    q(&mut s, "CREATE TABLE e.w (a INT PRIMARY KEY) ");
    q(&mut s, "INSERT INTO e.w VALUES (7)");
    let mut states = vec![(ddl_state(&mut s), ddl_tables(&mut s))];
    let images: Images = Arc::default();
    let mut per_statement = Vec::new();
    for st in statements {
        let before = images.lock().unwrap().len();
        db.set_ddl_hook(Some(power_loss_at_each_step(&db, &fs, &images)));
        q(&mut s, st);
        db.set_ddl_hook(None);
        per_statement.push(before..images.lock().unwrap().len());
        states.push((ddl_state(&mut s), ddl_tables(&mut s)));
    }
    for w in states.windows(2) {
        assert_ne!(w[0].0, w[1].0);
    }
    let images = std::mem::take(&mut *images.lock().unwrap());
    let steps = |k: usize| -> Vec<&str> {
        images[per_statement[k].clone()]
            .iter()
            .map(|(s, _)| s.strip_suffix("+sync").unwrap_or(s))
            .step_by(2)
            .collect()
    };
    // Every step of each statement was reached (the deletes of old keys
    // once per 10,000 and per index with keys).
    assert_eq!(
        steps(0),
        [
            "create_index:ids",
            "backfill:batch",
            "create_index:filled",
            "create_index:switched"
        ]
    );
    assert_eq!(
        steps(1),
        [
            "drop_index:switched",
            "delete:batch",
            "delete:batch",
            "drop_index:done"
        ]
    );
    assert_eq!(
        steps(2),
        [
            "drop_table:switched",
            "delete:batch",
            "delete:batch",
            "drop_table:done"
        ]
    );
    assert_eq!(
        steps(3),
        [
            "drop_database:switched",
            "delete:batch",
            "drop_database:done"
        ]
    );
    assert_eq!(steps(4)[0], "truncate:switched");
    assert_eq!(*steps(4).last().unwrap(), "truncate:done");
    assert!(steps(4).len() >= 5, "{:?}", steps(4));
    for (k, range) in per_statement.iter().enumerate() {
        let mut switched = false;
        for (step, image) in &images[range.clone()] {
            switched |=
                step.contains(":switched") || step.contains(":done") || step.starts_with("delete:");
            let (want, tables) = &states[k + usize::from(switched)];
            let db = SqlDb::open("/db", mem_options(image)).unwrap();
            let mut s = Session::new(db.clone(), "root");
            let got = ddl_state(&mut s);
            assert!(got == *want, "after a crash at {step} of {}", statements[k]);
            // No orphaned keys once open: the sweep took what the
            // statement had not deleted yet, or what it had written for
            // an index the dictionary never named.
            let tables: Vec<(&str, &str)> = tables
                .iter()
                .map(|(d, t)| (d.as_str(), t.as_str()))
                .collect();
            assert_clean(&db, &tables);
            db.close().unwrap();
        }
    }
}

/// An ALTER (or CREATE INDEX) that recorded index ids as used and then
/// failed left the catalog's next id behind the dictionary's, so the next
/// DDL statement took the same ids again.
#[test]
fn a_failed_alter_does_not_hand_out_its_ids_again() {
    let (_d, db, mut s) = fresh();
    q(&mut s, "CREATE TABLE p1 (a INT)");
    let p = primary_id(&db, "p1");
    assert_eq!(err(&mut s, "ALTER TABLE t ADD UNIQUE u (n)"), 1062);
    q(&mut s, "CREATE TABLE p2 (a INT)");
    assert_eq!(primary_id(&db, "p2"), p + 2, "id {} was used", p + 1);
    assert_eq!(err(&mut s, "CREATE UNIQUE INDEX u ON t (n)"), 1062);
    q(&mut s, "CREATE TABLE p3 (a INT)");
    assert_eq!(primary_id(&db, "p3"), p + 4, "id {} was used", p + 3);
    assert_clean(&db, &[("d", "t"), ("d", "p1"), ("d", "p2"), ("d", "p3")]);
}

/// Prefix key parts (`KEY (a(10))`): the key keeps the first characters
/// (bytes for binary strings), lookups read every row with that start
/// and the WHERE decides, an ORDER BY is not taken from the index, the
/// full value is always read from the row, a UNIQUE prefix constrains
/// the prefix, and the definition survives ALTER, a restart and the
/// checker. Expected results are MySQL 8.0's.
#[test]
fn prefix_key_parts_index_the_start_of_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    for sql in [
        "CREATE DATABASE p",
        "USE p",
        "CREATE TABLE meta (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, post BIGINT NOT NULL DEFAULT 0, \
         k VARCHAR(255) DEFAULT NULL, v LONGTEXT, b VARBINARY(20), PRIMARY KEY (id), KEY post (post), \
         KEY k (k(3)), KEY vb (v(2), b(2)))",
        "INSERT INTO meta (post, k, v, b) VALUES (1, 'abz', 'x1', 'q1'), (1, 'aba', 'x2', 'q2'), \
         (2, 'abm', 'y1', 'q1'), (2, NULL, 'y2', NULL), (3, 'ab', 'x1', 'q1'), (3, '日本語', 'z', 'q3'), \
         (4, '日本酒', 'z', 'q3'), (4, 'ABM', 'w', 'q4')",
    ] {
        q(&mut s, sql);
    }
    let r = |s: &mut Session, sql: &str| rows(&q(s, sql));
    assert_eq!(
        r(&mut s, "SELECT id FROM meta WHERE k = 'abm' ORDER BY id"),
        vec!["3", "8"]
    );
    assert_eq!(r(&mut s, "SELECT k FROM meta WHERE k = 'ab'"), vec!["ab"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT id, k FROM meta WHERE k IN ('aba', 'abz', 'nope') ORDER BY id"
        ),
        vec!["1|abz", "2|aba"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT k FROM meta WHERE k > 'abb' AND k < 'abz' ORDER BY k"
        ),
        vec!["abm", "ABM"]
    );
    // Read through the prefix index, sorted in full.
    assert_eq!(
        r(
            &mut s,
            "SELECT k FROM meta WHERE k LIKE 'ab%' ORDER BY k DESC, id"
        ),
        vec!["abz", "abm", "ABM", "aba", "ab"]
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM meta WHERE k = '日本語'"),
        vec!["6"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT id FROM meta WHERE v = 'x1' AND b = 'q1' ORDER BY id"
        ),
        vec!["1", "5"]
    );
    assert_eq!(
        r(&mut s, "SELECT COUNT(*) FROM meta WHERE k IS NULL"),
        vec!["1"]
    );
    // Changes keep the index right.
    q(&mut s, "UPDATE meta SET k = 'abq' WHERE id = 1");
    q(&mut s, "UPDATE meta SET k = 'zzz' WHERE id = 2");
    q(&mut s, "DELETE FROM meta WHERE id = 3");
    assert_eq!(r(&mut s, "SELECT id FROM meta WHERE k = 'abq'"), vec!["1"]);
    assert_eq!(
        r(&mut s, "SELECT id FROM meta WHERE k = 'aba'"),
        Vec::<String>::new()
    );
    assert_eq!(r(&mut s, "SELECT id FROM meta WHERE k = 'abm'"), vec!["8"]);
    let shown = r(&mut s, "SHOW CREATE TABLE meta");
    assert!(
        shown[0].contains("KEY `k` (`k`(3))") && shown[0].contains("KEY `vb` (`v`(2),`b`(2))"),
        "{shown:?}"
    );
    let sub: Vec<String> = q(&mut s, "SHOW INDEX FROM meta")
        .rows
        .iter()
        .map(|row| format!("{}:{}", common::text(&row[2]), common::text(&row[7])))
        .collect();
    assert_eq!(
        sub,
        vec!["PRIMARY:NULL", "post:NULL", "k:3", "vb:2", "vb:2"]
    );

    // UNIQUE on a prefix: the first characters must differ; NULLs may repeat.
    q(
        &mut s,
        "CREATE TABLE u (a TEXT, c VARCHAR(10), UNIQUE (a(1)))",
    );
    q(
        &mut s,
        "INSERT INTO u VALUES ('abc', 'x'), ('b', 'y'), (NULL, 'z'), (NULL, 'w')",
    );
    let mut c = Collect::default();
    let e = s
        .query("INSERT INTO u VALUES ('axy', 'v')", &mut c)
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (1062, "Duplicate entry 'a' for key 'u.a'")
    );
    assert_eq!(err(&mut s, "CREATE UNIQUE INDEX uc ON u (c(0))"), 1089);
    q(&mut s, "CREATE UNIQUE INDEX uc ON u (c(1))");
    assert_eq!(err(&mut s, "INSERT INTO u VALUES ('q', 'xx')"), 1062);
    q(&mut s, "INSERT INTO u VALUES ('日本', '日'), ('本x', '本')");
    assert_eq!(err(&mut s, "INSERT INTO u VALUES ('q', '日本')"), 1062);
    assert_eq!(
        err(&mut s, "ALTER TABLE meta ADD UNIQUE KEY kk (k(2))"),
        1062
    );

    // What MySQL refuses.
    assert_eq!(err(&mut s, "CREATE TABLE e1 (a INT, KEY (a(2)))"), 1089);
    assert_eq!(
        err(&mut s, "CREATE TABLE e2 (a VARCHAR(5), KEY (a(6)))"),
        1089
    );
    assert_eq!(
        err(&mut s, "CREATE TABLE e3 (a VARCHAR(5), PRIMARY KEY (a(2)))"),
        1235
    );
    assert_eq!(err(&mut s, "ALTER TABLE meta MODIFY k INT"), 1089);

    // ALTER keeps the prefixes through a copy and drops a dropped
    // column's part.
    q(
        &mut s,
        "ALTER TABLE meta ADD COLUMN n INT FIRST, DROP COLUMN b",
    );
    let shown = r(&mut s, "SHOW CREATE TABLE meta");
    assert!(
        shown[0].contains("KEY `k` (`k`(3))") && shown[0].contains("KEY `vb` (`v`(2))"),
        "{shown:?}"
    );
    assert_eq!(
        r(&mut s, "SELECT id FROM meta WHERE v = 'z' ORDER BY id"),
        vec!["6", "7"]
    );
    assert_clean(&db, &[("p", "meta"), ("p", "u")]);

    // A restart reads the prefixes back.
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "USE p");
    assert_eq!(r(&mut s, "SELECT id FROM meta WHERE k = 'abm'"), vec!["8"]);
    assert_eq!(err(&mut s, "INSERT INTO u VALUES ('bcd', 'k')"), 1062);
    assert_clean(&db, &[("p", "meta"), ("p", "u")]);
}
