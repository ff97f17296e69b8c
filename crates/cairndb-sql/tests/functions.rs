//! Scalar functions end to end through `Session::query`, with the
//! values MySQL 8.0 documents for them.

use cairndb_sql::Session;

mod common;
use common::{err, q, rows, session};

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

#[test]
fn math_functions() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("POW(2,10)", "1024"),
            ("POWER(2,-2)", "0.25"),
            ("SQRT(16)", "4"),
            ("SQRT(-1)", "NULL"),
            ("EXP(1)", "2.718281828459045"),
            ("LN(2)", "0.6931471805599453"),
            ("LOG(8)", "2.0794415416798357"),
            ("LOG(2,65536)", "16"),
            ("LOG2(65536)", "16"),
            ("LOG10(100)", "2"),
            ("SIGN(-32)", "-1"),
            ("SIGN(0)", "0"),
            ("SIGN(234)", "1"),
            ("SIGN(-0.5)", "-1"),
            ("SIGN(NULL)", "NULL"),
            ("TRUNCATE(1.223,1)", "1.2"),
            ("TRUNCATE(1.999,1)", "1.9"),
            ("TRUNCATE(1.999,0)", "1"),
            ("TRUNCATE(-1.999,1)", "-1.9"),
            ("TRUNCATE(122,-2)", "100"),
            ("TRUNCATE(10.28*100,0)", "1028"),
            ("TRUNCATE(1.5e0, 0)", "1"),
            ("COS(PI())", "-1"),
            ("TAN(PI()+1)", "1.5574077246549018"),
            ("ASIN(0.2)", "0.2013579207903308"),
            ("ASIN(2)", "NULL"),
            ("ACOS(1.0001)", "NULL"),
            ("ACOS(0)", "1.5707963267948966"),
            ("ATAN(2)", "1.1071487177940904"),
            ("ATAN(-2,2)", "-0.7853981633974483"),
            ("ATAN2(PI(),0)", "1.5707963267948966"),
            ("COT(12)", "-1.5726734063976893"),
            ("DEGREES(PI())", "180"),
            ("RADIANS(90)", "1.5707963267948966"),
            ("CONV('a',16,2)", "1010"),
            ("CONV('6E',18,8)", "172"),
            ("CONV(-17,10,-18)", "-H"),
            ("CONV('zz', 36, 10)", "1295"),
            ("CONV('1', 1, 10)", "NULL"),
            ("CONV('ff', 16, -10)", "255"),
            ("CONV('ffffffffffffffff', 16, -10)", "-1"),
            ("CONV(NULL, 10, 2)", "NULL"),
            ("BIN(12)", "1100"),
            (
                "BIN(-1)",
                "1111111111111111111111111111111111111111111111111111111111111111",
            ),
            ("OCT(12)", "14"),
            ("OCT(-1)", "1777777777777777777777"),
            ("MOD(234, 10)", "4"),
            ("253 % 7", "1"),
            ("29 MOD 9", "2"),
            ("MOD(34.5,3)", "1.5"),
            ("MOD(-7, 3)", "-1"),
            ("MOD(7, 0)", "NULL"),
            ("RAND() < 1 AND RAND() >= 0", "1"),
        ],
    );
}

#[test]
fn logarithms_out_of_domain_are_null_with_warning_3020() {
    let (_d, mut s) = session();
    for e in [
        "LN(0)",
        "LOG(-1)",
        "LOG(1,10)",
        "LOG(-1,10)",
        "LOG10(-1)",
        "LOG2(0)",
    ] {
        assert_eq!(one(&mut s, e), "NULL", "{e}");
        assert_eq!(
            rows(&q(&mut s, "SHOW WARNINGS")),
            ["Warning|3020|Invalid argument for logarithm"],
            "{e}"
        );
    }
    assert_eq!(err(&mut s, "SELECT POW(-8, 1/3)"), 1690);
    assert_eq!(err(&mut s, "SELECT EXP(1000)"), 1690);
    assert_eq!(err(&mut s, "SELECT COT(0)"), 1690);
    assert_eq!(err(&mut s, "SELECT RAND(3)"), 1235);
}

