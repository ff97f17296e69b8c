#!/usr/bin/env bash
# The large blob run of docs/BENCHMARKS.md ("Blob values"): W3's 4 KiB
# values at a size that does not fit in memory, CairnDB against release
# RocksDB 9.10.0's own db_bench with the same flags, each process (page
# cache included) under a cgroup v1 memory cap (scripts/bench-memlimit.sh).
#
#   scripts/bench-blob-large.sh [--out DIR] [--dir DBDIR] [--num N] [--cap SIZE]
#                               [--engines rocksdb,cairndb] [--modes blob,blobgc,noblob]
#                               [--overwrites K] [--quick]
#
# For every mode (blob: --enable_blob_files=1 --min_blob_size=512; blobgc:
# the same with --enable_blob_garbage_collection=1, each engine's default
# age cutoff; noblob: none of them) and engine, on a fresh database in
# DBDIR: `fillrandom` then `waitforcompaction`, one process; then K times
# (default 1) `overwrite` then `waitforcompaction` on the same database
# (--use_existing_db=1), a process each. Around each process it syncs and reads the device's sectors
# written (/sys/block/DEV/stat, the device under DBDIR), so "written / user"
# is what reached the device, compaction and blob garbage collection
# included, over the user bytes (N x (8 + 4096)); after each it records
# the database's size (du). Defaults: --num 2000000 (8.2 GB of values),
# --cap 2G, DBDIR bench-blob-large-db, DIR bench-blob-large-out. --quick:
# 20,000 keys and a 256M cap (a smoke test of the script; numbers
# meaningless).
#
# Needs root (the cap, dropping the page cache), the release build
# (target/release/cairndb, or $CAIRNDB) and the release db_bench
# (../shared/peers/rocksdb-9.10.0/db_bench, or $CAIRNDB_ROCKSDB_DB_BENCH).
# Writes DIR/ENGINE-MODE-PHASE.log and DIR/summary.md.
set -euo pipefail

prog=bench-blob-large
die() { echo "$prog: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

out=bench-blob-large-out
dbdir=bench-blob-large-db
num=2000000
cap=2G
engines=rocksdb,cairndb
modes=blob,blobgc,noblob
overwrites=1
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --dir) dbdir=${2:?--dir needs a directory}; shift 2 ;;
        --num) num=${2:?--num needs a number}; shift 2 ;;
        --cap) cap=${2:?--cap needs a size}; shift 2 ;;
        --engines) engines=${2:?--engines needs a list}; shift 2 ;;
        --modes) modes=${2:?--modes needs a list}; shift 2 ;;
        --overwrites) overwrites=${2:?--overwrites needs a number}; shift 2 ;;
        --quick) num=20000; cap=256M; shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ $num =~ ^[1-9][0-9]*$ ]] || die "--num must be a positive integer, not '$num'"
[[ $overwrites =~ ^[1-9][0-9]*$ ]] || die "--overwrites must be a positive integer, not '$overwrites'"

cairndb=${CAIRNDB:-$root/target/release/cairndb}
db_bench=${CAIRNDB_ROCKSDB_DB_BENCH:-$root/../shared/peers/rocksdb-9.10.0/db_bench}
[ -x "$cairndb" ] || die "no CairnDB binary at $cairndb (cargo build --release -p cairndb-cli, or set CAIRNDB)"
[ -x "$db_bench" ] || die "no RocksDB db_bench at $db_bench (set CAIRNDB_ROCKSDB_DB_BENCH)"

mkdir -p "$out" "$dbdir"
dbdir=$(cd "$dbdir" && pwd)
dev=$(df --output=source "$dbdir" | tail -1)
dev=${dev#/dev/}
stat=/sys/block/$dev/stat
if [ ! -r "$stat" ]; then
    # A partition: its parent device's stat counts it too.
    parent=$(basename "$(dirname "$(readlink -f "/sys/class/block/$dev")")")
    stat=/sys/block/$parent/stat
fi
[ -r "$stat" ] || die "cannot find the block device statistics for $dbdir (tried $stat)"
sectors_written() { sync; awk '{print $7}' "$stat"; }

user_bytes=$((num * (8 + 4096)))
common=(--num="$num" --key_size=8 --value_size=4096 --compression_type=none --threads=1)
summary=$out/summary.md
{
    echo "# $prog: --num=$num --cap=$cap, device $dev, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "| engine | mode | phase | ops/sec | device bytes written | written / user | size after | max memory | failcnt |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
} > "$summary"

for mode in ${modes//,/ }; do
    case $mode in
        blob) mflags=(--enable_blob_files=1 --min_blob_size=512) ;;
        blobgc) mflags=(--enable_blob_files=1 --min_blob_size=512 --enable_blob_garbage_collection=1) ;;
        noblob) mflags=() ;;
        *) die "unknown mode '$mode' (blob, blobgc or noblob)" ;;
    esac
    for engine in ${engines//,/ }; do
        case $engine in
            rocksdb) cmd=("$db_bench") ;;
            cairndb) cmd=("$cairndb" bench) ;;
            *) die "unknown engine '$engine' (rocksdb or cairndb)" ;;
        esac
        db=$dbdir/$engine-$mode
        rm -rf "$db"
        phases=(fillrandom)
        for ((i = 1; i <= overwrites; i++)); do phases+=("overwrite#$i"); done
        for step in "${phases[@]}"; do
            phase=${step%#*}
            extra=()
            [ "$phase" = overwrite ] && extra=(--use_existing_db=1)
            log=$out/$engine-$mode-${step/\#/}.log
            echo "$prog: $engine $mode $step (load $(cut -d' ' -f1 /proc/loadavg))" >&2
            before=$(sectors_written)
            "$here/bench-memlimit.sh" "$cap" -- "${cmd[@]}" --db="$db" "${common[@]}" \
                "${mflags[@]}" "${extra[@]}" --benchmarks="$phase,waitforcompaction" > "$log" 2>&1 \
                || die "$engine $mode $step failed; see $log"
            after=$(sectors_written)
            written=$(((after - before) * 512))
            size=$(du -sb "$db" | cut -f1)
            ops=$(awk -v b="$phase" '$1 == b { for (i = 1; i < NF; i++) if ($(i+1) == "ops/sec" || $(i+1) == "ops/sec;") print $i }' "$log" | head -1)
            mem=$(sed -n 's/.*memory.max_usage_in_bytes=\([0-9]*\).*/\1/p' "$log")
            fail=$(sed -n 's/.*memory.failcnt=\([0-9]*\).*/\1/p' "$log")
            ratio=$(awk -v w="$written" -v u="$user_bytes" 'BEGIN { printf "%.2f", w / u }')
            echo "| $engine | $mode | $step | ${ops:-?} | $written | $ratio | $size | ${mem:-?} | ${fail:-?} |" >> "$summary"
        done
        rm -rf "$db"
    done
done
cat "$summary"
