#!/bin/bash
# usage: ab.sh BIN LABEL workloads...
BIN=$1; LABEL=$2; shift 2
cd $WORK
pkill -f "server --datadir=$WORK/data"; while pgrep -f "server --datadir=$WORK/data" >/dev/null; do sleep 0.2; done
rm -rf data && cp -a data.base data
$BIN server --datadir=$WORK/data --port=3407 --bind=127.0.0.1 --block-cache-size=2147483648 > server.log 2>&1 &
for i in $(seq 50); do mariadb -h127.0.0.1 -P3407 -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
SB="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=3407 --mysql-user=root --mysql-password= --mysql-db=sbtest --tables=1 --table-size=1000000 --rand-type=uniform --threads=8"
for w in "$@"; do
  case $w in
   d) args="select_random_ranges --number-of-ranges=10 --delta=100";;
   e) args="oltp_read_write";;
   a) args="oltp_read_only --point_selects=100 --range_selects=off --skip_trx=on";;
   w) args="oltp_write_only";;
  esac
  sysbench $args $SB --time=${T:-5} run >/dev/null 2>&1  # warm
  PID=$(pgrep -f "server --datadir=$WORK/data")
  c0=$(awk '{print $14+$15}' /proc/$PID/stat)
  perf stat -e instructions -x, -o $WORK/pstat.$$ -p $PID -- sleep ${T2:-15} & PP=$!
  out=$(sysbench $args $SB --time=${T2:-15} run)
  wait $PP
  c1=$(awk '{print $14+$15}' /proc/$PID/stat)
  q=$(echo "$out" | grep "queries:" | sed 's/.*(\(.*\) per sec.)/\1/')
  n=$(echo "$out" | grep "transactions:" | awk '{print $2}')
  echo "$LABEL $w qps=$q cpu_us_per_txn=$(python3 -c "print(round(($c1-$c0)*10000/$n,1))") Minstr_per_txn=$(awk -F, -v n=$n '/instructions/ {printf "%.3f", $1/n/1e6}' $WORK/pstat.$$)"
done
pkill -f "server --datadir=$WORK/data"; while pgrep -f "server --datadir=$WORK/data" >/dev/null; do sleep 0.2; done
