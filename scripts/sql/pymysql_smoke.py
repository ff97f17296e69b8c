#!/usr/bin/env python3
"""PyMySQL (the unmodified client library) against `cairndb server`.

usage: pymysql_smoke.py --port P [--host 127.0.0.1] [--user root]

Run by scripts/sql-clients.sh on a fresh server. Each check prints
`PASS name`, `FAIL name: why` or, for a check listed in KNOWN (a difference
from MySQL already reported against the SQL layer), `KNOWN name: why`; a
known check that passes is reported as `FIXED`, which fails the run until
the entry is removed.
The last line is `pymysql: N passed, N failed`; the exit status is 1 if any
check failed.

What MySQL 8.0 does is the expectation throughout: the server's status
flags as the client sees them (get_autocommit(), SERVER_STATUS_IN_TRANS),
commit and rollback, parameter quoting, executemany's multi-row rewrite,
utf8mb4 text, Python types of DECIMAL/DATE/DATETIME/BIGINT columns, and the
exception class pymysql maps each error code to.
"""

import argparse
import datetime
import decimal
import sys
import threading
import time
import traceback

import pymysql
from pymysql.constants import CLIENT, FIELD_TYPE, SERVER_STATUS

# check name -> the SQL-layer difference from MySQL it exposes (reported;
# docs/sql.md, "Known differences"). A check listed here still runs and
# checks MySQL's behaviour; it is reported as KNOWN, not failed, and as FIXED
# (a failure, so the entry gets removed) once it passes.
KNOWN = {}

ARGS = None
results = []
CHECKS = []


def check(fn):
    """Registers a check; main() runs them in order after setup()."""
    CHECKS.append(fn)
    return fn


def connect(**kw):
    opts = dict(host=ARGS.host, port=ARGS.port, user=ARGS.user, password="",
                database="pyt", charset="utf8mb4", connect_timeout=10,
                read_timeout=60, write_timeout=60)
    opts.update(kw)
    return pymysql.connect(**opts)


def run(fn):
    name = fn.__name__
    try:
        fn()
        ok, why = True, ""
    except Exception as e:  # noqa: BLE001 - any failure of the check
        ok = False
        why = f"{type(e).__name__}: {e}"
        if not isinstance(e, AssertionError):
            why += "\n" + "".join(traceback.format_exc().splitlines(True)[-4:])
    if name in KNOWN:
        status = "FIXED" if ok else "KNOWN"
        why = why or f"{KNOWN[name]} -- now passes: remove it from KNOWN"
        if not ok:
            why = f"{KNOWN[name]} -- {why}"
    else:
        status = "PASS" if ok else "FAIL"
    results.append((name, status))
    line = f"{status} {name}"
    if why and status != "PASS":
        line += ": " + why.strip()
    print(line, flush=True)


def eq(got, want, what=""):
    if got != want or type(got) is not type(want):
        raise AssertionError(f"{what}: got {got!r} ({type(got).__name__}), "
                             f"want {want!r} ({type(want).__name__})")


def expect_error(cls, code, fn):
    try:
        fn()
    except pymysql.Error as e:
        if type(e) is not cls or e.args[0] != code:
            raise AssertionError(
                f"got {type(e).__name__}{e.args}, want {cls.__name__} {code}")
        return e
    raise AssertionError(f"no error, want {cls.__name__} {code}")


def in_trans(conn):
    return bool(conn.server_status & SERVER_STATUS.SERVER_STATUS_IN_TRANS)


def count(conn, table, where="1=1"):
    with conn.cursor() as c:
        c.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}")
        return c.fetchone()[0]


def setup():
    c = pymysql.connect(host=ARGS.host, port=ARGS.port, user=ARGS.user,
                        password="", autocommit=True)
    with c.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS pyt")
        cur.execute("CREATE DATABASE pyt")
        cur.execute("USE pyt")
        cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(20),"
                    " balance BIGINT NOT NULL)")
        cur.execute("INSERT INTO acct VALUES (1, 'a', 100), (2, 'b', 200),"
                    " (3, 'c', 300)")
    c.close()


