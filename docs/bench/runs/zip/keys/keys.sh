#!/bin/bash
# keys.sh DATAFILE OUT: table bytes of the keys alone (--empty_values) for each format
f=$1; out=$2; mkdir -p $out
for n in rocksdb block zip; do
  case $n in rocksdb) x="--engine=rocksdb";; block) x="";; zip) x="--table_format=zip --zip_from_level=1";; esac
  rm -rf $out/db-$n
  /work/main/target/release/cairndb bench --benchmarks=fillfile,compact,dirsize --empty_values --datafile=$f --keyfields=${KF:-0} --db=$out/db-$n --compression_type=zstd --block_size=16384 $x > $out/keys-$n.out 2>&1
  echo "$n $(du -cb $out/db-$n/*.sst | tail -1 | cut -f1)"
done
