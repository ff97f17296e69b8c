//! RIGHT JOIN, JOIN ... USING and NATURAL JOIN: rows, the columns `*`
//! lists (common columns once, first), unqualified and qualified names
//! of the common columns, and errors. Expected results are MariaDB
//! 10.11's for the same statements.

use cairndb_sql::Session;

mod common;
use common::{err, q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn names(s: &mut Session, sql: &str) -> Vec<String> {
    q(s, sql).columns.iter().map(|c| c.name.clone()).collect()
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    for sql in [
        "CREATE DATABASE d",
        "USE d",
        "CREATE TABLE a (id INT PRIMARY KEY, k INT, x INT)",
        "CREATE TABLE b (k INT, id INT, y INT)",
        "CREATE TABLE c (k INT, z INT)",
        "INSERT INTO a VALUES (1,1,10),(2,2,20),(3,NULL,30),(4,5,40)",
        "INSERT INTO b VALUES (1,100,1000),(1,101,1001),(3,102,1002),(NULL,103,1003)",
        "INSERT INTO c VALUES (1,7),(3,8)",
    ] {
        q(&mut s, sql);
    }
    (dir, s)
}

#[test]
fn join_using_lists_the_common_column_once_and_first() {
    let (_d, mut s) = session();
    let sql = "SELECT * FROM a JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "x", "id", "y"]);
    assert_eq!(r(&mut s, sql), vec!["1|1|10|100|1000", "1|1|10|101|1001"]);
    let sql = "SELECT * FROM a LEFT JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|100|1000",
            "1|1|10|101|1001",
            "2|2|20|NULL|NULL",
            "NULL|3|30|NULL|NULL",
            "5|4|40|NULL|NULL"
        ]
    );
    // Unqualified: the left one; qualified: each side's own.
    let sql = "SELECT k, a.k, b.k FROM a LEFT JOIN b USING (k) ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, sql),
        vec!["1|1|1", "1|1|1", "2|2|NULL", "NULL|NULL|NULL", "5|5|NULL"]
    );
    // `t.*` lists all of t's columns.
    let sql = "SELECT a.*, b.* FROM a JOIN b USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "k", "id", "y"]);
    // A chain: the second USING finds k among the first join's columns.
    let sql = "SELECT * FROM a JOIN b USING (k) JOIN c USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "x", "id", "y", "z"]);
    assert_eq!(
        r(&mut s, sql),
        vec!["1|1|10|100|1000|7", "1|1|10|101|1001|7"]
    );
    // A column named twice in the list counts once.
    let sql = "SELECT * FROM a JOIN b USING (k, k) ORDER BY b.id";
    assert_eq!(r(&mut s, sql), vec!["1|1|10|100|1000", "1|1|10|101|1001"]);
}

#[test]
fn right_join_is_the_mirrored_left_join() {
    let (_d, mut s) = session();
    let sql = "SELECT * FROM a RIGHT JOIN b ON a.k = b.k ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "k", "id", "y"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|1|100|1000",
            "1|1|10|1|101|1001",
            "NULL|NULL|NULL|3|102|1002",
            "NULL|NULL|NULL|NULL|103|1003"
        ]
    );
    // With USING: the right side's column, then the right's rest.
    let sql = "SELECT * FROM a RIGHT JOIN b USING (k) ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "id", "x"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|100|1000|1|10",
            "1|101|1001|1|10",
            "3|102|1002|NULL|NULL",
            "NULL|103|1003|NULL|NULL"
        ]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT k FROM a RIGHT JOIN b USING (k) ORDER BY b.id"
        ),
        vec!["1", "1", "3", "NULL"]
    );
    // RIGHT OUTER JOIN, then an inner join after it.
    let sql = "SELECT b.id, a.id, c.z FROM a RIGHT OUTER JOIN b ON a.k = b.k JOIN c ON c.k = b.k ORDER BY b.id";
    assert_eq!(r(&mut s, sql), vec!["100|1|7", "101|1|7", "102|NULL|8"]);
}

