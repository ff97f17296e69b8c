#!/usr/bin/env bash
# YCSB workloads A-F through the MySQL protocol, on rows of ten 280-byte
# fields cut from a real text corpus, against four servers side by side,
# one at a time, each fresh (scripts/lib/servers.sh): MariaDB InnoDB
# (innodb), InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 (innodb-zip),
# MyRocks (myrocks) and `cairndb server` (cairndb).
#
# The client is go-ycsb v1.0.3 (its MySQL binding: go-sql-driver/mysql,
# server-side prepared statements) with the core workload's value
# generator patched to cut fields from the corpus (scripts/ycsb/corpus,
# scripts/ycsb/cmd/cairn-ycsb); it is built here with `go build`. The
# corpus comes from scripts/ycsb/make-corpus.py (Debian source packages).
#
# Per server: CREATE TABLE usertable (YCSB_KEY VARCHAR(64) PRIMARY KEY,
# FIELD0..FIELD9 VARCHAR(280)) in the server's engine, the load (timed,
# every commit synced: innodb_flush_log_at_trx_commit=1,
# rocksdb_flush_log_at_trx_commit=1, CairnDB's default), the data
# directory's size once settled, then the workloads in YCSB's order
# (A, B, C, F, D, E: D and E insert), each for --time seconds or --ops
# operations, results in results.md/results.tsv under --out.
#
# Memory: --cap=BYTES puts each server in a memory cgroup of that size
# (page cache included); --cap=quarter makes it a quarter of the loaded
# data (records x 2800 bytes), at least --min-cap (default 256 MB: a
# MariaDB server does not start in less). Caches are half the cap
# (innodb_buffer_pool_size, rocksdb_block_cache_size); CairnDB sizes its
# own from the cgroup's limit. Without --cap: no cgroup, caches of
# --cache-size (default 1 GB).
#
# usage: scripts/ycsb/bench.sh --corpus=FILE [--records=N] [--time=S | --ops=N]
#            [--threads=N] [--dist=zipfian|uniform] [--servers=innodb,innodb-zip,myrocks,cairndb]
#            [--workloads=a,b,c,f,d,e] [--cap=BYTES|quarter] [--min-cap=BYTES]
#            [--cache-size=BYTES] [--out=DIR] [--bin=PATH] [--client=PATH]
#            [--cairndb-args="..."]
# Defaults: --records=100000 --time=60 --threads=16 --dist=zipfian, all
# servers, all workloads.
# --smoke: the CI check (under a minute): 2000 records, 2 s per
# workload, cairndb only, a corpus made of the repository's own sources
# unless --corpus is given.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"

records=100000
time_s=60
ops=""
threads=16
dist=zipfian
servers="innodb,innodb-zip,myrocks,cairndb"
workloads="a,b,c,f,d,e"
cap_arg=""
min_cap=$((256 << 20))
cache=$((1 << 30))
cache_given=""
corpus=""
out=""
bin=""
client=""
cairndb_args=""
smoke=""
for arg in "$@"; do
    case "$arg" in
        --records=*) records="${arg#*=}" ;;
        --time=*) time_s="${arg#*=}" ;;
        --ops=*) ops="${arg#*=}" ;;
        --threads=*) threads="${arg#*=}" ;;
        --dist=*) dist="${arg#*=}" ;;
        --servers=*) servers="${arg#*=}" ;;
        --workloads=*) workloads="${arg#*=}" ;;
        --cap=*) cap_arg="${arg#*=}" ;;
        --min-cap=*) min_cap="${arg#*=}" ;;
        --cache-size=*) cache="${arg#*=}"; cache_given=1 ;;
        --corpus=*) corpus="${arg#*=}" ;;
        --out=*) out="${arg#*=}" ;;
        --bin=*) bin="${arg#*=}" ;;
        --client=*) client="${arg#*=}" ;;
        --cairndb-args=*) cairndb_args="${arg#*=}" ;;
        --smoke) smoke=1 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "ycsb: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done
say() { echo "ycsb: $*"; }
die() { echo "ycsb: $*" >&2; exit 1; }

