#!/usr/bin/env python3
"""A sqllogictest runner for MySQL-protocol servers (PyMySQL).

Runs sqllogictest files (SQLite's corpus format) against one server as the
engine `mysql`, each file on a fresh database of its own, and counts per
file the records run, passed, failed and skipped.

  scripts/slt/run.py [--host H] [--port P | --socket S] [--user U]
                     [--password PW] [--engine mysql] [--timeout 30]
                     [--failures FILE] [--results FILE] [--summary FILE]
                     [--label NAME] [--quiet] FILE.test...
  scripts/slt/run.py --compare MARIADB.jsonl CAIRNDB.jsonl

The format (a record ends at a blank line; `#` starts a comment line):
  statement ok | statement error      then the SQL
  query <types> <sort> [label]        then the SQL, `----`, the expected values
  hash-threshold N                    results of more than N values compare
                                      as `K values hashing to H` (0: never)
  skipif ENGINE | onlyif ENGINE       before a record (or before `halt`)
  halt                                stops the file

Printing a value, by the query's type letter for its column:
  NULL is `NULL` whatever the type;
  T   the text; an empty string is `(empty)`; each byte outside printable
      ASCII (below ' ' or above '~') is `@`;
  I   as SQLite's runner prints an integer column: an integer as it is, a
      decimal or real truncated toward zero (`-12.5000` is `-12`), text by
      its leading number (0 if none);
  R   `%.3f` of the value read as a double (text by its leading number).
Sorting: `nosort` keeps the order returned, `rowsort` sorts the rows (their
printed values compared as strings, column by column), `valuesort` sorts
all values. The hash is the lowercase hex MD5 of the sorted values, each
followed by a newline; a `label` ties queries whose hashes must be equal.

A statement that runs longer than --timeout seconds (30) is a failure: the
runner kills it from a second connection (`KILL`), reconnects and goes on.
A connection lost otherwise is reported on stderr, counted (`lost`), and the
runner reconnects; if the server cannot be reached again within 20 s the
rest of the file counts as failed.

--failures FILE writes every failure: file:line, the SQL, expected vs got
(or the error). --results FILE writes one JSON line per record run
({"file", "line", "ok"}), which --compare reads to count the records the
second run passed among those the first one passed. --summary FILE writes
the per-file counts as JSON. Exit status: 0 when the run completed (failed
records do not change it), 2 on bad usage.
"""

import argparse
import hashlib
import json
import os
import re
import sys
import time
from decimal import Decimal, InvalidOperation

try:
    import pymysql
    import pymysql.err
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("slt: PyMySQL is missing (pip install pymysql)\n")
    sys.exit(2)

HASH_RE = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")
NUM_PREFIX = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# Client-side error codes for a connection that is gone.
LOST_CODES = {2006, 2013, 2055, 0}


class Record:
    """One statement or query record of a file."""

    def __init__(self, kind, line, sql, **kw):
        self.kind = kind  # "statement" | "query" | "hash-threshold" | "halt"
        self.line = line
        self.sql = sql
        self.expect_ok = kw.get("expect_ok", True)
        self.types = kw.get("types", "")
        self.sort = kw.get("sort", "nosort")
        self.label = kw.get("label")
        self.expected = kw.get("expected", [])
        self.threshold = kw.get("threshold", 0)
        self.conditions = kw.get("conditions", [])