#[test]
fn natural_join_uses_every_common_column() {
    let (_d, mut s) = session();
    // a and b share id and k: no row has both equal.
    assert!(r(&mut s, "SELECT * FROM a NATURAL JOIN b").is_empty());
    let sql = "SELECT * FROM a NATURAL LEFT JOIN b ORDER BY a.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "y"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|NULL",
            "2|2|20|NULL",
            "3|NULL|30|NULL",
            "4|5|40|NULL"
        ]
    );
    let sql = "SELECT * FROM b NATURAL JOIN c ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "z"]);
    assert_eq!(
        r(&mut s, sql),
        vec!["1|100|1000|7", "1|101|1001|7", "3|102|1002|8"]
    );
    let sql = "SELECT * FROM a NATURAL RIGHT JOIN b ORDER BY b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "id", "y", "x"]);
}

#[test]
fn join_using_errors() {
    let (_d, mut s) = session();
    assert_eq!(err(&mut s, "SELECT * FROM a JOIN b USING (nope)"), 1054);
    assert_eq!(err(&mut s, "SELECT * FROM a JOIN b USING (x)"), 1054);
    // k is on both a and b before c: ambiguous for c's USING.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a JOIN b ON a.k = b.k JOIN c USING (k)"
        ),
        1052
    );
    // The same table or alias twice in one FROM, a parenthesised join's
    // included.
    assert_eq!(err(&mut s, "SELECT * FROM a JOIN a ON a.k = a.k"), 1066);
    assert_eq!(err(&mut s, "SELECT * FROM a x JOIN b x"), 1066);
    assert_eq!(
        err(&mut s, "SELECT * FROM a LEFT JOIN (b JOIN a ON 1) ON 1"),
        1066
    );
    // The same name from two databases is two tables.
    q(&mut s, "CREATE DATABASE d2");
    q(&mut s, "CREATE TABLE d2.a (id INT PRIMARY KEY, v INT)");
    q(&mut s, "INSERT INTO d2.a VALUES (1, 7)");
    assert_eq!(
        rows(&q(&mut s, "SELECT count(*) FROM d.a JOIN d2.a ON 1")),
        ["4"]
    );
    // A parenthesised join's ON sees only its own tables.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a LEFT JOIN (b JOIN c ON c.k = a.k) ON a.k = b.k"
        ),
        1054
    );
    // b.k and c.k are both in the parenthesised join's result.
    assert_eq!(
        err(
            &mut s,
            "SELECT * FROM a LEFT JOIN (b RIGHT JOIN c ON b.k = c.k) USING (k)"
        ),
        1052
    );
}

#[test]
fn parenthesised_leading_join_is_read_left_to_right() {
    let (_d, mut s) = session();
    // As MariaDB writes a view's joins.
    let flat = r(
        &mut s,
        "SELECT a.id, b.id, c.z FROM a LEFT JOIN b ON a.k = b.k JOIN c ON c.k = a.k ORDER BY b.id",
    );
    let nested = r(
        &mut s,
        "SELECT a.id, b.id, c.z FROM ((a LEFT JOIN b ON (a.k = b.k))) JOIN c ON c.k = a.k ORDER BY b.id",
    );
    assert_eq!(flat, nested);
    assert_eq!(flat, vec!["1|100|7", "1|101|7"]);
}

