//! FOREIGN KEY and CHECK constraints end to end: each referential action,
//! MySQL's error codes and messages, NULLs, self-references, multi-level
//! cascades and their depth limit, `foreign_key_checks=0`, ALTER TABLE
//! ADD/DROP, SHOW CREATE TABLE round trips, information_schema, the
//! atomicity of a failing cascade, and a dictionary written without
//! constraints opening as before.

mod common;

use cairndb_sql::{Collect, Session};
use common::{err, open, q, rows, session};

/// Runs `sql`, which must fail: (code, message).
fn fail(s: &mut Session, sql: &str) -> (u16, String) {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{sql}: expected an error"),
        Err(e) => (e.code, e.message),
    }
}

fn all(s: &mut Session, t: &str) -> Vec<String> {
    rows(&q(s, &format!("SELECT * FROM {t} ORDER BY 1")))
}

fn create_text(s: &mut Session, t: &str) -> String {
    let c = q(s, &format!("SHOW CREATE TABLE {t}"));
    common::text(&c.rows[0][1])
}

fn db(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    q(s, "USE d");
}

fn parent_child(s: &mut Session, actions: &str) {
    db(s);
    q(s, "CREATE TABLE p (id INT PRIMARY KEY, v INT)");
    q(
        s,
        &format!(
            "CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) {actions})"
        ),
    );
    q(s, "INSERT INTO p VALUES (1, 10), (2, 20)");
    q(s, "INSERT INTO c VALUES (1, 1), (2, 1), (3, 2)");
}

#[test]
fn child_insert_and_update_need_a_parent() {
    let (_d, mut s) = session();
    parent_child(&mut s, "");
    let (code, msg) = fail(&mut s, "INSERT INTO c VALUES (9, 7)");
    assert_eq!(code, 1452);
    assert_eq!(
        msg,
        "Cannot add or update a child row: a foreign key constraint fails (`d`.`c`, CONSTRAINT `c_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `p` (`id`))"
    );
    assert_eq!(err(&mut s, "UPDATE c SET pid = 5 WHERE id = 1"), 1452);
    q(&mut s, "UPDATE c SET pid = 2 WHERE id = 1");
    // NULL in the child column skips the check.
    q(&mut s, "INSERT INTO c VALUES (4, NULL)");
    q(&mut s, "UPDATE c SET pid = NULL WHERE id = 2");
    assert_eq!(all(&mut s, "c"), ["1|2", "2|NULL", "3|2", "4|NULL"]);
    // A multi-row insert that fails on its last row leaves nothing.
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (5, 1), (6, 99)"), 1452);
    assert_eq!(all(&mut s, "c").len(), 4);
    // INSERT IGNORE skips the row with a warning.
    q(&mut s, "INSERT IGNORE INTO c VALUES (5, 1), (6, 99)");
    assert_eq!(all(&mut s, "c").len(), 5);
}

#[test]
fn restrict_and_no_action_refuse_parent_delete_and_update() {
    for actions in [
        "",
        "ON DELETE RESTRICT ON UPDATE RESTRICT",
        "ON DELETE NO ACTION",
    ] {
        let (_d, mut s) = session();
        parent_child(&mut s, actions);
        let (code, msg) = fail(&mut s, "DELETE FROM p WHERE id = 1");
        assert_eq!(code, 1451, "{actions}");
        assert!(
            msg.starts_with("Cannot delete or update a parent row: a foreign key constraint fails (`d`.`c`, CONSTRAINT `c_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `p` (`id`)"),
            "{msg}"
        );
        assert_eq!(err(&mut s, "UPDATE p SET id = 5 WHERE id = 2"), 1451);
        // Changing other columns is fine; so is a parent without children.
        q(&mut s, "UPDATE p SET v = 11 WHERE id = 1");
        q(&mut s, "INSERT INTO p VALUES (3, 30)");
        q(&mut s, "DELETE FROM p WHERE id = 3");
        assert_eq!(all(&mut s, "p"), ["1|11", "2|20"]);
    }
}

#[test]
fn restrict_message_shows_the_actions() {
    let (_d, mut s) = session();
    parent_child(&mut s, "ON DELETE RESTRICT ON UPDATE CASCADE");
    let (_, msg) = fail(&mut s, "DELETE FROM p WHERE id = 1");
    assert_eq!(
        msg,
        "Cannot delete or update a parent row: a foreign key constraint fails (`d`.`c`, CONSTRAINT `c_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `p` (`id`) ON DELETE RESTRICT ON UPDATE CASCADE)"
    );
}