def parse(path):
    """The records of a file, in order, with their skipif/onlyif lines."""
    with open(path, "r", encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().split("\n")
    records = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i].rstrip("\r")
        if line.strip() == "" or line.startswith("#"):
            i += 1
            continue
        conditions = []
        start = i + 1
        words = line.split()
        while words and words[0] in ("skipif", "onlyif"):
            if len(words) > 1:
                conditions.append((words[0], words[1]))
            i += 1
            line = lines[i].rstrip("\r") if i < n else ""
            words = line.split()
        if not words:
            continue
        head = words[0]
        if head == "halt":
            records.append(Record("halt", i + 1, "", conditions=conditions))
            i += 1
            continue
        if head == "hash-threshold":
            records.append(
                Record("hash-threshold", i + 1, "", threshold=int(words[1]), conditions=conditions)
            )
            i += 1
            continue
        # statement or query: the SQL runs to a blank line or `----`.
        i += 1
        sql_lines = []
        while i < n and lines[i].rstrip("\r").strip() != "" and lines[i].rstrip("\r") != "----":
            sql_lines.append(lines[i].rstrip("\r"))
            i += 1
        sql = "\n".join(sql_lines)
        if head == "statement":
            expect_ok = len(words) < 2 or words[1] == "ok"
            records.append(Record("statement", start, sql, expect_ok=expect_ok, conditions=conditions))
            continue
        if head == "query":
            types = words[1] if len(words) > 1 else ""
            sort = words[2] if len(words) > 2 else "nosort"
            label = words[3] if len(words) > 3 else None
            expected = []
            if i < n and lines[i].rstrip("\r") == "----":
                i += 1
                while i < n and lines[i].rstrip("\r") != "":
                    expected.append(lines[i].rstrip("\r"))
                    i += 1
            records.append(
                Record(
                    "query", start, sql, types=types, sort=sort, label=label,
                    expected=expected, conditions=conditions,
                )
            )
            continue
        sys.stderr.write(f"slt: {path}:{i}: unknown record '{line}', skipped to the next blank line\n")
        while i < n and lines[i].strip() != "":
            i += 1
    return records


def applies(record, engine):
    for kind, name in record.conditions:
        if kind == "skipif" and name == engine:
            return False
        if kind == "onlyif" and name != engine:
            return False
    return True


def as_text(v):
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("latin-1")
    return str(v)


def number_prefix(s):
    m = NUM_PREFIX.match(s)
    return m.group(0).strip() if m else None


def print_int(v):
    if isinstance(v, int):
        return str(v)
    s = as_text(v).strip()
    if re.fullmatch(r"[+-]?\d+", s):
        return str(int(s))
    p = number_prefix(s)
    if p is None:
        return "0"
    try:
        d = Decimal(p)
    except InvalidOperation:
        return "0"
    if not d.is_finite():
        return "0"
    return str(int(d))  # int() of a Decimal truncates toward zero


def print_real(v):
    if isinstance(v, (int, float)):
        return "%.3f" % float(v)
    p = number_prefix(as_text(v))
    if p is None:
        return "0.000"
    try:
        return "%.3f" % float(p)
    except ValueError:
        return "0.000"


def print_text(v):
    if isinstance(v, (bytes, bytearray)):
        b = bytes(v)
    else:
        b = str(v).encode("utf-8", errors="surrogateescape")
    if len(b) == 0:
        return "(empty)"
    return "".join(chr(c) if 32 <= c <= 126 else "@" for c in b)


def print_value(v, t):
    if v is None:
        return "NULL"
    if t == "I":
        return print_int(v)
    if t == "R":
        return print_real(v)
    return print_text(v)


def md5_of(values):
    h = hashlib.md5()
    for v in values:
        h.update(v.encode("utf-8", errors="surrogateescape"))
        h.update(b"\n")
    return h.hexdigest()


class Lost(Exception):
    """The connection is gone (not by our timeout)."""


class TimedOut(Exception):
    """The statement ran longer than the timeout."""


class Server:
    """The connection to the server under test, with reconnection."""

    def __init__(self, args):
        self.args = args
        self.conn = None
        self.db = None

    def connect_args(self, timeout):
        kw = dict(
            user=self.args.user,
            password=self.args.password,
            conv={},  # every value as the server's text (or bytes)
            autocommit=True,
            connect_timeout=10,
            read_timeout=timeout,
            write_timeout=timeout,
            charset="utf8mb4",
        )
        if self.args.socket:
            kw["unix_socket"] = self.args.socket
        else:
            kw["host"] = self.args.host
            kw["port"] = self.args.port
        return kw

    def connect(self, deadline_s=20.0):
        end = time.time() + deadline_s
        last = None
        while True:
            try:
                self.conn = pymysql.connect(**self.connect_args(self.args.timeout))
                if self.db:
                    with self.conn.cursor() as c:
                        c.execute(f"USE {self.db}")
                return
            except Exception as e:  # noqa: BLE001 - retried, then reported
                last = e
                self.conn = None
                if time.time() >= end:
                    raise Lost(f"cannot reconnect: {last}")
                time.sleep(0.5)

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - the connection may be gone already
                pass
            self.conn = None

    def kill(self, thread_id):
        """KILL the session thread_id from a second connection."""
        try:
            c = pymysql.connect(**self.connect_args(10))
            with c.cursor() as cur:
                cur.execute(f"KILL {int(thread_id)}")
            c.close()
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            sys.stderr.write(f"slt: KILL {thread_id} failed: {e}\n")

    def execute(self, sql):
        """Runs sql: (rows or None) or raises pymysql.MySQLError/Lost/TimedOut."""
        if self.conn is None:
            self.connect()
        conn = self.conn
        tid = conn.thread_id()
        t0 = time.time()
        try:
            with conn.cursor() as c:
                c.execute(sql)
                rows = c.fetchall() if c.description is not None else None
                return rows
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as e:
            code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            if code in LOST_CODES or isinstance(e, pymysql.err.InterfaceError):
                elapsed = time.time() - t0
                self.close()
                if elapsed >= self.args.timeout - 0.5:
                    self.kill(tid)
                    raise TimedOut(f"no answer within {self.args.timeout} s")
                raise Lost(str(e))
            raise


