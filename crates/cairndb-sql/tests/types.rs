//! The column types ENUM, SET, YEAR, TIME, BIT and JSON end to end through
//! `Session::query`: storage round trips (also after reopening), order in
//! scans and in primary and secondary indexes, conversions, strict-mode
//! errors and INSERT IGNORE warnings, SHOW CREATE TABLE and
//! information_schema, with the answers MySQL 8.0 gives; and that a table
//! written before these types existed still reads. JSON: storage, MySQL's
//! text form, comparison as JSON, the JSON_* functions and aggregates,
//! and their errors.

use cairndb_sql::{Collect, OutType, Session, Value};

mod common;
use common::{err, open, q, rows, session};

fn one(s: &mut Session, sql: &str) -> String {
    rows(&q(s, sql)).join("\n")
}

fn all(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn warnings(s: &mut Session) -> Vec<String> {
    rows(&q(s, "SHOW WARNINGS"))
}

fn show_create(s: &mut Session, t: &str) -> String {
    let c: Collect = q(s, &format!("SHOW CREATE TABLE {t}"));
    match c.rows.first().and_then(|r| r.get(1)) {
        Some(Value::Str(b)) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn enum_stores_index_sorts_by_it_and_reads_as_string() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, e ENUM('small','medium','large') NOT NULL, KEY ke (e))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1,'large'),(2,'SMALL'),(3,2),(4,'medium ')",
    );
    assert_eq!(
        all(&mut s, "SELECT id, e, e+0 FROM t ORDER BY e, id"),
        ["2|small|1", "3|medium|2", "4|medium|2", "1|large|3"]
    );
    // Through the secondary index, and compared as a string.
    assert_eq!(
        all(&mut s, "SELECT id FROM t WHERE e = 'medium' ORDER BY id"),
        ["3", "4"]
    );
    assert_eq!(all(&mut s, "SELECT id FROM t WHERE e = 3"), ["1"]);
    assert_eq!(
        all(&mut s, "SELECT e, COUNT(*) FROM t GROUP BY e ORDER BY e"),
        ["small|1", "medium|2", "large|1"]
    );
    assert_eq!(
        all(&mut s, "SELECT id FROM t WHERE e > 1 ORDER BY id"),
        ["1", "3", "4"]
    );
    // Strict: a value not in the list, '' and 0 are 1265.
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (5,'huge')"), 1265);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (5,'')"), 1265);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (5,0)"), 1265);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (5,4)"), 1265);
    // IGNORE: the empty string, index 0, with a warning.
    q(&mut s, "INSERT IGNORE INTO t VALUES (5,'huge')");
    assert_eq!(
        warnings(&mut s),
        ["Warning|1265|Data truncated for column 'e' at row 1"]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT CONCAT('[', e, ']'), e+0 FROM t WHERE id = 5"
        ),
        "[]|0"
    );
    assert_eq!(one(&mut s, "SELECT id FROM t ORDER BY e LIMIT 1"), "5");
    q(&mut s, "UPDATE t SET e = 'small' WHERE id = 5");
    assert_eq!(one(&mut s, "SELECT e FROM t WHERE id = 5"), "small");
}

#[test]
fn enum_as_primary_key_orders_by_index() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (e ENUM('z','y','x') PRIMARY KEY, n INT)",
    );
    q(&mut s, "INSERT INTO t VALUES ('x',1),('z',2),('y',3)");
    assert_eq!(all(&mut s, "SELECT e, n FROM t"), ["z|2", "y|3", "x|1"]);
    assert_eq!(one(&mut s, "SELECT n FROM t WHERE e = 'y'"), "3");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES ('Y',4)"), 1062);
}

#[test]
fn enum_definitions_are_checked() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    assert_eq!(err(&mut s, "CREATE TABLE t (e ENUM('a','b','A'))"), 1291);
    assert_eq!(err(&mut s, "CREATE TABLE t (s SET('a','a'))"), 1291);
    let many: Vec<String> = (0..65).map(|i| format!("'m{i}'")).collect();
    assert_eq!(
        err(
            &mut s,
            &format!("CREATE TABLE t (s SET({}))", many.join(","))
        ),
        1097
    );
    assert_eq!(err(&mut s, "CREATE TABLE t (g GEOMETRY)"), 1235);
    // 300 members take two bytes each.
    let members: Vec<String> = (0..300).map(|i| format!("'m{i}'")).collect();
    q(
        &mut s,
        &format!(
            "CREATE TABLE big (id INT PRIMARY KEY, e ENUM({}), KEY (e))",
            members.join(",")
        ),
    );
    q(
        &mut s,
        "INSERT INTO big VALUES (1,'m299'),(2,'m0'),(3,'m255'),(4,256)",
    );
    assert_eq!(
        all(&mut s, "SELECT id, e, e+0 FROM big ORDER BY e+0, id"),
        ["2|m0|1", "3|m255|256", "4|m255|256", "1|m299|300"]
    );
    assert_eq!(
        all(&mut s, "SELECT id, e+0 FROM big ORDER BY e, id"),
        ["2|1", "3|256", "4|256", "1|300"]
    );
}

#[test]
fn set_takes_lists_in_any_order_and_shows_definition_order() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, s SET('a','b','c','d') DEFAULT 'b,a', KEY (s))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1,'c,a'),(2,'d,a,d'),(3,''),(4,6),(5,'B')",
    );
    q(&mut s, "INSERT INTO t (id) VALUES (6)");
    assert_eq!(
        all(&mut s, "SELECT id, s, s+0 FROM t ORDER BY id"),
        ["1|a,c|5", "2|a,d|9", "3||0", "4|b,c|6", "5|b|2", "6|a,b|3"]
    );
    // Sorted by bitmask, also through the index.
    assert_eq!(
        all(&mut s, "SELECT id FROM t ORDER BY s, id"),
        ["3", "5", "6", "1", "4", "2"]
    );
    assert_eq!(all(&mut s, "SELECT id FROM t WHERE s = 'a,c'"), ["1"]);
    assert_eq!(
        all(
            &mut s,
            "SELECT id FROM t WHERE FIND_IN_SET('c', s) ORDER BY id"
        ),
        ["1", "4"]
    );
    assert_eq!(
        all(&mut s, "SELECT id FROM t WHERE s & 1 ORDER BY id"),
        ["1", "2", "6"]
    );
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (7,'a,x')"), 1265);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (7,16)"), 1265);
    q(&mut s, "INSERT IGNORE INTO t VALUES (7,'a,x')");
    assert_eq!(
        warnings(&mut s),
        ["Warning|1265|Data truncated for column 's' at row 1"]
    );
    assert_eq!(one(&mut s, "SELECT s FROM t WHERE id = 7"), "a");
    assert!(show_create(&mut s, "t").contains("`s` set('a','b','c','d') DEFAULT 'a,b'"));
}