#[test]
fn cascade_deletes_and_updates_children() {
    let (_d, mut s) = session();
    parent_child(&mut s, "ON DELETE CASCADE ON UPDATE CASCADE");
    q(&mut s, "DELETE FROM p WHERE id = 1");
    assert_eq!(all(&mut s, "c"), ["3|2"]);
    q(&mut s, "UPDATE p SET id = 7 WHERE id = 2");
    assert_eq!(all(&mut s, "c"), ["3|7"]);
    q(&mut s, "DELETE FROM p");
    assert!(all(&mut s, "c").is_empty());
}

#[test]
fn set_null_clears_children() {
    let (_d, mut s) = session();
    parent_child(&mut s, "ON DELETE SET NULL ON UPDATE SET NULL");
    q(&mut s, "DELETE FROM p WHERE id = 1");
    assert_eq!(all(&mut s, "c"), ["1|NULL", "2|NULL", "3|2"]);
    q(&mut s, "UPDATE p SET id = 8 WHERE id = 2");
    assert_eq!(all(&mut s, "c"), ["1|NULL", "2|NULL", "3|NULL"]);
}

#[test]
fn set_null_on_a_not_null_column_is_1830() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    let (code, msg) = fail(
        &mut s,
        "CREATE TABLE c (pid INT NOT NULL, CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id) ON DELETE SET NULL)",
    );
    assert_eq!(code, 1830);
    assert_eq!(
        msg,
        "Column 'pid' cannot be NOT NULL: needed in a foreign key constraint 'fk' SET NULL"
    );
}

#[test]
fn create_errors_as_innodb() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE p (id INT PRIMARY KEY, a INT, b INT, s VARCHAR(10), KEY ab (a, b))",
    );
    // No index leads with the referenced columns.
    let (code, msg) = fail(
        &mut s,
        "CREATE TABLE c (x INT, CONSTRAINT fx FOREIGN KEY (x) REFERENCES p (b))",
    );
    assert_eq!(code, 1822);
    assert_eq!(
        msg,
        "Failed to add the foreign key constraint. Missing index for constraint 'fx' in the referenced table 'p'"
    );
    // A leading part of an index is enough.
    q(
        &mut s,
        "CREATE TABLE c1 (x INT, FOREIGN KEY (x) REFERENCES p (a))",
    );
    // Incompatible types.
    let (code, msg) = fail(
        &mut s,
        "CREATE TABLE c2 (x BIGINT, CONSTRAINT fy FOREIGN KEY (x) REFERENCES p (id))",
    );
    assert_eq!(code, 3780);
    assert_eq!(
        msg,
        "Referencing column 'x' and referenced column 'id' in foreign key constraint 'fy' are incompatible."
    );
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE c2 (x INT UNSIGNED, FOREIGN KEY (x) REFERENCES p (id))"
        ),
        3780
    );
    // Missing parent.
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE c2 (x INT, FOREIGN KEY (x) REFERENCES nope (id))"
        ),
        1824
    );
    // Duplicate name in the database.
    q(
        &mut s,
        "CREATE TABLE c2 (x INT, CONSTRAINT dup FOREIGN KEY (x) REFERENCES p (id))",
    );
    let (code, msg) = fail(
        &mut s,
        "CREATE TABLE c3 (x INT, CONSTRAINT dup FOREIGN KEY (x) REFERENCES p (id))",
    );
    assert_eq!(code, 1826);
    assert_eq!(msg, "Duplicate foreign key constraint name 'dup'");
    // Generated names and the index made for the child.
    q(
        &mut s,
        "CREATE TABLE c4 (x INT, y INT, FOREIGN KEY (x) REFERENCES p (id), FOREIGN KEY (y) REFERENCES p (id))",
    );
    let text = create_text(&mut s, "c4");
    assert!(text.contains("  KEY `x` (`x`),\n  KEY `y` (`y`),\n  CONSTRAINT `c4_ibfk_1` FOREIGN KEY (`x`) REFERENCES `p` (`id`),\n  CONSTRAINT `c4_ibfk_2` FOREIGN KEY (`y`) REFERENCES `p` (`id`)\n"), "{text}");
    // An existing index leading with the columns is used.
    q(
        &mut s,
        "CREATE TABLE c5 (x INT, y INT, KEY xy (x, y), FOREIGN KEY (x) REFERENCES p (id))",
    );
    assert!(!create_text(&mut s, "c5").contains("KEY `x`"));
}