def sort_values(values, ncol, mode):
    if mode == "rowsort" and ncol > 0:
        rows = [values[i : i + ncol] for i in range(0, len(values), ncol)]
        rows.sort()
        return [v for r in rows for v in r]
    if mode == "valuesort":
        return sorted(values)
    return values


class FileStats:
    def __init__(self, name):
        self.name = name
        self.records = 0
        self.run = 0
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.lost = 0
        self.timeouts = 0

    def as_dict(self):
        return dict(self.__dict__)


def run_file(path, server, args, out):
    name = os.path.relpath(path, args.base) if args.base else path
    stats = FileStats(name)
    records = parse(path)
    db = "slt_%d_%d" % (os.getpid(), out["seq"])
    out["seq"] += 1
    server.db = None
    try:
        server.connect()
        server.execute(f"DROP DATABASE IF EXISTS {db}")
        server.execute(f"CREATE DATABASE {db}")
        server.execute(f"USE {db}")
        server.db = db
    except Exception as e:  # noqa: BLE001 - the file cannot run at all
        sys.stderr.write(f"slt: {name}: cannot make database {db}: {e}\n")
        for r in records:
            if r.kind in ("statement", "query"):
                stats.records += 1
                stats.failed += 1
        return stats
    threshold = 0
    labels = {}
    dead = False
    for r in records:
        if r.kind == "halt":
            if applies(r, args.engine):
                break
            continue
        if r.kind == "hash-threshold":
            if applies(r, args.engine):
                threshold = r.threshold
            continue
        stats.records += 1
        if not applies(r, args.engine):
            stats.skipped += 1
            continue
        stats.run += 1
        if dead:
            fail(out, stats, name, r, "not run: the server could not be reached")
            continue
        try:
            ok, detail = run_record(r, server, threshold, labels)
        except Lost as e:
            stats.lost += 1
            sys.stderr.write(f"slt: *** LOST CONNECTION at {name}:{r.line}: {e}\n")
            ok, detail = False, f"lost connection: {e}"
            try:
                server.connect()
            except Lost as e2:
                sys.stderr.write(f"slt: *** {name}: {e2}; the rest of the file fails\n")
                dead = True
        except TimedOut as e:
            stats.timeouts += 1
            sys.stderr.write(f"slt: timeout at {name}:{r.line}\n")
            ok, detail = False, f"timeout: {e}"
            try:
                server.connect()
            except Lost as e2:
                sys.stderr.write(f"slt: *** {name}: {e2}; the rest of the file fails\n")
                dead = True
        if ok:
            stats.passed += 1
        else:
            fail(out, stats, name, r, detail)
        if out["results"] is not None:
            out["results"].write(json.dumps({"file": name, "line": r.line, "ok": ok}) + "\n")
    if not dead:
        try:
            server.db = None
            server.execute(f"DROP DATABASE IF EXISTS {db}")
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            sys.stderr.write(f"slt: {name}: DROP DATABASE {db} failed: {e}\n")
    return stats


def fail(out, stats, name, r, detail):
    stats.failed += 1
    f = out["failures"]
    if f is not None:
        f.write(f"=== {name}:{r.line}\n{r.sql}\n{detail}\n\n")
        f.flush()


