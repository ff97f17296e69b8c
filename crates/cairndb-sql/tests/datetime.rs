//! Date and time functions end to end through `Session::query`, with
//! the values MySQL 8.0 gives (checked against MySQL's documentation and
//! a MariaDB 10.11 server where the two agree).

use cairndb_sql::{OutType, Session};

mod common;
use common::{err, q, rows, session};

fn one(s: &mut Session, expr: &str) -> String {
    let c = q(s, &format!("SELECT {expr}"));
    rows(&c).join("\n")
}

fn check(s: &mut Session, cases: &[(&str, &str)]) {
    for (e, want) in cases {
        assert_eq!(one(s, e), *want, "SELECT {e}");
    }
}

fn warnings(s: &mut Session) -> Vec<String> {
    rows(&q(s, "SHOW WARNINGS"))
}

#[test]
fn interval_arithmetic() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("DATE_ADD('2024-01-31', INTERVAL 1 MONTH)", "2024-02-29"),
            ("DATE_ADD('2024-01-31', INTERVAL 1 DAY)", "2024-02-01"),
            (
                "DATE_ADD('2023-12-31 23:59:59', INTERVAL 1 SECOND)",
                "2024-01-01 00:00:00",
            ),
            ("DATE_ADD('2024-02-29', INTERVAL 1 YEAR)", "2025-02-28"),
            ("DATE_SUB('2024-03-31', INTERVAL 1 MONTH)", "2024-02-29"),
            (
                "DATE_ADD('2024-01-01', INTERVAL '1-2' YEAR_MONTH)",
                "2025-03-01",
            ),
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1 2' DAY_HOUR)",
                "2024-01-02 02:00:00",
            ),
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '-1 10' DAY_HOUR)",
                "2023-12-30 14:00:00",
            ),
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1:30' HOUR_MINUTE)",
                "2024-01-01 01:30:00",
            ),
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1 1:1:1' DAY_SECOND)",
                "2024-01-02 01:01:01",
            ),
            // Too few fields: the leftmost are the ones left out.
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1:1' DAY_SECOND)",
                "2024-01-01 00:01:01",
            ),
            (
                "DATE_ADD('1992-12-31 23:59:59.000002', INTERVAL '1.999999' SECOND_MICROSECOND)",
                "1993-01-01 00:00:01.000001",
            ),
            (
                "DATE_ADD('2024-01-01 00:00:00', INTERVAL '1.5' SECOND_MICROSECOND)",
                "2024-01-01 00:00:01.500000",
            ),
            ("DATE_ADD('2024-01-01', INTERVAL 2 QUARTER)", "2024-07-01"),
            ("DATE_ADD('2024-01-01', INTERVAL 1 WEEK)", "2024-01-08"),
            (
                "DATE_ADD('2024-01-01', INTERVAL 10 MICROSECOND)",
                "2024-01-01 00:00:00.000010",
            ),
            (
                "DATE_ADD('2024-01-01', INTERVAL 1 HOUR)",
                "2024-01-01 01:00:00",
            ),
            ("DATE '2024-01-01' + INTERVAL 1 DAY", "2024-01-02"),
            ("INTERVAL 1 DAY + DATE '2024-01-01'", "2024-01-02"),
            ("DATE '2024-01-01' - INTERVAL 1 DAY", "2023-12-31"),
            ("DATE '2024-01-01' + INTERVAL 1 HOUR", "2024-01-01 01:00:00"),
            (
                "TIMESTAMP '2024-01-01 10:00:00' + INTERVAL 1 DAY",
                "2024-01-02 10:00:00",
            ),
            (
                "'2024-01-01' + INTERVAL 1 DAY + INTERVAL 2 HOUR",
                "2024-01-02 02:00:00",
            ),
            ("'2024-01-01' - INTERVAL 1 MONTH", "2023-12-01"),
            ("DATE_ADD(NULL, INTERVAL 1 DAY)", "NULL"),
            ("DATE_ADD('2024-01-01', INTERVAL NULL DAY)", "NULL"),
            ("ADDDATE('2024-01-01', 31)", "2024-02-01"),
            ("SUBDATE('2024-01-01', 1)", "2023-12-31"),
            ("ADDDATE('2024-01-01', INTERVAL 1 MONTH)", "2024-02-01"),
            ("DATE_ADD(20240101, INTERVAL 1 DAY)", "2024-01-02"),
            (
                "TIMESTAMPADD(MINUTE, 1, '2003-01-02')",
                "2003-01-02 00:01:00",
            ),
            ("TIMESTAMPADD(WEEK, 1, '2003-01-02')", "2003-01-09"),
        ],
    );
}

