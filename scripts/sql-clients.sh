#!/usr/bin/env bash
# Real MySQL clients, unmodified, against `cairndb server` (docs/sql.md,
# "Clients tested"). Each suite starts a fresh server on a free port in a
# temporary directory, and the server is always killed on exit.
#
#   sysbench  every script in /usr/share/sysbench, --db-ps-mode=auto and
#             disable: prepare, run, then a clean shutdown (SIGTERM),
#             `cairndb sql-check` (0 problems), a restart, cleanup
#   cli       scripts/sql/cli-smoke.sql through the mariadb client, output
#             compared with scripts/sql/cli-smoke.expected (MySQL 8.0's)
#   pymysql   scripts/sql/pymysql_smoke.py
#   tls       the mariadb client and PyMySQL over TLS (the certificates the
#             server makes in its data directory, verified with its ca.pem),
#             Ssl_cipher/Ssl_version, and --require-secure-transport
#             refusing a plain login with ERR 3159
#   jdbc      scripts/sql/JdbcSmoke.java with MySQL Connector/J (fetched
#             from Maven Central by mvn into ~/.cache/cairndb-jdbc, SHA-256
#             checked)
#   crash     SIGKILL loop: sysbench oltp_write_only plus
#             scripts/sql/crash_writer.py, kill, restart, sql-check (before
#             the restart in odd cycles, after a clean stop in even ones),
#             every acknowledged commit present and whole
#
# usage: scripts/sql-clients.sh [--quick] [--time T] [--cycles N]
#                               [--only SUITE[,SUITE...]] [--keep] [--bin PATH]
#
# --quick: 3 s sysbench runs and 5 crash cycles (the CI setting; default
# 10 s and 10 cycles). --bin uses that binary instead of building the
# release one. --keep keeps the work directory (kept anyway on a failure).
# Prints PASS/FAIL/KNOWN per test and a summary; exits 1 on any failure.
# KNOWN marks a difference from MySQL already reported against the SQL layer:
# the test still checks MySQL's behaviour and reports it, without failing.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

quick=0
time_s=""
cycles=""
only="sysbench,cli,pymysql,tls,jdbc,crash"
keep=0
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --time) time_s="$2"; shift 2 ;;
        --cycles) cycles="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --bin) bin="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "sql-clients: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ "$quick" = 1 ]; then
    time_s="${time_s:-3}"
    cycles="${cycles:-5}"
else
    time_s="${time_s:-10}"
    cycles="${cycles:-10}"
fi
for s in ${only//,/ }; do
    case "$s" in
        sysbench | cli | pymysql | tls | jdbc | crash) ;;
        *) echo "sql-clients: unknown suite $s" >&2; exit 2 ;;
    esac
done

if [ -z "$bin" ]; then
    cargo build --release -q -p cairndb-cli || exit 1
    bin="${CARGO_TARGET_DIR:-target}/release/cairndb"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/cairndb-clients.XXXXXX")"
# A private copy of the binary, so a rebuild during the run changes nothing.
cp "$bin" "$work/cairndb" || exit 1
bin="$work/cairndb"
echo "sql-clients: suites $only, sysbench ${time_s}s runs, $cycles crash cycles, in $work"

results=()
npass=0
nfail=0
nknown=0
record() { # STATUS NAME [DETAIL]
    local line="$1 $2${3:+ ($3)}"
    results+=("$line")
    case "$1" in
        PASS) npass=$((npass + 1)) ;;
        KNOWN) npass=$((npass + 1)); nknown=$((nknown + 1)) ;;
        *) nfail=$((nfail + 1)) ;;
    esac
    echo "sql-clients: $line"
}

# --- the server -------------------------------------------------------------