for n in "$records" "$time_s" "$threads" "$min_cap" "$cache" ${ops:+"$ops"}; do
    [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a number"
done
case "$dist" in zipfian | uniform) ;; *) die "--dist is zipfian or uniform, not $dist" ;; esac
for s in ${servers//,/ }; do
    case "$s" in innodb | innodb-zip | myrocks | cairndb) ;; *) die "unknown server $s" ;; esac
done
for w in ${workloads//,/ }; do
    case "$w" in a | b | c | d | e | f) ;; *) die "unknown workload $w" ;; esac
done
if [ -n "$smoke" ]; then
    records=2000
    time_s=2
    servers=cairndb
    if [ -z "$corpus" ]; then
        if [ -z "$out" ]; then
            # Made here, so removed at exit (a smoke run keeps nothing).
            out="${TMPDIR:-/tmp}/ycsb-smoke-$$"
            smoke_out=$out
        fi
        mkdir -p "$out"
        corpus="$out/corpus.txt"
        git ls-files -z -- '*.rs' '*.md' '*.sh' '*.py' | xargs -0 cat >"$corpus" ||
            die "cannot make the smoke corpus"
    fi
fi
[ -n "$corpus" ] || die "--corpus=FILE is needed (scripts/ycsb/make-corpus.py makes one)"
[ -r "$corpus" ] || die "cannot read the corpus $corpus"
corpus="$(cd "$(dirname "$corpus")" && pwd)/$(basename "$corpus")"

memory=ample
cap=0
if [ -n "$cap_arg" ]; then
    memory=capped
    if [ "$cap_arg" = quarter ]; then
        cap=$((records * 2800 / 4))
        [ "$cap" -ge "$min_cap" ] || cap=$min_cap
    else
        [[ "$cap_arg" =~ ^[0-9]+$ ]] || die "--cap is BYTES or quarter, not $cap_arg"
        cap=$cap_arg
    fi
    [ -n "$cache_given" ] || cache=$((cap / 2))
fi

tool=ycsb
db=ycsb
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh
need_mariadb "$servers"

out="${out:-${TMPDIR:-/tmp}/ycsb-$(date +%Y%m%d-%H%M%S)-$dist}"
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"

if [[ ",$servers," == *,cairndb,* ]]; then
    if [ -z "$bin" ]; then
        say "building the release cairndb"
        cargo build --release -q -p cairndb-cli || die "cargo build failed"
        bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
    fi
    mkdir -p "$out/bin"
    cp "$bin" "$out/bin/cairndb" || die "no cairndb binary at $bin"
    bin="$out/bin/cairndb"
fi
if [ -z "$client" ]; then
    command -v go >/dev/null || die "go is not installed (the client is built with go build)"
    say "building the client (go-ycsb with the corpus workload)"
    (cd scripts/ycsb && GOFLAGS=-mod=mod go build -o "$out/bin/cairn-ycsb" ./cmd/cairn-ycsb) ||
        die "go build of the client failed"
    client="$out/bin/cairn-ycsb"
fi

cg_setup
trap 'cleanup; rm -rf "${smoke_out:-}"' EXIT
trap 'exit 130' INT TERM

say "$records records, $threads threads, $dist, $([ -n "$ops" ] && echo "$ops ops" || echo "${time_s}s") per workload, memory $memory (caches $((cache >> 20)) MB$([ "$memory" = capped ] && echo ", cap $((cap >> 20)) MB")); results in $out"

tsv="$out/results.tsv"
printf 'server\tphase\tops_per_s\tavg_us\tp99_us\terrors\tnote\n' >"$tsv"

# The client's final summary: OPS, Avg(us) and 99th(us) of its TOTAL line,
# and the count of *_ERROR operations.
summary() { # FILE
    awk '
        /^Run finished/ { fin = 1; next }
        fin && $1 == "TOTAL" { line = $0 }
        fin && $1 ~ /_ERROR$/ { for (i = 1; i <= NF; i++) if ($i == "Count:") { e += $(i + 1) + 0 } }
        END {
            ops = "-"; avg = "-"; p99 = "-"
            n = split(line, f, /[ ,]+/)
            for (i = 1; i < n; i++) {
                if (f[i] == "OPS:") ops = f[i + 1]
                if (f[i] == "Avg(us):") avg = f[i + 1]
                if (f[i] == "99th(us):") p99 = f[i + 1]
            }
            print ops, avg, p99, e + 0
        }' "$1"
}