/// A constant compared with a YEAR column is read as a YEAR, as MySQL
/// and MariaDB do: `y = '24'` and `y = 24` once compared 2024 with 24.
#[test]
fn year_compared_with_a_constant_reads_it_as_a_year() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE yy (y YEAR, KEY (y))");
    q(&mut s, "INSERT INTO yy VALUES (2024),(1999),(2000),(0)");
    // Expected rows are MariaDB 10.11's.
    assert_eq!(
        all(
            &mut s,
            "SELECT y, y='24', y=24, y='2024', y<'30', y=0, y='0', y='00', y=2024.0, \
             y IN (24, 99), '24' = y, y BETWEEN '98' AND 24 FROM yy ORDER BY y"
        ),
        [
            "0|0|0|0|1|1|0|0|0|0|0|0",
            "1999|0|0|0|1|0|0|0|0|1|0|1",
            "2000|0|0|0|1|0|1|1|0|0|0|1",
            "2024|1|1|1|1|0|0|0|1|1|1|1",
        ]
    );
    // Through the index too.
    assert_eq!(all(&mut s, "SELECT y FROM yy WHERE y = '24'"), ["2024"]);
}

#[test]
fn year_reads_two_and_four_digits() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, y YEAR, KEY (y))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1,2024),(2,69),(3,70),(4,0),(5,'0'),(6,'05'),(7,'1999'),(8,'0000'),(9,2155),(10,1901)",
    );
    assert_eq!(
        all(&mut s, "SELECT id, y FROM t ORDER BY id"),
        [
            "1|2024", "2|2069", "3|1970", "4|0", "5|2000", "6|2005", "7|1999", "8|0", "9|2155",
            "10|1901"
        ]
    );
    assert_eq!(
        all(&mut s, "SELECT id FROM t WHERE y < 1990 ORDER BY y, id"),
        ["4", "8", "10", "3"]
    );
    assert_eq!(one(&mut s, "SELECT y + 1 FROM t WHERE id = 1"), "2025");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (11,1900)"), 1264);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (11,2156)"), 1264);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (11,'abc')"), 1366);
    q(&mut s, "INSERT IGNORE INTO t VALUES (11,3000)");
    assert_eq!(warnings(&mut s).len(), 1);
    assert_eq!(one(&mut s, "SELECT y FROM t WHERE id = 11"), "0");
    q(&mut s, "CREATE TABLE py (y YEAR PRIMARY KEY)");
    q(&mut s, "INSERT INTO py VALUES (2000),(1999),(0),(2155)");
    assert_eq!(
        all(&mut s, "SELECT y FROM py"),
        ["0", "1999", "2000", "2155"]
    );
}

#[test]
fn time_parses_clamps_and_orders_negative_values() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, t TIME(3), KEY (t))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1,'10:11:12.3456'),(2,'-01:00:00'),(3,'1 02:03:04'),(4,101112),(5,'838:59:59'),(6,'-838:59:59'),(7,'00:00:00'),(8,-0.5)",
    );
    assert_eq!(
        all(&mut s, "SELECT id, t FROM t ORDER BY t"),
        [
            "6|-838:59:59",
            "2|-01:00:00",
            "8|-00:00:00.500000",
            "7|00:00:00",
            "4|10:11:12",
            "1|10:11:12.346000",
            "3|26:03:04",
            "5|838:59:59"
        ]
    );
    assert_eq!(
        all(&mut s, "SELECT id FROM t WHERE t < '00:00:00' ORDER BY id"),
        ["2", "6", "8"]
    );
    assert_eq!(
        all(
            &mut s,
            "SELECT id FROM t WHERE t BETWEEN '-01:00:00' AND '10:11:12' ORDER BY id"
        ),
        ["2", "4", "7", "8"]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT t + 0, HOUR(t), MINUTE(t), SECOND(t), MICROSECOND(t) FROM t WHERE id = 3"
        ),
        "260304|26|3|4|0"
    );
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (9,'839:00:00')"), 1292);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (9,'12:61:00')"), 1292);
    q(&mut s, "INSERT IGNORE INTO t VALUES (9,'900:00:00')");
    assert_eq!(warnings(&mut s).len(), 1);
    assert_eq!(one(&mut s, "SELECT t FROM t WHERE id = 9"), "838:59:59");
    // A primary key of negative and positive times.
    q(&mut s, "CREATE TABLE pt (t TIME PRIMARY KEY)");
    q(
        &mut s,
        "INSERT INTO pt VALUES ('01:00:00'),('-00:00:01'),('-100:00:00'),('00:00:00')",
    );
    assert_eq!(
        all(&mut s, "SELECT t FROM pt"),
        ["-100:00:00", "-00:00:01", "00:00:00", "01:00:00"]
    );
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM pt WHERE t >= '-00:00:01'"),
        "3"
    );
}

