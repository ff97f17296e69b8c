#!/usr/bin/env bash
# Runs the eight db_bench command lines of the in-memory report
# (../shared/seeds/001: four pairs of filluniquerandom then a 32-reader
# readwhilewriting with one rate-limited writer, on plain tables with a
# prefix-hash memtable over mmap) for CairnDB and for release RocksDB's own
# db_bench, taking turns pair by pair, and prints a table of the results.
#
#   scripts/bench-seed001.sh [--num=N] [--duration=S] [--pairs=1,2,3,4] [--out=DIR]
#
# Defaults: --num=1000000 --duration=30 (the report's lines use the full
# key count and 600 s; these are scaled down to fit a small machine), all
# four pairs, outputs in a new directory under /tmp. Needs a release build
# of cairndb (target/release/cairndb, or $CAIRNDB) and RocksDB 9.10.0's
# db_bench ($ROCKSDB_DB_BENCH, default ../shared/peers/rocksdb-9.10.0/db_bench).
#
# Both engines get the report's flags, except that --db points to a
# scratch directory and --wal_dir is left out (the WAL stays beside the
# tables); and for RocksDB 9.10, which no longer has some of them:
#   --writes_per_second=W   becomes --benchmark_write_rate_limit=W*(key_size+value_size)
#   --hard_rate_limit, --disable_data_sync   are dropped
#   --allow_concurrent_memtable_write=false  is added (its prefix_hash memtable needs it).
# CairnDB prints the writes per second its writer managed; for RocksDB,
# whose db_bench does not, they are its `stats` benchmark's "Cumulative
# writes" (run after the timed part) over the run's seconds, to the
# thousand writes it rounds to.
set -euo pipefail
cd "$(dirname "$0")/.."

num=1000000
duration=30
pairs="1,2,3,4"
out=""
for a in "$@"; do
    case $a in
        --num=*) num=${a#*=} ;;
        --duration=*) duration=${a#*=} ;;
        --pairs=*) pairs=${a#*=} ;;
        --out=*) out=${a#*=} ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "bench-seed001: unknown argument $a" >&2; exit 2 ;;
    esac
done
cairndb=${CAIRNDB:-target/release/cairndb}
rocksdb=${ROCKSDB_DB_BENCH:-../shared/peers/rocksdb-9.10.0/db_bench}
[ -x "$cairndb" ] || { echo "bench-seed001: no $cairndb (cargo build --release -p cairndb-cli)" >&2; exit 2; }
[ -x "$rocksdb" ] || { echo "bench-seed001: no RocksDB db_bench at $rocksdb" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/cairndb-seed001-XXXXXX)
mkdir -p "$out"
scratch=$(mktemp -d /tmp/cairndb-seed001-db-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

common="--num_levels=6 --key_size=20 --value_size=100 --cache_size=17179869184
 --cache_numshardbits=6 --compression_type=none --compression_ratio=1
 --min_level_to_compress=-1 --disable_seek_compaction=1 --write_buffer_size=134217728
 --max_write_buffer_number=2 --level0_file_num_compaction_trigger=8
 --target_file_size_base=134217728 --max_bytes_for_level_base=1073741824
 --disable_wal=0 --sync=0 --verify_checksum=1
 --delete_obsolete_files_period_micros=314572800 --max_background_compactions=4
 --max_background_flushes=0 --level0_slowdown_writes_trigger=16
 --level0_stop_writes_trigger=24 --statistics=0 --stats_per_interval=0
 --stats_interval=1048576 --histogram=0 --use_plain_table=1 --open_files=-1
 --mmap_read=1 --mmap_write=0 --memtablerep=prefix_hash --bloom_bits=10
 --bloom_locality=1 --num=$num"
# Pair: prefix_size keys_per_prefix writes_per_second.
pair_flags() {
    case $1 in
        1) echo "20 0 81920" ;;
        2) echo "20 0 10240" ;;
        3) echo "12 10 81920" ;;
        4) echo "12 10 10240" ;;
        *) echo "bench-seed001: no pair $1" >&2; exit 2 ;;
    esac
}

run() { # engine pair phase -> log
    local engine=$1 pair=$2 phase=$3
    read -r prefix kpp wps <<<"$(pair_flags "$pair")"
    local flags="$common --prefix_size=$prefix --keys_per_prefix=$kpp --db=$scratch/$engine"
    local log="$out/pair$pair-$engine-$phase.log"
    if [ "$phase" = fill ]; then
        flags="$flags --benchmarks=filluniquerandom --use_existing_db=0 --threads=1"
    else
        flags="$flags --duration=$duration --benchmarks=readwhilewriting --use_existing_db=1 --threads=32"
    fi
    if [ "$engine" = cairndb ]; then
        flags="$flags --hard_rate_limit=2 --disable_data_sync=1"
        [ "$phase" = fill ] || flags="$flags --writes_per_second=$wps"
        # shellcheck disable=SC2086
        "$cairndb" bench $flags >"$log" 2>&1
    else
        flags="$flags --allow_concurrent_memtable_write=false"
        # `stats` after the timed run prints the writes since open.
        [ "$phase" = fill ] || flags="${flags/readwhilewriting/readwhilewriting,stats} --benchmark_write_rate_limit=$((wps * 120))"
        # shellcheck disable=SC2086
        "$rocksdb" $flags >"$log" 2>&1
    fi
}

ops() { grep -hE "^$2 " "$1" | grep -oE '[0-9]+ ops/sec' | head -1 | cut -d' ' -f1; }

printf '| pair | prefix, keys per prefix, writes/s asked | engine | filluniquerandom ops/s | readwhilewriting reads/s | writer writes/s |\n'
printf '|---|---|---|---:|---:|---:|\n'
for pair in ${pairs//,/ }; do
    read -r prefix kpp wps <<<"$(pair_flags "$pair")"
    for engine in rocksdb cairndb; do
        rm -rf "${scratch:?}/$engine"
        run "$engine" "$pair" fill
        run "$engine" "$pair" read
        f=$(ops "$out/pair$pair-$engine-fill.log" filluniquerandom)
        r=$(ops "$out/pair$pair-$engine-read.log" readwhilewriting)
        log="$out/pair$pair-$engine-read.log"
        if [ "$engine" = cairndb ]; then
            w=$(grep -oE 'did [0-9]+ puts \([0-9]+/s\)' "$log" | grep -oE '\([0-9]+' | tr -d '(' || true)
        else
            # "Cumulative writes: 242K writes" over the run's seconds
            # (RocksDB prints counts of 10,000 and more in K or M).
            w=$(awk '/^readwhilewriting/ { for (i = 1; i < NF; i++) if ($(i+1) == "seconds") s = $i }
                /^Cumulative writes:/ { n = $3; m = 1; if (n ~ /K$/) m = 1e3; if (n ~ /M$/) m = 1e6;
                    sub(/[KMG]$/, "", n); w = n * m }
                END { if (s > 0 && w > 0) printf "%d", w / s }' "$log")
        fi
        printf '| %s | %s, %s, %s | %s | %s | %s | %s |\n' "$pair" "$prefix" "$kpp" "$wps" \
            "$engine" "${f:-?}" "${r:-?}" "${w:-?}"
        rm -rf "${scratch:?}/$engine"
    done
done
echo "logs: $out" >&2