#[test]
fn invalid_dates_are_null_with_warning_1292() {
    let (_d, mut s) = session();
    assert_eq!(
        one(&mut s, "DATE_ADD('2024-02-30', INTERVAL 1 DAY)"),
        "NULL"
    );
    assert_eq!(
        warnings(&mut s),
        ["Warning|1292|Incorrect datetime value: '2024-02-30'"]
    );
    for e in [
        "YEAR('abc')",
        "YEAR('2024-02-30')",
        "DAYNAME('2024-02-30')",
        "DATEDIFF('2024-02-30', '2024-01-01')",
        "LAST_DAY('2003-03-32')",
    ] {
        assert_eq!(one(&mut s, e), "NULL", "{e}");
        assert_eq!(warnings(&mut s).len(), 1, "{e}");
    }
    assert_eq!(
        one(&mut s, "DATE_ADD('9999-12-31', INTERVAL 1 DAY)"),
        "NULL"
    );
    assert_eq!(
        warnings(&mut s),
        ["Warning|1441|Datetime function: datetime field overflow"]
    );
    assert_eq!(one(&mut s, "STR_TO_DATE('2024-02-30', '%Y-%m-%d')"), "NULL");
    assert_eq!(
        warnings(&mut s),
        ["Warning|1411|Incorrect datetime value: '2024-02-30' for function str_to_date"]
    );
}

#[test]
fn differences() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("DATEDIFF('2007-12-31 23:59:59','2007-12-30')", "1"),
            ("DATEDIFF('2010-11-30 23:59:59','2010-12-31')", "-31"),
            ("TIMESTAMPDIFF(MONTH,'2003-02-01','2003-05-01')", "3"),
            ("TIMESTAMPDIFF(YEAR,'2002-05-01','2001-01-01')", "-1"),
            (
                "TIMESTAMPDIFF(MINUTE,'2003-02-01','2003-05-01 12:05:55')",
                "128885",
            ),
            ("TIMESTAMPDIFF(MONTH,'2024-01-31','2024-02-29')", "0"),
            ("TIMESTAMPDIFF(MONTH,'2024-03-31','2024-02-29')", "-1"),
            (
                "TIMESTAMPDIFF(SECOND,'2024-01-01 00:00:01','2024-01-01 00:00:00')",
                "-1",
            ),
            ("TIMESTAMPDIFF(QUARTER,'2024-01-01','2024-12-31')", "3"),
            ("TIMESTAMPDIFF(DAY,'2024-01-02','2024-01-01 00:00:01')", "0"),
            ("TO_DAYS(950501)", "728779"),
            ("TO_DAYS('2007-10-07')", "733321"),
            ("FROM_DAYS(730669)", "2000-07-03"),
            ("FROM_DAYS(100)", "0000-00-00"),
        ],
    );
}

#[test]
fn formatting_and_parsing() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            (
                "DATE_FORMAT('2009-10-04 22:23:00', '%W %M %Y')",
                "Sunday October 2009",
            ),
            ("DATE_FORMAT('2007-10-04 22:23:00', '%H:%i:%s')", "22:23:00"),
            (
                "DATE_FORMAT('1900-10-04 22:23:00', '%D %y %a %d %m %b %j')",
                "4th 00 Thu 04 10 Oct 277",
            ),
            (
                "DATE_FORMAT('1997-10-04 22:23:00', '%H %k %I %r %T %S %w')",
                "22 22 10 10:23:00 PM 22:23:00 00 6",
            ),
            ("DATE_FORMAT('1999-01-01', '%X %V')", "1998 52"),
            (
                "DATE_FORMAT('2024-03-05 01:02:03.004', '%c %e %f %h %l %p %U %u %v %x %%')",
                "3 5 004000 01 1 AM 09 10 10 2024 %",
            ),
            (
                "DATE_FORMAT('2024-12-30', '%U %u %V %v %X %x')",
                "52 53 52 01 2024 2025",
            ),
            ("DATE_FORMAT('2024-01-11', '%D %D')", "11th 11th"),
            ("STR_TO_DATE('01,5,2013','%d,%m,%Y')", "2013-05-01"),
            ("STR_TO_DATE('May 1, 2013','%M %d,%Y')", "2013-05-01"),
            (
                "STR_TO_DATE('2013-05-01 10:11:12','%Y-%m-%d %H:%i:%s')",
                "2013-05-01 10:11:12",
            ),
            (
                "STR_TO_DATE('2013-05-01 10:11:12 PM','%Y-%m-%d %h:%i:%s %p')",
                "2013-05-01 22:11:12",
            ),
            (
                "STR_TO_DATE('Tuesday 5 March 24','%W %e %M %y')",
                "2024-03-05",
            ),
            ("STR_TO_DATE('2024-060','%Y-%j')", "2024-02-29"),
            ("FROM_UNIXTIME(1447430881)", "2015-11-13 16:08:01"),
            (
                "FROM_UNIXTIME(1447430881, '%Y %D %M %h:%i:%s %x')",
                "2015 13th November 04:08:01 2015",
            ),
            ("FROM_UNIXTIME(-1)", "NULL"),
            ("UNIX_TIMESTAMP('2015-11-13 10:20:19')", "1447410019"),
            (
                "UNIX_TIMESTAMP('2015-11-13 10:20:19.012')",
                "1447410019.012000",
            ),
            ("UNIX_TIMESTAMP(DATE '2024-01-01')", "1704067200"),
            ("UNIX_TIMESTAMP('1969-12-31')", "0"),
        ],
    );
}