#[test]
fn time_functions() {
    let (_d, mut s) = session();
    let cases: &[(&str, &str)] = &[
        ("TIME('2024-01-02 10:11:12.5')", "10:11:12.500000"),
        ("TIME_TO_SEC('01:00:01')", "3601"),
        ("TIME_TO_SEC('-01:00:01')", "-3601"),
        ("SEC_TO_TIME(3661)", "01:01:01"),
        ("SEC_TO_TIME(-90)", "-00:01:30"),
        ("TIMEDIFF('10:00:00', '11:30:00')", "-01:30:00"),
        (
            "TIMEDIFF('2024-01-02 00:00:00', '2024-01-01 12:00:00')",
            "12:00:00",
        ),
        ("TIMEDIFF('2024-01-02 00:00:00', '12:00:00')", "NULL"),
        ("ADDTIME('10:00:00', '01:30:00')", "11:30:00"),
        ("SUBTIME('10:00:00', '11:00:00')", "-01:00:00"),
        (
            "ADDTIME('2024-01-01 23:00:00', '02:00:00')",
            "2024-01-02 01:00:00",
        ),
        ("TIME_FORMAT('10:05:03', '%H.%i.%s')", "10.05.03"),
        ("TIME_FORMAT('100:05:03', '%H:%i')", "100:05"),
        ("MAKETIME(12, 15, 30)", "12:15:30"),
        ("HOUR('838:00:00')", "838"),
        ("SEC_TO_TIME(4000000)", "838:59:59"),
        ("LENGTH(CURTIME())", "8"),
        ("TIME('10:00:00') + INTERVAL 90 MINUTE", "11:30:00"),
        ("TIME('-01:00:00') - INTERVAL 1 SECOND", "-01:00:01"),
        ("EXTRACT(HOUR FROM TIME('-01:59:59'))", "-1"),
        ("EXTRACT(MINUTE FROM TIME('100:20:00'))", "20"),
        ("EXTRACT(HOUR FROM TIME('100:20:00'))", "100"),
        ("DATE_FORMAT(TIME('10:20:30'), '%H.%i.%s')", "10.20.30"),
        ("CAST('10:20:30.129' AS TIME(2))", "10:20:30.130000"),
        ("CAST(-102030 AS TIME)", "-10:20:30"),
        ("CAST('2024-01-01 08:00:00' AS TIME)", "08:00:00"),
        ("CAST('nope' AS TIME)", "NULL"),
        // Extreme inputs clamp or are NULL, never overflow.
        (
            "CAST('99999999999999999 9223372036854775807:00:00' AS TIME)",
            "838:59:59",
        ),
        ("CAST('1:-5:00' AS TIME)", "NULL"),
        ("MAKETIME(-9223372036854775808, 0, 0)", "-838:59:59"),
        ("SEC_TO_TIME(-9223372036854775808)", "-838:59:59"),
        ("TIME(18446744073709551615)", "838:59:59"),
        ("CURRENT_TIME = CURTIME()", "1"),
    ];
    for (e, want) in cases {
        assert_eq!(one(&mut s, &format!("SELECT {e}")), *want, "SELECT {e}");
    }
}

#[test]
fn bit_stores_numbers_and_reads_literals() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, b BIT(5) DEFAULT b'101', KEY (b))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, b'10101'),(2, 3),(3, b'0'),(4, 31)",
    );
    q(&mut s, "INSERT INTO t (id) VALUES (5)");
    assert_eq!(
        all(&mut s, "SELECT id, b+0, BIN(b) FROM t ORDER BY b"),
        ["3|0|0", "2|3|11", "5|5|101", "1|21|10101", "4|31|11111"]
    );
    assert_eq!(all(&mut s, "SELECT id FROM t WHERE b = 21"), ["1"]);
    assert_eq!(all(&mut s, "SELECT id FROM t WHERE b = b'11'"), ["2"]);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (6, 32)"), 1406);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (6, b'100000')"), 1406);
    q(&mut s, "INSERT IGNORE INTO t VALUES (6, 99)");
    assert_eq!(warnings(&mut s).len(), 1);
    assert_eq!(one(&mut s, "SELECT b+0 FROM t WHERE id = 6"), "31");
    assert!(show_create(&mut s, "t").contains("`b` bit(5) DEFAULT b'101'"));
    q(&mut s, "CREATE TABLE b64 (b BIT(64) PRIMARY KEY)");
    q(
        &mut s,
        "INSERT INTO b64 VALUES (18446744073709551615),(0),(9223372036854775808)",
    );
    assert_eq!(
        all(&mut s, "SELECT b+0 FROM b64"),
        ["0", "9223372036854775808", "18446744073709551615"]
    );
}

#[test]
fn show_create_table_and_information_schema() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (e ENUM('a','it''s') NOT NULL DEFAULT 'a', s SET('x','y'), y YEAR DEFAULT 2000, t TIME(3) DEFAULT '01:02:03', t0 TIME, b BIT(5))",
    );
    let text = show_create(&mut s, "t");
    for want in [
        "`e` enum('a','it''s') NOT NULL DEFAULT 'a'",
        "`s` set('x','y') DEFAULT NULL",
        "`y` year DEFAULT '2000'",
        "`t` time(3) DEFAULT '01:02:03.000'",
        "`t0` time DEFAULT NULL",
        "`b` bit(5) DEFAULT NULL",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    // SHOW CREATE TABLE's text creates the same table.
    q(&mut s, "CREATE DATABASE d2");
    q(&mut s, "USE d2");
    q(&mut s, &text);
    assert_eq!(show_create(&mut s, "t"), text);
    assert_eq!(
        all(
            &mut s,
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd2' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"
        ),
        [
            "e|enum|enum('a','it''s')|4|NULL",
            "s|set|set('x','y')|3|NULL",
            "y|year|year|NULL|NULL",
            "t|time|time(3)|NULL|NULL",
            "t0|time|time|NULL|NULL",
            "b|bit|bit(5)|NULL|5",
        ]
    );
    assert_eq!(
        all(&mut s, "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd2' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"),
        ["a", "NULL", "2000", "01:02:03.000", "NULL", "NULL"]
    );
    q(
        &mut s,
        "CREATE TABLE y4 (y YEAR(4) DEFAULT 0, b BIT(3) DEFAULT 6)",
    );
    assert_eq!(
        all(&mut s, "SHOW COLUMNS FROM y4"),
        ["y|year|YES||0000|", "b|bit(3)|YES||b'110'|"]
    );
    assert_eq!(err(&mut s, "CREATE TABLE y2 (y YEAR(2))"), 1235);
    assert_eq!(
        all(&mut s, "SHOW COLUMNS FROM t")
            .iter()
            .map(|r| r.split('|').take(2).collect::<Vec<_>>().join("|"))
            .collect::<Vec<_>>(),
        [
            "e|enum('a','it''s')",
            "s|set('x','y')",
            "y|year",
            "t|time(3)",
            "t0|time",
            "b|bit(5)"
        ]
    );
}

