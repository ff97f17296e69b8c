#!/usr/bin/env bash
# Measures zip tables against RocksDB on one file-workload data set
# (docs/bench/file-workload.md): table bytes, build CPU, point reads in
# memory and, with --capped, cold point reads under a memory cap.
#
#   scripts/bench-zip.sh DATADIR OUTDIR [--capped] [--reads N]
#
# DATADIR holds debian.tsv and debian.keys (scripts/make-debian-data.sh).
# Needs a release build with the rocksdb feature
# (cargo build --release -p cairndb-cli --features rocksdb); --capped needs
# root and a cgroup v1 memory controller (scripts/bench-memlimit.sh).
#
# Configurations: RocksDB 9.10.0 (zstd-3, 16 KiB blocks), CairnDB
# block-based (zstd, 16 KiB blocks), zip v1 (group 4, trained 64 KiB
# dictionary, zstd 6), zip v2 (group 16), zip v3 (group 16), zip v4 at
# its defaults (group 8, hex runs packed), and zip v4 with groups of 16,
# 32 and 64 rows (32 and 64: sample ratio 0.04). Capped reads: RocksDB,
# zip v3, zip v4, zip v4 without reading tables ahead as they open
# (--zip_read_ahead=0) and zip v4 with groups of 16.
# Each is loaded with fillfile,compact into OUTDIR/db-NAME; the build CPU
# is the process's user+sys time minus a fillfile-only run's. Reads:
# readfile with a 1 GiB block cache (everything cached once read) and with
# the default 8 MiB, 3 seeds each, configurations taking turns. --capped:
# cap = the larger of the two engines' own usage after opening an empty
# database and reading the key file, plus 0.75x RocksDB's table bytes;
# readfile cold with 1 and 8 threads, under /usr/bin/time for major
# faults and file-system reads. Everything lands in OUTDIR/*.out and a
# summary in OUTDIR/summary.txt.
set -euo pipefail
usage="usage: bench-zip.sh DATADIR OUTDIR [--capped] [--reads N]"
data=${1:?$usage}
out=${2:?$usage}
shift 2
capped=
reads=200000
while [ $# -gt 0 ]; do
    case "$1" in
    --capped) capped=1 ;;
    --reads) reads=${2:?$usage}; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
    shift
done
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/cairndb"
[ -x "$bin" ] || { echo "bench-zip: build $bin first (with --features rocksdb)" >&2; exit 1; }
[ -s "$data/debian.tsv" ] && [ -s "$data/debian.keys" ] ||
    { echo "bench-zip: $data/debian.tsv and debian.keys needed (scripts/make-debian-data.sh)" >&2; exit 1; }
