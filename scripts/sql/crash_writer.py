#!/usr/bin/env python3
"""The crash suite's second writer: which commits were acknowledged.

usage: crash_writer.py --port P --acks FILE write
       crash_writer.py --port P --acks FILE verify

`write` inserts sequentially numbered rows into crashw.acks in autocommit,
and every fifth time a group of three rows in one BEGIN ... COMMIT; after
each acknowledged commit it appends the ids to FILE and flushes it. It runs
until the server goes away (scripts/sql-clients.sh SIGKILLs the server) and
then exits 0. Numbering continues from the largest id already in the table.

`verify` (after the restart) checks that every id in FILE is present, that
each row's columns agree with its checksum (no row is partly there), that
every group is all there or all absent, and that nothing but whole rows
numbered 1..max exists. It prints one line and exits 1 on any violation.
"""

import argparse
import random
import sys
import zlib

import pymysql

DDL = """CREATE TABLE IF NOT EXISTS acks (
  id BIGINT NOT NULL PRIMARY KEY,
  grp BIGINT NOT NULL,
  a BIGINT NOT NULL,
  b VARCHAR(300) NOT NULL,
  chk BIGINT NOT NULL,
  KEY k_a (a),
  KEY k_grp (grp)
)"""


def row(i, grp):
    a = i * 7919 % 1000003
    b = f"row-{i}-" + "xyz" * (i % 90)
    chk = zlib.crc32(f"{i}:{grp}:{a}:{b}".encode())
    return (i, grp, a, b, chk)


def connect(port, db=None):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           database=db, autocommit=True, connect_timeout=10,
                           read_timeout=30, write_timeout=30)


def write(port, acks_path):
    conn = connect(port)
    with conn.cursor() as c:
        c.execute("CREATE DATABASE IF NOT EXISTS crashw")
        c.execute("USE crashw")
        c.execute(DDL)
        c.execute("SELECT COALESCE(MAX(id), 0), COALESCE(MAX(grp), 0) FROM acks")
        next_id, next_grp = (int(x) + 1 for x in c.fetchone())
    ins = "INSERT INTO acks (id, grp, a, b, chk) VALUES (%s, %s, %s, %s, %s)"
    acked = 0
    with open(acks_path, "a") as acks, conn.cursor() as c:
        try:
            while True:
                if random.random() < 0.2:
                    ids = [next_id, next_id + 1, next_id + 2]
                    grp = next_grp
                    next_grp += 1
                    c.execute("BEGIN")
                    for i in ids:
                        c.execute(ins, row(i, grp))
                    c.execute("COMMIT")
                    line = " ".join(map(str, ids)) + f" g{grp}\n"
                else:
                    ids = [next_id]
                    c.execute(ins, row(next_id, 0))
                    line = f"{next_id}\n"
                next_id += len(ids)
                acks.write(line)
                acks.flush()
                acked += len(ids)
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError,
                ConnectionError, OSError) as e:
            code = e.args[0] if e.args else ""
            print(f"crash_writer: {acked} rows acknowledged, then {type(e).__name__} {code}")
    return 0


def verify(port, acks_path):
    acked = {}
    groups = {}
    with open(acks_path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            grp = 0
            if parts[-1].startswith("g"):
                grp = int(parts.pop()[1:])
                groups[grp] = [int(p) for p in parts]
            for p in parts:
                acked[int(p)] = grp
    conn = connect(port, "crashw")
    with conn.cursor() as c:
        c.execute("SELECT id, grp, a, b, chk FROM acks ORDER BY id")
        rows = c.fetchall()
        c.execute("SELECT COUNT(*) FROM acks WHERE a >= 0")
        via_index = c.fetchone()[0]
    present = {}
    bad = []
    for r in rows:
        i, grp = int(r[0]), int(r[1])
        if tuple(r) != row(i, grp):
            bad.append(f"row {i} is not whole: {r!r}")
        present[i] = grp
    missing = sorted(set(acked) - set(present))
    if missing:
        bad.append(f"{len(missing)} acknowledged rows missing, first {missing[:10]}")
    for i, grp in acked.items():
        if i in present and present[i] != grp:
            bad.append(f"row {i} in group {present[i]}, acknowledged in group {grp}")
    by_grp = {}
    for i, grp in present.items():
        if grp:
            by_grp.setdefault(grp, []).append(i)
    for grp, ids in by_grp.items():
        if len(ids) != 3:
            bad.append(f"group {grp} is partly there: rows {sorted(ids)}")
    if via_index != len(rows):
        bad.append(f"index k_a counts {via_index} rows, the table {len(rows)}")
    extra = len(present) - len(set(present) & set(acked))
    print(f"crash_writer verify: {len(acked)} acknowledged, {len(present)} present "
          f"({extra} committed but not acknowledged), {len(groups)} groups acknowledged, "
          f"{len(bad)} violations")
    for b in bad[:20]:
        print("  " + b)
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--acks", required=True)
    p.add_argument("mode", choices=["write", "verify"])
    a = p.parse_args()
    if a.mode == "write":
        return write(a.port, a.acks)
    return verify(a.port, a.acks)


if __name__ == "__main__":
    sys.exit(main())