# --- autocommit and the status flags ------------------------------------

@check
def autocommit_on_status_flags():
    conn = connect(autocommit=True)
    eq(conn.get_autocommit(), True, "get_autocommit() after connect")
    with conn.cursor() as c:
        c.execute("SELECT @@autocommit")
        eq(int(c.fetchone()[0]), 1, "@@autocommit")
        c.execute("UPDATE acct SET balance = balance WHERE id = 1")
        eq(in_trans(conn), False, "IN_TRANS after an autocommit UPDATE")
        conn.begin()
        c.execute("UPDATE acct SET balance = balance + 1 WHERE id = 1")
        eq(in_trans(conn), True, "IN_TRANS after BEGIN; UPDATE")
        eq(conn.get_autocommit(), True, "AUTOCOMMIT flag inside BEGIN")
        conn.rollback()
        eq(in_trans(conn), False, "IN_TRANS after ROLLBACK")
        c.execute("SET autocommit = 0")
        eq(conn.get_autocommit(), False, "get_autocommit() after SET autocommit=0")
        c.execute("SET autocommit = 1")
        eq(conn.get_autocommit(), True, "get_autocommit() after SET autocommit=1")
    conn.close()


@check
def autocommit_on_each_statement_commits():
    a, b = connect(autocommit=True), connect(autocommit=True)
    with a.cursor() as c:
        c.execute("UPDATE acct SET owner = 'A' WHERE id = 1")
        eq(c.rowcount, 1, "rowcount")
    with b.cursor() as c:
        c.execute("SELECT owner FROM acct WHERE id = 1")
        eq(c.fetchone()[0], "A", "other connection sees the autocommitted row")
        c.execute("UPDATE acct SET owner = 'a' WHERE id = 1")
    a.close()
    b.close()


@check
def autocommit_off_commit_and_rollback():
    # PyMySQL's default is autocommit=False: it sends SET AUTOCOMMIT = 0.
    a, b = connect(), connect(autocommit=True)
    eq(a.get_autocommit(), False, "get_autocommit() with autocommit=False")
    with a.cursor() as c:
        c.execute("INSERT INTO acct VALUES (10, 'x', 1)")
        eq(in_trans(a), True, "IN_TRANS after an INSERT with autocommit off")
        eq(count(b, "acct", "id = 10"), 0, "uncommitted row seen by another connection")
        a.rollback()
        eq(in_trans(a), False, "IN_TRANS after rollback()")
        eq(count(a, "acct", "id = 10"), 0, "row after rollback (own connection)")
        c.execute("INSERT INTO acct VALUES (11, 'y', 1)")
        c.execute("UPDATE acct SET balance = balance - 50 WHERE id = 2")
        a.commit()
        eq(in_trans(a), False, "IN_TRANS after commit()")
    eq(count(b, "acct", "id = 11"), 1, "committed row seen by another connection")
    with b.cursor() as c:
        c.execute("SELECT balance FROM acct WHERE id = 2")
        eq(c.fetchone()[0], 150, "committed update")
        c.execute("UPDATE acct SET balance = 200 WHERE id = 2")
        c.execute("DELETE FROM acct WHERE id = 11")
    a.close()
    b.close()


@check
def autocommit_switch_on_commits_open_transaction():
    # SET autocommit = 1 inside a transaction commits it (MySQL manual,
    # "Statements That Cause an Implicit Commit").
    a, b = connect(), connect(autocommit=True)
    with a.cursor() as c:
        c.execute("INSERT INTO acct VALUES (12, 'z', 1)")
    a.autocommit(True)
    eq(a.get_autocommit(), True, "get_autocommit() after autocommit(True)")
    eq(in_trans(a), False, "IN_TRANS after autocommit(True)")
    eq(count(b, "acct", "id = 12"), 1, "row committed by SET autocommit=1")
    with b.cursor() as c:
        c.execute("DELETE FROM acct WHERE id = 12")
    a.close()
    b.close()


