#!/usr/bin/env bash
# sqllogictest files (SQLite's corpus: select1..5.test, evidence/*.test)
# against `cairndb server` and MariaDB side by side, with the same runner
# (scripts/slt/run.py, engine `mysql`), each server fresh (own temporary
# data directory and free port) and each file on a fresh database.
#
# usage: scripts/slt.sh [--build] [--bin=PATH] [--servers=mariadb,cairndb]
#            [--dir=DIR] [--files="select1.test evidence/in1.test"]
#            [--out=DIR] [--timeout=S] [--min-pass=N] [--keep]
#
# --build builds the release cairndb first and uses it; otherwise --bin, or
# target/release/cairndb. --dir is the corpus directory (default $SLT_DIR,
# else /work/shared/slt, else scripts/slt/corpus, which holds select1.test);
# --files are paths under it (default: select1..5.test and evidence/*.test).
# --timeout is the per-statement limit (30 s). Results go to --out (default
# ${TMPDIR:-/tmp}/slt-DATE): per server SERVER.failures (each failure with
# file:line, SQL, expected vs got), SERVER.jsonl (each record's outcome),
# SERVER.summary.json and SERVER.log (the server's output), and table.md:
#   file | records | MariaDB passed | CairnDB passed |
#   CairnDB passed among MariaDB-passed | lost connections (CairnDB)
# --min-pass=N (the CI smoke check) fails unless CairnDB passed at least N
# records in total with no lost connection. Exits 1 on a failed check or a
# server that does not start, 0 otherwise (failed records alone do not make
# it fail). Servers are always stopped on exit; the data directories are
# removed unless --keep.
#
# The command behind docs/sql.md's table (a debug binary works too, slower):
#   scripts/slt.sh --build --out=/tmp/slt
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

build=0
bin=""
servers="mariadb,cairndb"
dir="${SLT_DIR:-}"
files=""
out=""
timeout=30
min_pass=""
keep=0
for arg in "$@"; do
    case "$arg" in
        --build) build=1 ;;
        --bin=*) bin="${arg#*=}" ;;
        --servers=*) servers="${arg#*=}" ;;
        --dir=*) dir="${arg#*=}" ;;
        --files=*) files="${arg#*=}" ;;
        --out=*) out="${arg#*=}" ;;
        --timeout=*) timeout="${arg#*=}" ;;
        --min-pass=*) min_pass="${arg#*=}" ;;
        --keep) keep=1 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "slt: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done
say() { echo "slt: $*"; }
die() { echo "slt: $*" >&2; exit 1; }
for s in ${servers//,/ }; do
    case "$s" in mariadb | cairndb) ;; *) die "unknown server $s" ;; esac
done

if [ -z "$dir" ]; then
    if [ -f /work/shared/slt/select1.test ]; then
        dir=/work/shared/slt
    else
        dir="$root/scripts/slt/corpus"
    fi
