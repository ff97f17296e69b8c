#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets/) for SECONDS each and
# prints the executions per target. Needs `cargo install cargo-fuzz`
# (.ci/run installs it when missing).
#
# Targets are built optimised with debug assertions and overflow checks on
# (-O -a): an arithmetic overflow or a debug_assert on hostile bytes is a
# finding too. Works on the stable toolchain: sanitizers off (-s none) and
# RUSTC_BOOTSTRAP=1 for the -Z flags cargo-fuzz passes.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#        scripts/fuzz.sh --smoke SECONDS [TARGET...]
#
# The first form grows fuzz/corpus/TARGET (default 60 s per target). The
# --smoke form is for scripts/test.sh: it starts each target from a copy of
# its corpus in a temporary directory, so a test run leaves the tree as it
# was; a crash still lands in fuzz/artifacts/TARGET/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
smoke=0
if [ "${1:-}" = "--smoke" ]; then
    smoke=1
    shift
    [ $# -ge 1 ] || { echo "fuzz.sh: --smoke needs SECONDS" >&2; exit 2; }
fi
secs="${1:-60}"
shift || true
case $secs in
    ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got \`$secs'" >&2; exit 2 ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(block_decoder sst_reader sst_hash_index wal_reader manifest_decoder zip_table_reader zip_hex_runs mysql_packet mysql_session sql_statement)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed; run: cargo install cargo-fuzz --locked" >&2
    exit 2
fi
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
flags=(-s none -O -a)
for t in "${targets[@]}"; do cargo fuzz build "${flags[@]}" "$t"; done
work=""
if [ "$smoke" = 1 ]; then
    work="$(mktemp -d "${TMPDIR:-/tmp}/cairndb-fuzz.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
fi
status=0
for t in "${targets[@]}"; do
    corpus="corpus/$t"
    mkdir -p "$corpus"
    if [ "$smoke" = 1 ]; then
        cp -r "$corpus" "$work/$t"
        corpus="$work/$t"
    fi
    log="$(mktemp)"
    # Committed seeds (fuzz/seeds/TARGET), read besides the corpus.
    seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    if cargo fuzz run "${flags[@]}" "$t" "$corpus" "${seeds[@]}" -- -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1; then
        result=clean
    else
        result="FAILED (crash input in fuzz/artifacts/$t/)"
        status=1
        tail -30 "$log" >&2
    fi
    execs=$(grep -o 'Done [0-9]* runs' "$log" | awk '{print $2}' | tail -1)
    echo "fuzz $t: ${secs}s, ${execs:-?} executions, $result"
    rm -f "$log"
done
exit $status
