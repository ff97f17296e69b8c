#!/usr/bin/env bash
# sysbench against four servers side by side, each a fresh server of its
# own (own data directory, socket and port, started by this script as the
# current user): MariaDB with InnoDB, MariaDB with InnoDB tables of
# ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE=8), MariaDB with MyRocks
# (mariadb-plugin-rocksdb), and `cairndb server`.
#
# For each server: one table of --table-size rows with its secondary index
# (sysbench's prepare, timed), its size on disk once the load has settled
# (the data directory unchanged for 10 s, at most 120 s), then these
# workloads on that table, 8 threads, --rand-type=uniform, a warm-up, then
# the measured run:
#   a  oltp_read_only --point_selects=100 --range_selects=off --skip_trx=on
#   c  select_random_points --random_points=100
#   d  select_random_ranges --number-of-ranges=10 --delta=100
#   b  oltp_read_write --point_selects=90 --non_index_updates=10
#      --index_updates=0 --delete_inserts=0 --range_selects=off --skip_trx=on
#   e  oltp_read_write (sysbench's defaults)
# (reads first, so the writing workloads change the table last). Recorded
# per run: QPS, p95 and p99 latency (from sysbench's histogram of the
# measured run) and the server's peak memory (with a cgroup); with a
# cgroup, its memory.stat before and after each measured run beside the
# sysbench output (W.memstat-before/-after: rss, cache, mapped_file,
# pgmajfault).
#
# Memory modes:
#   --memory=ample   caches of 4 GB: innodb_buffer_pool_size,
#                    rocksdb_block_cache_size, cairndb --block-cache-size
#   --memory=capped  each server's whole process in a memory cgroup of
#                    256 MB, page cache included (cgroup v1 memory
#                    controller under /sys/fs/cgroup/memory, or cgroup v2
#                    memory.max), caches of 128 MB (CairnDB without
#                    --cache-size: its own sizing from the cgroup's limit)
#
# usage: scripts/sysbench-compare.sh [--memory=ample|capped]
#            [--table-size=N] [--time=S] [--warmup-time=S] [--threads=N]
#            [--servers=innodb,innodb-zip,myrocks,cairndb]
#            [--workloads=a,c,d,b,e] [--cache-size=BYTES] [--cap=BYTES]
#            [--out=DIR] [--bin=PATH] [--cairndb-args="--zip-from-level=off ..."]
#
# Defaults: --table-size=2000000 --time=60 --warmup-time=10 --threads=8.
# --bin uses that cairndb binary instead of building the release one;
# --cairndb-args adds options to `cairndb server` (space-separated).
# Results go to --out (default ${TMPDIR:-/tmp}/sysbench-compare-DATE-MODE):
# results.md (the table), results.tsv, and per server its logs and each
# sysbench output. mariadb-server and mariadb-plugin-rocksdb are installed
# with apt-get when missing. Servers are stopped and cgroups removed on
# exit; data directories are kept with the results (--clean removes them).
#
# Smoke check: --table-size=20000 --time=5 --warmup-time=1.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

memory=ample
table_size=2000000
time_s=60
warmup=10
threads=8
servers="innodb,innodb-zip,myrocks,cairndb"
workloads="a,c,d,b,e"
cache=""
cache_given=""
cap=$((256 << 20))
out=""
bin=""
cairndb_args=""
clean=0
for arg in "$@"; do
    case "$arg" in
        --memory=*) memory="${arg#*=}" ;;
        --table-size=*) table_size="${arg#*=}" ;;
        --time=*) time_s="${arg#*=}" ;;
        --warmup-time=*) warmup="${arg#*=}" ;;
        --threads=*) threads="${arg#*=}" ;;
        --servers=*) servers="${arg#*=}" ;;
        --workloads=*) workloads="${arg#*=}" ;;
        --cache-size=*) cache="${arg#*=}"; cache_given=1 ;;
        --cap=*) cap="${arg#*=}" ;;
        --out=*) out="${arg#*=}" ;;
        --bin=*) bin="${arg#*=}" ;;
        --cairndb-args=*) cairndb_args="${arg#*=}" ;;
        --clean) clean=1 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "sysbench-compare: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done