#[test]
fn right_join_after_another_join_takes_the_joins_before_it_as_its_left_side() {
    let (_d, mut s) = session();
    let sql = "SELECT * FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k ORDER BY c.k, b.id";
    assert_eq!(
        names(&mut s, sql),
        vec!["id", "k", "x", "k", "id", "y", "k", "z"]
    );
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|1|100|1000|1|7",
            "1|1|10|1|101|1001|1|7",
            "NULL|NULL|NULL|NULL|NULL|NULL|3|8"
        ]
    );
    let sql = "SELECT a.id, b.id, c.z FROM a LEFT JOIN b ON a.k = b.k \
               RIGHT JOIN c ON c.z = a.id + 6 ORDER BY c.z, b.id";
    assert_eq!(r(&mut s, sql), vec!["1|100|7", "1|101|7", "2|NULL|8"]);
    // USING: the right side's common column first.
    let sql = "SELECT * FROM a JOIN b USING (k) RIGHT JOIN c USING (k) ORDER BY k, b.id";
    assert_eq!(names(&mut s, sql), vec!["k", "z", "id", "x", "id", "y"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|7|1|10|100|1000",
            "1|7|1|10|101|1001",
            "3|8|NULL|NULL|NULL|NULL"
        ]
    );
    // Two in a row.
    let sql = "SELECT a.id, b.id, c.z FROM a RIGHT JOIN b ON a.k = b.k \
               RIGHT JOIN c ON c.k = b.k ORDER BY c.k, b.id";
    assert_eq!(r(&mut s, sql), vec!["1|100|7", "1|101|7", "NULL|102|8"]);
    // Columns the outer join may give NULL for are not NOT NULL.
    let c = q(
        &mut s,
        "SELECT a.id, c.k FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k",
    );
    assert!(!c.columns[0].not_null);
}

#[test]
fn parenthesised_join_on_the_right_of_an_outer_join_is_null_extended_as_one() {
    let (_d, mut s) = session();
    let sql = "SELECT a.id, b.id, c.z FROM a LEFT JOIN (b JOIN c ON c.k = b.k) \
               ON a.k = b.k ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|100|7",
            "1|101|7",
            "2|NULL|NULL",
            "3|NULL|NULL",
            "4|NULL|NULL"
        ]
    );
    // The ON after the parentheses: a row of the inner join that fails it
    // null-extends b and c together, where the flat form keeps b's.
    let nested = "SELECT a.id, b.id, c.z FROM a LEFT JOIN (b LEFT JOIN c ON c.k = b.k) \
                  ON a.k = b.k AND c.z IS NULL ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, nested),
        vec!["1|NULL|NULL", "2|NULL|NULL", "3|NULL|NULL", "4|NULL|NULL"]
    );
    let flat = "SELECT a.id, b.id, c.z FROM a LEFT JOIN b ON a.k = b.k \
                LEFT JOIN c ON c.k = b.k AND c.z IS NULL ORDER BY a.id, b.id";
    assert_eq!(
        r(&mut s, flat),
        vec![
            "1|100|NULL",
            "1|101|NULL",
            "2|NULL|NULL",
            "3|NULL|NULL",
            "4|NULL|NULL"
        ]
    );
    // Inner joins inside an inner join.
    let sql = "SELECT a.id, b.id, c.z FROM a JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k \
               ORDER BY a.id, b.id";
    assert_eq!(r(&mut s, sql), vec!["1|100|7", "1|101|7"]);
    // NATURAL and USING against a parenthesised join's columns.
    let sql = "SELECT * FROM a NATURAL LEFT JOIN (b NATURAL JOIN c) ORDER BY a.id";
    assert_eq!(names(&mut s, sql), vec!["id", "k", "x", "y", "z"]);
    assert_eq!(
        r(&mut s, sql),
        vec![
            "1|1|10|NULL|NULL",
            "2|2|20|NULL|NULL",
            "3|NULL|30|NULL|NULL",
            "4|5|40|NULL|NULL"
        ]
    );
    let sql = "SELECT k FROM a LEFT JOIN (b JOIN c USING (k)) USING (k) ORDER BY a.id";
    assert_eq!(r(&mut s, sql), vec!["1", "1", "2", "NULL", "5"]);
    // In a correlated subquery.
    let sql = "SELECT a.id, (SELECT count(*) FROM b LEFT JOIN (c JOIN a a2 ON a2.k = c.k) \
               ON b.k = c.k WHERE b.id > a.id + 98 AND a2.id IS NOT NULL) FROM a ORDER BY a.id";
    assert_eq!(r(&mut s, sql), vec!["1|2", "2|1", "3|0", "4|0"]);
}

