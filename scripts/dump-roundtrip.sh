#!/usr/bin/env bash
# A mariadb-dump round trip (docs/sql.md, "Dump and restore"): the schema
# and rows of scripts/dump/fixture.sql are loaded into a fresh `cairndb
# server`, dumped with mariadb-dump, and the dump is restored into a second
# fresh `cairndb server` and into a fresh MariaDB 10.11; then the fixture
# is loaded into MariaDB, dumped there, and restored into a third `cairndb
# server`. Every table's rows (ordered) and every view's must be the same
# on each side of each trip, and SHOW CREATE TABLE the same on both CairnDB
# servers. Fails on the first difference, printing it.
#
#   scripts/dump-roundtrip.sh [--bin=PATH] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
tool=dump-roundtrip
bin=target/release/cairndb
keep=""
for a in "$@"; do
    case "$a" in
    --bin=*) bin="${a#--bin=}" ;;
    --keep) keep=1 ;;
    *) echo "$tool: unknown option $a" >&2; exit 2 ;;
    esac
done
say() { echo "$tool: $*"; }
die() { echo "$tool: $*" >&2; exit 1; }
[ -x "$bin" ] || die "no cairndb binary at $bin (cargo build --release -p cairndb-cli, or --bin=)"
command -v mariadb-dump >/dev/null || die "mariadb-dump is missing (apt-get install mariadb-client)"
memory=ample cache=$((64 << 20)) cache_given=1 cap=0 cairndb_args="--worker-threads=2 --ssl=0" db=scratch
cg_kind=""
cgroups=()
# shellcheck source=lib/servers.sh
. scripts/lib/servers.sh
need_mariadb innodb
work=$(mktemp -d /tmp/dump-roundtrip.XXXXXX)
pids=()
finish() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    if [ -z "$keep" ]; then rm -rf "$work"; else say "kept $work"; fi
}
trap finish EXIT

# start NAME KIND: a fresh server; sets NAME_port (and NAME_cli, the client
# command line).
declare -A cli
start() {
    local name="$1" kind="$2"
    start_server "$kind" "$work/$name" >/dev/null || die "$name did not start ($work/$name)"
    pids+=("$server_pid")
    server_pid=""
    if [ "$kind" = cairndb ]; then
        cli[$name]="mariadb --default-character-set=utf8mb4 -h127.0.0.1 -P$port -uroot"
    else
        cli[$name]="mariadb --default-character-set=utf8mb4 --socket=$sock -uroot"
    fi
}
sqlc() { # NAME ARGS...: the client of server NAME
    local name="$1"
    shift
    # shellcheck disable=SC2086 # the command line splits at spaces
    ${cli[$name]} "$@"
}
dump() { # NAME DB OUT
    local name="$1"
    # shellcheck disable=SC2086
    mariadb-dump ${cli[$name]#mariadb } --databases "$2" >"$3" 2>"$3.err" ||
        die "mariadb-dump of $2 on $name failed: $(cat "$3.err")"
}
# Each base table's rows ordered by every column, and each view's rows.
contents() { # NAME DB
    local name="$1" db="$2" t cols
    for t in $(sqlc "$name" -N -B -e "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='$db' ORDER BY TABLE_NAME"); do
        cols=$(sqlc "$name" -N -B -e "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='$db' AND TABLE_NAME='$t' ORDER BY ORDINAL_POSITION" |
            awk '{ printf "%s`%s`", (NR > 1 ? "," : ""), $0 }')
        echo "== $t"
        sqlc "$name" -N -B "$db" -e "SELECT * FROM \`$t\` ORDER BY $cols"
    done
}
schema() { # NAME DB
    local name="$1" db="$2" t
    for t in $(sqlc "$name" -N -B -e "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='$db' AND TABLE_TYPE='BASE TABLE' ORDER BY TABLE_NAME"); do
        sqlc "$name" -N -B "$db" -e "SHOW CREATE TABLE \`$t\`" | sed 's/AUTO_INCREMENT=[0-9]* //'
    done
}
same() { # WHAT FILE-A FILE-B
    if ! diff -u "$2" "$3" >"$work/diff" 2>&1; then
        head -40 "$work/diff" >&2
        die "$1 differ ($2 vs $3)"
    fi
    say "$1: same ($(wc -l <"$2") lines)"
}

start src cairndb
start dst cairndb
start back cairndb
start maria innodb

# CairnDB -> dump -> CairnDB and MariaDB.
sqlc src -e "CREATE DATABASE app CHARACTER SET utf8mb4"
sqlc src app <scripts/dump/fixture.sql || die "the fixture did not load into cairndb"
dump src app "$work/from-cairndb.sql"
sqlc dst <"$work/from-cairndb.sql" || die "the dump did not restore into cairndb"
sqlc maria <"$work/from-cairndb.sql" || die "the dump did not restore into MariaDB"
contents src app >"$work/src.rows"
contents dst app >"$work/dst.rows"
contents maria app >"$work/maria.rows"
same "rows, cairndb -> cairndb" "$work/src.rows" "$work/dst.rows"
same "rows, cairndb -> MariaDB" "$work/src.rows" "$work/maria.rows"
schema src app >"$work/src.schema"
schema dst app >"$work/dst.schema"
same "SHOW CREATE TABLE, cairndb -> cairndb" "$work/src.schema" "$work/dst.schema"

# MariaDB -> dump -> CairnDB.
sqlc maria -e "CREATE DATABASE mdb CHARACTER SET utf8mb4"
sqlc maria mdb <scripts/dump/fixture.sql || die "the fixture did not load into MariaDB"
dump maria mdb "$work/from-maria.sql"
sqlc back <"$work/from-maria.sql" || die "MariaDB's dump did not restore into cairndb"
contents maria mdb >"$work/maria-mdb.rows"
contents back mdb >"$work/back.rows"
same "rows, MariaDB -> cairndb" "$work/maria-mdb.rows" "$work/back.rows"
say "ok"