@check
def rollback_discards_everything():
    a = connect(autocommit=True)
    with a.cursor() as c:
        c.execute("SELECT id, owner, balance FROM acct ORDER BY id")
        before = c.fetchall()
        a.begin()
        c.execute("INSERT INTO acct VALUES (20, 'new', 5)")
        c.execute("UPDATE acct SET balance = 0 WHERE id < 20")
        c.execute("DELETE FROM acct WHERE id = 3")
        c.execute("SELECT COUNT(*), SUM(balance) FROM acct")
        eq(c.fetchone(), (3, decimal.Decimal(5)), "inside the transaction")
        a.rollback()
        c.execute("SELECT id, owner, balance FROM acct ORDER BY id")
        eq(c.fetchall(), before, "after rollback")
    a.close()


@check
def connection_close_rolls_back():
    a, b = connect(), connect(autocommit=True)
    with a.cursor() as c:
        c.execute("UPDATE acct SET balance = -1 WHERE id = 1")
    a.close()  # no commit
    with b.cursor() as c:
        c.execute("SELECT balance FROM acct WHERE id = 1")
        eq(c.fetchone()[0], 100, "balance after the connection closed")
    b.close()


# --- parameters ----------------------------------------------------------

@check
def parameterised_queries():
    conn = connect(autocommit=True)
    tricky = ["O'Reilly", 'say "hi"', "back\\slash", "semi; DROP TABLE acct; --",
              "nul\x00byte", "tab\tnew\nline", "%_ wild", ""]
    with conn.cursor() as c:
        c.execute("CREATE TABLE params (id INT PRIMARY KEY, s VARCHAR(100),"
                  " n BIGINT, f DOUBLE)")
        for i, s in enumerate(tricky):
            c.execute("INSERT INTO params (id, s, n, f) VALUES (%s, %s, %s, %s)",
                      (i, s, -(2 ** 62) + i, i / 4))
        for i, s in enumerate(tricky):
            c.execute("SELECT id, n, f FROM params WHERE s = %s", (s,))
            eq(c.fetchall(), ((i, -(2 ** 62) + i, i / 4),), f"row for {s!r}")
        c.execute("SELECT s FROM params WHERE id = %(id)s", {"id": 0})
        eq(c.fetchone()[0], "O'Reilly", "named parameter")
        c.execute("SELECT COUNT(*) FROM params WHERE id IN %s", ((1, 2, 3),))
        eq(c.fetchone()[0], 3, "IN with a tuple parameter")
        c.execute("SELECT COUNT(*) FROM params WHERE s LIKE %s", ("%\\_ wild",))
        eq(c.fetchone()[0], 1, "LIKE with an escaped _")
        eq(count(conn, "acct"), 3, "acct survived the injection attempt")


@check
def executemany_batch_insert():
    conn = connect(autocommit=False)
    rows = [(i, f"name-{i}", i * 3) for i in range(1, 1001)]
    with conn.cursor() as c:
        c.execute("CREATE TABLE batch (id INT PRIMARY KEY, name VARCHAR(20),"
                  " v INT, KEY k_v (v))")
        # A plain INSERT ... VALUES is rewritten into multi-row INSERTs.
        n = c.executemany("INSERT INTO batch (id, name, v) VALUES (%s, %s, %s)", rows)
        eq(n, 1000, "executemany rowcount")
        conn.commit()
        c.execute("SELECT COUNT(*), SUM(v), MIN(name), MAX(id) FROM batch")
        eq(c.fetchone(), (1000, decimal.Decimal(3 * 500500), "name-1", 1000), "aggregates")
        # Not rewritten: one UPDATE per tuple; rowcount is the sum.
        n = c.executemany("UPDATE batch SET v = v + %s WHERE id = %s",
                          [(1, i) for i in range(1, 11)])
        eq(n, 10, "executemany UPDATE rowcount")
        conn.commit()
        c.execute("SELECT SUM(v) FROM batch WHERE id <= 10")
        eq(c.fetchone()[0], decimal.Decimal(3 * 55 + 10), "updated rows")
        c.execute("SELECT COUNT(*) FROM batch WHERE v BETWEEN 30 AND 60")
        eq(c.fetchone()[0], 11, "index range over the batch")
    conn.close()