client_props() { # PHASE (load or a workload letter)
    local p=(-P scripts/ycsb/workloads/common -p corpus.file="$corpus"
        -p recordcount="$records" -p threadcount="$threads"
        -p mysql.host=127.0.0.1 -p mysql.port="$port" -p mysql.user=root -p mysql.db="$db")
    if [ "$1" != load ]; then
        p+=(-P "scripts/ycsb/workloads/workload$1")
        [ "$1" = d ] || p+=(-p requestdistribution="$dist")
        if [ -n "$ops" ]; then
            p+=(-p operationcount="$ops")
        else
            p+=(-p operationcount=2000000000 -p maxexecutiontime="$time_s")
        fi
    fi
    printf '%s\n' "${p[@]}"
}

sql() { # SQL: runs it on the current server as root
    if [ "$name" = cairndb ]; then
        mariadb -h127.0.0.1 -P"$port" -uroot "$db" -e "$1"
    else
        mariadb --socket="$sock" -uroot "$db" -e "$1"
    fi
}

run_server() { # NAME
    name="$1"
    local dir="$out/$1"
    rm -rf "$dir"
    say "=== $name ==="
    if ! start_server "$name" "$dir"; then
        printf '%s\tload\t-\t-\t-\t-\tdid not start\n' "$name" >>"$tsv"
        stop_server
        return
    fi
    local opts=""
    case "$name" in
        innodb) opts="ENGINE=InnoDB" ;;
        innodb-zip) opts="ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8" ;;
        myrocks) opts="ENGINE=ROCKSDB" ;;
    esac
    local cols="YCSB_KEY VARCHAR(64) PRIMARY KEY" i
    for ((i = 0; i < 10; i++)); do cols="$cols, FIELD$i VARCHAR(280)"; done
    sql "CREATE TABLE usertable ($cols) $opts" >"$dir/create.out" 2>&1 ||
        { printf '%s\tload\t-\t-\t-\t-\tCREATE TABLE failed\n' "$name" >>"$tsv"; stop_server; return; }
    local props
    mapfile -t props < <(client_props load)
    local t0 t1
    t0=$(date +%s.%N)
    "$client" load mysql "${props[@]}" >"$dir/load.out" 2>&1
    t1=$(date +%s.%N)
    read -r o a p e <<<"$(summary "$dir/load.out")"
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    local rate
    rate=$(awk -v n="$records" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    if [ "$name" != cairndb ]; then
        sql "FLUSH TABLES usertable FOR EXPORT; UNLOCK TABLES;" >/dev/null 2>&1
        [ "$name" = myrocks ] && sql "SET GLOBAL rocksdb_force_flush_memtable_now=1" >/dev/null 2>&1
    fi
    local bytes waited
    read -r bytes waited <<<"$(settled_size "$dir/data")"
    local mb
    mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
    printf '%s\tload\t%s\t%s\t%s\t%s\t%s s, data directory %s MB\n' "$name" "$rate" "$a" "$p" "$e" "$secs" "$mb" >>"$tsv"
    # The table's own files: InnoDB's .ibd, MyRocks' SSTs, CairnDB's SSTs,
    # blob files and write-ahead log (rows may not be flushed yet).
    local table
    case "$name" in
        innodb | innodb-zip) table=$(bytes_of "$dir/data/$db" 'usertable.ibd') ;;
        myrocks) table=$(bytes_of "$dir/data/#rocksdb" '*.sst') ;;
        cairndb) table=$(($(bytes_of "$dir/data" '*.sst') + $(bytes_of "$dir/data" '*.blob') + $(bytes_of "$dir/data" '*.log'))) ;;
    esac
    printf '%s\t%s\t%s\n' "$name" "$bytes" "$table" >>"$out/sizes.tsv"
    say "$name: load $records rows in ${secs}s ($rate rows/s, $e errors), data directory $mb MB"
    local w
    for w in ${workloads//,/ }; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            printf '%s\t%s\t-\t-\t-\t-\tserver gone\n' "$name" "$w" >>"$tsv"
            continue
        fi
        mapfile -t props < <(client_props "$w")
        "$client" run mysql "${props[@]}" >"$dir/$w.out" 2>&1
        read -r o a p e <<<"$(summary "$dir/$w.out")"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t\n' "$name" "$w" "$o" "$a" "$p" "$e" >>"$tsv"
        say "$name $w: $o ops/s, avg $a us, p99 $p us, $e errors"
    done
    [ -n "$server_cg" ] && cg_peak "$server_cg" >"$dir/peak-bytes"
    # The size again after the workloads (their updates and inserts, and
    # the compactions or page flushes they caused), settled the same way.
    if [ -z "$smoke" ]; then
        read -r bytes waited <<<"$(settled_size "$dir/data")"
        printf '%s\t%s\n' "$name" "$bytes" >>"$out/sizes-after.tsv"
    fi
    stop_server
}