server_pid=""
port=""
bg_pids=()
start_server() { # DATADIR LOG [SERVER ARGS...]: sets server_pid and port
    local dir="$1" log="$2"
    shift 2
    local before
    touch "$log"
    before=$(wc -l <"$log")
    "$bin" server --datadir="$dir" --port=0 "$@" >>"$log" 2>&1 &
    server_pid=$!
    local i addr
    for ((i = 0; i < 600; i++)); do
        addr=$(tail -n +"$((before + 1))" "$log" | sed -n 's/^cairndb server listening on //p' | head -1)
        if [ -n "$addr" ]; then
            port="${addr##*:}"
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            wait "$server_pid"
            echo "sql-clients: the server exited with status $? at start ($log):" >&2
            tail -5 "$log" >&2
            server_pid=""
            return 1
        fi
        sleep 0.05
    done
    echo "sql-clients: the server did not listen within 30 s ($log)" >&2
    kill_server
    return 1
}

# SIGTERM, then the server must exit 0 within 60 s, having said so.
stop_server() {
    [ -n "$server_pid" ] || return 1
    kill -TERM "$server_pid" 2>/dev/null
    local i
    for ((i = 0; i < 600; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        echo "sql-clients: the server did not exit within 60 s of SIGTERM" >&2
        kill_server
        return 1
    fi
    wait "$server_pid"
    local rc=$?
    server_pid=""
    if [ "$rc" -ne 0 ]; then
        echo "sql-clients: the server exited with status $rc after SIGTERM" >&2
        return 1
    fi
}

kill_server() {
    if [ -n "$server_pid" ]; then
        kill -KILL "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=""
    fi
}

cleanup() {
    kill_server
    local p
    for p in "${bg_pids[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    if [ "$keep" = 0 ] && [ "$nfail" = 0 ]; then
        rm -rf "$work"
    else
        echo "sql-clients: work directory kept: $work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# `cairndb sql-check` on a stopped server's datadir; 0 problems or it fails.
# Sets check_line to its summary line.
check_line=""
sql_check() { # DATADIR LOG
    "$bin" sql-check --datadir="$1" >"$2" 2>&1
    local rc=$?
    check_line=$(grep '^sql-check:' "$2" | tail -1)
    if [ "$rc" -ne 0 ] || ! [[ "$check_line" =~ ,\ 0\ problems$ ]]; then
        echo "sql-clients: sql-check failed (status $rc, $2):" >&2
        head -20 "$2" >&2
        return 1
    fi
}

mysql_cli() {
    mariadb -h127.0.0.1 -P"$port" -uroot --batch "$@"
}

need() { # NAME COMMAND...: the client is installed, else the suite fails
    local name="$1" c
    shift
    for c in "$@"; do
        if ! command -v "$c" >/dev/null 2>&1; then
            record FAIL "$name" "\`$c\` not installed (.ci/run installs it)"
            return 1
        fi
    done
}

# --- sysbench ---------------------------------------------------------------

sb_scripts=(oltp_read_only oltp_read_write oltp_write_only oltp_point_select oltp_insert
    oltp_delete oltp_update_index oltp_update_non_index select_random_points
    select_random_ranges bulk_insert)

sb_opts() { # SCRIPT MODE: sysbench options for the current port
    local s="$1" mode="$2"
    local o=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root
        --mysql-password= --mysql-db=sbtest --db-ps-mode="$mode" --threads=8)
    case "$s" in
        # These two only work on one table (they assert --tables=1).
        select_random_*) o+=(--tables=1 --table-size=10000) ;;
        # One table per thread, rows as fast as they go; no size option.
        bulk_insert) ;;
        *) o+=(--tables=2 --table-size=10000) ;;
    esac
    printf '%s\n' "${o[@]}"
}