#[test]
fn column_level_references_is_ignored_as_mysql_8_0() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    q(&mut s, "CREATE TABLE c (pid INT REFERENCES p (id))");
    q(&mut s, "INSERT INTO c VALUES (42)");
    assert!(!create_text(&mut s, "c").contains("FOREIGN KEY"));
}

#[test]
fn self_referencing_table() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE tree (id INT PRIMARY KEY, parent INT, FOREIGN KEY (parent) REFERENCES tree (id) ON DELETE CASCADE)",
    );
    // A row may reference itself; children need their parent first.
    q(&mut s, "INSERT INTO tree VALUES (1, 1)");
    q(
        &mut s,
        "INSERT INTO tree VALUES (2, 1), (3, 2), (4, 3), (5, NULL)",
    );
    assert_eq!(err(&mut s, "INSERT INTO tree VALUES (6, 60)"), 1452);
    q(&mut s, "DELETE FROM tree WHERE id = 2");
    assert_eq!(all(&mut s, "tree"), ["1|1", "5|NULL"]);
    q(&mut s, "DELETE FROM tree");
    assert!(all(&mut s, "tree").is_empty());
}

#[test]
fn self_referencing_update_cascade_is_refused_as_innodb() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, up INT, FOREIGN KEY (up) REFERENCES t (id) ON UPDATE CASCADE)",
    );
    q(&mut s, "INSERT INTO t VALUES (1, NULL), (2, 1)");
    assert_eq!(err(&mut s, "UPDATE t SET id = 10 WHERE id = 1"), 1451);
    assert_eq!(all(&mut s, "t"), ["1|NULL", "2|1"]);
}

#[test]
fn multi_level_cascade_and_depth_limit() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE t0 (id INT PRIMARY KEY)");
    for i in 1..=16 {
        q(
            &mut s,
            &format!(
                "CREATE TABLE t{i} (id INT PRIMARY KEY, FOREIGN KEY (id) REFERENCES t{} (id) ON DELETE CASCADE)",
                i - 1
            ),
        );
    }
    for i in 0..=16 {
        q(&mut s, &format!("INSERT INTO t{i} VALUES (1), (2)"));
    }
    // 16 levels below t0: one too many.
    let (code, msg) = fail(&mut s, "DELETE FROM t0 WHERE id = 1");
    assert_eq!(code, 3008);
    assert_eq!(
        msg,
        "Foreign key cascade delete/update exceeds max depth of 15."
    );
    // Nothing changed anywhere.
    for i in 0..=16 {
        assert_eq!(all(&mut s, &format!("t{i}")), ["1", "2"]);
    }
    // 15 levels are fine.
    q(&mut s, "DELETE FROM t1 WHERE id = 1");
    for i in 1..=16 {
        assert_eq!(all(&mut s, &format!("t{i}")), ["2"]);
    }
    assert_eq!(all(&mut s, "t0"), ["1", "2"]);
}

#[test]
fn failing_cascade_rolls_back_whole_statement() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE a (id INT PRIMARY KEY)");
    q(
        &mut s,
        "CREATE TABLE b (id INT PRIMARY KEY, aid INT, FOREIGN KEY (aid) REFERENCES a (id) ON DELETE CASCADE)",
    );
    q(
        &mut s,
        "CREATE TABLE c (id INT PRIMARY KEY, bid INT, FOREIGN KEY (bid) REFERENCES b (id))",
    );
    q(&mut s, "INSERT INTO a VALUES (1), (2)");
    q(&mut s, "INSERT INTO b VALUES (10, 1), (20, 2), (21, 2)");
    q(&mut s, "INSERT INTO c VALUES (100, 21)");
    // a=1 cascades fine; a=2 reaches b=21 which c restricts.
    q(&mut s, "BEGIN");
    q(&mut s, "INSERT INTO a VALUES (3)");
    assert_eq!(err(&mut s, "DELETE FROM a"), 1451);
    // The statement left nothing; the transaction's earlier work stays.
    assert_eq!(all(&mut s, "a"), ["1", "2", "3"]);
    assert_eq!(all(&mut s, "b"), ["10|1", "20|2", "21|2"]);
    q(&mut s, "COMMIT");
    assert_eq!(all(&mut s, "a"), ["1", "2", "3"]);
    // In autocommit too.
    assert_eq!(err(&mut s, "DELETE FROM a WHERE id IN (1, 2)"), 1451);
    assert_eq!(all(&mut s, "b"), ["10|1", "20|2", "21|2"]);
    q(&mut s, "DELETE FROM c");
    q(&mut s, "DELETE FROM a WHERE id IN (1, 2)");
    assert!(all(&mut s, "b").is_empty());
}