case "$memory" in
    ample) cache="${cache:-$((4 << 30))}" ;;
    capped) cache="${cache:-$((128 << 20))}" ;;
    *) echo "sysbench-compare: --memory is ample or capped, not $memory" >&2; exit 2 ;;
esac
for n in "$table_size" "$time_s" "$warmup" "$threads" "$cache" "$cap"; do
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "sysbench-compare: '$n' is not a number" >&2; exit 2; }
done
for s in ${servers//,/ }; do
    case "$s" in innodb | innodb-zip | myrocks | cairndb) ;;
        *) echo "sysbench-compare: unknown server $s" >&2; exit 2 ;;
    esac
done
for w in ${workloads//,/ }; do
    case "$w" in a | b | c | d | e) ;;
        *) echo "sysbench-compare: unknown workload $w" >&2; exit 2 ;;
    esac
done

say() { echo "sysbench-compare: $*"; }
die() { echo "sysbench-compare: $*" >&2; exit 1; }

# --- tools --------------------------------------------------------------------

tool=sysbench-compare
db=sbtest
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh
command -v sysbench >/dev/null || die "sysbench is not installed"
need_mariadb "$servers"

if [[ ",$servers," == *,cairndb,* ]] && [ -z "$bin" ]; then
    say "building the release cairndb"
    cargo build --release -q -p cairndb-cli || die "cargo build failed"
    bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
fi

out="${out:-${TMPDIR:-/tmp}/sysbench-compare-$(date +%Y%m%d-%H%M%S)-$memory}"
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"
if [ -n "$bin" ]; then
    # A private copy, so a rebuild during the run changes nothing.
    mkdir -p "$out/bin"
    cp "$bin" "$out/bin/cairndb" || die "no cairndb binary at $bin"
    bin="$out/bin/cairndb"
fi
say "memory $memory (caches $((cache >> 20)) MB$([ "$memory" = capped ] && echo ", cap $((cap >> 20)) MB")), $table_size rows, ${warmup}s + ${time_s}s runs, $threads threads; results in $out"

cg_setup
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- sysbench ---------------------------------------------------------------------

# The sysbench script of a workload and its own options.
workload_args() { # LETTER
    case "$1" in
        a) echo "oltp_read_only --point_selects=100 --range_selects=off --skip_trx=on" ;;
        b) echo "oltp_read_write --point_selects=90 --non_index_updates=10 --index_updates=0 --delete_inserts=0 --range_selects=off --skip_trx=on" ;;
        c) echo "select_random_points --random_points=100" ;;
        d) echo "select_random_ranges --number-of-ranges=10 --delta=100" ;;
        e) echo "oltp_read_write" ;;
    esac
}

# p95 and p99 (ms) from sysbench's --histogram output.
percentiles() { # FILE
    awk '
        /^Latency histogram/ { on = 1; next }
        on && /^ *[0-9.]+ *\|/ {
            split($0, f, "|"); v = f[1] + 0; n = $NF + 0
            vals[++k] = v; cnt[k] = n; total += n; next
        }
        on && NF == 0 && k > 0 { on = 0 }
        END {
            if (total == 0) { print "- -"; exit }
            c = 0; p95 = ""; p99 = ""
            for (i = 1; i <= k; i++) {
                c += cnt[i]
                if (p95 == "" && c >= 0.95 * total) p95 = vals[i]
                if (p99 == "" && c >= 0.99 * total) p99 = vals[i]
            }
            print p95, p99
        }' "$1"
}

sb_conn() { # connection options for the running server
    echo --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
        --mysql-password= --mysql-db=sbtest --tables=1 --table-size="$table_size" \
        --rand-type=uniform
}