#[test]
fn hashes_and_more_string_functions() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("MD5('testing')", "ae2b1fca515949e5d54fb22b8ed95575"),
            ("SHA1('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            ("SHA('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                "SHA2('abc', 224)",
                "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            ),
            (
                "SHA2('abc', 256)",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                "SHA2('abc', 0)",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            ("SHA2('abc', 100)", "NULL"),
            ("MD5(NULL)", "NULL"),
            ("CRC32('MySQL')", "3259397556"),
            ("CRC32('mysql')", "2501908538"),
            ("CRC32(NULL)", "NULL"),
            ("CHAR(77,121,83,81,'76')", "MySQL"),
            ("CHAR(77,77.3,'77.3')", "MMM"),
            ("HEX(CHAR(1,0))", "0100"),
            ("HEX(CHAR(256))", "0100"),
            ("HEX(CHAR(NULL, 65))", "41"),
            ("FORMAT(12332.123456, 4)", "12,332.1235"),
            ("FORMAT(12332.1,4)", "12,332.1000"),
            ("FORMAT(12332.2,0)", "12,332"),
            ("FORMAT(-1234567.891, 2)", "-1,234,567.89"),
            ("FORMAT(0.5, 0)", "1"),
            ("FORMAT('1234.5', 1)", "1,234.5"),
            ("FORMAT(NULL, 2)", "NULL"),
            ("QUOTE('Don\\'t!')", "'Don\\'t!'"),
            ("QUOTE(NULL)", "NULL"),
            ("QUOTE('a\\\\b')", "'a\\\\b'"),
        ],
    );
}

#[test]
fn regular_expressions() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("'Michael!' REGEXP '.*'", "1"),
            ("'new*\\n*line' REGEXP 'new\\\\*.\\\\*line'", "0"),
            ("'a' REGEXP '^[a-d]'", "1"),
            ("'ABC' REGEXP 'abc'", "1"),
            ("'ABC' NOT REGEXP 'abc'", "0"),
            ("'abc' RLIKE 'x'", "0"),
            ("NULL REGEXP 'x'", "NULL"),
            ("REGEXP_LIKE('CamelCase', 'CAMELCASE')", "1"),
            ("REGEXP_LIKE('CamelCase', 'CAMELCASE', 'c')", "0"),
            ("REGEXP_LIKE('abc', NULL)", "NULL"),
            ("REGEXP_REPLACE('a b c', 'b', 'X')", "a X c"),
            (
                "REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 1, 3)",
                "abc def X",
            ),
            (
                "REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 1, 0)",
                "X X X",
            ),
            ("REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 5)", "abc X X"),
            ("REGEXP_REPLACE('abc', '(b)', '[$1]')", "a[b]c"),
            ("REGEXP_SUBSTR('abc def ghi', '[a-z]+')", "abc"),
            ("REGEXP_SUBSTR('abc def ghi', '[a-z]+', 1, 3)", "ghi"),
            ("REGEXP_SUBSTR('abc def ghi', '[a-z]+', 1, 4)", "NULL"),
            ("REGEXP_INSTR('dog cat dog', 'dog')", "1"),
            ("REGEXP_INSTR('dog cat dog', 'dog', 2)", "9"),
            ("REGEXP_INSTR('aa aaa aaaa', 'a{4}')", "8"),
            ("REGEXP_INSTR('aa aaa aaaa', 'a{3}', 1, 1, 1)", "7"),
        ],
    );
    assert_eq!(err(&mut s, "SELECT 'a' REGEXP '(a'"), 3691);
    assert_eq!(err(&mut s, "SELECT 'a' REGEXP '[a'"), 3696);
    assert_eq!(err(&mut s, "SELECT REGEXP_SUBSTR('abc', 'b', 9)"), 3686);
    assert_eq!(err(&mut s, "SELECT REGEXP_LIKE('a', 'a', 'z')"), 1210);
    // The collation decides case sensitivity.
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, ci VARCHAR(10), cs VARCHAR(10) COLLATE utf8mb4_bin)",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, 'Abc', 'Abc'), (2, 'xyz', 'xyz')",
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT id FROM t WHERE ci REGEXP '^a'")),
        ["1"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT COUNT(*) FROM t WHERE cs REGEXP '^a'")),
        ["0"]
    );
}

