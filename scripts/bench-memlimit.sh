#!/usr/bin/env bash
# Runs a command under a cgroup v1 memory limit that counts the page cache,
# starting cold, so engines can be compared when the data does not fit in
# memory.
#
#   scripts/bench-memlimit.sh LIMIT -- COMMAND [ARGS...]
#
# LIMIT is bytes, or a number with K, M or G (powers of 1024), e.g. 512M.
# The script creates the group cairndb-bench-$$ under the memory controller
# (/sys/fs/cgroup/memory, or $CGROUP_MEMORY_ROOT), writes LIMIT to
# memory.limit_in_bytes, syncs and drops the page cache
# (echo 3 > /proc/sys/vm/drop_caches), moves itself into the group, runs
# COMMAND there (its children inherit the group), and at the end prints
# memory.max_usage_in_bytes and memory.failcnt (how often the limit was hit,
# i.e. pages had to be reclaimed) to stderr. The group is removed on exit,
# also after an error or Ctrl-C. Exits with COMMAND's status.
#
# Needs root and a cgroup v1 memory controller. Example:
#   scripts/bench-memlimit.sh 256M -- target/release/cairndb bench \
#       --benchmarks=fillfile,compact,dirsize,readfile --datafile=/tmp/deb/debian.tsv ...
set -euo pipefail

prog=bench-memlimit
die() { echo "$prog: $*" >&2; exit 2; }
usage="usage: $prog.sh LIMIT -- COMMAND [ARGS...]   (LIMIT: bytes or e.g. 64M, 1G)"

[ $# -ge 1 ] || die "$usage"
case $1 in -h|--help) echo "$usage"; exit 0 ;; esac
limit_arg=$1
shift
[ "${1:-}" = "--" ] || die "expected -- after LIMIT; $usage"
shift
[ $# -ge 1 ] || die "no COMMAND given after --; $usage"

# LIMIT: digits with an optional K/M/G (or KB/MB/GB, KiB/MiB/GiB) suffix.
parse_limit() {
    local v=$1 num unit mult
    if [[ ! $v =~ ^([0-9]+)([KkMmGg]?)([iI]?[bB]?)$ ]]; then
        return 1
    fi
    num=${BASH_REMATCH[1]}
    unit=${BASH_REMATCH[2]}
    case $unit in
        "") mult=1 ;;
        [Kk]) mult=1024 ;;
        [Mm]) mult=$((1024 * 1024)) ;;
        [Gg]) mult=$((1024 * 1024 * 1024)) ;;
    esac
    # Reject numbers so large the product would overflow 63 bits.
    if [ ${#num} -gt 15 ]; then
        return 1
    fi
    echo $((num * mult))
}
limit=$(parse_limit "$limit_arg") ||
    die "LIMIT \`$limit_arg' is not a size (bytes, or a number with K, M or G: 64M, 1G)"
[ "$limit" -ge $((4 * 1024 * 1024)) ] ||
    die "LIMIT $limit_arg ($limit bytes) is below 4 MiB; the command could not even start"

[ "$(id -u)" -eq 0 ] || die "must run as root (it creates a cgroup and drops the page cache); try sudo"

root=${CGROUP_MEMORY_ROOT:-/sys/fs/cgroup/memory}
if [ ! -f "$root/memory.limit_in_bytes" ]; then
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        die "$root is not a cgroup v1 memory controller: this machine uses cgroup v2 only \
(unified hierarchy), which this script does not drive"
    fi
    die "no cgroup v1 memory controller at $root (no memory.limit_in_bytes there); \
mount one with: mkdir -p $root && mount -t cgroup -o memory cgroup $root"
fi

group="$root/cairndb-bench-$$"
cleanup() {
    # Move ourselves back to the root group, then remove ours (a group with
    # member processes cannot be removed).
    if [ -d "$group" ]; then
        echo $$ > "$root/cgroup.procs" 2>/dev/null || true
        rmdir "$group" 2>/dev/null ||
            echo "$prog: could not remove $group (a process left in it?)" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir "$group" || die "could not create $group"
echo "$limit" > "$group/memory.limit_in_bytes" ||
    die "could not write $limit to $group/memory.limit_in_bytes"
# Without swap accounting memsw may be missing; with it, keep swap out too.
if [ -f "$group/memory.memsw.limit_in_bytes" ]; then
    echo "$limit" > "$group/memory.memsw.limit_in_bytes" 2>/dev/null || true
fi
actual=$(cat "$group/memory.limit_in_bytes")

sync
echo 3 > /proc/sys/vm/drop_caches || die "could not drop the page cache (/proc/sys/vm/drop_caches)"

echo $$ > "$group/cgroup.procs" || die "could not move into $group"
echo "$prog: running in $group, limit $actual bytes (asked $limit_arg), page cache dropped" >&2

set +e
"$@"
status=$?
set -e

max=$(cat "$group/memory.max_usage_in_bytes")
failcnt=$(cat "$group/memory.failcnt")
echo "$prog: memory.max_usage_in_bytes=$max memory.failcnt=$failcnt limit=$actual exit=$status" >&2
exit $status