#[test]
fn alter_table_adds_and_modifies_the_new_types() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))");
    q(&mut s, "INSERT INTO t VALUES (1,'b'),(2,'a')");
    q(
        &mut s,
        "ALTER TABLE t ADD COLUMN e ENUM('x','y') NOT NULL DEFAULT 'y', ADD COLUMN y YEAR DEFAULT 1999, ADD COLUMN tm TIME DEFAULT '-01:00:00', ADD COLUMN b BIT(3) DEFAULT 5",
    );
    assert_eq!(
        all(&mut s, "SELECT id, e, y, tm, b+0 FROM t ORDER BY id"),
        ["1|y|1999|-01:00:00|5", "2|y|1999|-01:00:00|5"]
    );
    // VARCHAR to ENUM converts by string; a new member at the end keeps
    // the others' indexes.
    q(&mut s, "ALTER TABLE t MODIFY v ENUM('a','b')");
    assert_eq!(
        all(&mut s, "SELECT id, v+0 FROM t ORDER BY v"),
        ["2|1", "1|2"]
    );
    q(
        &mut s,
        "ALTER TABLE t MODIFY v ENUM('a','b','c'), ADD KEY (v)",
    );
    q(&mut s, "INSERT INTO t (id, v) VALUES (3,'c')");
    assert_eq!(
        all(&mut s, "SELECT id, v FROM t ORDER BY v"),
        ["2|a", "1|b", "3|c"]
    );
    assert_eq!(err(&mut s, "ALTER TABLE t MODIFY v ENUM('a')"), 1265);
    q(&mut s, "ALTER TABLE t MODIFY v SET('a','b','c')");
    assert_eq!(one(&mut s, "SELECT v+0 FROM t WHERE id = 3"), "4");
}

#[test]
fn prepared_statements_bind_and_return_the_new_types() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, e ENUM('a','b'), y YEAR, tm TIME, b BIT(8))",
    );
    let ins = s.prepare("INSERT INTO t VALUES (?,?,?,?,?)").unwrap().id;
    let params = [
        Value::Int(1),
        Value::Str(b"b".to_vec()),
        Value::Int(24),
        Value::Time(-12 * 3600 * 1_000_000),
        Value::UInt(200),
    ];
    s.execute(ins, &params, &mut Collect::default()).unwrap();
    let sel = s
        .prepare("SELECT e, y, tm, b, b+0 FROM t WHERE e = ? AND tm < ?")
        .unwrap()
        .id;
    let mut c = Collect::default();
    s.execute(
        sel,
        &[Value::Str(b"B".to_vec()), Value::Str(b"00:00:00".to_vec())],
        &mut c,
    )
    .unwrap();
    assert_eq!(rows(&c), ["b|2024|-12:00:00|200|200"]);
    let types: Vec<OutType> = c.columns.iter().map(|c| c.ty).collect();
    assert_eq!(
        types,
        [
            OutType::String,
            OutType::Year,
            OutType::Time,
            OutType::Bit,
            OutType::LongLong
        ]
    );
    assert!(c.columns[0].is_enum);
}

#[test]
fn the_new_types_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Session::new(open(dir.path()), "root");
        q(&mut s, "CREATE DATABASE d");
        q(&mut s, "USE d");
        q(
            &mut s,
            "CREATE TABLE t (e ENUM('a','b') , s SET('p','q'), y YEAR, tm TIME(6), b BIT(12), KEY (s), PRIMARY KEY (tm))",
        );
        q(
            &mut s,
            "INSERT INTO t VALUES ('b','q,p',1987,'-10:00:00.000001',4095),('a','q',0,'10:00:00',1)",
        );
    }
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "USE d");
    assert_eq!(
        all(&mut s, "SELECT e, s, y, tm, b+0 FROM t"),
        ["b|p,q|1987|-10:00:00.000001|4095", "a|q|0|10:00:00|1"]
    );
    assert_eq!(all(&mut s, "SELECT e FROM t WHERE s = 'q'"), ["a"]);
}

/// A dictionary record and a row written before the new types existed
/// (no `elements` field; the row layout of the other types unchanged)
/// read as they did.
#[test]
fn a_table_written_before_the_new_types_still_reads() {
    use cairndb_sql::internals::{decode_row, pk_key, row_value, TableDef};
    let json = r#"{"name":"t","columns":[{"name":"id","ty":{"Int":{"bytes":4,"unsigned":false}},"nullable":false,"default":null,"auto_increment":false},{"name":"s","ty":{"Str":{"kind":"VarChar","max_len":10,"collation":"Utf8mb4GeneralCi"}},"nullable":true,"default":{"Str":[120]},"auto_increment":false},{"name":"d","ty":"Date","nullable":true,"default":null,"auto_increment":false}],"primary":{"name":"PRIMARY","id":7,"columns":[0],"unique":true},"hidden_pk":false,"secondary":[]}"#;
    let t: TableDef = serde_json::from_str(json).unwrap();
    assert!(t.columns.iter().all(|c| c.elements.is_empty()));
    assert_eq!(t.columns[1].default, Some(Value::Str(b"x".to_vec())));
    // Writing it again keeps the same record (no new field appears).
    let back = serde_json::to_string(&t).unwrap();
    assert!(!back.contains("elements"), "{back}");
    let key = [0, 0, 0, 7, 0x80, 0, 0, 5];
    let date = cairndb_sql::value::pack_date(2024, 2, 29);
    let mut value = vec![0x01, 0x00, 2, b'h', b'i'];
    value.extend_from_slice(&date.to_le_bytes());
    let mut row = Vec::new();
    decode_row(&t, &key, &value, &mut row).unwrap();
    assert_eq!(
        row,
        [Value::Int(5), Value::Str(b"hi".to_vec()), Value::Date(date)]
    );
    let (mut k2, mut v2) = (Vec::new(), Vec::new());
    pk_key(&t, &row, 0, &mut k2);
    row_value(&t, &row, &mut v2);
    assert_eq!((k2.as_slice(), v2), (&key[..], value));
}

