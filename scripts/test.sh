#!/usr/bin/env bash
# The project's test command: formatting, lints, then every test.
# README.md names this script; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
# Every backticked path and test name in docs/ exists.
scripts/check-docs.sh
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
# Kill-and-verify crash loop for a bounded time (docs/reliability.md).
scripts/crash-test.sh --duration 60
# The same for transactions: bank transfers with synced commits, both
# flavours (the release binary is already built, so 20 s and the kills).
scripts/crash-test.sh --mode txn --duration 20
# The same with blob files: kills land in blob writes and blob GC too.
scripts/crash-test.sh --blob --duration 20
# Real MySQL clients against `cairndb server` (docs/sql.md, "Clients
# tested"): sysbench's scripts, the mariadb client, PyMySQL, Connector/J and
# a SIGKILL loop; --quick is 3 s per sysbench run and 5 kills.
scripts/sql-clients.sh --quick
# YCSB A-F through the MySQL protocol (go-ycsb, values cut from a text
# corpus; docs/bench/ycsb.md) at its smoke size: 2000 rows, 2 s a workload.
scripts/ycsb/bench.sh --smoke --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# sqllogictest smoke run (docs/sql.md, "sqllogictest"): SQLite's
# select1.test and select5.test (joins of up to 64 tables, which only a
# join order chosen from the conditions finishes within the 30 s limit)
# against `cairndb server` alone, with the release binary sql-clients.sh
# built; fails unless all of their 1031 + 1436 records pass or when a
# connection is lost. About 6 s.
scripts/slt.sh --servers=cairndb --bin="${CARGO_TARGET_DIR:-target}/release/cairndb" \
    --dir=scripts/slt/corpus --files="select1.test select5.test" --min-pass=2467
# mariadb-dump round trips (docs/sql.md, "Dump and restore"): cairndb ->
# cairndb, cairndb -> MariaDB and MariaDB -> cairndb, every table's rows
# compared. About 15 s.
scripts/dump-roundtrip.sh --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# Prometheus' mysqld_exporter scraping `cairndb server` (docs/security.md,
# "Monitoring"): mysql_up 1, every default collector succeeding. The
# exporter is built with go from scripts/exporter (cached after the first
# build; skipped with a message where go is not installed); about 10 s.
scripts/exporter-test.sh --bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
# Every fuzz target for 5 s (debug assertions on, a throwaway corpus copy):
# about 30 s of fuzzing plus a one-time build, under 4 minutes cold on 2 cores.
scripts/fuzz.sh --smoke 5
