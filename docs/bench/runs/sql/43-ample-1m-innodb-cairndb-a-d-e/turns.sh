#!/bin/bash
# usage: abd.sh BIN_A BIN_B ROUNDS TIME WORKLOAD(d|e) DATADIR
A=$1; B=$2; R=$3; T=$4; W=$5; D=${6:-/tmp/sbc1/cairndb/data}
SB="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=41600 --mysql-user=root --mysql-password= --mysql-db=sbtest --tables=1 --table-size=1000000 --rand-type=uniform --threads=8"
case $W in
 d) ARGS="select_random_ranges --number-of-ranges=10 --delta=100";;
 e) ARGS="oltp_read_write";;
 a) ARGS="oltp_read_only --point_selects=100 --range_selects=off --skip_trx=on";;
esac
for r in $(seq $R); do for bin in $A $B; do
  $bin server --datadir=$D --port=41600 --bind=127.0.0.1 --block-cache-size=2147483648 > /tmp/abd-server.log 2>&1 &
  pid=$!; for i in $(seq 50); do mariadb --no-defaults -h127.0.0.1 -P41600 -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
  sysbench $ARGS $SB --time=5 run >/dev/null
  q=$(sysbench $ARGS $SB --time=$T run | grep "queries:" | sed 's/.*(\(.*\) per sec.)/\1/')
  echo "$r $bin $q"
  echo "  hwm $(grep VmHWM /proc/$pid/status)"; kill $pid; wait $pid
done; done