#[test]
fn parts_of_dates() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("EXTRACT(YEAR FROM '2019-07-02')", "2019"),
            ("EXTRACT(YEAR_MONTH FROM '2019-07-02 01:02:03')", "201907"),
            ("EXTRACT(DAY_MINUTE FROM '2019-07-02 01:02:03')", "20102"),
            (
                "EXTRACT(MICROSECOND FROM '2003-01-02 10:30:00.000123')",
                "123",
            ),
            (
                "EXTRACT(DAY_MICROSECOND FROM '2003-01-02 10:30:00.000123')",
                "2103000000123",
            ),
            ("EXTRACT(WEEK FROM '2024-03-05')", "9"),
            ("EXTRACT(QUARTER FROM '2024-08-05')", "3"),
            ("YEAR('1987-01-01')", "1987"),
            ("YEAR(20240105)", "2024"),
            ("MONTH('2008-02-03')", "2"),
            ("MONTH(NULL)", "NULL"),
            ("DAY('2007-02-03')", "3"),
            ("DAYOFMONTH('2007-02-03')", "3"),
            ("HOUR('10:05:03')", "10"),
            ("HOUR('2024-01-01 10:05:03')", "10"),
            ("MINUTE('2008-02-03 10:05:03')", "5"),
            ("SECOND('10:05:03')", "3"),
            ("MICROSECOND('12:00:00.123456')", "123456"),
            ("QUARTER('2008-04-01')", "2"),
            ("WEEK('2008-02-20')", "7"),
            ("WEEK('2008-02-20',0)", "7"),
            ("WEEK('2008-02-20',1)", "8"),
            ("WEEK('2008-12-31',1)", "53"),
            ("WEEK('2000-01-01',0)", "0"),
            ("WEEK('2000-01-01',2)", "52"),
            ("WEEK('2024-12-31',3)", "1"),
            ("WEEK('2021-01-03',4)", "1"),
            ("WEEK('2021-01-03',5)", "0"),
            ("WEEK('2021-01-03',6)", "1"),
            ("WEEK('2021-01-03',7)", "52"),
            ("WEEKOFYEAR('2008-02-20')", "8"),
            ("YEARWEEK('1987-01-01')", "198652"),
            ("YEARWEEK('2024-12-31', 3)", "202501"),
            ("DAYOFWEEK('2007-02-03')", "7"),
            ("WEEKDAY('2008-02-03 22:23:00')", "6"),
            ("WEEKDAY('2007-11-06')", "1"),
            ("DAYOFYEAR('2007-02-03')", "34"),
            ("DAYNAME('2007-02-03')", "Saturday"),
            ("MONTHNAME('2008-02-03')", "February"),
            ("DATE('2003-12-31 01:02:03')", "2003-12-31"),
            ("DATE('2024-1-5')", "2024-01-05"),
            ("DATE('24-01-05')", "2024-01-05"),
            ("DATE('20240105')", "2024-01-05"),
            ("DATE('2024/01/05 10:11')", "2024-01-05"),
            ("DATE('2024-01-05T10:11:12')", "2024-01-05"),
            ("LAST_DAY('2003-02-05')", "2003-02-28"),
            ("LAST_DAY('2004-02-05')", "2004-02-29"),
            ("LAST_DAY('2004-01-01 01:01:01')", "2004-01-31"),
            ("MAKEDATE(2011,31)", "2011-01-31"),
            ("MAKEDATE(2011,32)", "2011-02-01"),
            ("MAKEDATE(2011,365)", "2011-12-31"),
            ("MAKEDATE(2011,0)", "NULL"),
            ("MAKEDATE(24,1)", "2024-01-01"),
        ],
    );
}

