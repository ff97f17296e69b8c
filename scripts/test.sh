#!/usr/bin/env bash
# The project's test command: formatting, lints, then every test.
# README.md names this script; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Runs a step and prints how long it took (CI has 45 minutes on 2 cores;
# these lines say where they go).
start=$SECONDS
step() {
    local t=$SECONDS
    "$@"
    echo "test.sh: $((SECONDS - t)) s (at $((SECONDS - start)) s): $*" >&2
}
step cargo fmt --all -- --check
# Every backticked path and test name in docs/ exists.
step scripts/check-docs.sh
step cargo clippy --workspace --all-targets -- -D warnings
step cargo test --workspace
# Kill-and-verify crash loop for a bounded time (docs/reliability.md).
step scripts/crash-test.sh --duration 60
# The same for transactions: bank transfers with synced commits, both
# flavours (the release binary is already built, so 20 s and the kills).
step scripts/crash-test.sh --mode txn --duration 20
# The same with blob files: kills land in blob writes and blob GC too.
step scripts/crash-test.sh --blob --duration 20
# Real MySQL clients against `cairndb server` (docs/sql.md, "Clients
# tested"): sysbench's scripts, the mariadb client, PyMySQL, Connector/J and
# a SIGKILL loop; --quick is 3 s per sysbench run and 5 kills.
step scripts/sql-clients.sh --quick
# YCSB A-F through the MySQL protocol (go-ycsb, values cut from a text
# corpus; docs/bench/ycsb.md) at its smoke size: 2000 rows, 2 s a workload.
step scripts/ycsb/bench.sh --smoke --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# sqllogictest smoke run (docs/sql.md, "sqllogictest"): SQLite's
# select1.test and select5.test (joins of up to 64 tables, which only a
# join order chosen from the conditions finishes within the 30 s limit)
# against `cairndb server` alone, with the release binary sql-clients.sh
# built; fails unless all of their 1031 + 1436 records pass or when a
# connection is lost. About 6 s.
step scripts/slt.sh --servers=cairndb --bin="${CARGO_TARGET_DIR:-target}/release/cairndb" \
    --dir=scripts/slt/corpus --files="select1.test select5.test" --min-pass=2467
# mariadb-dump round trips (docs/sql.md, "Dump and restore"): cairndb ->
# cairndb, cairndb -> MariaDB and MariaDB -> cairndb, every table's rows
# compared. About 15 s.
step scripts/dump-roundtrip.sh --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# Prometheus' mysqld_exporter scraping `cairndb server` (docs/security.md,
# "Monitoring"): mysql_up 1, every default collector succeeding. The
# exporter is built with go from scripts/exporter (cached after the first
# build; skipped with a message where go is not installed); about 10 s.
step scripts/exporter-test.sh --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# Every fuzz target for 5 s (debug assertions on, a throwaway corpus copy):
# about 30 s of fuzzing plus a one-time build, under 4 minutes cold on 2 cores.
step scripts/fuzz.sh --smoke 5