@check
def executemany_duplicate_fails_whole_statement():
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        c.execute("CREATE TABLE batch2 (id INT PRIMARY KEY)")
        expect_error(pymysql.err.IntegrityError, 1062, lambda: c.executemany(
            "INSERT INTO batch2 VALUES (%s)", [(1,), (2,), (2,), (3,)]))
        # One multi-row statement in autocommit: all or nothing.
        eq(count(conn, "batch2"), 0, "rows left by the failed multi-row INSERT")
    conn.close()


@check
def lastrowid_and_rowcount():
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        c.execute("CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")
        c.execute("INSERT INTO ai (v) VALUES (1)")
        eq(c.lastrowid, 1, "lastrowid")
        c.execute("INSERT INTO ai (v) VALUES (2), (3), (4)")
        eq(c.lastrowid, 2, "lastrowid of a multi-row insert (its first id)")
        eq(c.rowcount, 3, "rowcount")
        c.execute("UPDATE ai SET v = 2 WHERE v >= 2")
        eq(c.rowcount, 2, "UPDATE rowcount (changed rows, no CLIENT_FOUND_ROWS)")
    conn.close()


@check
def found_rows_client_flag():
    # With CLIENT_FOUND_ROWS (as Connector/J sets by default) UPDATE reports
    # the rows it matched, not the rows it changed.
    conn = connect(autocommit=True, client_flag=CLIENT.FOUND_ROWS)
    with conn.cursor() as c:
        c.execute("UPDATE ai SET v = 2 WHERE v >= 2")
        eq(c.rowcount, 3, "UPDATE rowcount with CLIENT_FOUND_ROWS")
    conn.close()


@check
def multi_statements():
    conn = connect(autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)
    with conn.cursor() as c:
        c.execute("SELECT 1; SELECT 'two'; UPDATE ai SET v = v WHERE id = 1")
        eq(c.fetchall(), ((1,),), "first result")
        eq(c.nextset(), True, "second result")
        eq(c.fetchall(), (("two",),), "second result")
        eq(c.nextset(), True, "third result")
        eq(c.nextset(), None, "no fourth result")
    conn.close()


@check
def function_result_types():
    # The result-set metadata gives each function's MySQL type, from which
    # the client picks the Python type.
    conn = connect(autocommit=True)
    D = decimal.Decimal
    cases = [
        ("LENGTH('ab')", 2), ("CHAR_LENGTH('ab')", 2), ("ABS(-1)", 1),
        ("CAST('42' AS SIGNED)", 42), ("CAST(1.5 AS DECIMAL(5,2))", D("1.50")),
        ("CAST(balance AS DOUBLE)", 100.0), ("ROUND(2.567, 1)", D("2.6")),
        ("FLOOR(2.5)", 2), ("IF(1, 2, 3)", 2), ("IFNULL(NULL, 3)", 3),
        ("IFNULL(balance, 0)", 100), ("COALESCE(NULL, 1.5)", D("1.5")),
        ("GREATEST(1, 2)", 2), ("CASE WHEN id = 1 THEN 2 END", 2),
        ("LAST_INSERT_ID()", 0), ("ROW_COUNT()", -1),
    ]
    bad = []
    with conn.cursor() as c:
        for expr, want in cases:
            c.execute(f"SELECT {expr} FROM acct WHERE id = 1")
            got = c.fetchone()[0]
            if got != want or type(got) is not type(want):
                bad.append(f"{expr} = {got!r}, want {want!r}")
        c.execute("SELECT NOW(), CURDATE(), UNIX_TIMESTAMP(), CONNECTION_ID()")
        got = c.fetchone()
        types = tuple(type(v).__name__ for v in got)
        if types != ("datetime", "date", "int", "int"):
            bad.append(f"NOW(), CURDATE(), UNIX_TIMESTAMP(), CONNECTION_ID() = {got!r}, "
                       "want datetime, date, int, int")
    conn.close()
    if bad:
        raise AssertionError("; ".join(bad))