#[test]
fn a_parenthesised_join_is_refused_where_it_would_be_locked_whole() {
    let (_d, mut s) = session();
    for sql in [
        "SELECT * FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k FOR UPDATE",
        "SELECT * FROM a LEFT JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k LOCK IN SHARE MODE",
        "UPDATE a LEFT JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k SET a.x = 1",
        "DELETE a FROM a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k",
    ] {
        assert_eq!(err(&mut s, sql), 1235, "{sql}");
    }
    // Spliced forms lock as a flat join does.
    q(
        &mut s,
        "SELECT * FROM a JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k FOR UPDATE",
    );
    q(
        &mut s,
        "UPDATE a JOIN (b JOIN c ON c.k = b.k) ON a.k = b.k SET a.x = a.x + 1",
    );
}

#[test]
fn more_than_1024_tables_in_a_join_is_1116() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE TABLE one (k INT PRIMARY KEY)");
    q(&mut s, "INSERT INTO one VALUES (1)");
    let from = |n: usize| {
        (0..n)
            .map(|i| format!("one t{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // More than MySQL's 61 (SQLite's corpus joins 64).
    assert_eq!(
        r(&mut s, &format!("SELECT count(*) FROM {}", from(64))),
        vec!["1"]
    );
    assert_eq!(
        err(&mut s, &format!("SELECT count(*) FROM {}", from(1025))),
        1116
    );
    // Tables inside parentheses count.
    let nest = |n: usize| {
        let mut nest = format!("one t{n}");
        for i in (1..n).rev() {
            nest = format!("(one t{i} LEFT JOIN {nest} ON t{i}.k = t{}.k)", i + 1);
        }
        format!("SELECT count(*) FROM one t0 LEFT JOIN {nest} ON t0.k = t1.k")
    };
    assert_eq!(r(&mut s, &nest(300)), vec!["1"]);
    assert_eq!(err(&mut s, &nest(3000)), 1116);
}

#[test]
fn parameters_are_numbered_in_the_text_order_whatever_is_compiled_first() {
    let (_d, mut s) = session();
    let run = |s: &mut Session, sql: &str, vals: &[i64]| {
        let info = s.prepare(sql).unwrap();
        let v: Vec<cairndb_sql::Value> = vals.iter().map(|&x| cairndb_sql::Value::Int(x)).collect();
        let mut c = cairndb_sql::Collect::default();
        s.execute(info.id, &v, &mut c).unwrap();
        rows(&c)
    };
    // The select list's before a derived table's.
    assert_eq!(
        run(&mut s, "SELECT ?, d.v FROM (SELECT ? AS v) d", &[1, 2]),
        vec!["1|2"]
    );
    // An ON's before a later derived table's, and both before WHERE's.
    assert_eq!(
        run(
            &mut s,
            "SELECT a.id, d.v FROM a JOIN b ON b.k = a.k AND b.id = ? \
             JOIN (SELECT ? AS v) d WHERE a.id = ?",
            &[101, 7, 1]
        ),
        vec!["1|7"]
    );
    // The left side of a RIGHT JOIN before the right side.
    assert_eq!(
        run(
            &mut s,
            "SELECT x.v, y.v FROM (SELECT ? AS v) x RIGHT JOIN (SELECT ? AS v) y ON x.v < y.v",
            &[1, 2]
        ),
        vec!["1|2"]
    );
    // A parenthesised join's, between the select list's and the ON after it.
    assert_eq!(
        run(
            &mut s,
            "SELECT ?, a.id, c.z FROM a LEFT JOIN (b JOIN c ON b.k = c.k AND c.z > ?) \
             ON a.id = b.k AND b.id = ? WHERE a.id <= ? ORDER BY a.id",
            &[0, 7, 102, 3]
        ),
        vec!["0|1|NULL", "0|2|NULL", "0|3|8"]
    );
}

/// `(b, c)` in a FROM is MySQL's nest of a comma join: `(b CROSS JOIN c)`
/// wherever a table goes, under an outer join too; literals and lists
/// elsewhere in the statement keep their commas.
#[test]
fn comma_separated_tables_in_parentheses_are_a_nest() {
    let (_d, mut s) = session();
    let null_extended = vec![
        "1|100|7",
        "1|101|7",
        "2|NULL|NULL",
        "3|NULL|NULL",
        "4|NULL|NULL",
    ];
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, b.id, c.z FROM a LEFT JOIN (b, c) ON a.k = b.k AND b.k = c.k \
             ORDER BY a.id, b.id"
        ),
        null_extended
    );
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM (a, b)"), vec!["16"]);
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, b.id FROM (a, b) WHERE a.k = b.k ORDER BY a.id, b.id"
        ),
        vec!["1|100", "1|101"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, c.z FROM a JOIN (b, c) ON a.k = b.k AND c.k = b.k \
             WHERE b.y > 1000 ORDER BY a.id"
        ),
        vec!["1|7"]
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, b.id, c.z FROM a LEFT JOIN (b JOIN c ON b.k = c.k, a AS a2) \
             ON a.k = b.k AND a2.id = 1 ORDER BY a.id, b.id"
        ),
        null_extended
    );
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, d.n FROM a LEFT JOIN ((SELECT 1 AS n) d, c) \
             ON a.k = c.k AND d.n = a.k ORDER BY a.id"
        ),
        vec!["1|1", "2|NULL", "3|NULL", "4|NULL"]
    );
    // One table in parentheses is that table.
    assert_eq!(
        r(
            &mut s,
            "SELECT a.id, b.id, c.z FROM a LEFT JOIN ((b), c) ON a.k = b.k AND b.k = c.k \
             ORDER BY a.id, b.id"
        ),
        null_extended
    );
    assert_eq!(r(&mut s, "SELECT COUNT(*) FROM (a)"), vec!["4"]);
    assert_eq!(
        r(&mut s, "SELECT x.id FROM (a AS x) WHERE x.id > 3"),
        vec!["4"]
    );
    assert_eq!(
        r(&mut s, "SELECT COUNT(*) FROM ((SELECT 1 AS n) AS d)"),
        vec!["1"]
    );
    // Commas in strings (with a backslash escape) and in an IN list stay.
    assert_eq!(
        r(
            &mut s,
            "SELECT 'x,(y', a.id FROM a LEFT JOIN (b, c) ON a.k = b.k AND b.k = c.k \
             WHERE a.id IN (1, 2) AND 'p\\\\,' <> '' ORDER BY a.id, b.id"
        ),
        vec!["x,(y|1", "x,(y|1", "x,(y|2"]
    );
    // A JOIN after a comma binds first (`(a, b RIGHT JOIN c ON x)` is
    // `a CROSS JOIN (b RIGHT JOIN c ON x)`): not read as joins left to
    // right, but refused.
    assert_eq!(
        err(
            &mut s,
            "SELECT COUNT(*) FROM a LEFT JOIN (b, c RIGHT JOIN a AS a2 ON c.k = a2.k) ON a.id = b.id"
        ),
        1064
    );
    assert_eq!(
        err(&mut s, "SELECT COUNT(*) FROM (b, c NATURAL JOIN a)"),
        1064
    );
    // FROM inside a function's parentheses is not a table list: its
    // parenthesised operand keeps its parentheses.
    assert_eq!(
        r(
            &mut s,
            "SELECT SUBSTRING('abcdefgh' FROM (3 - 1) * 2) FROM (a, b) LIMIT 1"
        ),
        vec!["defgh"]
    );
    // A syntax error elsewhere is still reported as itself.
    assert_eq!(err(&mut s, "SELECT * FROM a LEFT JOIN (b, c) ON"), 1064);
}