# sysbench 1.0 has no --warmup-time: the warm-up is then a run of its own
# whose results are dropped.
if sysbench --help 2>/dev/null | grep -q -- --warmup-time; then
    warm_opt=(--warmup-time="$warmup")
else
    warm_opt=()
fi

tsv="$out/results.tsv"
printf 'server\tworkload\tprepare_s\tdata_mb\ttable_mb\tqps\tp95_ms\tp99_ms\tpeak_mb\tnote\n' >"$tsv"
: >"$out/settle.tsv"

run_server() { # NAME
    local name="$1" dir="$out/$1"
    rm -rf "$dir"
    say "=== $name ==="
    if ! start_server "$name" "$dir"; then
        printf '%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$name" "did not start" >>"$tsv"
        stop_server
        return
    fi
    local engine=innodb script=oltp_read_only
    [ "$name" = myrocks ] && engine=rocksdb
    if [ "$name" = innodb-zip ]; then
        # sysbench 1.0 reads its table options from a Lua global only.
        script="$dir/zip_prepare.lua"
        printf '%s\n' 'mysql_table_options = "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"' \
            'dofile("/usr/share/sysbench/oltp_read_only.lua")' >"$script"
    fi
    local t0 t1 prep size table
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    if ! sysbench "$script" $(sb_conn) --mysql-storage-engine="$engine" --threads=1 prepare \
        >"$dir/prepare.out" 2>&1; then
        printf '%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$name" "prepare failed ($dir/prepare.out)" >>"$tsv"
        stop_server
        return
    fi
    t1=$(date +%s.%N)
    prep=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ "$name" != cairndb ]; then
        # Dirty pages and memtables to disk, so the size is the table's.
        mariadb --socket="$sock" -uroot -e "FLUSH TABLES sbtest.sbtest1 FOR EXPORT; UNLOCK TABLES;" \
            >/dev/null 2>&1
        [ "$name" = myrocks ] &&
            mariadb --socket="$sock" -uroot -e "SET GLOBAL rocksdb_force_flush_memtable_now=1" >/dev/null 2>&1
    fi
    # Background work (compaction, purge, page flushes) goes on after the
    # load: the size is taken once the data directory has not changed for
    # 10 s (polled every second; at most 120 s), the same rule for every
    # server.
    local bytes waited
    read -r bytes waited <<<"$(settled_size "$dir/data")"
    printf '%s\t%s\n' "$name" "$waited" >>"$out/settle.tsv"
    size=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
    # The table's own files: InnoDB's .ibd, MyRocks' and CairnDB's SSTs
    # (CairnDB's write-ahead log too, as rows may not be flushed yet).
    case "$name" in
        innodb | innodb-zip) table=$(bytes_of "$dir/data/sbtest" 'sbtest1.ibd') ;;
        myrocks) table=$(bytes_of "$dir/data/#rocksdb" '*.sst') ;;
        cairndb) table=$(($(bytes_of "$dir/data" '*.sst') + $(bytes_of "$dir/data" '*.log'))) ;;
    esac
    table=$(awk -v b="$table" 'BEGIN { printf "%.1f", b / 1048576 }')
    say "$name: prepare ${prep}s, data directory ${size} MB, table ${table} MB"
    local w
    for w in ${workloads//,/ }; do
        local args note="" qps p95 p99 peak="-"
        read -r -a args <<<"$(workload_args "$w")"
        local f="$dir/$w-${args[0]}.out"
        if ! kill -0 "$server_pid" 2>/dev/null; then
            printf '%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t%s\n' "$name" "$w" "$prep" "$size" "$table" "server gone" >>"$tsv"
            continue
        fi
        if [ "${#warm_opt[@]}" = 0 ] && [ "$warmup" -gt 0 ]; then
            # shellcheck disable=SC2046
            sysbench "${args[@]}" $(sb_conn) --threads="$threads" --time="$warmup" \
                --report-interval=0 run >"${f%.out}.warmup.out" 2>&1
        fi
        [ -n "$server_cg" ] && cg_stat "$server_cg" >"${f%.out}.memstat-before"
        # shellcheck disable=SC2046
        sysbench "${args[@]}" $(sb_conn) --threads="$threads" "${warm_opt[@]}" \
            --time="$time_s" --report-interval=0 --histogram=on run >"$f" 2>&1
        local rc=$?
        [ -n "$server_cg" ] && cg_stat "$server_cg" >"${f%.out}.memstat-after"
        qps=$(sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p' "$f")
        read -r p95 p99 <<<"$(percentiles "$f")"
        [ "$rc" -ne 0 ] && note="sysbench exit $rc"
        grep -q FATAL "$f" && note="${note:+$note; }FATAL: $(grep -m1 FATAL "$f" | cut -c1-80)"
        if [ -n "$server_cg" ]; then
            peak=$(cg_peak "$server_cg" | awk '{ if ($1 != "") printf "%.0f", $1 / 1048576; else print "-" }')
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$w" "$prep" "$size" "$table" \
            "${qps:--}" "${p95:--}" "${p99:--}" "$peak" "$note" >>"$tsv"
        say "$name $w (${args[0]}): ${qps:-?} qps, p95 ${p95:-?} ms, p99 ${p99:-?} ms${note:+ -- $note}"
    done
    stop_server
    [ "$clean" = 1 ] && rm -rf "$dir/data"
}

for s in ${servers//,/ }; do
    run_server "$s"
done

# --- the table ----------------------------------------------------------------------

{
    echo "# sysbench: MariaDB InnoDB, InnoDB compressed, MyRocks, CairnDB"
    echo
    echo "- memory: $memory (caches $((cache >> 20)) MB$([ "$memory" = capped ] && echo "; each server in a $((cap >> 20)) MB $cg_kind memory cgroup, page cache included"))"
    echo "- one table of $table_size rows with the secondary index k_1; $threads threads; --rand-type=uniform; ${warmup} s warm-up, ${time_s} s measured"
    echo "- $(sysbench --version); $([ -n "$mariadbd_bin" ] && "$mariadbd_bin" --version 2>/dev/null | head -1)"
    echo "- $(uname -srm), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "- workloads: a = oltp_read_only 100 point selects; c = select_random_points 100;"
    echo "  d = select_random_ranges 10 x 100; b = oltp_read_write 90 points + 10 non-index updates;"
    echo "  e = oltp_read_write defaults (run in the order a, c, d, b, e on the same table)"
    echo "- after the load: data MB is the whole data directory (logs, system tables); table MB the"
    echo "  table's files (InnoDB sbtest1.ibd; MyRocks SSTs after a memtable flush; CairnDB SSTs and WAL),"
    echo "  both taken once the directory has not changed for 10 s (at most 120 s after the load; waited:"
    echo "  $(awk -F'\t' '{ printf "%s%s %s s", sep, $1, $2; sep = ", " }' "$out/settle.tsv" 2>/dev/null))"
    echo "- prepare: sysbench prepare (insert and index), 1 thread, seconds"
    [ -n "$cairndb_args" ] && echo "- cairndb server options: $cairndb_args"
    [ "$memory" = capped ] && [ -z "$cache_given" ] && grep -h "memory limit" "$out"/cairndb/server.log 2>/dev/null | head -1 | sed 's/^cairndb server: /- cairndb sized itself: /'
    [ "${#warm_opt[@]}" = 0 ] && echo "- sysbench $(sysbench --version | awk '{ print $2 }') has no --warmup-time: each measured run follows an unmeasured run of ${warmup} s"
    echo
    echo "| server | workload | prepare s | data MB | table MB | QPS | p95 ms | p99 ms | peak MB | note |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    tail -n +2 "$tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
} >"$out/results.md"
cat "$out/results.md"
say "results: $out/results.md"