#[test]
fn foreign_key_checks_off_loads_in_any_order_then_on_again() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "SET foreign_key_checks = 0");
    // The child first, its parent missing (as mysqldump may write them).
    q(
        &mut s,
        "CREATE TABLE c (id INT PRIMARY KEY, pid INT, CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id))",
    );
    q(&mut s, "INSERT INTO c VALUES (1, 1), (2, 5)");
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    q(&mut s, "INSERT INTO p VALUES (1)");
    q(&mut s, "SET foreign_key_checks = 1");
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (3, 5)"), 1452);
    assert_eq!(err(&mut s, "DELETE FROM p"), 1451);
    // DROP and TRUNCATE of a parent.
    let (code, msg) = fail(&mut s, "DROP TABLE p");
    assert_eq!(code, 3730);
    assert_eq!(
        msg,
        "Cannot drop table 'p' referenced by a foreign key constraint 'fk' on table 'c'."
    );
    let (code, msg) = fail(&mut s, "TRUNCATE TABLE p");
    assert_eq!(code, 1701);
    assert_eq!(
        msg,
        "Cannot truncate a table referenced in a foreign key constraint (`d`.`c`, CONSTRAINT `fk`)"
    );
    // Dropped together with its child, a parent may go.
    q(&mut s, "DROP TABLE p, c");
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    q(
        &mut s,
        "CREATE TABLE c (pid INT, FOREIGN KEY (pid) REFERENCES p (id))",
    );
    q(&mut s, "SET foreign_key_checks = 0");
    q(&mut s, "TRUNCATE TABLE p");
    q(&mut s, "DROP TABLE p");
    q(&mut s, "INSERT INTO c VALUES (7)");
}

#[test]
fn alter_add_and_drop_foreign_key() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    q(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, pid INT)");
    q(&mut s, "INSERT INTO p VALUES (1)");
    q(&mut s, "INSERT INTO c VALUES (1, 1), (2, 2)");
    // Existing rows are checked.
    assert_eq!(
        err(
            &mut s,
            "ALTER TABLE c ADD CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id)"
        ),
        1452
    );
    assert!(!create_text(&mut s, "c").contains("fk"));
    q(&mut s, "DELETE FROM c WHERE id = 2");
    q(
        &mut s,
        "ALTER TABLE c ADD CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE",
    );
    let text = create_text(&mut s, "c");
    assert!(text.contains("  KEY `fk` (`pid`),\n  CONSTRAINT `fk` FOREIGN KEY (`pid`) REFERENCES `p` (`id`) ON DELETE CASCADE\n"), "{text}");
    // The index the key needs stays (1553) while the key is there.
    assert_eq!(err(&mut s, "ALTER TABLE c DROP INDEX fk"), 1553);
    assert_eq!(err(&mut s, "ALTER TABLE c DROP COLUMN pid"), 1828);
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (3, 3)"), 1452);
    q(&mut s, "DELETE FROM p");
    assert!(all(&mut s, "c").is_empty());
    assert_eq!(err(&mut s, "ALTER TABLE c DROP FOREIGN KEY nope"), 1091);
    q(&mut s, "ALTER TABLE c DROP FOREIGN KEY fk");
    q(&mut s, "INSERT INTO c VALUES (3, 3)");
    q(&mut s, "ALTER TABLE c DROP INDEX fk");
    // DROP CONSTRAINT finds a foreign key too.
    q(&mut s, "DELETE FROM c");
    q(
        &mut s,
        "ALTER TABLE c ADD FOREIGN KEY (pid) REFERENCES p (id)",
    );
    q(&mut s, "ALTER TABLE c DROP CONSTRAINT c_ibfk_1");
    assert_eq!(err(&mut s, "ALTER TABLE c DROP CONSTRAINT c_ibfk_1"), 3940);
}