#[test]
fn enum_ranges_compare_strings_not_indexes() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (e ENUM('z','y','x') PRIMARY KEY, n INT, s SET('q','p'), KEY (s))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES ('x',1,'p'),('z',2,'q'),('y',3,'p,q')",
    );
    assert_eq!(all(&mut s, "SELECT e FROM t WHERE e > 'y'"), ["z"]);
    assert_eq!(all(&mut s, "SELECT e FROM t WHERE e >= 'y'"), ["z", "y"]);
    assert_eq!(all(&mut s, "SELECT e FROM t WHERE e < 'y'"), ["x"]);
    assert_eq!(
        all(&mut s, "SELECT e FROM t WHERE e BETWEEN 'x' AND 'y'"),
        ["y", "x"]
    );
    assert_eq!(
        all(&mut s, "SELECT e FROM t WHERE e IN ('x', 'z')"),
        ["z", "x"]
    );
    assert_eq!(all(&mut s, "SELECT n FROM t WHERE s > 'p'"), ["2", "3"]);
    assert_eq!(
        all(&mut s, "SELECT n FROM t WHERE e > 1 ORDER BY n"),
        ["1", "3"]
    );
    // MIN and MAX of an ENUM compare strings, as MySQL's do.
    assert_eq!(one(&mut s, "SELECT MIN(e), MAX(e) FROM t"), "x|z");
}

#[test]
fn unsupported_literals_and_types_are_refused() {
    let (_d, mut s) = session();
    assert_eq!(one(&mut s, "SELECT b'101' + 0, b'1' = 1"), "5|1");
    assert_eq!(one(&mut s, "SELECT 0x41"), "A");
    // `0b0101` is a bit-value literal; inside strings, names and
    // comments it stays as written.
    assert_eq!(
        one(
            &mut s,
            "SELECT 0b0101 + 0, '0b11', 0b1 /* 0b11 */, 0b11 = b'11'"
        ),
        "5|0b11|1|1"
    );
    assert_eq!(one(&mut s, "SELECT 0b0101 AS `0b1`"), "5");
    // `0B01` and `0b012` are no literals (MySQL's error too).
    assert_eq!(err(&mut s, "SELECT 0b012"), 1054);
}

fn json_table(s: &mut Session) {
    q(s, "CREATE DATABASE jd");
    q(s, "USE jd");
    q(s, "CREATE TABLE t (id INT PRIMARY KEY, j JSON)");
    q(
        s,
        r#"INSERT INTO t VALUES (1, '{"name": "bob", "age": 30, "tags": ["a", "b"], "addr": {"city": "Paris"}}'), (2, '[1, 2, 3]'), (3, NULL), (4, '"str"'), (5, '{"b": 1, "a": 2, "a": 3, "aa": [true, false, null, 1.5, 1e20]}')"#,
    );
}