for s in ${servers//,/ }; do
    run_server "$s"
done

# The table: each server's numbers, and each against the best MariaDB engine.
{
    echo "# YCSB through the MySQL protocol: $records records of 10 x 280-byte corpus fields, $threads threads, $dist"
    echo
    echo "- machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo); memory $memory (caches $((cache >> 20)) MB$([ "$memory" = capped ] && echo "; each server in a $((cap >> 20)) MB memory cgroup, page cache included"))"
    echo "- corpus: $corpus ($(stat -c %s "$corpus") bytes)"
    echo "- per workload: $([ -n "$ops" ] && echo "$ops operations" || echo "${time_s} s")"
    echo
    awk -F'\t' '
        NR == 1 { next }
        { key = $2; v[$1, key] = $3; if (!(key in seen)) { seen[key] = 1; order[++k] = key }
          if (!($1 in sv)) { sv[$1] = 1; srv[++m] = $1 } }
        END {
            printf "| phase |"; for (j = 1; j <= m; j++) printf " %s |", srv[j]; printf " cairndb / best other |\n"
            printf "|---|"; for (j = 1; j <= m; j++) printf "---:|"; printf "---:|\n"
            for (i = 1; i <= k; i++) {
                key = order[i]; best = 0
                printf "| %s |", (key == "load" ? "load (rows/s)" : key " (ops/s)")
                for (j = 1; j <= m; j++) {
                    x = v[srv[j], key]; printf " %s |", x
                    if (srv[j] != "cairndb" && x + 0 > best) best = x + 0
                }
                c = v["cairndb", key]
                if (best > 0 && c + 0 > 0) printf " %.2fx |\n", c / best; else printf " - |\n"
            }
        }' "$tsv"
    echo
    echo "On disk after the load (settled): the data directory, and the table's own files"
    echo
    awk -F'\t' '{ printf "- %s: %.1f MB, table %.1f MB\n", $1, $2 / 1048576, $3 / 1048576 }' "$out/sizes.tsv" 2>/dev/null
    if [ -f "$out/sizes-after.tsv" ]; then
        echo
        echo "The data directory after the workloads (settled):"
        echo
        awk -F'\t' '{ printf "- %s: %.1f MB\n", $1, $2 / 1048576 }' "$out/sizes-after.tsv"
    fi
} >"$out/results.md"
cat "$out/results.md"
say "results: $out/results.md"
if [ -n "$smoke" ]; then
    # Every phase ran, with operations done and no errors.
    bad=$(awk -F'\t' 'NR > 1 && !($3 + 0 > 0 && $6 == 0) { print $1 " " $2 ": " $3 " ops/s, " $6 " errors " $7 }' "$tsv")
    [ -z "$bad" ] || die "smoke check failed: $bad (outputs in $out)"
    n=$(awk 'END { print NR - 1 }' "$tsv")
    [ "$n" -eq $((1 + $(echo "$workloads" | tr ',' '\n' | wc -l))) ] || die "smoke check: $n phases ran (outputs in $out)"
    say "smoke check passed"
fi