@check
def date_to_string():
    # A DATE in a string context is 'YYYY-MM-DD'.
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        c.execute("CREATE TABLE dts (id INT PRIMARY KEY, d DATE)")
        c.execute("INSERT INTO dts VALUES (1, '2024-02-29'), (2, NULL)")
        c.execute("SELECT CONCAT(d, ''), IFNULL(d, 'never') FROM dts ORDER BY id")
        eq(c.fetchall(), (("2024-02-29", "2024-02-29"), (None, "never")), "DATE as a string")
        c.execute("SELECT LENGTH(CONCAT(CURDATE(), ''))")
        eq(int(c.fetchone()[0]), 10, "CURDATE() as a string is 10 characters")
    conn.close()


@check
def autocommit_off_select_starts_transaction():
    # With autocommit off a SELECT starts the transaction (IN_TRANS) and,
    # under REPEATABLE READ, its snapshot: another connection's commit
    # stays invisible until COMMIT.
    a, b = connect(autocommit=False), connect(autocommit=True)
    with a.cursor() as ca, b.cursor() as cb:
        cb.execute("CREATE TABLE snap (id INT PRIMARY KEY, v INT)")
        cb.execute("INSERT INTO snap VALUES (1, 11)")
        a.commit()
        ca.execute("SELECT v FROM snap WHERE id = 1")
        eq(ca.fetchone()[0], 11, "first read")
        cb.execute("UPDATE snap SET v = 99 WHERE id = 1")
        ca.execute("SELECT v FROM snap WHERE id = 1")
        second = ca.fetchone()[0]
        # PyMySQL reads the status flags from OK packets only.
        ca.execute("SET @x = 1")
        flag = in_trans(a)
        a.commit()
        ca.execute("SELECT v FROM snap WHERE id = 1")
        eq(ca.fetchone()[0], 99, "after COMMIT")
        a.commit()
        eq((second, flag), (11, True), "second read in the transaction, IN_TRANS")
    a.close()
    b.close()


@check
def system_variable_types():
    # MySQL types integer system variables as integers (BIGINT), so Python
    # gets an int, and names the column after the expression as written.
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        c.execute("SELECT @@autocommit, @@session.autocommit,"
                  " @@innodb_lock_wait_timeout, @@version")
        names = tuple(d[0] for d in c.description)
        eq(names, ("@@autocommit", "@@session.autocommit",
                   "@@innodb_lock_wait_timeout", "@@version"), "column names")
        got = c.fetchone()
        eq(got[:3], (1, 1, 50), "integer variables")
        eq(c.description[0][1], FIELD_TYPE.LONGLONG, "@@autocommit type code")
        eq(type(got[3]), str, "@@version type")
    conn.close()


# --- text ------------------------------------------------------------------