#[test]
fn check_constraints() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE t (a INT CHECK (a > 0), b INT CONSTRAINT b_small CHECK (b < 100), CHECK (a <> b), CONSTRAINT lax CHECK (b > 50) NOT ENFORCED)",
    );
    q(&mut s, "INSERT INTO t VALUES (1, 2)");
    let (code, msg) = fail(&mut s, "INSERT INTO t VALUES (0, 2)");
    assert_eq!(code, 3819);
    assert_eq!(msg, "Check constraint 't_chk_1' is violated.");
    assert_eq!(
        fail(&mut s, "INSERT INTO t VALUES (1, 200)").1,
        "Check constraint 'b_small' is violated."
    );
    assert_eq!(
        fail(&mut s, "INSERT INTO t VALUES (3, 3)").1,
        "Check constraint 't_chk_2' is violated."
    );
    assert_eq!(err(&mut s, "UPDATE t SET a = -1"), 3819);
    // NULL passes.
    q(&mut s, "INSERT INTO t VALUES (NULL, NULL)");
    // INSERT IGNORE skips with a warning.
    q(&mut s, "INSERT IGNORE INTO t VALUES (-5, 1), (5, 1)");
    assert_eq!(all(&mut s, "t"), ["NULL|NULL", "1|2", "5|1"]);
    // ALTER: add (rows checked), drop.
    assert_eq!(err(&mut s, "ALTER TABLE t ADD CHECK (a > 2)"), 3819);
    q(&mut s, "ALTER TABLE t ADD CONSTRAINT big CHECK (a < 1000)");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (2000, 1)"), 3819);
    q(&mut s, "ALTER TABLE t DROP CHECK big");
    q(&mut s, "INSERT INTO t VALUES (2000, 1)");
    assert_eq!(err(&mut s, "ALTER TABLE t DROP CHECK big"), 3821);
    q(&mut s, "ALTER TABLE t DROP CONSTRAINT b_small");
    q(&mut s, "INSERT INTO t VALUES (7, 500)");
    // Duplicate names in the database.
    assert_eq!(
        fail(
            &mut s,
            "CREATE TABLE u (x INT, CONSTRAINT lax CHECK (x > 0))"
        ),
        (3822, "Duplicate check constraint name 'lax'.".into())
    );
}

#[test]
fn check_expressions_refused_as_mysql() {
    let (_d, mut s) = session();
    db(&mut s);
    let (code, msg) = fail(&mut s, "CREATE TABLE t (a INT, CHECK (a < RAND()))");
    assert_eq!(code, 3814);
    assert_eq!(
        msg,
        "An expression of a check constraint 't_chk_1' contains disallowed function: rand."
    );
    assert_eq!(
        err(&mut s, "CREATE TABLE t (a INT, CHECK (a < NOW()))"),
        3814
    );
    assert_eq!(
        err(&mut s, "CREATE TABLE t (a INT, CHECK (a IN (SELECT 1)))"),
        3815
    );
    assert_eq!(err(&mut s, "CREATE TABLE t (a INT, CHECK (a < @x))"), 3816);
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE t (a INT, CHECK (a < @@max_connections))"
        ),
        3816
    );
    assert_eq!(err(&mut s, "CREATE TABLE t (a INT, CHECK (zz > 0))"), 3820);
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE t (a INT AUTO_INCREMENT PRIMARY KEY, CHECK (a > 0))"
        ),
        3818
    );
}

#[test]
fn show_create_table_round_trip() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE p (id INT PRIMARY KEY, code CHAR(3), UNIQUE KEY code (code))",
    );
    q(
        &mut s,
        "CREATE TABLE c (id INT PRIMARY KEY, pid INT, code CHAR(3), n INT, \
         CONSTRAINT to_p FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE ON UPDATE SET NULL, \
         FOREIGN KEY (code) REFERENCES p (code) ON DELETE RESTRICT, \
         CHECK (n >= 0), CONSTRAINT soft CHECK (n < 10) NOT ENFORCED)",
    );
    let text = create_text(&mut s, "c");
    assert!(text.contains("  CONSTRAINT `to_p` FOREIGN KEY (`pid`) REFERENCES `p` (`id`) ON DELETE CASCADE ON UPDATE SET NULL,\n"), "{text}");
    assert!(text.contains("  CONSTRAINT `c_ibfk_1` FOREIGN KEY (`code`) REFERENCES `p` (`code`) ON DELETE RESTRICT,\n"), "{text}");
    assert!(
        text.contains("  CONSTRAINT `c_chk_1` CHECK ((`n` >= 0)),\n"),
        "{text}"
    );
    assert!(
        text.contains("  CONSTRAINT `soft` CHECK ((`n` < 10)) /*!80016 NOT ENFORCED */\n"),
        "{text}"
    );
    // Its output creates the same table again (in another database).
    q(&mut s, "CREATE DATABASE e");
    q(&mut s, "USE e");
    q(
        &mut s,
        "CREATE TABLE p (id INT PRIMARY KEY, code CHAR(3), UNIQUE KEY code (code))",
    );
    q(&mut s, &text);
    assert_eq!(create_text(&mut s, "c"), text);
    q(&mut s, "INSERT INTO p VALUES (1, 'abc')");
    q(&mut s, "INSERT INTO c VALUES (1, 1, 'abc', 20)");
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (2, 1, 'abc', -1)"), 3819);
    q(&mut s, "INSERT INTO c VALUES (2, NULL, 'abc', 1)");
    // Row 2 holds the parent's code (RESTRICT).
    assert_eq!(err(&mut s, "DELETE FROM p"), 1451);
    q(&mut s, "DELETE FROM c WHERE id = 2");
    // Row 1 goes with its parent (CASCADE on pid).
    q(&mut s, "DELETE FROM p");
    assert!(all(&mut s, "c").is_empty());
}