#[test]
fn result_types_follow_the_argument() {
    let (_d, mut s) = session();
    let ty = |s: &mut Session, e: &str| q(s, &format!("SELECT {e}")).columns[0].ty;
    assert_eq!(
        ty(&mut s, "DATE '2024-01-01' + INTERVAL 1 DAY"),
        OutType::Date
    );
    assert_eq!(
        ty(&mut s, "DATE '2024-01-01' + INTERVAL 1 HOUR"),
        OutType::DateTime
    );
    assert_eq!(
        ty(&mut s, "'2024-01-01' + INTERVAL 1 DAY"),
        OutType::VarString
    );
    assert_eq!(ty(&mut s, "STR_TO_DATE('2024', '%Y-%m-%d')"), OutType::Date);
    assert_eq!(
        ty(&mut s, "STR_TO_DATE('2024', '%Y-%m-%d %H')"),
        OutType::DateTime
    );
    assert_eq!(ty(&mut s, "YEAR(NOW())"), OutType::LongLong);
    assert_eq!(ty(&mut s, "LAST_DAY(NOW())"), OutType::Date);
    assert_eq!(ty(&mut s, "UTC_TIMESTAMP()"), OutType::DateTime);
    assert_eq!(ty(&mut s, "UTC_DATE"), OutType::Date);
}

#[test]
fn dates_in_tables() {
    let (_d, mut s) = session();
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, d DATE, dt DATETIME(6), s VARCHAR(20))",
    );
    q(
        &mut s,
        "INSERT INTO t VALUES (1, '2024-01-31', '2024-01-31 10:00:00.5', '2024-01-31'), \
         (2, '2023-03-15', '2023-03-15 23:59:59', 'nope')",
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT d + INTERVAL 1 MONTH, dt + INTERVAL 1 DAY, s + INTERVAL 1 DAY FROM t ORDER BY id"
        )),
        [
            "2024-02-29|2024-02-01 10:00:00.500000|2024-02-01",
            "2023-04-15|2023-03-16 23:59:59|NULL"
        ]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT id FROM t WHERE d > CURDATE() - INTERVAL 100 YEAR AND YEAR(d) = 2024"
        )),
        ["1"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DATE_FORMAT(dt, '%Y/%m/%d %f') FROM t ORDER BY id"
        )),
        ["2024/01/31 500000", "2023/03/15 000000"]
    );
}

#[test]
fn clocks_and_refusals() {
    let (_d, mut s) = session();
    assert_eq!(one(&mut s, "LENGTH(NOW())"), "19");
    assert_eq!(one(&mut s, "CURRENT_TIMESTAMP(6) >= NOW()"), "1");
    assert_eq!(one(&mut s, "UTC_DATE() = CURDATE()"), "1");
    assert_eq!(
        one(
            &mut s,
            "ABS(TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP, NOW())) < 5"
        ),
        "1"
    );
    assert_eq!(
        one(&mut s, "ABS(UNIX_TIMESTAMP(NOW()) - UNIX_TIMESTAMP()) < 5"),
        "1"
    );
    assert_eq!(err(&mut s, "SELECT NOW(7)"), 1426);
    assert_eq!(err(&mut s, "SELECT PERIOD_ADD(202401, 1)"), 1235);
    assert_eq!(
        err(
            &mut s,
            "SELECT DATE_ADD('2024-01-01', INTERVAL 1 FORTNIGHT)"
        ),
        1064
    );
    assert_eq!(err(&mut s, "SELECT DATEDIFF('2024-01-01')"), 1582);
}

#[test]
fn cast_as_date_and_datetime_converts_as_mysql_does() {
    let (_d, mut s) = session();
    check(
        &mut s,
        &[
            ("CAST('2024-01-02 10:11:12.6' AS DATE)", "2024-01-02"),
            // The fraction rounds to the type's digits, carrying over.
            (
                "CAST('2024-01-02 10:11:12.6' AS DATETIME)",
                "2024-01-02 10:11:13",
            ),
            (
                "CAST('2024-12-31 23:59:59.7' AS DATETIME)",
                "2025-01-01 00:00:00",
            ),
            (
                "CAST('2024-01-02 10:11:12.123456' AS DATETIME(3))",
                "2024-01-02 10:11:12.123000",
            ),
            ("CAST(20240102 AS DATE)", "2024-01-02"),
            ("CAST(NULL AS DATETIME)", "NULL"),
            ("CAST('2024-03-01' AS DATE) - INTERVAL 1 DAY", "2024-02-29"),
        ],
    );
    // A TIME is today's date plus the time, days carried.
    assert_eq!(
        one(
            &mut s,
            "CAST(CAST('25:00:00' AS TIME) AS DATETIME) = CURDATE() + INTERVAL 25 HOUR"
        ),
        "1"
    );
    assert_eq!(one(&mut s, "CAST('junk' AS DATE)"), "NULL");
    assert_eq!(
        warnings(&mut s),
        ["Warning|1292|Incorrect datetime value: 'junk'"]
    );
    let c = q(
        &mut s,
        "SELECT CAST('2024-01-02' AS DATE), CAST('2024-01-02' AS DATETIME(2))",
    );
    assert_eq!(
        c.columns
            .iter()
            .map(|c| (c.ty, c.decimals))
            .collect::<Vec<_>>(),
        [(OutType::Date, 0), (OutType::DateTime, 2)]
    );
}
