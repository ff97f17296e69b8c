#!/usr/bin/env bash
# Crash test (RocksDB's db_crashtest.py is the model): start `cairndb stress`,
# kill it with SIGKILL at a random moment, reopen and verify every key against
# the stress oracle, and repeat until the time is up. Every few cycles the
# offline checker `cairndb verify` also runs over the database files.
#
# usage: scripts/crash-test.sh [--mode default|txn] [--blob] [--duration SECONDS] [--debug] [--dir DIR] [--max-key N]
#
# --blob (default mode) runs every cycle, and its verification, with blob
# files (`stress --enable_blob_files`: values of 64 bytes or more go to blob
# files at flush, with blob garbage collection), so kills land in blob
# writes, blob GC and the collection of obsolete blob files too.
#
# --mode txn runs `cairndb stress --txn` instead: bank transfers in
# transactions with synced commits, a TransactionDb in even cycles and an
# OptimisticTransactionDb in odd ones, verified by `stress --txn --verify`
# (total balance unchanged, every acknowledged transfer applied whole,
# nothing else; crates/cairndb-cli/src/stress/txn.rs).
#
# Prints one line per cycle and a summary: cycles, operations (the sum of the
# last progress report before each kill: a lower bound), recovery time, and
# violations. Exits non-zero on any violation, keeping the database and the
# oracle for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=default
blob=0
duration=60
profile=release
dir=""
max_key=100000
while [ $# -gt 0 ]; do
    case "$1" in
        --mode) mode="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --blob) blob=1; shift ;;
        --debug) profile=debug; shift ;;
        --dir) dir="$2"; shift 2 ;;
        --max-key) max_key="$2"; shift 2 ;;
        *) echo "crash-test: unknown argument $1" >&2; exit 2 ;;
    esac
done

case "$mode" in
    default | txn) ;;
    *) echo "crash-test: --mode must be default or txn, not $mode" >&2; exit 2 ;;
esac

target="${CARGO_TARGET_DIR:-target}"
if [ "$profile" = release ]; then
    cargo build --release -q -p cairndb-cli
else
    cargo build -q -p cairndb-cli
fi
if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/cairndb-crash.XXXXXX")"
    cleanup=1
else
    mkdir -p "$dir"
    cleanup=0
fi
# A private copy of the binary, so a rebuild during a long run changes nothing.
bin="$dir/cairndb"
cp "$target/$profile/cairndb" "$bin"
db="$dir/db"
log="$dir/stress.log"

start=$(date +%s)
cycles=0
ops=0
violations=0
rec_sum=0
rec_max=0
offline_checks=0
if [ "$mode" = txn ]; then
    echo "crash-test: mode txn, $profile binary, ${duration}s, in $dir"
    # The oracle's shape: stress --txn with its default --accounts.
    key_args=(--txn)
    label=" mode txn"
else
    key_args=(--max_key "$max_key")
    label=""
    if [ "$blob" = 1 ]; then
        key_args+=(--enable_blob_files)
        label=" blob files"
    fi
    echo "crash-test:$label $profile binary, max_key $max_key, ${duration}s, in $dir"
fi
if [ "$blob" = 1 ] && [ "$mode" = txn ]; then
    echo "crash-test: --blob applies to the default mode only" >&2
    exit 2
fi
while [ $(( $(date +%s) - start )) -lt "$duration" ]; do
    threads=$(( RANDOM % 6 + 2 ))
    if [ "$mode" = txn ]; then
        # Every commit synced; the flavour alternates per cycle.
        sync_percent=100
        flavour=pessimistic
        extra=()
        if [ $((cycles % 2)) -eq 1 ]; then
            flavour=optimistic
            extra=(--optimistic)
        fi
    else
        sync_percent=$(( RANDOM % 101 ))
        flavour=""
        extra=()
    fi
    "$bin" stress --db "$db" "${key_args[@]}" ${extra[@]+"${extra[@]}"} --threads "$threads" \
        --sync_percent "$sync_percent" --progress_ms 50 >"$log" 2>&1 &
    pid=$!
    # Run 0.3 .. 4.3 s before the kill (the start includes settling the oracle).
    sleep "$(( RANDOM % 4 )).$(( RANDOM % 10 ))$(( RANDOM % 10 ))"
    sleep 0.3
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" || true
        echo "crash-test: stress exited before the kill:" >&2
        cat "$log" >&2
        violations=$((violations + 1))
        break
    fi
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    if grep -q VIOLATION "$log"; then
        echo "crash-test: stress reported a violation while running:" >&2
        grep VIOLATION "$log" | head -20 >&2
        violations=$((violations + 1))
        break
    fi
    # (No progress line yet is fine: the kill came while it was starting.)
    n=$( (grep '^ops ' "$log" || true) | tail -1 | awk '{print $2}')
    n=${n:-0}
    ops=$((ops + n))
    cycles=$((cycles + 1))
    if ! out=$("$bin" stress --db "$db" "${key_args[@]}" --verify 2>&1); then
        echo "crash-test: cycle $cycles: verify failed:" >&2
        echo "$out" | head -40 >&2
        violations=$((violations + 1))
        break
    fi
    rec=$(echo "$out" | sed -n 's/.*recovery_ms \([0-9.]*\).*/\1/p')
    rec_ms=${rec%.*}
    rec_sum=$((rec_sum + rec_ms))
    if [ "$rec_ms" -gt "$rec_max" ]; then rec_max=$rec_ms; fi
    check=""
    if [ $((cycles % 5)) -eq 0 ]; then
        if ! vout=$("$bin" verify "$db" 2>&1); then
            echo "crash-test: cycle $cycles: cairndb verify failed:" >&2
            echo "$vout" | head -40 >&2
            violations=$((violations + 1))
            break
        fi
        offline_checks=$((offline_checks + 1))
        check=", offline verify ok"
    fi
    echo "cycle $cycles: ${flavour:+$flavour }threads $threads sync% $sync_percent ops $n, ${out#verify: }$check"
done
elapsed=$(( $(date +%s) - start ))
avg=0
[ "$cycles" -gt 0 ] && avg=$((rec_sum / cycles))
echo "crash-test summary:$label duration ${elapsed}s cycles $cycles operations $ops recovery_ms avg $avg max $rec_max offline_verifies $offline_checks violations $violations"
if [ "$violations" -ne 0 ]; then
    echo "crash-test: state kept in $dir" >&2
    exit 1
fi
if [ "$cleanup" = 1 ]; then
    rm -rf "$dir"
fi