@check
def unicode_round_trip_and_like():
    conn = connect(autocommit=True)
    texts = {1: "中文字符", 2: "日本語テキスト", 3: "한국어", 4: "😀🚀🎉",
             5: "mixed é ü 😀 中", 6: "plain ascii", 7: "Ünïcödé"}
    with conn.cursor() as c:
        c.execute("CREATE TABLE u (id INT PRIMARY KEY, t VARCHAR(50),"
                  " four VARCHAR(4)) DEFAULT CHARSET=utf8mb4")
        for k, v in texts.items():
            c.execute("INSERT INTO u (id, t) VALUES (%s, %s)", (k, v))
        c.execute("SELECT id, t FROM u ORDER BY id")
        eq(dict(c.fetchall()), texts, "round trip")
        c.execute("SELECT id FROM u WHERE t LIKE %s ORDER BY id", ("%😀%",))
        eq(c.fetchall(), ((4,), (5,)), "LIKE '%😀%'")
        c.execute("SELECT id FROM u WHERE t LIKE %s", ("中%",))
        eq(c.fetchall(), ((1,),), "LIKE '中%'")
        c.execute("SELECT id FROM u WHERE t LIKE %s", ("_🚀%",))
        eq(c.fetchall(), ((4,),), "LIKE '_🚀%' (an emoji is one character)")
        c.execute("SELECT id FROM u WHERE t = %s", ("unicod",))
        eq(c.fetchall(), (), "no false match")
        c.execute("SELECT id FROM u WHERE t = %s", ("unicode",))
        eq(c.fetchall(), ((7,),), "case- and accent-insensitive utf8mb4_general_ci")
        c.execute("SELECT CHAR_LENGTH(t), LENGTH(t), UPPER(t) FROM u WHERE id = 4")
        got = c.fetchone()  # (the result types: function_result_types)
        eq((int(got[0]), int(got[1]), got[2]), (3, 12, "😀🚀🎉"), "CHAR_LENGTH/LENGTH/UPPER")
        # VARCHAR(4) holds 4 characters, not 4 bytes.
        c.execute("UPDATE u SET four = %s WHERE id = 4", ("😀🚀🎉😀",))
        c.execute("SELECT four FROM u WHERE id = 4")
        eq(c.fetchone()[0], "😀🚀🎉😀", "four emoji in VARCHAR(4)")
        expect_error(pymysql.err.DataError, 1406, lambda: c.execute(
            "UPDATE u SET four = %s WHERE id = 4", ("😀🚀🎉😀!",)))
        c.execute("SELECT CONCAT(t, %s) FROM u WHERE id = 1", ("✓",))
        eq(c.fetchone()[0], "中文字符✓", "CONCAT with a parameter")
    conn.close()


# --- types -----------------------------------------------------------------

@check
def nulls():
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        c.execute("CREATE TABLE n (id INT PRIMARY KEY, s VARCHAR(10), d DECIMAL(5,2),"
                  " dt DATETIME, i INT)")
        c.execute("INSERT INTO n VALUES (%s, %s, %s, %s, %s)", (1, None, None, None, None))
        c.execute("INSERT INTO n VALUES (2, '', 0, '2000-01-01', 0)")
        c.execute("SELECT s, d, dt, i FROM n WHERE id = 1")
        eq(c.fetchone(), (None, None, None, None), "NULL columns")
        c.execute("SELECT id FROM n WHERE s = %s", (None,))
        eq(c.fetchall(), (), "s = NULL matches nothing")
        c.execute("SELECT id FROM n WHERE s IS NULL")
        eq(c.fetchall(), ((1,),), "IS NULL")
        c.execute("SELECT id FROM n WHERE s <=> %s", (None,))
        eq(c.fetchall(), ((1,),), "<=> NULL")
        c.execute("SELECT COUNT(s), COUNT(*), SUM(i), MAX(dt) FROM n")
        eq(c.fetchone(), (1, 2, decimal.Decimal(0), datetime.datetime(2000, 1, 1)),
           "aggregates skip NULLs")
        c.execute("SELECT NULL + 1, CONCAT('a', NULL), COALESCE(NULL, NULL, 'x')")
        eq(c.fetchone(), (None, None, "x"), "NULL propagation")
    conn.close()


