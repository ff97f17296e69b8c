#!/usr/bin/env bash
# Two `cairndb` binaries in turns under sysbench, on copies of one
# prepared data directory, to measure what a change costs the server:
# per round, a 3 s warm-up, then oltp_point_select and oltp_read_write
# (sysbench's defaults, prepared statements) for SECONDS each, 8 threads,
# uniform keys, 100,000 rows; prints each run's QPS and, at the end, the
# per-round ratios NEW/OLD with their median and spread.
#
# usage: scripts/sysbench-ab.sh OLD_BINARY NEW_BINARY [ROUNDS [SECONDS]]
# (defaults 5 rounds, 15 s). Needs sysbench and the mariadb client. The
# data directory is prepared once with OLD (so OLD must read it and NEW
# must read what OLD wrote) and copied before every run.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
old=$1; new=$2; rounds=${3:-5}; secs=${4:-15}
work="$(mktemp -d "${TMPDIR:-/tmp}/cairndb-ab.XXXXXX")"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sb() {
    sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
        --mysql-db=sbtest --tables=1 --table-size=100000 --threads=8 --rand-type=uniform "$@"
}
start() {
    rm -rf "$work/data"
    cp -r "$work/base" "$work/data"
    "$1" server --datadir="$work/data" --port="$port" >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 150); do
        mariadb -h127.0.0.1 -P"$port" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "sysbench-ab: $1 did not start; its log:" >&2
    cat "$work/server.log" >&2
    exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null; pid=""; }
qps() { awk '/queries:/{gsub(/\(/, "", $3); print $3}'; }

mkdir -p "$work/base"
start "$old"
mariadb -h127.0.0.1 -P"$port" -uroot -e 'CREATE DATABASE sbtest'
sb oltp_read_write prepare >/dev/null
stop
rm -rf "$work/base"
mv "$work/data" "$work/base"

: >"$work/ratios"
for r in $(seq "$rounds"); do
    for which in old new; do
        bin=$old
        [ "$which" = new ] && bin=$new
        start "$bin"
        sb oltp_point_select --time=3 run >/dev/null
        ps=$(sb oltp_point_select --time="$secs" run | qps)
        rw=$(sb oltp_read_write --time="$secs" run | qps)
        stop
        echo "round $r $which point_select=$ps read_write=$rw"
        echo "$r $which $ps $rw" >>"$work/ratios"
    done
done
python3 - "$work/ratios" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, which, ps, rw = line.split()
    runs.setdefault(r, {})[which] = (float(ps), float(rw))
for i, name in enumerate(["point_select", "read_write"]):
    ratios = sorted(v["new"][i] / v["old"][i] for v in runs.values() if "old" in v and "new" in v)
    print(f"{name}: median ratio new/old {statistics.median(ratios):.3f}, "
          f"spread {ratios[0]:.3f}..{ratios[-1]:.3f} over {len(ratios)} rounds")
PY
