#!/usr/bin/env bash
# Prometheus' mysqld_exporter (v0.16.0, unmodified) scraping `cairndb
# server` (docs/security.md, "Monitoring").
#
# Builds the exporter with `go build` from the module in scripts/exporter
# (go.mod pins it; the binary goes to ~/.cache/cairndb-exporter, and Go's
# module and build caches make later builds take a few seconds), starts a
# server on a free port with a temporary data directory and its general
# log on, creates the account the exporter's documentation asks for
# (PROCESS, REPLICATION CLIENT, SELECT), runs the exporter against it with
# its default collectors and reads /metrics once. Fails unless:
#   * mysql_up is 1 and every collector reports success (no "Error from
#     scraper" in the exporter's log);
#   * mysql_global_status_* and mysql_global_variables_* series are there,
#     among them mysql_global_status_uptime,
#     mysql_global_status_threads_connected, mysql_global_status_questions
#     and mysql_global_status_commands_total.
# The queries the exporter sent (from the general log) are printed with
# --verbose, and on a failure.
#
# usage: scripts/exporter-test.sh [--bin=PATH] [--exporter=PATH] [--keep] [--verbose]
# --bin (or the CAIRNDB variable): the cairndb binary (default
# target/debug/cairndb, built if missing); --exporter: an exporter binary
# instead of building one. Without go (and without --exporter) it says so
# and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

bin="${CAIRNDB:-}"
exporter=""
keep=0
verbose=0
for arg in "$@"; do
    case "$arg" in
        --bin=*) bin="${arg#*=}" ;;
        --exporter=*) exporter="${arg#*=}" ;;
        --keep) keep=1 ;;
        --verbose) verbose=1 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "exporter-test: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done

say() { echo "exporter-test: $*"; }
die() { echo "exporter-test: FAIL: $*" >&2; exit 1; }

[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
if [ -z "$exporter" ]; then
    if ! command -v go >/dev/null 2>&1; then
        say "SKIP: go is not installed (the exporter is built with go build)"
        exit 0
    fi
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/cairndb-exporter"
    mkdir -p "$cache" || die "cannot make $cache"
    exporter="$cache/mysqld_exporter"
    t0=$(date +%s)
    # The go.mod's toolchain line is not fetched: the installed go builds.
    (cd scripts/exporter && GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" \
        go build -o "$exporter" github.com/prometheus/mysqld_exporter) ||
        die "go build of mysqld_exporter failed"
    say "exporter built in $(( $(date +%s) - t0 )) s"
fi
[ -x "$exporter" ] || die "no exporter binary at $exporter"
command -v mariadb >/dev/null 2>&1 || die "the mariadb client is needed (to create the account)"

if [ -z "$bin" ]; then
    bin="${CARGO_TARGET_DIR:-target}/debug/cairndb"
    [ -x "$bin" ] || cargo build -q -p cairndb-cli || die "cargo build failed"
fi
[ -x "$bin" ] || die "no cairndb binary at $bin"

work="$(mktemp -d /tmp/cairndb-exporter.XXXXXX)"
server_pid=""
exporter_pid=""
failed=1
cleanup() {
    [ -n "$exporter_pid" ] && kill "$exporter_pid" 2>/dev/null && wait "$exporter_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    if [ "$keep" = 1 ] || [ "$failed" = 1 ]; then
        say "work directory kept: $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The server: port 0, the address read from its first line.
mkdir -p "$work/data"
"$bin" server --datadir="$work/data" --port=0 --bind=127.0.0.1 --worker-threads=2 \
    --general-log=on --general-log-file="$work/general.log" \
    >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
port=""
for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$work/server.out" | head -1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
done
[ -n "$port" ] || { cat "$work/server.err" >&2; die "the server did not start"; }
say "cairndb server on 127.0.0.1:$port"

# The account of the exporter's README (its MAX_USER_CONNECTIONS 3 is
# left out: per-account connection limits are not supported).
pw="exporter-$$-pw"
mariadb -h127.0.0.1 -P"$port" -uroot --skip-ssl -e "
    CREATE USER 'exporter'@'localhost' IDENTIFIED BY '$pw';
    GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'exporter'@'localhost';" ||
    die "creating the exporter account failed"

web_port=$(free_port) || die "no free port"
MYSQLD_EXPORTER_PASSWORD="$pw" "$exporter" \
    --mysqld.address="127.0.0.1:$port" --mysqld.username=exporter \
    --web.listen-address="127.0.0.1:$web_port" >"$work/exporter.log" 2>&1 &
exporter_pid=$!
metrics="$work/metrics.txt"
got=""
for _ in $(seq 1 100); do
    if python3 - "http://127.0.0.1:$web_port/metrics" "$metrics" 2>/dev/null <<'PY'; then
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    open(sys.argv[2], "wb").write(r.read())
PY
        got=1
        break
    fi
    kill -0 "$exporter_pid" 2>/dev/null || break
    sleep 0.1
done

show_queries() {
    say "queries the exporter sent (general log):"
    awk -F'\t' '$2 ~ / Query$/ { print "    " $3 }' "$work/general.log" | sort -u | head -60
}
[ "$verbose" = 1 ] && show_queries

problems=()
if [ -z "$got" ]; then
    problems+=("no answer from the exporter's /metrics")
else
    grep -qx 'mysql_up 1' "$metrics" || problems+=("mysql_up is not 1: $(grep '^mysql_up' "$metrics")")
    for series in mysql_global_status_uptime mysql_global_status_threads_connected \
        mysql_global_status_questions mysql_global_status_commands_total; do
        grep -Eq "^$series(\{| )" "$metrics" || problems+=("no $series series")
    done
    n_status=$(grep -c '^mysql_global_status_' "$metrics")
    n_vars=$(grep -c '^mysql_global_variables_' "$metrics")
    [ "$n_status" -gt 0 ] || problems+=("no mysql_global_status_* series")
    [ "$n_vars" -gt 0 ] || problems+=("no mysql_global_variables_* series")
    # Every collector that ran succeeded.
    while read -r line; do
        problems+=("collector failed: $line")
    done < <(grep '^mysql_exporter_collector_success' "$metrics" | grep -v ' 1$')
    grep -q '^mysql_exporter_collector_success' "$metrics" ||
        problems+=("no mysql_exporter_collector_success series")
    say "$n_status mysql_global_status_* and $n_vars mysql_global_variables_* series"
fi
while read -r line; do
    problems+=("exporter: $line")
done < <(grep -E 'level=(ERROR|WARN)' "$work/exporter.log" | grep -v 'msg="Listening on"')

if [ ${#problems[@]} -gt 0 ]; then
    for p in "${problems[@]}"; do echo "exporter-test: FAIL: $p" >&2; done
    [ "$verbose" = 1 ] || show_queries
    exit 1
fi
failed=0
say "PASS: mysql_up 1, every default collector succeeded"