@check
def decimals_dates_and_python_types():
    conn = connect(autocommit=True)
    D = decimal.Decimal
    row = (1, D("12345678.1234"), D("-0.0001"), datetime.date(2024, 2, 29),
           datetime.datetime(2023, 12, 31, 23, 59, 58),
           datetime.datetime(2001, 2, 3, 4, 5, 6, 789012),
           datetime.datetime(2030, 1, 1, 0, 0, 0),
           2 ** 63 - 1, 2 ** 64 - 1, -128, 1.5, True)
    with conn.cursor() as c:
        c.execute("CREATE TABLE ty (id INT PRIMARY KEY, d1 DECIMAL(12,4),"
                  " d2 DECIMAL(10,4), dd DATE, dt DATETIME, dt6 DATETIME(6),"
                  " ts TIMESTAMP NULL, big BIGINT, ubig BIGINT UNSIGNED,"
                  " tiny TINYINT, dbl DOUBLE, flag BOOL)")
        c.execute("INSERT INTO ty VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)", row)
        c.execute("SELECT * FROM ty")
        got = c.fetchone()
        want = row[:-1] + (1,)
        for i, (g, w) in enumerate(zip(got, want)):
            eq(g, w, c.description[i][0])
        types = {d[0]: d[1] for d in c.description}
        eq(types["d1"], FIELD_TYPE.NEWDECIMAL, "DECIMAL type code")
        eq(types["dd"], FIELD_TYPE.DATE, "DATE type code")
        eq(types["dt"], FIELD_TYPE.DATETIME, "DATETIME type code")
        eq(types["ts"], FIELD_TYPE.TIMESTAMP, "TIMESTAMP type code")
        eq(types["big"], FIELD_TYPE.LONGLONG, "BIGINT type code")
        eq(types["dbl"], FIELD_TYPE.DOUBLE, "DOUBLE type code")
        eq(types["flag"], FIELD_TYPE.TINY, "BOOL type code")
        # Arithmetic keeps exact decimals; comparisons take parameters.
        c.execute("SELECT d1 + %s, d1 * 2, dd FROM ty WHERE dd = %s AND dt < %s",
                  (D("0.0001"), datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 1)))
        eq(c.fetchone(), (D("12345678.1235"), D("24691356.2468"),
                          datetime.date(2024, 2, 29)), "decimal arithmetic")
        c.execute("SELECT SUM(d1), AVG(tiny) FROM ty")
        eq(c.fetchone(), (D("12345678.1234"), D("-128.0000")), "SUM/AVG types")
    conn.close()


# --- errors -----------------------------------------------------------------

@check
def error_classes_and_codes():
    conn = connect(autocommit=True)
    with conn.cursor() as c:
        e = expect_error(pymysql.err.IntegrityError, 1062,
                         lambda: c.execute("INSERT INTO acct VALUES (1, 'dup', 0)"))
        eq(e.args[1], "Duplicate entry '1' for key 'acct.PRIMARY'", "1062 message")
        expect_error(pymysql.err.ProgrammingError, 1146,
                     lambda: c.execute("SELECT * FROM no_such_table"))
        expect_error(pymysql.err.ProgrammingError, 1064,
                     lambda: c.execute("SELEKT 1"))
        expect_error(pymysql.err.OperationalError, 1054,
                     lambda: c.execute("SELECT no_such_column FROM acct"))
        expect_error(pymysql.err.IntegrityError, 1048,
                     lambda: c.execute("INSERT INTO acct VALUES (50, 'n', NULL)"))
        expect_error(pymysql.err.DataError, 1406,
                     lambda: c.execute("INSERT INTO acct VALUES (51, %s, 0)", ("x" * 21,)))
        expect_error(pymysql.err.DataError, 1264,
                     lambda: c.execute("INSERT INTO acct VALUES (2147483648, 'big', 0)"))
        # The connection is still usable after errors.
        c.execute("SELECT COUNT(*) FROM acct")
        eq(c.fetchone()[0], 3, "rows after the failed statements")
    expect_error(pymysql.err.OperationalError, 1049,
                 lambda: connect(database="no_such_db"))
    conn.close()


