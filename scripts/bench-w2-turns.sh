#!/usr/bin/env bash
# W2 (16 synced writers) in rounds that take turns: per round, LevelDB
# 1.23's own db_bench `fillsync`, CairnDB, any extra CairnDB binaries given
# (an older build to compare against), and, with --rocksdb, release
# RocksDB 9.10.0's db_bench. Prints one line per round with each engine's
# ops/sec and CairnDB's ratio over LevelDB's, then the medians.
#
#   scripts/bench-w2-turns.sh [--rounds=N] [--rocksdb] [EXTRA_CAIRNDB_BINARY...]
#
# Why rounds: W2's speed follows the device's fdatasync latency, which on
# this machine moves by 1.5x within minutes; LevelDB and CairnDB run back
# to back in each round so both see the same device, and the per-round
# ratio is the measurement. LevelDB's db_bench has no synced fillrandom: its
# `fillsync` with --num=2000000 --threads=16 writes num/1000 = 2,000 synced
# writes per thread in random order, as W2 does; it prints micros per
# operation per thread, so ops/sec = 16e6 / micros.
#
# Needs a release build of cairndb (target/release/cairndb, or $CAIRNDB),
# LevelDB's db_bench (../shared/peers/leveldb-1.23/build_db_bench.sh; or
# $LEVELDB_DB_BENCH) and, with --rocksdb, $ROCKSDB_DB_BENCH (default
# ../shared/peers/rocksdb-9.10.0/db_bench).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
rocksdb=0
extra=()
for a in "$@"; do
    case "$a" in
    --rounds=*) rounds="${a#--rounds=}" ;;
    --rocksdb) rocksdb=1 ;;
    -h | --help)
        sed -n '2,23p' "$0"
        exit 0
        ;;
    -*)
        echo "bench-w2-turns.sh: unknown flag $a" >&2
        exit 2
        ;;
    *) extra+=("$a") ;;
    esac
done

cairndb="${CAIRNDB:-target/release/cairndb}"
leveldb="${LEVELDB_DB_BENCH:-$HOME/.cache/cairndb-anchors/leveldb_db_bench}"
rocks="${ROCKSDB_DB_BENCH:-../shared/peers/rocksdb-9.10.0/db_bench}"
for b in "$cairndb" "$leveldb" "${extra[@]}"; do
    [[ -x "$b" ]] || {
        echo "bench-w2-turns.sh: $b is not an executable" >&2
        exit 2
    }
done
if [[ $rocksdb == 1 && ! -x "$rocks" ]]; then
    echo "bench-w2-turns.sh: RocksDB's db_bench not found at $rocks" >&2
    exit 2
fi

dir=$(mktemp -d /tmp/cairndb-w2.XXXXXX)
trap 'rm -rf "$dir"' EXIT
flags=(--num=2000 --threads=16 --sync=1 --key_size=16 --value_size=100 --benchmarks=fillrandom)

cairn() {
    rm -rf "$dir/db"
    "$1" bench --db="$dir/db" "${flags[@]}" 2>&1 | awk '/^fillrandom/ {print $5}'
}

results="$dir/results"
: >"$results"
for r in $(seq 1 "$rounds"); do
    rm -rf "$dir/ldb"
    micros=$("$leveldb" --benchmarks=fillsync --num=2000000 --threads=16 --value_size=100 \
        --compression_ratio=1 --db="$dir/ldb" 2>&1 | awk '/^fillsync/ {print $3}')
    line="leveldb=$(python3 -c "print(round(16e6 / $micros))") cairndb=$(cairn "$cairndb")"
    for i in "${!extra[@]}"; do
        line+=" extra$i=$(cairn "${extra[$i]}")"
    done
    if [[ $rocksdb == 1 ]]; then
        rm -rf "$dir/db"
        line+=" rocksdb=$(LD_LIBRARY_PATH="$(dirname "$rocks")" "$rocks" --db="$dir/db" "${flags[@]}" 2>&1 |
            awk '/^fillrandom/ {print $5}')"
    fi
    echo "round $r leveldb_micros_per_op=$micros $line" | tee -a "$results"
done

python3 - "$results" "${extra[@]}" <<'EOF'
import statistics, sys
rows = [dict(kv.split("=") for kv in l.split()[2:]) for l in open(sys.argv[1])]
names = [k for k in rows[0] if k != "leveldb_micros_per_op"]
for i, path in enumerate(sys.argv[2:]):
    print(f"extra{i}: {path}")
for k in names:
    vals = [float(r[k]) for r in rows]
    line = f"{k}: median {statistics.median(vals):,.0f} ops/sec"
    if k != "leveldb":
        ratios = sorted(float(r[k]) / float(r["leveldb"]) for r in rows)
        line += f"; over LevelDB per round {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}x)"
    print(line)
EOF
