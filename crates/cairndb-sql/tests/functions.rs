//! Scalar functions end to end through `Session::query`, with the
//! values MySQL 8.0 documents for them.

use std::sync::Arc;

use cairndb_sql::{Session, SqlDb, SqlOptions};

mod common;
use common::{err, q, rows};

fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db: Arc<SqlDb> = SqlDb::open(dir.path(), SqlOptions::default()).unwrap();
    let s = Session::new(db, "root");
    (dir, s)
}

/// `SELECT expr` as text.
fn one(s: &mut Session, expr: &str) -> String {
    let c = q(s, &format!("SELECT {expr}"));
    rows(&c).join("\n")
}

/// Each `(expression, expected)` pair.
fn check(s: &mut Session, cases: &[(&str, &str)]) {
    for (e, want) in cases {
        assert_eq!(one(s, e), *want, "SELECT {e}");
    }
}

#[test]
fn string_functions() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("REPLACE('www.mysql.com', 'w', 'Ww')", "WwWwWw.mysql.com"),
            ("REPLACE('abc', '', 'x')", "abc"),
            ("REPLACE(NULL, 'a', 'b')", "NULL"),
            ("LOCATE('bar', 'foobarbar')", "4"),
            ("LOCATE('xbar', 'foobar')", "0"),
            ("LOCATE('bar', 'foobarbar', 5)", "7"),
            ("LOCATE('BAR', 'foobarbar')", "4"),
            ("LOCATE('', 'abc')", "1"),
            ("LOCATE('a', 'abc', 0)", "0"),
            ("LOCATE(NULL, 'abc')", "NULL"),
            ("INSTR('foobarbar', 'bar')", "4"),
            ("INSTR('xbar', 'foobar')", "0"),
            ("POSITION('bar' IN 'foobarbar')", "4"),
            ("LPAD('hi', 4, '??')", "??hi"),
            ("LPAD('hi', 1, '??')", "h"),
            ("LPAD('hi', -1, '?')", "NULL"),
            ("LPAD('hi', 5, '')", "NULL"),
            ("RPAD('hi', 5, '?')", "hi???"),
            ("RPAD('hi', 1, '?')", "h"),
            ("RPAD('hi', 5, 'ab')", "hiaba"),
            ("LEFT('foobarbar', 5)", "fooba"),
            ("LEFT('foo', -1)", ""),
            ("RIGHT('foobarbar', 4)", "rbar"),
            ("RIGHT('foo', 10)", "foo"),
            ("REPEAT('MySQL', 3)", "MySQLMySQLMySQL"),
            ("REPEAT('x', 0)", ""),
            ("REPEAT('x', -5)", ""),
            ("REPEAT(NULL, 3)", "NULL"),
            ("REVERSE('abc')", "cba"),
            ("REVERSE('añb')", "bña"),
            (
                "CONCAT_WS(',', 'First name', 'Second name', 'Last Name')",
                "First name,Second name,Last Name",
            ),
            (
                "CONCAT_WS(',', 'First name', NULL, 'Last Name')",
                "First name,Last Name",
            ),
            ("CONCAT_WS(NULL, 'a', 'b')", "NULL"),
            ("SUBSTRING_INDEX('www.mysql.com', '.', 2)", "www.mysql"),
            ("SUBSTRING_INDEX('www.mysql.com', '.', -2)", "mysql.com"),
            ("SUBSTRING_INDEX('www.mysql.com', '.', 0)", ""),
            ("SUBSTRING_INDEX('www.mysql.com', '.', 10)", "www.mysql.com"),
            (
                "SUBSTRING_INDEX('www.mysql.com', '.', -10)",
                "www.mysql.com",
            ),
            ("HEX('abc')", "616263"),
            ("HEX(255)", "FF"),
            ("HEX(-1)", "FFFFFFFFFFFFFFFF"),
            ("UNHEX('4D7953514C')", "MySQL"),
            ("UNHEX('GG')", "NULL"),
            ("UNHEX(HEX('string'))", "string"),
            ("FIELD('Bb', 'Aa', 'Bb', 'Cc', 'Dd', 'Ff')", "2"),
            ("FIELD('Gg', 'Aa', 'Bb', 'Cc', 'Dd', 'Ff')", "0"),
            ("FIELD('bb', 'Aa', 'BB')", "2"),
            ("FIELD(NULL, 'a', NULL)", "0"),
            ("FIND_IN_SET('b', 'a,b,c,d')", "2"),
            ("FIND_IN_SET('x', 'a,b,c,d')", "0"),
            ("FIND_IN_SET('a,b', 'a,b,c')", "0"),
            ("FIND_IN_SET('a', '')", "0"),
            ("FIND_IN_SET(NULL, 'a')", "NULL"),
            ("ELT(1, 'Aa', 'Bb', 'Cc', 'Dd')", "Aa"),
            ("ELT(4, 'Aa', 'Bb', 'Cc', 'Dd')", "Dd"),
            ("ELT(5, 'Aa', 'Bb')", "NULL"),
            ("ELT(0, 'Aa', 'Bb')", "NULL"),
            ("SPACE(6)", "      "),
            ("SPACE(-1)", ""),
            ("ASCII('2')", "50"),
            ("ASCII(2)", "50"),
            ("ASCII('dx')", "100"),
            ("ASCII('')", "0"),
            ("ORD('2')", "50"),
            ("ORD('é')", "50089"),
            ("CHAR_LENGTH('añb')", "3"),
            ("LTRIM('  barbar')", "barbar"),
            ("RTRIM('barbar   ')", "barbar"),
            ("TRIM('  bar   ')", "bar"),
            ("TRIM(LEADING 'x' FROM 'xxxbarxxx')", "barxxx"),
            ("TRIM(BOTH 'x' FROM 'xxxbarxxx')", "bar"),
            ("TRIM(TRAILING 'xyz' FROM 'barxxyz')", "barx"),
            ("STRCMP('text', 'text2')", "-1"),
            ("STRCMP('text2', 'text')", "1"),
            ("STRCMP('text', 'TEXT')", "0"),
            ("STRCMP(NULL, 'a')", "NULL"),
            ("INSERT('Quadratic', 3, 4, 'What')", "QuWhattic"),
            ("INSERT('Quadratic', -1, 4, 'What')", "Quadratic"),
            ("INSERT('Quadratic', 3, 100, 'What')", "QuWhat"),
            ("INSERT('Quadratic', 3, -1, 'What')", "QuWhat"),
        ],
    );
}