#[test]
fn parent_in_another_database() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE a");
    q(&mut s, "CREATE TABLE a.p (id INT PRIMARY KEY)");
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE c (pid INT, FOREIGN KEY (pid) REFERENCES a.p (id))",
    );
    assert!(create_text(&mut s, "c").contains("REFERENCES `a`.`p` (`id`)"));
    let (_, msg) = fail(&mut s, "INSERT INTO c VALUES (1)");
    assert!(msg.contains("REFERENCES `a`.`p` (`id`)"), "{msg}");
    q(&mut s, "INSERT INTO a.p VALUES (1)");
    q(&mut s, "INSERT INTO c VALUES (1)");
}

#[test]
fn information_schema_rows() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE p (id INT PRIMARY KEY, u INT, UNIQUE KEY uu (u))",
    );
    q(
        &mut s,
        "CREATE TABLE c (id INT PRIMARY KEY, pid INT, CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE, CONSTRAINT ck CHECK (id > 0))",
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT TABLE_NAME, CONSTRAINT_NAME, CONSTRAINT_TYPE, ENFORCED FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = 'd' ORDER BY 1, 2"
        )),
        [
            "c|ck|CHECK|YES",
            "c|fk|FOREIGN KEY|YES",
            "c|PRIMARY|PRIMARY KEY|YES",
            "p|PRIMARY|PRIMARY KEY|YES",
            "p|uu|UNIQUE|YES",
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, ORDINAL_POSITION, POSITION_IN_UNIQUE_CONSTRAINT, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'd' ORDER BY 1, 2"
        )),
        [
            "c|fk|pid|1|1|d|p|id",
            "c|PRIMARY|id|1|NULL|NULL|NULL|NULL",
            "p|PRIMARY|id|1|NULL|NULL|NULL|NULL",
            "p|uu|u|1|NULL|NULL|NULL|NULL",
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT CONSTRAINT_NAME, UNIQUE_CONSTRAINT_NAME, MATCH_OPTION, UPDATE_RULE, DELETE_RULE, TABLE_NAME, REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS"
        )),
        ["fk|PRIMARY|NONE|NO ACTION|CASCADE|c|p"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT CONSTRAINT_SCHEMA, CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS"
        )),
        ["d|ck|(`id` > 0)"]
    );
}

#[test]
fn constraints_survive_a_restart_and_old_dictionaries_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Session::new(open(dir.path()), "root");
        db(&mut s);
        // Written without constraints: the definition has no such fields.
        q(&mut s, "CREATE TABLE plain (id INT PRIMARY KEY, v INT)");
        q(&mut s, "INSERT INTO plain VALUES (1, 1)");
        q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
        q(
            &mut s,
            "CREATE TABLE c (pid INT, FOREIGN KEY (pid) REFERENCES p (id), CHECK (pid < 10))",
        );
    }
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "USE d");
    assert_eq!(all(&mut s, "plain"), ["1|1"]);
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (1)"), 1452);
    q(&mut s, "INSERT INTO p VALUES (1), (20)");
    q(&mut s, "INSERT INTO c VALUES (1)");
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (20)"), 3819);
    assert_eq!(err(&mut s, "DELETE FROM p WHERE id = 1"), 1451);
}