#[test]
fn json_columns_store_documents_and_print_them_as_mysql_does() {
    let (_d, mut s) = session();
    json_table(&mut s);
    // Keys in MySQL's order (length, then bytes), the last duplicate
    // kept, MySQL's spacing and number forms.
    assert_eq!(
        all(&mut s, "SELECT id, j FROM t ORDER BY id"),
        [
            r#"1|{"age": 30, "addr": {"city": "Paris"}, "name": "bob", "tags": ["a", "b"]}"#,
            "2|[1, 2, 3]",
            "3|NULL",
            r#"4|"str""#,
            r#"5|{"a": 3, "b": 1, "aa": [true, false, null, 1.5, 1e20]}"#,
        ]
    );
    let c = q(
        &mut s,
        "SELECT j, JSON_OBJECT('a', 1), j->>'$.name' FROM t WHERE id = 1",
    );
    assert_eq!(
        c.columns.iter().map(|c| c.ty).collect::<Vec<_>>(),
        [OutType::Json, OutType::Json, OutType::VarString]
    );
    assert_eq!(c.columns.first().map(|c| c.charset), Some(63));
    assert!(show_create(&mut s, "t").contains("`j` json DEFAULT NULL"));
    assert_eq!(
        one(
            &mut s,
            "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_NAME = 't' AND COLUMN_NAME = 'j'"
        ),
        "json"
    );
    // Invalid text, a number without CAST, keys and literal defaults are
    // refused with MySQL's codes; nothing is stored.
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (10, '{bad')"), 3140);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (10, 5)"), 3140);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id = 10"), "0");
    assert_eq!(err(&mut s, "CREATE TABLE k1 (j JSON PRIMARY KEY)"), 3152);
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE k2 (id INT PRIMARY KEY, j JSON, KEY (j))"
        ),
        3152
    );
    assert_eq!(err(&mut s, "CREATE INDEX ij ON t (j)"), 3152);
    assert_eq!(err(&mut s, "ALTER TABLE t ADD INDEX ij (j)"), 3152);
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE k3 (id INT PRIMARY KEY, j JSON DEFAULT '{}')"
        ),
        1101
    );
    q(
        &mut s,
        "CREATE TABLE k4 (id INT PRIMARY KEY, j JSON NOT NULL DEFAULT ('{}'))",
    );
    q(&mut s, "INSERT INTO k4 (id) VALUES (1)");
    assert_eq!(one(&mut s, "SELECT j FROM k4"), "{}");
    // SHOW CREATE TABLE prints a JSON default as an expression, so the
    // statement it prints runs again (a literal default is 1101).
    q(
        &mut s,
        r#"CREATE TABLE k5 (id INT PRIMARY KEY, j JSON DEFAULT ('{"a": "x\\\\y"}'))"#,
    );
    let shown = show_create(&mut s, "k5");
    assert!(
        shown.contains(r#"`j` json DEFAULT ('{"a": "x\\\\y"}')"#),
        "{shown}"
    );
    q(&mut s, "DROP TABLE k5");
    q(&mut s, &shown);
    q(&mut s, "INSERT INTO k5 (id) VALUES (1)");
    assert_eq!(one(&mut s, "SELECT j->>'$.a' FROM k5"), r"x\y");
    // A text column converts to JSON by parsing, and back as text.
    q(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, s TEXT)");
    q(&mut s, r#"INSERT INTO c VALUES (1, '{"x": [1,2]}')"#);
    q(&mut s, "ALTER TABLE c MODIFY s JSON");
    assert_eq!(
        one(&mut s, "SELECT JSON_TYPE(s), s->'$.x[1]' FROM c"),
        "OBJECT|2"
    );
    q(&mut s, "INSERT INTO c VALUES (2, '[]')");
    q(&mut s, "ALTER TABLE c MODIFY s TEXT");
    assert_eq!(
        all(&mut s, "SELECT s FROM c ORDER BY id"),
        [r#"{"x": [1, 2]}"#, "[]"]
    );
}

#[test]
fn json_operators_compare_as_json_not_as_text() {
    let (_d, mut s) = session();
    json_table(&mut s);
    // `->` binds tighter than `=`; a JSON string equals the SQL string.
    assert_eq!(
        one(&mut s, "SELECT id FROM t WHERE j->'$.name' = 'bob'"),
        "1"
    );
    assert_eq!(one(&mut s, "SELECT id FROM t WHERE j->'$.age' > 20"), "1");
    assert_eq!(one(&mut s, "SELECT id FROM t WHERE j->'$.age' = 30.0"), "1");
    // `->>` gives a utf8mb4_bin string, as in MySQL: case counts.
    assert_eq!(
        one(&mut s, "SELECT id FROM t WHERE j->>'$.addr.city' = 'paris'"),
        ""
    );
    assert_eq!(
        one(&mut s, "SELECT id FROM t WHERE j->>'$.addr.city' = 'Paris'"),
        "1"
    );
    // A JSON string is not the number it spells, and JSON types order as
    // MySQL's: numbers < strings < objects < arrays < booleans.
    assert_eq!(one(&mut s, r#"SELECT CAST('"30"' AS JSON) = 30"#), "0");
    assert_eq!(
        all(
            &mut s,
            "SELECT id FROM t WHERE j IS NOT NULL AND id <> 5 ORDER BY j, id"
        ),
        ["4", "1", "2"]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT j->'$.a', COUNT(*) FROM t WHERE id > 4 GROUP BY j->'$.a'"
        ),
        "3|1"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT j->'$.age' + 1, j->'$.tags[last]' FROM t WHERE id = 1"
        ),
        r#"31|"b""#
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT 2 MEMBER OF ('[1, 2, 3]'), 'a' MEMBER OF (j->'$.tags') FROM t WHERE id = 1"
        ),
        "1|1"
    );
    assert_eq!(err(&mut s, "SELECT j -> 5 FROM t"), 1064);
}

#[test]
fn json_functions_give_mysql_answers() {
    let (_d, mut s) = session();
    let cases = [
        (
            "JSON_OBJECT('a', 1, 'b', TRUE, 'c', NULL, 'd', JSON_ARRAY(1, 'x', 2.50))",
            r#"{"a": 1, "b": true, "c": null, "d": [1, "x", 2.50]}"#,
        ),
        (
            "JSON_EXTRACT('{\"a\": [1, {\"b\": 2}]}', '$.a[1].b', '$.a[0]')",
            "[2, 1]",
        ),
        ("JSON_EXTRACT('[1, 2, 3]', '$[*]')", "[1, 2, 3]"),
        ("JSON_EXTRACT('[1, 2, 3]', '$[1 to 2]')", "[2, 3]"),
        (
            "JSON_EXTRACT('{\"a\": {\"b\": 1}, \"c\": {\"b\": 2}}', '$**.b')",
            "[1, 2]",
        ),
        ("JSON_EXTRACT('{\"a\": 1}', '$.b')", "NULL"),
        ("JSON_EXTRACT('5', '$[0]')", "5"),
        (
            "JSON_SET('{\"a\": 1}', '$.b', 2, '$.a', 10)",
            r#"{"a": 10, "b": 2}"#,
        ),
        (
            "JSON_INSERT('{\"a\": 1}', '$.a', 5, '$.c', 3)",
            r#"{"a": 1, "c": 3}"#,
        ),
        (
            "JSON_REPLACE('{\"a\": 1}', '$.a', 5, '$.c', 3)",
            r#"{"a": 5}"#,
        ),
        ("JSON_SET('[1]', '$[5]', 2)", "[1, 2]"),
        ("JSON_SET('1', '$[1]', 2)", "[1, 2]"),
        ("JSON_REMOVE('[1, 2, 3]', '$[1]', '$[5]')", "[1, 3]"),
        (
            "JSON_ARRAY_APPEND('[1, [2]]', '$[1]', 3, '$[0]', 4)",
            "[[1, 4], [2, 3]]",
        ),
        (
            "JSON_ARRAY_INSERT('[1, 2]', '$[1]', 'x', '$[9]', 'y')",
            r#"[1, "x", 2, "y"]"#,
        ),
        (
            "JSON_CONTAINS('{\"a\": 1, \"b\": [1, 2]}', '1', '$.a')",
            "1",
        ),
        ("JSON_CONTAINS('[1, 2, 3]', '[1, 3]')", "1"),
        ("JSON_CONTAINS('{\"a\": [1, 2]}', '{\"a\": [3]}')", "0"),
        ("JSON_CONTAINS_PATH('{\"a\": 1}', 'one', '$.a', '$.x')", "1"),
        ("JSON_CONTAINS_PATH('{\"a\": 1}', 'all', '$.a', '$.x')", "0"),
        ("JSON_KEYS('{\"bb\": 1, \"a\": 2}')", r#"["a", "bb"]"#),
        ("JSON_KEYS('[1]')", "NULL"),
        ("JSON_LENGTH('{\"a\": [1, 2]}', '$.a')", "2"),
        ("JSON_DEPTH('[[1], {}]')", "3"),
        ("JSON_VALID('{')", "0"),
        ("JSON_VALID('[]')", "1"),
        ("JSON_VALID(NULL)", "NULL"),
        ("JSON_TYPE('18446744073709551615')", "UNSIGNED INTEGER"),
        ("JSON_TYPE(JSON_EXTRACT('[1.5]', '$[0]'))", "DOUBLE"),
        ("JSON_QUOTE('a\"b')", r#""a\"b""#),
        ("JSON_UNQUOTE('\"a\\\\u0041\"')", "aA"),
        ("JSON_UNQUOTE('abc')", "abc"),
        (
            "JSON_MERGE_PATCH('{\"a\": 1, \"b\": 2}', '{\"b\": null, \"c\": 3}')",
            r#"{"a": 1, "c": 3}"#,
        ),
        (
            "JSON_MERGE_PRESERVE('{\"a\": 1}', '{\"a\": 2}', '[3]')",
            r#"[{"a": [1, 2]}, 3]"#,
        ),
        ("JSON_MERGE_PATCH('{\"a\": 1}', NULL)", "NULL"),
        (
            "JSON_SEARCH('{\"a\": [\"abc\", \"xbz\"], \"b\": {\"c\": \"abd\"}}', 'all', 'ab%')",
            r#"["$.a[0]", "$.b.c"]"#,
        ),
        (
            "JSON_SEARCH('{\"a\": [\"abc\"], \"b\": \"abc\"}', 'all', 'abc', NULL, '$.b')",
            r#""$.b""#,
        ),
        ("JSON_SEARCH('[\"x\"]', 'one', 'y')", "NULL"),
        ("JSON_OVERLAPS('[1, 5]', '[5]')", "1"),
        ("JSON_OVERLAPS('{\"a\": 1}', '{\"a\": 2}')", "0"),
        ("CAST('{\"x\": 1}' AS JSON)", r#"{"x": 1}"#),
        ("CAST(5 AS JSON)", "5"),
        (
            "CAST(CAST('2024-01-02' AS DATE) AS JSON)",
            r#""2024-01-02""#,
        ),
        (
            "JSON_PRETTY('{\"a\": [1], \"b\": {}}')",
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}",
        ),
        (
            "JSON_EXTRACT('{\"a\": \"2024-01-02\"}', '$.a') + INTERVAL 1 DAY",
            "2024-01-03",
        ),
    ];
    for (expr, want) in cases {
        assert_eq!(one(&mut s, &format!("SELECT {expr}")), want, "{expr}");
    }
    for (sql, code) in [
        ("SELECT JSON_EXTRACT('{\"a\": 1}', 'x')", 3143),
        ("SELECT JSON_EXTRACT('{\"a\": 1', '$')", 3141),
        ("SELECT JSON_EXTRACT(5, '$')", 3146),
        ("SELECT JSON_OBJECT('a')", 1582),
        ("SELECT JSON_OBJECT(NULL, 1)", 3158),
        ("SELECT JSON_SET('{}', '$.*', 1)", 3149),
        ("SELECT JSON_REMOVE('{}', '$')", 3153),
        ("SELECT JSON_CONTAINS_PATH('{}', 'some', '$')", 3154),
        ("SELECT JSON_ARRAY_INSERT('[1]', '$.a', 1)", 3165),
        ("SELECT JSON_ARRAYAGG(DISTINCT 1)", 1064),
    ] {
        assert_eq!(err(&mut s, sql), code, "{sql}");
    }
}

#[test]
fn json_documents_nested_past_the_limit_are_refused_not_a_crash() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, j JSON)");
    assert_eq!(err(&mut s, "SELECT JSON_DEPTH(REPEAT('[', 100000))"), 3157);
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    assert_eq!(
        err(&mut s, &format!("INSERT INTO t VALUES (1, '{deep}')")),
        3140
    );
    let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
    q(&mut s, &format!("INSERT INTO t VALUES (1, '{ok}')"));
    assert_eq!(one(&mut s, "SELECT JSON_DEPTH(j) FROM t"), "100");
    // Growing it past the limit is refused too.
    let path = format!("${}", "[0]".repeat(99));
    assert_eq!(
        err(
            &mut s,
            &format!("UPDATE t SET j = JSON_SET(j, '{path}', JSON_ARRAY(1))")
        ),
        3157
    );
    assert_eq!(one(&mut s, "SELECT JSON_DEPTH(j) FROM t"), "100");
}

#[test]
fn json_aggregates_build_arrays_and_objects_per_group() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE o (id INT PRIMARY KEY, cust VARCHAR(10), amt DECIMAL(6,2), meta JSON)",
    );
    q(
        &mut s,
        r#"INSERT INTO o VALUES (1, 'a', 1.50, '{"x": 1}'), (2, 'a', 2.00, NULL), (3, 'b', 3.25, '[1]')"#,
    );
    assert_eq!(
        all(&mut s, "SELECT cust, JSON_ARRAYAGG(amt), JSON_OBJECTAGG(id, meta), JSON_ARRAYAGG(meta) FROM o GROUP BY cust ORDER BY cust"),
        [r#"a|[1.50, 2.00]|{"1": {"x": 1}, "2": null}|[{"x": 1}, null]"#, r#"b|[3.25]|{"3": [1]}|[[1]]"#]
    );
    assert_eq!(
        one(&mut s, "SELECT JSON_ARRAYAGG(id) FROM o WHERE id > 10"),
        "NULL"
    );
    assert_eq!(
        one(&mut s, "SELECT JSON_OBJECT('items', JSON_ARRAYAGG(JSON_OBJECT('id', id))) FROM o WHERE cust = 'a'"),
        r#"{"items": [{"id": 1}, {"id": 2}]}"#
    );
    assert_eq!(err(&mut s, "SELECT JSON_OBJECTAGG(NULL, 1) FROM o"), 3158);
}