#[test]
fn string_results_past_max_allowed_packet_are_null_with_warning_1301() {
    let (_d, mut s) = session();
    // Nothing of this size is allocated: the size is checked first.
    assert_eq!(one(&mut s, "REPEAT('x', 1000000000000)"), "NULL");
    assert_eq!(
        rows(&q(&mut s, "SHOW WARNINGS")),
        ["Warning|1301|Result of repeat() was larger than max_allowed_packet (67108864) - truncated"]
    );
    for e in [
        "REPEAT('ab', 9223372036854775807)",
        "SPACE(1000000000000)",
        "LPAD('a', 1000000000000, 'b')",
        "RPAD('a', 1000000000000, 'b')",
        "CONCAT(REPEAT('x', 40000000), REPEAT('y', 40000000))",
        "CONCAT_WS(',', REPEAT('x', 40000000), REPEAT('y', 40000000))",
        "REPLACE(REPEAT('x', 40000000), 'x', 'yy')",
        "INSERT('abc', 1, 1, CONCAT(REPEAT('x', 40000000), REPEAT('x', 40000000)))",
    ] {
        assert_eq!(one(&mut s, e), "NULL", "{e}");
    }
    assert_eq!(one(&mut s, "LENGTH(REPEAT('x', 1000000))"), "1000000");
}

#[test]
fn wrong_argument_counts_and_unknown_functions() {
    let (_d, mut s) = session();
    for e in [
        "REPLACE('a', 'b')",
        "LOCATE('a')",
        "LPAD('a', 2)",
        "LEFT('a')",
        "CONCAT_WS(',')",
        "ELT(1)",
        "INSERT('a', 1, 1)",
        "HEX()",
    ] {
        assert_eq!(err(&mut s, &format!("SELECT {e}")), 1582, "{e}");
    }
    assert_eq!(err(&mut s, "SELECT NO_SUCH_FUNCTION(1)"), 1305);
}
