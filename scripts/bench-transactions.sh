#!/usr/bin/env bash
# The transaction benchmarks of docs/bench/transactions.md:
#
#  1. randomtransaction, CairnDB against the release RocksDB 9.10.0 library
#     in process (cairndb compare --engines=rocksdb-inproc,cairndb: both
#     engines run the same inserter, taking turns, medians of --repeat),
#     pessimistic (--transaction_db) and optimistic
#     (--optimistic_transaction_db), 1 and 4 threads; and once without a
#     transaction flag, where RocksDB's own db_bench can run it too.
#  2. One-key transactions against plain puts: fillrandom in four modes
#     (plain; --transaction_db, each write locking its key; --transaction_db
#     and --optimistic_transaction_db with --write_as_transaction, each
#     write an explicit transaction), on CairnDB and in-process RocksDB,
#     modes and engines taking turns, medians of --repeat, and each mode's
#     ops/sec over the plain one's.
#
#   scripts/bench-transactions.sh [--out DIR] [--repeat N] [--quick] [--no-wait]
#
# Needs a release build with the peers:
#   cargo build --release -p cairndb-cli --features rocksdb,leveldb
# ($CAIRNDB names another binary). Before each measurement it waits, up to
# 20 minutes, for the 1-minute load average to drop to 0.6 or below (the
# machine is shared), and prints the load it started at; --no-wait skips
# that. --quick runs tiny sizes (a smoke test of the script, numbers
# meaningless). Outputs go to DIR (default bench-transactions-out): one
# compare directory per randomtransaction configuration, the one-key runs'
# logs, and summary.md.
set -euo pipefail

prog=bench-transactions
die() { echo "$prog: $*" >&2; exit 2; }
cd "$(dirname "$0")/.."

out=bench-transactions-out
repeat=3
quick=0
wait_quiet=1
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
        --quick) quick=1; shift ;;
        --no-wait) wait_quiet=0; shift ;;
        -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat: not a positive number: $repeat"

B=${CAIRNDB:-${CARGO_TARGET_DIR:-target}/release/cairndb}
[ -x "$B" ] || die "no binary at $B (cargo build --release -p cairndb-cli --features rocksdb,leveldb, or set CAIRNDB)"
"$B" bench --engine=rocksdb --benchmarks= >/dev/null 2>&1 ||
    die "$B was built without the rocksdb feature"

# Sizes: 100,000 keys per set; 400,000 transactions in all per run; 500,000
# puts per fillrandom run.
num=100000 rt_ops=400000 fill=500000
if [ $quick = 1 ]; then num=2000 rt_ops=4000 fill=5000; fi
seed=${SEED:-20260401}

mkdir -p "$out"
summary=$out/summary.md
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

load1() { cut -d' ' -f1 /proc/loadavg; }
# Waits for a quiet machine (1-minute load <= 0.6), at most 20 minutes.
quiet() {
    local waited=0
    if [ $wait_quiet = 1 ]; then
        while awk -v l="$(load1)" 'BEGIN { exit !(l > 0.6) }'; do
            if [ $waited -ge 1200 ]; then
                echo "$prog: load still $(load1) after 20 minutes; measuring anyway" >&2
                break
            fi
            echo "$prog: load $(load1) > 0.6, waiting (${waited}s so far)" >&2
            sleep 60
            waited=$((waited + 60))
        done
    fi
    echo "load before $1: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$summary" >&2
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ops/sec of the result line named $1 in the output on stdin.
ops_of() { awk -v n="$1" '$1 == n && $4 == "micros/op" { print $5 }'; }

say "# Transaction benchmarks"
say ""
say "Binary: $B ($(git rev-parse --short HEAD 2>/dev/null || echo '?')); $(nproc) cores; repeat $repeat; seed $seed."
say ""

# 1. randomtransaction.
say "## randomtransaction (ops/sec, medians of $repeat)"
say ""
rt() { # NAME ENGINES THREADS FLAGS...
    local name=$1 engines=$2 threads=$3
    shift 3
    quiet "randomtransaction $name"
    "$B" compare --repeat="$repeat" --engines="$engines" --skip_device \
        --out="$out/rt-$name" --seed="$seed" --num="$num" \
        --reads=$((rt_ops / threads)) --threads="$threads" \
        --benchmarks=randomtransaction "$@" >"$out/rt-$name.txt"
    echo "load after randomtransaction $name: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$summary" >&2
    say "### $name: --threads=$threads $*"
    say ""
    cat "$out/rt-$name/compare.md" >>"$summary"
    for log in "$out/rt-$name"/compare-*-0.log; do
        e=${log##*/compare-}
        grep -h '^randomtransaction' "$log" | sed "s/^/    ${e%-0.log}, round 1: /" >>"$summary" || true
    done
    say ""
}
rt plain-t1 rocksdb,rocksdb-inproc,cairndb 1
for threads in 1 4; do
    rt "pessimistic-t$threads" rocksdb-inproc,cairndb "$threads" --transaction_db=1
    rt "optimistic-t$threads" rocksdb-inproc,cairndb "$threads" --optimistic_transaction_db=1
done

# 2. One key per transaction against a plain put.
modes=(plain locked-write txn-pessimistic txn-optimistic)
mode_flags() {
    case $1 in
        plain) ;;
        locked-write) echo --transaction_db=1 ;;
        txn-pessimistic) echo --transaction_db=1 --write_as_transaction=1 ;;
        txn-optimistic) echo --optimistic_transaction_db=1 --write_as_transaction=1 ;;
    esac
}
declare -A runs
quiet "fillrandom, one key per write"
for ((r = 1; r <= repeat; r++)); do
    for engine in cairndb rocksdb; do
        for m in "${modes[@]}"; do
            log=$out/fill-$engine-$m-$r.log
            # shellcheck disable=SC2046
            "$B" bench --engine=$engine --benchmarks=fillrandom --num=$fill \
                --compression_type=none --seed=$seed --progress=0 \
                $(mode_flags $m) >"$log" 2>&1 || die "failed, see $log"
            v=$(ops_of fillrandom <"$log")
            runs[$engine-$m]="${runs[$engine-$m]:-} $v"
            echo "round $r $engine $m: $v ops/sec" >&2
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$summary" >&2
say ""
say "## fillrandom, one key per write: ops/sec (medians of $repeat) and cost over a plain put"
say ""
say "--num=$fill --compression_type=none, 1 thread."
say ""
say "| mode | flags | cairndb | cost | rocksdb | cost |"
say "|---|---|---:|---:|---:|---:|"
declare -A med
for engine in cairndb rocksdb; do
    for m in "${modes[@]}"; do
        med[$engine-$m]=$(echo "${runs[$engine-$m]}" | tr ' ' '\n' | grep . | median)
    done
done
for m in "${modes[@]}"; do
    row="| $m | $(mode_flags $m) |"
    for engine in cairndb rocksdb; do
        cost=$(awk -v p="${med[$engine-plain]}" -v x="${med[$engine-$m]}" 'BEGIN { printf "%.2fx", p / x }')
        row="$row ${med[$engine-$m]} | $cost |"
    done
    say "$row"
done
say ""
say "Runs: $(for k in "${!runs[@]}"; do echo -n "$k:${runs[$k]}; "; done)"
echo "$prog: summary in $summary" >&2