#[test]
fn json_values_survive_reopening_and_prepared_statements() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Session::new(open(dir.path()), "root");
        q(&mut s, "CREATE DATABASE d");
        q(&mut s, "USE d");
        q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, j JSON)");
        q(
            &mut s,
            r#"INSERT INTO t VALUES (1, '{"k": ["v", 1.25, null]}')"#,
        );
    }
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "USE d");
    assert_eq!(
        one(&mut s, "SELECT j FROM t"),
        r#"{"k": ["v", 1.25, null]}"#
    );
    q(
        &mut s,
        "PREPARE p FROM 'SELECT j->>''$.k[0]'', JSON_CONTAINS(j, ?, ''$.k'') FROM t WHERE id = ?'",
    );
    q(&mut s, "SET @c = '1.25', @i = 1");
    assert_eq!(one(&mut s, "EXECUTE p USING @c, @i"), "v|1");
}

#[test]
fn string_defaults_keep_their_backslashes() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    // The default was evaluated from the parsed tree printed back to
    // text, which does not escape backslashes again: 'a\\b' became 'ab'.
    q(
        &mut s,
        r"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10) DEFAULT 'a\\b', w VARCHAR(10) DEFAULT 'it''s')",
    );
    q(&mut s, "INSERT INTO t (id) VALUES (1)");
    assert_eq!(one(&mut s, "SELECT v, w FROM t"), r"a\b|it's");
    let shown = show_create(&mut s, "t");
    assert!(shown.contains(r"`v` varchar(10) DEFAULT 'a\\b'"), "{shown}");
    q(&mut s, "DROP TABLE t");
    q(&mut s, &shown);
    q(&mut s, "INSERT INTO t (id) VALUES (1)");
    assert_eq!(one(&mut s, "SELECT v, w FROM t"), r"a\b|it's");
}

