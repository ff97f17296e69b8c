#!/usr/bin/env bash
# ab.sh ROUNDS WORKLOADS BIN... : each binary in turn per round on a copy of the loaded data
set -u
rounds=$1; wls=$2; shift 2
cd /work/main
snap=/tmp/ycsb/r20k-1/cairndb/data
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/ycsb/ab-data; cp -a $snap /tmp/ycsb/ab-data
    $b server --datadir=/tmp/ycsb/ab-data --port=47002 --bind=127.0.0.1 --block-cache-size=1073741824 > /tmp/ycsb/ab-server.log 2>&1 &
    sp=$!
    for i in $(seq 50); do mariadb -h127.0.0.1 -P47002 -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
    for w in c $wls; do
      t=10; [ "$w" = c ] && [ "${first:-}" = "" ] && t=10
      P=(-P scripts/ycsb/workloads/common -p corpus.file=/tmp/ycsb/corpus2.txt -p recordcount=20000 -p threadcount=16 -p mysql.host=127.0.0.1 -p mysql.port=47002 -p mysql.user=root -p mysql.db=ycsb -P scripts/ycsb/workloads/workload$w -p requestdistribution=zipfian -p operationcount=2000000000 -p maxexecutiontime=$t)
      /tmp/ycsb/r20k-1/bin/cairn-ycsb run mysql "${P[@]}" > /tmp/ycsb/ab-$w.out 2>&1
      ops=$(awk '/^Run finished/{f=1} f && $1=="TOTAL"{for(i=1;i<=NF;i++) if($i=="OPS:") print $(i+1)}' /tmp/ycsb/ab-$w.out | tr -d ,)
      echo "round $r $(basename $b) $w $ops"
    done
    kill $sp; wait $sp 2>/dev/null
  done
done