fi
[ -d "$dir" ] || die "no corpus directory $dir"
if [ -z "$files" ]; then
    files=$(cd "$dir" && ls select[1-5].test evidence/*.test 2>/dev/null | tr '\n' ' ')
fi
paths=()
for f in $files; do
    [ -f "$dir/$f" ] || die "no file $dir/$f"
    paths+=("$dir/$f")
done
[ ${#paths[@]} -gt 0 ] || die "no .test files in $dir"

python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL is missing (pip install pymysql)"

if [[ ",$servers," == *,cairndb,* ]]; then
    if [ "$build" = 1 ]; then
        say "building the release cairndb"
        cargo build --release -q -p cairndb-cli || die "cargo build failed"
        bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
    fi
    bin="${bin:-${CARGO_TARGET_DIR:-target}/release/cairndb}"
    [ -x "$bin" ] || die "no cairndb binary at $bin (--build or --bin=PATH)"
fi
mariadbd_bin=""
if [[ ",$servers," == *,mariadb,* ]]; then
    mariadbd_bin=$(command -v mariadbd || command -v mysqld ||
        { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } || true)
    [ -n "$mariadbd_bin" ] && command -v mariadb-install-db >/dev/null ||
        die "MariaDB is not installed (apt-get install mariadb-server)"
fi

out="${out:-${TMPDIR:-/tmp}/slt-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/slt-data.XXXXXX")"
if [ -n "$bin" ]; then
    # A private copy, so a rebuild during the run changes nothing.
    mkdir -p "$work/bin"
    cp "$bin" "$work/bin/cairndb" || die "cannot copy $bin"
    bin="$work/bin/cairndb"
fi
say "files from $dir, results in $out"

server_pid=""
port=""
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null
    local i
    for ((i = 0; i < 600; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        say "server $server_pid did not stop in 60 s; killed"
        kill -KILL "$server_pid" 2>/dev/null
    fi
    wait "$server_pid" 2>/dev/null
    server_pid=""
}
cleanup() {
    stop_server
    if [ "$keep" = 1 ]; then
        say "data directories kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ready() { # NAME LOG: waits until the server answers SELECT 1
    local name="$1" log="$2" i
    for ((i = 0; i < 1200; i++)); do
        if python3 - "$port" <<'EOF' >/dev/null 2>&1; then
import sys, pymysql
pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", password="", connect_timeout=2).close()
EOF
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "slt: $name exited at start ($log):" >&2
            tail -5 "$log" >&2
            server_pid=""
            return 1
        fi
        sleep 0.1
    done
    echo "slt: $name did not answer within 120 s ($log)" >&2
    return 1
}

start_server() { # NAME: sets server_pid and port
    local name="$1" d="$work/$1" log="$out/$1.log"
    mkdir -p "$d"
    port=$(free_port) || return 1
    : >"$log"
    if [ "$name" = cairndb ]; then
        "$bin" server --datadir="$d/data" --port="$port" --bind=127.0.0.1 >>"$log" 2>&1 &
        server_pid=$!
        wait_ready "$name" "$log"
        return
    fi
    local me
    me=$(id -un)
    mariadb-install-db --no-defaults --datadir="$d/data" --user="$me" \
        --auth-root-authentication-method=normal --skip-test-db >"$d/install-db.log" 2>&1 ||
        { echo "slt: mariadb-install-db failed ($d/install-db.log)" >&2; return 1; }
    "$mariadbd_bin" --no-defaults --datadir="$d/data" --socket="$d/mysqld.sock" --port="$port" \
        --bind-address=127.0.0.1 --user="$me" --pid-file="$d/mysqld.pid" \
        --log-error="$log" --skip-log-bin --innodb-buffer-pool-size=128M \
        --innodb-flush-log-at-trx-commit=2 >>"$log" 2>&1 &
    server_pid=$!
    local i
    for ((i = 0; i < 1200; i++)); do
        [ -S "$d/mysqld.sock" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    mariadb --socket="$d/mysqld.sock" -uroot -e "
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
        GRANT ALL ON *.* TO 'root'@'127.0.0.1';" >>"$log" 2>&1 ||
        { echo "slt: mariadb did not start ($log)" >&2; tail -5 "$log" >&2; return 1; }
    wait_ready "$name" "$log"
}

status=0
for s in ${servers//,/ }; do
    say "$s: starting a fresh server"
    start_server "$s" || die "$s did not start"
    say "$s: port $port, running ${#paths[@]} files"
    python3 "$root/scripts/slt/run.py" --port="$port" --label="$s" --timeout="$timeout" \
        --base="$dir" --failures="$out/$s.failures" --results="$out/$s.jsonl" \
        --summary="$out/$s.summary.json" "${paths[@]}" || status=1
    stop_server
done

# The table: one row per file, then the total.
python3 - "$out" "$servers" "$root/scripts/slt/run.py" <<'EOF' >"$out/table.md" || status=1
import json, os, subprocess, sys
out, servers, runner = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
summ = {}
for s in servers:
    with open(os.path.join(out, s + ".summary.json")) as f:
        summ[s] = {d["name"]: d for d in json.load(f)["files"]}
both = {}
if "mariadb" in servers and "cairndb" in servers:
    r = subprocess.run([sys.executable, runner, "--compare", os.path.join(out, "mariadb.jsonl"),
                        os.path.join(out, "cairndb.jsonl")], capture_output=True, text=True, check=True)
    both = json.loads(r.stdout)
names = list(summ[servers[0]].keys())
head = ["file", "records"]
if "mariadb" in servers:
    head.append("MariaDB passed")
if "cairndb" in servers:
    head.append("CairnDB passed")
if both:
    head.append("CairnDB passed among MariaDB-passed")
if "cairndb" in servers:
    head += ["lost connections", "timeouts"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
tot = [0] * (len(head) - 1)
for n in names:
    d0 = summ[servers[0]][n]
    row = [d0["records"]]
    if "mariadb" in servers:
        row.append(summ["mariadb"][n]["passed"])
    if "cairndb" in servers:
        row.append(summ["cairndb"][n]["passed"])
    if both:
        b = both.get(n, {"first_passed": 0, "both_passed": 0})
        row.append((b["both_passed"], b["first_passed"]))
    if "cairndb" in servers:
        row += [summ["cairndb"][n]["lost"], summ["cairndb"][n]["timeouts"]]
    for i, v in enumerate(row):
        if isinstance(v, tuple):
            tot[i] = (tot[i] or (0, 0))
            tot[i] = (tot[i][0] + v[0], tot[i][1] + v[1])
        else:
            tot[i] += v
    fmt = lambda v: f"{v[0]} / {v[1]}" if isinstance(v, tuple) else str(v)
    print("| " + " | ".join([n] + [fmt(v) for v in row]) + " |")
fmt = lambda v: f"{v[0]} / {v[1]}" if isinstance(v, tuple) else str(v)
print("| " + " | ".join(["**total**"] + [f"**{fmt(v)}**" for v in tot]) + " |")
EOF
cat "$out/table.md"

if [ -n "$min_pass" ]; then
    read -r passed lost < <(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print(t["passed"], t["lost"])' "$out/cairndb.summary.json") || die "no CairnDB summary"
    if [ "$passed" -lt "$min_pass" ] || [ "$lost" -ne 0 ]; then
        echo "slt: FAIL: CairnDB passed $passed records (at least $min_pass expected), $lost lost connections (0 expected)" >&2
        status=1
    else
        say "PASS: CairnDB passed $passed records (at least $min_pass), no lost connection"
    fi
fi
exit $status