#[test]
fn json_review_cases_long_paths_duplicates_sizes_and_conversions() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    // A path of 300,000 legs is evaluated leg by leg: no stack overflow.
    assert_eq!(
        one(
            &mut s,
            "SELECT JSON_EXTRACT('1', CONCAT('$', REPEAT('[0]', 300000)))"
        ),
        "1"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT JSON_SET('{}', CONCAT('$', REPEAT('[0]', 300000)), 1)"
        ),
        "1"
    );
    // `**` selects each value once, and repeated `**` does not multiply.
    assert_eq!(
        one(&mut s, "SELECT JSON_EXTRACT('[[1]]', '$**[0]')"),
        "[[1], 1]"
    );
    q(
        &mut s,
        r#"SET @d = CONCAT(REPEAT('{"a":', 60), '1', REPEAT('}', 60))"#,
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT JSON_LENGTH(JSON_EXTRACT(@d, CONCAT('$', REPEAT('**.a', 30))))"
        ),
        "31"
    );
    assert_eq!(err(&mut s, "SELECT JSON_EXTRACT('[]', '$***.a')"), 3143);
    assert_eq!(
        err(&mut s, "SELECT JSON_EXTRACT('[]', '$[4294967296]')"),
        3143
    );
    // A document nested past the limit is never made (so never stored).
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert_eq!(
        err(
            &mut s,
            &format!("SELECT JSON_ARRAY(CAST('{deep}' AS JSON))")
        ),
        3157
    );
    // A result past max_allowed_packet is NULL with warning 1301.
    q(&mut s, "SET SESSION max_allowed_packet = 1024");
    assert_eq!(
        one(
            &mut s,
            "SELECT JSON_ARRAY(REPEAT('x', 600), REPEAT('y', 600)) IS NULL"
        ),
        "1"
    );
    q(&mut s, "SET SESSION max_allowed_packet = DEFAULT");
    // A foreign key's implicit index may not hold a JSON column.
    q(&mut s, "SET foreign_key_checks = 0");
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE c (id INT PRIMARY KEY, j JSON, FOREIGN KEY (j) REFERENCES nowhere (x))"
        ),
        3152
    );
    q(&mut s, "SET foreign_key_checks = 1");
    // JSON's text functions give utf8mb4_bin strings.
    assert_eq!(
        one(
            &mut s,
            r#"SELECT JSON_UNQUOTE(JSON_EXTRACT('{"n": "Alice"}', '$.n')) = 'alice'"#
        ),
        "0"
    );
    // Equal documents group together: 1 and 1.0 are one value.
    q(&mut s, "CREATE TABLE g (id INT PRIMARY KEY, j JSON)");
    q(
        &mut s,
        "INSERT INTO g VALUES (1, '1'), (2, '1.0'), (3, '[1, 2]'), (4, '[1.0, 2]')",
    );
    assert_eq!(one(&mut s, "SELECT COUNT(DISTINCT j) FROM g"), "2");
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM (SELECT DISTINCT j FROM g) x"),
        "2"
    );
    // Truth values given to JSON functions are JSON booleans.
    assert_eq!(
        one(
            &mut s,
            "SELECT JSON_OBJECT('ok', 1 = 1, 'n', 2 > 3, 'i', 1)"
        ),
        r#"{"i": 1, "n": false, "ok": true}"#
    );
    assert_eq!(one(&mut s, "SELECT JSON_ARRAY(1 IS NULL, 5)"), "[false, 5]");
    // `[last - n]` before the start inserts at the front.
    assert_eq!(one(&mut s, "SELECT JSON_SET('[]', '$[last]', 1)"), "[1]");
    assert_eq!(
        one(&mut s, "SELECT JSON_INSERT('[1, 2]', '$[last-5]', 9)"),
        "[9, 1, 2]"
    );
    assert_eq!(
        one(&mut s, "SELECT JSON_SET('1', '$[last-1]', 2)"),
        "[2, 1]"
    );
    // `[0]` of a value that is not an array is the value: removing it
    // removes the member.
    assert_eq!(
        one(
            &mut s,
            r#"SELECT JSON_REMOVE('{"a": 1, "b": 2}', '$.a[0]')"#
        ),
        r#"{"b": 2}"#
    );
    // JSON_OBJECTAGG's keys are their text, as JSON_OBJECT's.
    assert_eq!(one(&mut s, "SELECT JSON_OBJECTAGG(2e0, 1)"), r#"{"2": 1}"#);
    // JSON values stored into other column types convert as MySQL's do.
    q(
        &mut s,
        "CREATE TABLE n (id INT PRIMARY KEY, d DOUBLE, p DECIMAL(6,2), t VARCHAR(30), dt DATE)",
    );
    q(
        &mut s,
        r#"INSERT INTO n SELECT 1, j->'$.x', j->'$.x', j->'$.s', j->'$.d' FROM (SELECT CAST('{"x": 2.5, "s": "hi", "d": "2024-02-29"}' AS JSON) AS j) z"#,
    );
    assert_eq!(
        one(&mut s, "SELECT d, p, t, dt FROM n"),
        r#"2.5|2.50|"hi"|2024-02-29"#
    );
    // JSON mixed with another type in one column is text.
    let c = q(&mut s, "SELECT IFNULL(j, 0) FROM g WHERE id = 3");
    assert_eq!(c.columns.first().map(|c| c.ty), Some(OutType::VarString));
}