#[test]
fn bit_and_variance_aggregates() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT, v INT)");
    q(
        &mut s,
        "INSERT INTO t VALUES (1,1,1),(2,1,2),(3,1,4),(4,2,7),(5,2,NULL),\
         (6,3,2),(7,3,4),(8,3,4),(9,3,4),(10,3,5),(11,3,5),(12,3,7),(13,3,9)",
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT g, BIT_AND(v), BIT_OR(v), BIT_XOR(v) FROM t GROUP BY g ORDER BY g"
        )),
        ["1|0|7|7", "2|7|7|7", "3|0|15|8"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT STD(v), STDDEV(v), STDDEV_POP(v), VARIANCE(v), VAR_POP(v), VAR_SAMP(v), \
             STDDEV_SAMP(v) > 2.13 AND STDDEV_SAMP(v) < 2.14 FROM t WHERE g = 3"
        )),
        ["2|2|2|4|4|4.571428571428571|1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT BIT_AND(v), BIT_OR(v), BIT_XOR(v), STD(v), VAR_SAMP(v) FROM t WHERE g = 9"
        )),
        ["18446744073709551615|0|0|NULL|NULL"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT VAR_POP(v), VAR_SAMP(v) FROM t WHERE g = 2"
        )),
        ["0|NULL"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT BIT_XOR(DISTINCT v) FROM t WHERE g = 3")),
        ["13"]
    );
    let c = q(&mut s, "SELECT BIT_OR(v), STD(v) FROM t");
    assert!(c.columns[0].unsigned);
    assert_eq!(c.columns[1].ty, cairndb_sql::OutType::Double);
}

#[test]
fn group_concat_with_distinct_order_and_separator() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, g INT, v VARCHAR(10))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1,1,'b'),(2,1,'a'),(3,1,'c'),(4,2,'x'),(5,2,NULL),(6,1,'a')",
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT g, GROUP_CONCAT(v), GROUP_CONCAT(DISTINCT v ORDER BY v DESC SEPARATOR '|'), \
             GROUP_CONCAT(v, id ORDER BY id) FROM t GROUP BY g ORDER BY g"
        )),
        ["1|b,a,c,a|c|b|a|b1,a2,c3,a6", "2|x|x|x4"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT GROUP_CONCAT(v ORDER BY 1) FROM t WHERE g = 1"
        )),
        ["a,a,b,c"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT GROUP_CONCAT(v) FROM t WHERE g = 9")),
        ["NULL"]
    );
    q(&mut s, "SET SESSION group_concat_max_len = 5");
    assert_eq!(
        rows(&q(&mut s, "SELECT GROUP_CONCAT(v ORDER BY id) FROM t")),
        ["b,a,c"]
    );
    let w = rows(&q(&mut s, "SHOW WARNINGS"));
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with("Warning|1260|Row "), "{w:?}");
}

#[test]
fn sleep_returns_0_and_stops_for_the_time_limit_and_never_runs_as_a_quick_read() {
    let (_d, mut s) = session();
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT SLEEP(0.01), SLEEP(NULL), SLEEP(-1), SLEEP('x')"
        )),
        ["0|0|0|0"]
    );
    q(&mut s, "SET max_execution_time = 20");
    assert_eq!(err(&mut s, "SELECT SLEEP(3600)"), 3024);
    q(&mut s, "SET max_execution_time = 0");
    assert_eq!(err(&mut s, "SELECT SLEEP()"), 1582);
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY)");
    let point = s.prepare("SELECT id FROM d.t WHERE id = ?").unwrap();
    let waits = s.prepare("SELECT SLEEP(1) FROM d.t WHERE id = ?").unwrap();
    // Plans are cached at the first execution.
    for id in [point.id, waits.id] {
        let mut c = cairndb_sql::Collect::default();
        s.execute(id, &[cairndb_sql::Value::Int(1)], &mut c)
            .unwrap();
    }
    assert!(s.is_quick_read(point.id));
    assert!(!s.is_quick_read(waits.id));
}