#[test]
fn table_definition_json_without_constraints_reads() {
    // A definition as written before constraints existed.
    let json = r#"{"name":"t","columns":[{"name":"id","ty":{"Int":{"bytes":4,"unsigned":false}},"nullable":false,"default":null,"auto_increment":false}],"primary":{"name":"PRIMARY","id":256,"columns":[0],"unique":true},"hidden_pk":false,"secondary":[]}"#;
    let t: cairndb_sql::internals::TableDef = serde_json::from_str(json).unwrap();
    assert!(t.foreign_keys.is_empty() && t.checks.is_empty());
    // And a table without any is written without the fields.
    let back = serde_json::to_string(&t).unwrap();
    assert!(!back.contains("foreign_keys") && !back.contains("checks"));
}

#[test]
fn replace_and_on_duplicate_key_update_follow_the_rules() {
    let (_d, mut s) = session();
    parent_child(&mut s, "ON DELETE CASCADE ON UPDATE CASCADE");
    // REPLACE of a parent deletes it first: its children go.
    q(&mut s, "REPLACE INTO p VALUES (1, 11)");
    assert_eq!(all(&mut s, "c"), ["3|2"]);
    // ON DUPLICATE KEY UPDATE of a child is checked.
    assert_eq!(
        err(
            &mut s,
            "INSERT INTO c VALUES (3, 2) ON DUPLICATE KEY UPDATE pid = 99"
        ),
        1452
    );
    q(
        &mut s,
        "INSERT INTO c VALUES (3, 2) ON DUPLICATE KEY UPDATE pid = 1",
    );
    assert_eq!(all(&mut s, "c"), ["3|1"]);
}

#[test]
fn parent_row_is_share_locked_by_a_child_insert() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = Session::new(db.clone(), "root");
    let mut b = Session::new(db, "root");
    parent_child(&mut a, "");
    q(&mut b, "USE d");
    q(&mut b, "SET innodb_lock_wait_timeout = 1");
    q(&mut a, "BEGIN");
    q(&mut a, "INSERT INTO c VALUES (10, 2)");
    // The parent row is locked until a commits: b's delete waits and
    // times out.
    q(&mut b, "DELETE FROM c WHERE pid = 2 AND id = 3");
    assert_eq!(err(&mut b, "DELETE FROM p WHERE id = 2"), 1205);
    q(&mut a, "COMMIT");
    assert_eq!(err(&mut b, "DELETE FROM p WHERE id = 2"), 1451);
}

#[test]
fn alter_add_check_not_enforced_in_mysql_comment() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE t (a INT)");
    q(
        &mut s,
        "ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0) /*!80016 NOT ENFORCED */",
    );
    q(&mut s, "INSERT INTO t VALUES (-1)");
    assert!(create_text(&mut s, "t").contains("/*!80016 NOT ENFORCED */"));
}

#[test]
fn renamed_parent_and_self_referencing_table_keep_their_keys() {
    let (_d, mut s) = session();
    parent_child(&mut s, "ON DELETE CASCADE");
    q(&mut s, "RENAME TABLE p TO p2");
    assert!(create_text(&mut s, "c").contains("REFERENCES `p2` (`id`)"));
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (9, 9)"), 1452);
    q(&mut s, "ALTER TABLE p2 RENAME TO p3");
    q(&mut s, "DELETE FROM p3 WHERE id = 1");
    assert_eq!(all(&mut s, "c"), ["3|2"]);
    q(
        &mut s,
        "CREATE TABLE tree (id INT PRIMARY KEY, up INT, FOREIGN KEY (up) REFERENCES tree (id))",
    );
    q(&mut s, "INSERT INTO tree VALUES (1, NULL), (2, 1)");
    q(&mut s, "RENAME TABLE tree TO tree2");
    assert!(create_text(&mut s, "tree2").contains("REFERENCES `tree2` (`id`)"));
    assert_eq!(err(&mut s, "INSERT INTO tree2 VALUES (3, 7)"), 1452);
    assert_eq!(err(&mut s, "DELETE FROM tree2 WHERE id = 1"), 1451);
    // After a restart too.
    drop(s);
}

