#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets/) for SECONDS each and
# prints the executions per target. Needs `cargo install cargo-fuzz`.
# Works on the stable toolchain: sanitizers off (-s none) and
# RUSTC_BOOTSTRAP=1 for the -Z flags cargo-fuzz passes.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(block_decoder sst_reader wal_reader manifest_decoder zip_table_reader)
fi
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
for t in "${targets[@]}"; do cargo fuzz build -s none -O "$t"; done
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    log="$(mktemp)"
    if cargo fuzz run -s none -O "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1; then
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