suite_sysbench() {
    need sysbench sysbench mariadb || return
    local dir="$work/sysbench" s mode
    mkdir -p "$dir"
    # Every script sysbench ships is in the list (oltp_common is a library).
    local f
    for f in /usr/share/sysbench/*.lua; do
        s=$(basename "$f" .lua)
        if [ "$s" != oltp_common ] && [[ " ${sb_scripts[*]} " != *" $s "* ]]; then
            record FAIL "sysbench $s" "a script of sysbench's that this suite does not run"
        fi
    done
    local log="$dir/server.log" db="$dir/db"
    if ! start_server "$db" "$log"; then
        record FAIL "sysbench" "the server did not start"
        return
    fi
    mysql_cli -e "CREATE DATABASE sbtest" || { record FAIL sysbench "CREATE DATABASE sbtest"; return; }
    for s in "${sb_scripts[@]}"; do
        for mode in auto disable; do
            local name="sysbench $s ps-mode=$mode" out="$dir/$s-$mode"
            local -a opts
            mapfile -t opts < <(sb_opts "$s" "$mode")
            if ! sysbench "$s" "${opts[@]}" prepare >"$out.prepare" 2>&1; then
                record FAIL "$name" "prepare failed: $(grep -m1 -i 'fatal\|error' "$out.prepare")"
                [ -n "$server_pid" ] || return
                sysbench "$s" "${opts[@]}" cleanup >/dev/null 2>&1
                continue
            fi
            sysbench "$s" "${opts[@]}" --time="$time_s" --report-interval=0 run >"$out.run" 2>&1
            local rc=$?
            local events ignored reconnects why=""
            events=$(sed -n 's/^ *total number of events: *\([0-9]*\).*/\1/p' "$out.run")
            ignored=$(sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p' "$out.run")
            reconnects=$(sed -n 's/^ *reconnects: *\([0-9]*\).*/\1/p' "$out.run")
            if [ "$rc" -ne 0 ]; then
                why="run exited with status $rc"
            elif grep -q 'FATAL' "$out.run"; then
                why="FATAL in the output"
            elif [ -z "$events" ] || [ "$events" -eq 0 ]; then
                why="no events"
            elif [ "${reconnects:-0}" -ne 0 ]; then
                why="$reconnects reconnects"
            fi
            if [ -n "$why" ]; then
                why="$why: $(grep -m1 -i 'fatal\|error' "$out.run")"
            fi
            # A clean shutdown, the offline check, a restart on the same data.
            if ! stop_server; then
                why="${why:+$why; }clean shutdown failed"
            elif ! sql_check "$db" "$out.check"; then
                why="${why:+$why; }sql-check: $check_line"
            fi
            if [ -z "$server_pid" ] && ! start_server "$db" "$log"; then
                record FAIL "$name" "${why:+$why; }restart failed"
                return
            fi
            mapfile -t opts < <(sb_opts "$s" "$mode")
            if ! sysbench "$s" "${opts[@]}" cleanup >"$out.cleanup" 2>&1; then
                why="${why:+$why; }cleanup failed"
            fi
            local detail="$events events, ${ignored:-?} ignored errors, ${check_line#sql-check: }"
            if [ -n "$why" ]; then
                record FAIL "$name" "$why; $out.run"
            else
                record PASS "$name" "$detail"
            fi
        done
    done
    local tables
    tables=$(mysql_cli -N -e "SHOW TABLES FROM sbtest" | tr '\n' ' ')
    [ -z "$tables" ] || record FAIL "sysbench cleanup" "tables left: $tables"
    stop_server || record FAIL "sysbench" "clean shutdown at the end"
}

# --- the mariadb command-line client ----------------------------------------

# MySQL's syntax-error messages name its own parser's position ("near ...");
# only the code and SQLSTATE of a 1064 are compared.
normalize_1064() {
    sed -E 's/^(ERROR 1064 \(42000\) at line [0-9]+:).*/\1 .../'
}

suite_cli() {
    need "mariadb cli" mariadb stdbuf || return
    local dir="$work/cli"
    mkdir -p "$dir"
    if ! start_server "$dir/db" "$dir/server.log"; then
        record FAIL "mariadb cli" "the server did not start"
        return
    fi
    # stdbuf: errors (stderr) stay in order with the echoed statements.
    stdbuf -o0 mariadb -h127.0.0.1 -P"$port" -uroot --force -v \
        <scripts/sql/cli-smoke.sql >"$dir/actual" 2>&1
    normalize_1064 <scripts/sql/cli-smoke.expected >"$dir/expected.n"
    normalize_1064 <"$dir/actual" >"$dir/actual.n"
    # Hunks only, without the file names, to compare with the known ones.
    diff -U2 "$dir/expected.n" "$dir/actual.n" | tail -n +3 >"$dir/diff"
    local why=""
    stop_server || why="clean shutdown failed"
    sql_check "$dir/db" "$dir/check" || why="${why:+$why; }sql-check: $check_line"
    if [ ! -s "$dir/diff" ]; then
        if [ -s scripts/sql/cli-smoke.known.diff ]; then
            why="${why:+$why; }output now matches MySQL: delete scripts/sql/cli-smoke.known.diff"
        fi
        if [ -n "$why" ]; then record FAIL "mariadb cli" "$why"; else record PASS "mariadb cli"; fi
    elif cmp -s "$dir/diff" scripts/sql/cli-smoke.known.diff && [ -z "$why" ]; then
        record KNOWN "mariadb cli" "differs from MySQL exactly as in scripts/sql/cli-smoke.known.diff"
    else
        echo "--- MySQL 8.0 (cli-smoke.expected)  +++ cairndb ($dir/actual)"
        if [ -s scripts/sql/cli-smoke.known.diff ]; then
            echo "(the known differences are in scripts/sql/cli-smoke.known.diff)"
        fi
        head -150 "$dir/diff"
        record FAIL "mariadb cli" "${why:+$why; }output differs from cli-smoke.expected (diff above, $dir/diff)"
    fi
}

# --- PyMySQL and Connector/J --------------------------------------------------

# Runs a check program's output through: FAIL lines fail the suite; KNOWN
# and FIXED lines are listed in the summary.
report_checks() { # NAME OUTPUT RC
    local name="$1" out="$2" rc="$3" summary known
    summary=$(grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
    known=$(sed -n 's/^\(KNOWN\|FIXED\) \([a-z0-9_]*\).*/\1 \2/p' "$out" | tr '\n' ',' | sed 's/,$//; s/,/, /g')
    if [ "$rc" -eq 0 ] && [ -n "$summary" ] && ! grep -q '^FIXED' "$out"; then
        if [ -n "$known" ]; then
            record KNOWN "$name" "${summary#*: }; $known"
        else
            record PASS "$name" "${summary#*: }"
        fi
    else
        record FAIL "$name" "${summary:-no summary, status $rc}${known:+; $known}; $out"
    fi
}

pick_python() {
    local py
    for py in python3 /usr/bin/python3 /usr/local/bin/python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import pymysql' 2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

suite_pymysql() {
    local dir="$work/pymysql" py
    mkdir -p "$dir"
    if ! py=$(pick_python); then
        record FAIL "pymysql" "no python3 with PyMySQL (.ci/run installs python3-pymysql)"
        return
    fi
    if ! start_server "$dir/db" "$dir/server.log"; then
        record FAIL "pymysql" "the server did not start"
        return
    fi
    "$py" scripts/sql/pymysql_smoke.py --port "$port" >"$dir/out" 2>&1
    local rc=$?
    sed 's/^/  /' "$dir/out" | grep -v '^  PASS '
    stop_server || { record FAIL "pymysql" "clean shutdown failed"; return; }
    sql_check "$dir/db" "$dir/check" || { record FAIL "pymysql" "sql-check: $check_line"; return; }
    report_checks "pymysql" "$dir/out" "$rc"
}

# --- TLS ----------------------------------------------------------------------

TLS_PY='
import sys, pymysql
port, ca = int(sys.argv[1]), sys.argv[2]
# With the CA: verified. Without (check_hostname off; an empty ssl dict
# would mean no TLS at all to PyMySQL): encrypted, not verified.
for ssl in ({"ca": ca}, {"check_hostname": False}):
    c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", ssl=ssl)
    cur = c.cursor()
    cur.execute("SHOW STATUS LIKE %s", ("Ssl_version",))
    v = cur.fetchall()[0][1]
    assert v.startswith("TLSv1."), v
    cur.execute("SELECT 1")
    assert cur.fetchall() == ((1,),)
    c.close()
print("pymysql tls ok")
'

suite_tls() {
    need "tls" mariadb || return
    local dir="$work/tls" py why=""
    mkdir -p "$dir"
    if ! start_server "$dir/db" "$dir/server.log" --require-secure-transport; then
        record FAIL "tls" "the server did not start"
        return
    fi
    local ca="$dir/db/ca.pem"
    [ -f "$ca" ] && [ "$(stat -c %a "$dir/db/server-key.pem")" = 600 ] ||
        why="no ca.pem, or server-key.pem not mode 600"
    # Verified against the generated CA: the cipher and version are shown.
    mariadb -h127.0.0.1 -P"$port" -uroot --batch --skip-column-names \
        --ssl-ca="$ca" --ssl-verify-server-cert \
        -e 'SHOW STATUS LIKE "Ssl%"; SELECT 1' >"$dir/verified" 2>&1 ||
        why="${why:+$why; }mariadb --ssl-verify-server-cert failed ($dir/verified)"
    grep -Eq '^Ssl_cipher[[:space:]]+[A-Z0-9_-]+$' "$dir/verified" &&
        grep -Eq '^Ssl_version[[:space:]]+TLSv1\.[23]$' "$dir/verified" ||
        why="${why:+$why; }no Ssl_cipher/Ssl_version over TLS ($dir/verified)"
    # Plain TCP is refused.
    mariadb -h127.0.0.1 -P"$port" -uroot --skip-ssl -e 'SELECT 1' >"$dir/plain" 2>&1 &&
        why="${why:+$why; }a plain login was accepted"
    grep -q 'ERROR 3159' "$dir/plain" ||
        why="${why:+$why; }no ERROR 3159 for a plain login ($dir/plain)"
    if py=$(pick_python); then
        "$py" -c "$TLS_PY" "$port" "$ca" >"$dir/pymysql" 2>&1 ||
            why="${why:+$why; }PyMySQL over TLS failed ($dir/pymysql)"
    else
        why="${why:+$why; }no python3 with PyMySQL"
    fi
    stop_server || why="${why:+$why; }clean shutdown failed"
    # A restart reuses the certificates.
    local before after
    before=$(sha256sum <"$ca")
    if start_server "$dir/db" "$dir/server.log"; then
        after=$(sha256sum <"$ca")
        [ "$before" = "$after" ] || why="${why:+$why; }ca.pem changed on restart"
        mariadb -h127.0.0.1 -P"$port" -uroot --batch --ssl-ca="$ca" \
            --ssl-verify-server-cert -e 'SELECT 1' >/dev/null 2>&1 ||
            why="${why:+$why; }TLS after a restart failed"
        stop_server || why="${why:+$why; }clean shutdown failed"
    else
        why="${why:+$why; }the server did not restart"
    fi
    if [ -n "$why" ]; then record FAIL "tls" "$why"; else record PASS "tls"; fi
}

jdbc_version=8.4.0
jdbc_sha256=d77962877d010777cff997015da90ee689f0f4bb76848340e1488f2b83332af5

# MySQL Connector/J from Maven Central through mvn (the registry's own
# client), cached in ~/.cache/cairndb-jdbc and checked against its SHA-256.
fetch_connector_j() {
    local cache="${XDG_CACHE_HOME:-$HOME/.cache}/cairndb-jdbc"
    local jar="$cache/mysql-connector-j-$jdbc_version.jar"
    if [ -f "$jar" ] && echo "$jdbc_sha256  $jar" | sha256sum -c --status; then
        echo "$jar"
        return 0
    fi
    mkdir -p "$cache"
    command -v mvn >/dev/null 2>&1 || { echo "sql-clients: mvn not installed" >&2; return 1; }
    if ! mvn -q -B -Dmaven.repo.local="$cache/m2" dependency:get \
        -Dartifact="com.mysql:mysql-connector-j:$jdbc_version" -Dtransitive=false >"$cache/mvn.log" 2>&1; then
        echo "sql-clients: mvn dependency:get failed ($cache/mvn.log):" >&2
        tail -5 "$cache/mvn.log" >&2
        return 1
    fi
    local got="$cache/m2/com/mysql/mysql-connector-j/$jdbc_version/mysql-connector-j-$jdbc_version.jar"
    if ! echo "$jdbc_sha256  $got" | sha256sum -c --status; then
        echo "sql-clients: $got does not have the expected SHA-256 $jdbc_sha256" >&2
        return 1
    fi
    cp "$got" "$jar.tmp" && mv "$jar.tmp" "$jar" && echo "$jar"
}

suite_jdbc() {
    need "jdbc" java javac || return
    local dir="$work/jdbc" jar
    mkdir -p "$dir/classes"
    if ! jar=$(fetch_connector_j); then
        record FAIL "jdbc" "could not fetch MySQL Connector/J $jdbc_version"
        return
    fi
    if ! javac -d "$dir/classes" -cp "$jar" scripts/sql/JdbcSmoke.java >"$dir/javac.log" 2>&1; then
        cat "$dir/javac.log"
        record FAIL "jdbc" "javac failed"
        return
    fi
    if ! start_server "$dir/db" "$dir/server.log"; then
        record FAIL "jdbc" "the server did not start"
        return
    fi
    java -Duser.timezone=UTC -cp "$jar:$dir/classes" JdbcSmoke "$port" >"$dir/out" 2>&1
    local rc=$?
    sed 's/^/  /' "$dir/out" | grep -v '^  PASS '
    stop_server || { record FAIL "jdbc" "clean shutdown failed"; return; }
    sql_check "$dir/db" "$dir/check" || { record FAIL "jdbc" "sql-check: $check_line"; return; }
    report_checks "jdbc (Connector/J $jdbc_version)" "$dir/out" "$rc"
}

# --- crash ------------------------------------------------------------------

suite_crash() {
    need crash sysbench mariadb || return
    local dir="$work/crash" py
    mkdir -p "$dir"
    if ! py=$(pick_python); then
        record FAIL crash "no python3 with PyMySQL"
        return
    fi
    local db="$dir/db" log="$dir/server.log" acks="$dir/acks"
    : >"$acks"
    local srv=(--flush-log-at-trx-commit=1)
    if ! start_server "$db" "$log" "${srv[@]}"; then
        record FAIL crash "the server did not start"
        return
    fi
    local -a opts
    mysql_cli -e "CREATE DATABASE sbtest"
    mapfile -t opts < <(sb_opts oltp_write_only auto)
    if ! sysbench oltp_write_only "${opts[@]}" prepare >"$dir/prepare" 2>&1; then
        record FAIL crash "sysbench prepare failed ($dir/prepare)"
        return
    fi
    local c ok=0 why="" counts
    for ((c = 1; c <= cycles; c++)); do
        local secs=$((RANDOM % 5 + 2))
        "$py" scripts/sql/crash_writer.py --port "$port" --acks "$acks" write >"$dir/writer.$c" 2>&1 &
        local wpid=$!
        mapfile -t opts < <(sb_opts oltp_write_only auto)
        sysbench oltp_write_only "${opts[@]}" --time=$((secs + 30)) --report-interval=0 run \
            >"$dir/sysbench.$c" 2>&1 &
        local spid=$!
        bg_pids=("$wpid" "$spid")
        sleep "$secs"
        kill_server
        # Both clients see the connection drop and stop by themselves.
        local p i
        for p in "$wpid" "$spid"; do
            for ((i = 0; i < 100; i++)); do
                kill -0 "$p" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$p" 2>/dev/null
            wait "$p" 2>/dev/null
        done
        bg_pids=()
        why=""
        # sysbench ran until the kill, and its only errors are the lost
        # connection (2013, 2006) and the retried 1213/1205.
        local errs
        errs=$(sed -n 's/.*returned error \([0-9]*\).*/\1/p' "$dir/sysbench.$c" |
            grep -v -x -e 2013 -e 2006 -e 1213 -e 1205 | sort -u | tr '\n' ' ')
        if ! grep -q 'Threads started!' "$dir/sysbench.$c"; then
            why="sysbench did not start ($dir/sysbench.$c)"
        elif [ -n "$errs" ]; then
            why="sysbench errors $errs($dir/sysbench.$c)"
        fi
        # Odd cycles: sql-check recovers the killed database, then the
        # server starts. Even cycles: the server recovers it, the checks
        # below run, and sql-check runs after a clean shutdown.
        if [ $((c % 2)) = 1 ] && ! sql_check "$db" "$dir/check.$c"; then
            why="${why:+$why; }sql-check: $check_line"
        fi
        if ! start_server "$db" "$log" "${srv[@]}"; then
            record FAIL "crash cycle $c" "${why:+$why; }restart failed"
            return
        fi
        if ! "$py" scripts/sql/crash_writer.py --port "$port" --acks "$acks" verify >"$dir/verify.$c" 2>&1; then
            why="${why:+$why; }$(head -3 "$dir/verify.$c" | tr '\n' ' ')"
        fi
        # oltp_write_only deletes and re-inserts a row in one transaction:
        # a table that lost or gained rows saw half a transaction.
        counts=$(mysql_cli -N -e "SELECT COUNT(*) FROM sbtest.sbtest1; SELECT COUNT(*) FROM sbtest.sbtest2" 2>&1 | tr '\n' ' ')
        if [ "$counts" != "10000 10000 " ]; then
            why="${why:+$why; }sbtest row counts after the crash: $counts"
        fi
        if [ $((c % 2)) = 0 ]; then
            if ! stop_server; then
                why="${why:+$why; }clean shutdown failed"
            elif ! sql_check "$db" "$dir/check.$c"; then
                why="${why:+$why; }sql-check: $check_line"
            fi
            if ! start_server "$db" "$log" "${srv[@]}"; then
                record FAIL "crash cycle $c" "${why:+$why; }restart failed"
                return
            fi
        fi
        local line
        line="after ${secs}s: $(sed -n 's/^crash_writer: //p' "$dir/writer.$c" | head -1); $(head -1 "$dir/verify.$c" | sed 's/^crash_writer verify: //'); ${check_line#sql-check: }"
        if [ -n "$why" ]; then
            record FAIL "crash cycle $c" "$why; $line"
        else
            ok=$((ok + 1))
            echo "sql-clients: crash cycle $c: $line"
        fi
    done
    stop_server || { record FAIL crash "clean shutdown at the end"; return; }
    if sql_check "$db" "$dir/check.end"; then
        record PASS "crash" "$ok of $cycles SIGKILL cycles clean, $(wc -l <"$acks") acknowledged commits all present; ${check_line#sql-check: }"
    else
        record FAIL crash "final sql-check: $check_line"
    fi
}

# --- main ---------------------------------------------------------------------

start_all=$(date +%s)
for s in ${only//,/ }; do
    t0=$(date +%s)
    echo "sql-clients: === $s ==="
    "suite_$s"
    kill_server
    echo "sql-clients: $s took $(($(date +%s) - t0)) s"
done

echo
echo "sql-clients: summary ($(($(date +%s) - start_all)) s)"
for r in "${results[@]}"; do
    echo "  $r"
done
if [ "$nknown" -gt 0 ]; then
    echo "sql-clients: $nknown with known differences from MySQL (KNOWN: reported, see docs/sql.md)"
fi
echo "sql-clients: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