#[test]
fn altering_a_parent_keeps_its_children_keys_working() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    parent_child(&mut s, "");
    assert_eq!(err(&mut s, "ALTER TABLE p DROP PRIMARY KEY"), 1553);
    assert_eq!(err(&mut s, "ALTER TABLE p DROP COLUMN id"), 1829);
    // A renamed referenced column is renamed in the child's key.
    q(&mut s, "ALTER TABLE p RENAME COLUMN id TO pk");
    assert!(create_text(&mut s, "c").contains("REFERENCES `p` (`pk`)"));
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (9, 9)"), 1452);
    // A copy of the parent (new index ids) keeps working.
    q(&mut s, "ALTER TABLE p ADD COLUMN w INT FIRST");
    q(&mut s, "INSERT INTO c VALUES (9, 2)");
    assert_eq!(err(&mut s, "DELETE FROM p WHERE pk = 2"), 1451);
    q(&mut s, "RENAME TABLE p TO p2");
    // The children's keys were written to the dictionary with the change.
    drop(s);
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "USE d");
    assert!(create_text(&mut s, "c").contains("REFERENCES `p2` (`pk`)"));
    assert_eq!(err(&mut s, "DELETE FROM p2 WHERE pk = 2"), 1451);
}

#[test]
fn alter_check_enforced_and_not_enforced() {
    let (_d, mut s) = session();
    db(&mut s);
    q(
        &mut s,
        "CREATE TABLE t (a INT, CONSTRAINT pos CHECK (a > 0))",
    );
    q(&mut s, "ALTER TABLE t ALTER CHECK pos NOT ENFORCED");
    q(&mut s, "INSERT INTO t VALUES (-1)");
    assert!(create_text(&mut s, "t").contains("CHECK ((`a` > 0)) /*!80016 NOT ENFORCED */"));
    // Enforcing it again checks the rows there.
    assert_eq!(
        err(&mut s, "ALTER TABLE t ALTER CONSTRAINT pos ENFORCED"),
        3819
    );
    q(&mut s, "DELETE FROM t");
    q(&mut s, "ALTER TABLE t ALTER CONSTRAINT pos ENFORCED");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (-1)"), 3819);
    assert_eq!(err(&mut s, "ALTER TABLE t ALTER CHECK nope ENFORCED"), 3821);
}

#[test]
fn check_on_a_referential_action_column_is_3823() {
    let (_d, mut s) = session();
    db(&mut s);
    q(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    let (code, msg) = fail(
        &mut s,
        "CREATE TABLE c (pid INT, CONSTRAINT ck CHECK (pid > 0), CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)",
    );
    assert_eq!(code, 3823);
    assert_eq!(
        msg,
        "Column 'pid' cannot be used in a check constraint 'ck': needed in a foreign key constraint 'fk' referential action."
    );
    // RESTRICT is no referential action.
    q(
        &mut s,
        "CREATE TABLE c (pid INT, CHECK (pid > 0), FOREIGN KEY (pid) REFERENCES p (id))",
    );
    q(
        &mut s,
        "CREATE TABLE c2 (pid INT, FOREIGN KEY (pid) REFERENCES p (id) ON UPDATE SET NULL)",
    );
    assert_eq!(err(&mut s, "ALTER TABLE c2 ADD CHECK (pid < 5)"), 3823);
}

/// DROP DATABASE once dropped a parent table whose children live in
/// another database, leaving their foreign keys pointing at nothing.
#[test]
fn drop_database_keeps_parents_of_other_databases_children() {
    let (_d, mut s) = session();
    for sql in [
        "CREATE DATABASE pdb",
        "CREATE DATABASE cdb",
        "CREATE TABLE pdb.p (id INT PRIMARY KEY)",
        "CREATE TABLE cdb.c (id INT PRIMARY KEY, pid INT, \
         CONSTRAINT fk_c FOREIGN KEY (pid) REFERENCES pdb.p (id))",
        "INSERT INTO pdb.p VALUES (1)",
        "INSERT INTO cdb.c VALUES (1, 1)",
    ] {
        q(&mut s, sql);
    }
    let (code, msg) = fail(&mut s, "DROP DATABASE pdb");
    assert_eq!(code, 3730, "{msg}");
    assert!(msg.contains("fk_c"), "{msg}");
    assert_eq!(rows(&q(&mut s, "SELECT * FROM pdb.p")), vec!["1"]);
    // The child's database goes first; then the parent's may.
    q(&mut s, "DROP DATABASE cdb");
    q(&mut s, "DROP DATABASE pdb");
    // With the checks off, as in MySQL, the parent may go first.
    for sql in [
        "CREATE DATABASE pdb",
        "CREATE DATABASE cdb",
        "CREATE TABLE pdb.p (id INT PRIMARY KEY)",
        "CREATE TABLE cdb.c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES pdb.p (id))",
        "SET foreign_key_checks = 0",
        "DROP DATABASE pdb",
    ] {
        q(&mut s, sql);
    }
}
