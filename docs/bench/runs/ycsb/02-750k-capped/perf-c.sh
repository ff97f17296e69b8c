#!/usr/bin/env bash
# Capped workload C on data that scripts/ycsb/bench.sh loaded, with a
# perf profile of the server: how this run's profile was taken.
#
# usage: perf-c.sh DATADIR CAP_BYTES SECONDS [server options...]
# env: BIN (cairndb binary, default target/release/cairndb), CLIENT (the
#      cairn-ycsb client bench.sh built, under its --out/bin), CORPUS,
#      RECORDS (default 750000), PERF=1 to record 15 s of the server.
# Needs root (a cgroup v1 memory cgroup; drops the page cache first).
set -u
data=$1 cap=$2 secs=$3
shift 3
cd "$(dirname "$0")/../../../../.." || exit 1
bin=${BIN:-target/release/cairndb}
client=${CLIENT:?set CLIENT to the cairn-ycsb client}
corpus=${CORPUS:?set CORPUS to the corpus file}
records=${RECORDS:-750000}
cg=/sys/fs/cgroup/memory/cairn-perf
rmdir "$cg" 2>/dev/null
mkdir -p "$cg"
echo "$cap" >"$cg/memory.limit_in_bytes"
sync
echo 3 >/proc/sys/vm/drop_caches
port=41900
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$bin" server \
    --datadir="$data" --port=$port --bind=127.0.0.1 "$@" >/tmp/perf-c.server.log 2>&1 &
spid=$!
for _ in $(seq 1 100); do
    mariadb -h127.0.0.1 -P$port -uroot --skip-ssl -e "select 1" >/dev/null 2>&1 && break
    sleep 0.3
done
"$client" run mysql -P scripts/ycsb/workloads/common -p corpus.file="$corpus" \
    -p recordcount="$records" -p threadcount=16 -p mysql.host=127.0.0.1 -p mysql.port=$port \
    -p mysql.user=root -p mysql.db=ycsb -P scripts/ycsb/workloads/workloadc \
    -p requestdistribution=zipfian -p operationcount=2000000000 \
    -p maxexecutiontime="$secs" >/tmp/perf-c.client.out 2>&1 &
cpid=$!
if [ -n "${PERF:-}" ]; then
    sleep 10
    perf record -F 499 -g -p $spid -o /tmp/perf-c.data -- sleep 15 >/dev/null 2>&1
fi
wait $cpid
grep "^TOTAL" /tmp/perf-c.client.out | tail -1
echo "cgroup peak $(cat "$cg/memory.max_usage_in_bytes"); $(grep -E '^(cache|rss|mapped_file|pgmajfault) ' "$cg/memory.stat" | tr '\n' ' ')"
kill $spid
wait $spid 2>/dev/null
rmdir "$cg" 2>/dev/null