@check
def lock_wait_timeout_1205():
    a, b = connect(autocommit=False), connect(autocommit=False)
    with a.cursor() as ca, b.cursor() as cb:
        cb.execute("SET innodb_lock_wait_timeout = 1")
        cb.execute("SELECT @@innodb_lock_wait_timeout")
        eq(int(cb.fetchone()[0]), 1, "@@innodb_lock_wait_timeout")
        ca.execute("UPDATE acct SET balance = balance + 1 WHERE id = 1")
        cb.execute("UPDATE acct SET balance = balance + 1 WHERE id = 2")
        t0 = time.monotonic()
        expect_error(pymysql.err.OperationalError, 1205, lambda: cb.execute(
            "UPDATE acct SET balance = balance + 10 WHERE id = 1"))
        waited = time.monotonic() - t0
        if not 0.8 <= waited <= 5:
            raise AssertionError(f"1205 after {waited:.2f} s, want about 1 s")
        # Only the statement is rolled back: b's first update stays.
        eq(in_trans(b), True, "b's transaction is still open after 1205")
        cb.execute("SELECT balance FROM acct WHERE id = 2")
        eq(cb.fetchone()[0], 201, "b's earlier update after 1205")
        a.commit()
        cb.execute("UPDATE acct SET balance = balance + 10 WHERE id = 1")
        b.rollback()
        ca.execute("SELECT id, balance FROM acct WHERE id IN (1, 2) ORDER BY id")
        eq(ca.fetchall(), ((1, 101), (2, 200)), "balances")
        ca.execute("UPDATE acct SET balance = 100 WHERE id = 1")
        a.commit()
    a.close()
    b.close()


@check
def deadlock_1213_rolls_back_the_victim():
    a, b = connect(autocommit=False), connect(autocommit=False)
    errors = {}

    def second(conn, name, row):
        try:
            with conn.cursor() as c:
                c.execute(f"UPDATE acct SET balance = balance + 1 WHERE id = {row}")
            errors[name] = None
        except pymysql.Error as e:
            errors[name] = e

    with a.cursor() as ca, b.cursor() as cb:
        ca.execute("UPDATE acct SET balance = balance + 1 WHERE id = 1")
        cb.execute("UPDATE acct SET balance = balance + 1 WHERE id = 2")
        ta = threading.Thread(target=second, args=(a, "a", 2))
        ta.start()
        time.sleep(0.3)
        second(b, "b", 1)
        if errors["b"] is None:
            b.commit()  # b won: a must be the victim, and its wait ends
        ta.join(timeout=60)
        eq(ta.is_alive(), False, "the waiting connection finished")
        codes = sorted(type(e).__name__ + str(e.args[0]) for e in errors.values() if e)
        eq(codes, ["OperationalError1213"], "exactly one deadlock error")
        winner, loser = (a, b) if errors["a"] is None else (b, a)
        if winner is a:
            a.commit()
        # The victim's connection goes on (its whole transaction is gone,
        # as the balances below show).
        with loser.cursor() as cl:
            cl.execute("SELECT 1")
            eq(cl.fetchone(), (1,), "the victim's connection after 1213")
        loser.rollback()
        ca.execute("SELECT id, balance FROM acct WHERE id IN (1, 2) ORDER BY id")
        # The winner's two increments only; the victim's first one is gone.
        eq(ca.fetchall(), ((1, 101), (2, 201)), "balances after the deadlock")
        ca.execute("UPDATE acct SET balance = id * 100 WHERE id IN (1, 2)")
        a.commit()
    a.close()
    b.close()


@check
def server_side_state_survives_errors():
    conn = connect(autocommit=False)
    with conn.cursor() as c:
        c.execute("INSERT INTO acct VALUES (60, 'keep', 1)")
        expect_error(pymysql.err.IntegrityError, 1062,
                     lambda: c.execute("INSERT INTO acct VALUES (60, 'dup', 1)"))
        eq(in_trans(conn), True, "transaction open after a failed statement")
        conn.commit()
    eq(count(conn, "acct", "id = 60"), 1, "the row before the error was kept")
    with conn.cursor() as c:
        c.execute("DELETE FROM acct WHERE id = 60")
    conn.commit()
    conn.close()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--user", default="root")
    ARGS = p.parse_args()
    setup()
    for fn in CHECKS:
        run(fn)
    failed = sum(1 for _, s in results if s in ("FAIL", "FIXED"))
    passed = len(results) - failed
    print(f"pymysql: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