mkdir -p "$out"
D="--datafile=$data/debian.tsv --keyfile=$data/debian.keys --keyfields=0,1,2"
K="--keyfile=$data/debian.keys --keyfields=0,1,2"
COMMON="--compression_type=zstd --block_size=16384"
ZIP="--table_format=zip --zip_from_level=1"
names=(rocksdb block zip-v1 zip-v2 zip-v3 zip-v4 zip-v4-g16 zip-v4-g32 zip-v4-g64)
flags() {
    case "$1" in
    rocksdb) echo "--engine=rocksdb" ;;
    block) echo "" ;;
    zip-v1) echo "$ZIP --zip_format_version=1 --zip_dict_size=65536 --zip_group_size=4 --zip_level=6" ;;
    zip-v2) echo "$ZIP --zip_format_version=2 --zip_group_size=16" ;;
    zip-v3) echo "$ZIP --zip_format_version=3 --zip_group_size=16" ;;
    zip-v4) echo "$ZIP" ;;
    zip-v4-g16) echo "$ZIP --zip_group_size=16" ;;
    # The defaults without reading tables ahead as they open (capped only).
    zip-v4-ra0) echo "$ZIP --zip_read_ahead=0" ;;
    zip-v4-g32) echo "$ZIP --zip_group_size=32 --zip_sample_ratio=0.04" ;;
    zip-v4-g64) echo "$ZIP --zip_group_size=64 --zip_sample_ratio=0.04" ;;
    esac
}
cpu() {
    python3 -c "import resource,subprocess,sys; r=subprocess.run(sys.argv[2:],stdout=open(sys.argv[1],'w'),stderr=subprocess.STDOUT); u=resource.getrusage(resource.RUSAGE_CHILDREN); print(round(u.ru_utime+u.ru_stime,2)); sys.exit(r.returncode)" "$@"
}
sst_bytes() { du -cb "$1"/*.sst | tail -1 | cut -f1; }
summary="$out/summary.txt"
{
    echo "# bench-zip $(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD) data $data"
    echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$summary"
for n in "${names[@]}"; do
    rm -rf "$out/db-$n"
    # shellcheck disable=SC2046
    base=$(cpu "$out/fill-$n.out" "$bin" bench --benchmarks=fillfile $D --db="$out/db-$n" $COMMON $(flags "$n"))
    rm -rf "$out/db-$n"
    # shellcheck disable=SC2046
    full=$(cpu "$out/build-$n.out" "$bin" bench --benchmarks=fillfile,compact,dirsize,stats $D --db="$out/db-$n" $COMMON $(flags "$n"))
    echo "build $n table_bytes $(sst_bytes "$out/db-$n") cpu_fillfile $base cpu_fillfile_compact $full" | tee -a "$summary"
done
for cache in 1073741824 8388608; do
    for seed in 1 2 3; do
        for n in "${names[@]}"; do
            [ "$n" = block ] || [ "$n" = zip-v1 ] && [ "$cache" = 1073741824 ] && continue
            # shellcheck disable=SC2046
            "$bin" bench --use_existing_db=1 --benchmarks=readfile,stats --reads="$reads" --seed="$seed" \
                $K --db="$out/db-$n" $COMMON --cache_size="$cache" $(flags "$n") > "$out/read-$n-c$cache-s$seed.out" 2>&1
            line=$(grep -E '^readfile' "$out/read-$n-c$cache-s$seed.out")
            per=$(grep -oE '[0-9]+ bytes decompressed per point read' "$out/read-$n-c$cache-s$seed.out" || true)
            echo "read $n cache $cache seed $seed $(echo "$line" | grep -oE '[0-9]+ ops/sec') ${per:+($per)}" | tee -a "$summary"
        done
    done
done
[ -n "$capped" ] || exit 0
limit=0
for n in rocksdb zip-v4; do
    rm -rf "$out/empty-$n"
    # shellcheck disable=SC2046
    u=$("$root/scripts/bench-memlimit.sh" 8G -- "$bin" bench --benchmarks=readfile --reads=1 $K \
        --db="$out/empty-$n" $COMMON $(flags "$n") 2>&1 | grep -oE 'max_usage_in_bytes=[0-9]+' | cut -d= -f2)
    echo "baseline $n $u" | tee -a "$summary"
    [ "$u" -gt "$limit" ] && limit=$u
done
rocks=$(sst_bytes "$out/db-rocksdb")
limit=$((limit + rocks * 3 / 4))
echo "cap $limit" | tee -a "$summary"
for threads in 1 8; do
    for seed in 1 2 3; do
        for n in rocksdb zip-v3 zip-v4 zip-v4-ra0 zip-v4-g16; do
            db=${n%-ra0}
            f="$out/capped-$n-t$threads-s$seed.out"
            # shellcheck disable=SC2046
            "$root/scripts/bench-memlimit.sh" "$limit" -- /usr/bin/time \
                -f "time: %F major faults, %I fs inputs of 512 B, %e s wall, %U s user, %S s sys" \
                "$bin" bench --use_existing_db=1 --benchmarks=readfile,stats --threads="$threads" \
                --reads=$((reads / threads)) --seed="$seed" $K --db="$out/db-$db" $COMMON $(flags "$n") > "$f" 2>&1
            ops=$(grep -E '^readfile' "$f" | grep -oE '[0-9]+ ops/sec')
            faults=$(grep -oE '[0-9]+ major faults' "$f")
            inputs=$(grep -oE '[0-9]+ fs inputs' "$f" | cut -d' ' -f1)
            echo "capped $n threads $threads seed $seed $ops, $faults, $((inputs * 512 / reads)) bytes read per lookup" | tee -a "$summary"
        done
    done
done