def run_record(r, server, threshold, labels):
    """(passed, detail of the failure)."""
    if r.kind == "statement":
        try:
            server.execute(r.sql)
            if r.expect_ok:
                return True, ""
            return False, "expected an error, got ok"
        except pymysql.MySQLError as e:
            if r.expect_ok:
                return False, f"error: {e}"
            return True, ""
    try:
        rows = server.execute(r.sql)
    except pymysql.MySQLError as e:
        return False, f"error: {e}"
    rows = rows or []
    ncol = len(r.types)
    values = []
    for row in rows:
        if len(row) != ncol:
            return False, f"expected {ncol} columns, got {len(row)}"
        for v, t in zip(row, r.types):
            values.append(print_value(v, t))
    values = sort_values(values, ncol, r.sort)
    digest = md5_of(values)
    got_hashed = f"{len(values)} values hashing to {digest}"
    if len(r.expected) == 1 and HASH_RE.match(r.expected[0]):
        ok = r.expected[0] == got_hashed
        detail = f"expected: {r.expected[0]}\ngot:      {got_hashed}"
    else:
        expected = r.expected
        ok = values == expected
        if threshold > 0 and len(values) > threshold:
            # The file's own results are hashed above the threshold; a
            # plain listing there still compares value by value.
            pass
        detail = "expected:\n  " + "\n  ".join(expected[:40]) + "\ngot:\n  " + "\n  ".join(values[:40])
        if len(values) > 40 or len(expected) > 40:
            detail += f"\n  ... ({len(expected)} expected values, {len(values)} got; {got_hashed})"
    if ok and r.label:
        prev = labels.get(r.label)
        if prev is None:
            labels[r.label] = digest
        elif prev != digest:
            return False, f"label {r.label}: result differs from an earlier query with this label"
    return ok, ("" if ok else detail)


def compare(first, second):
    """Per file: records passed by the second run among those the first passed."""

    def load(p):
        d = {}
        with open(p) as f:
            for line in f:
                o = json.loads(line)
                d[(o["file"], o["line"])] = o["ok"]
        return d

    a, b = load(first), load(second)
    per = {}
    for (fname, line), ok in a.items():
        if not ok:
            continue
        e = per.setdefault(fname, [0, 0])
        e[0] += 1
        if b.get((fname, line)):
            e[1] += 1
    json.dump({k: {"first_passed": v[0], "both_passed": v[1]} for k, v in per.items()}, sys.stdout)
    sys.stdout.write("\n")


def main():
    p = argparse.ArgumentParser(description="sqllogictest runner for MySQL-protocol servers")
    p.add_argument("files", nargs="*")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3306)
    p.add_argument("--socket")
    p.add_argument("--user", default="root")
    p.add_argument("--password", default="")
    p.add_argument("--engine", default="mysql")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--failures")
    p.add_argument("--results")
    p.add_argument("--summary")
    p.add_argument("--label", default="server")
    p.add_argument("--base", help="print file names relative to this directory")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--compare", nargs=2, metavar=("FIRST.jsonl", "SECOND.jsonl"))
    args = p.parse_args()
    if args.compare:
        compare(*args.compare)
        return 0
    if not args.files:
        p.error("no files")
    out = {
        "seq": 0,
        "failures": open(args.failures, "w") if args.failures else None,
        "results": open(args.results, "w") if args.results else None,
    }
    server = Server(args)
    all_stats = []
    total = FileStats("total")
    for path in args.files:
        t0 = time.time()
        s = run_file(path, server, args, out)
        all_stats.append(s)
        for k in ("records", "run", "passed", "failed", "skipped", "lost", "timeouts"):
            setattr(total, k, getattr(total, k) + getattr(s, k))
        if not args.quiet:
            print(
                f"{args.label}: {s.name}: {s.records} records, {s.run} run, {s.passed} passed, "
                f"{s.failed} failed, {s.skipped} skipped, {s.lost} lost connections, "
                f"{s.timeouts} timeouts ({time.time() - t0:.1f} s)",
                flush=True,
            )
        if out["failures"] is not None:
            out["failures"].flush()
    server.close()
    print(
        f"{args.label}: total: {total.records} records, {total.run} run, {total.passed} passed, "
        f"{total.failed} failed, {total.skipped} skipped, {total.lost} lost connections, "
        f"{total.timeouts} timeouts",
        flush=True,
    )
    for k in ("failures", "results"):
        if out[k] is not None:
            out[k].close()
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"files": [s.as_dict() for s in all_stats], "total": total.as_dict()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
