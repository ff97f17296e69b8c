# Shared by the comparison scripts (sysbench-compare.sh, ycsb/bench.sh):
# fresh servers side by side, each with its own data directory, socket and
# port, started as the current user: MariaDB with InnoDB (innodb), InnoDB
# for ROW_FORMAT=COMPRESSED tables (innodb-zip), MariaDB with MyRocks
# (myrocks), and `cairndb server` (cairndb); optionally each in a memory
# cgroup of its own (cgroup v1 or v2, page cache included).
#
# The caller sets, before sourcing: tool (message prefix), memory
# (ample|capped), cache (bytes for the caches), cache_given (non-empty if
# the user chose the cache size), cap (cgroup limit, bytes), bin (the
# cairndb binary), cairndb_args (extra server options), db (the database
# each server is given); and defines say and die. It calls need_mariadb
# SERVERS, cg_setup, then start_server/stop_server per server, and
# cleanup on exit (trap cleanup EXIT).
# shellcheck shell=bash

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}
find_mariadbd() {
    command -v mariadbd || command -v mysqld ||
        { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } || true
}
mariadbd_bin=$(find_mariadbd)
plugin_dir=/usr/lib/mysql/plugin
need_mariadb() { # SERVERS (comma-separated): installs what those need
    local servers="$1"
    if [[ ",$servers," =~ ,(innodb|innodb-zip|myrocks), ]]; then
        if [ -z "$mariadbd_bin" ] || ! command -v mariadb-install-db >/dev/null ||
            { [[ ",$servers," == *,myrocks,* ]] && [ ! -f "$plugin_dir/ha_rocksdb.so" ]; }; then
            say "installing mariadb-server mariadb-plugin-rocksdb with apt-get"
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                mariadb-server mariadb-plugin-rocksdb >/dev/null || die "apt-get install failed"
            mariadbd_bin=$(find_mariadbd)
        fi
        [ -x "$mariadbd_bin" ] || die "no mariadbd after the install"
        "$mariadbd_bin" --version | grep -q '10\.11\.' ||
            say "note: $("$mariadbd_bin" --version) is not MariaDB 10.11"
    fi
    command -v mariadb >/dev/null || die "the mariadb client is not installed"
}

# --- memory cgroups -------------------------------------------------------------

cg_kind=""
cg_root=""
cgroups=() # every cgroup made, removed on exit

cg_setup() { # finds the memory cgroup hierarchy when memory=capped
    if [ "$memory" = capped ]; then
        if [ -d /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
            cg_kind=v1
            cg_root=/sys/fs/cgroup/memory
        elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
            cg_kind=v2
            cg_root=/sys/fs/cgroup
            grep -qw memory "$cg_root/cgroup.subtree_control" ||
                as_root sh -c "echo +memory > $cg_root/cgroup.subtree_control" ||
                die "cannot enable the memory controller in $cg_root"
        else
            die "--memory=capped needs a memory cgroup (v1 /sys/fs/cgroup/memory or v2 memory.max)"
        fi
        say "memory cgroups: $cg_kind under $cg_root"
    fi
}

cg_make() { # NAME: creates the capped cgroup, prints its directory
    local d="$cg_root/$tool-$$-$1"
    as_root mkdir -p "$d" || return 1
    # The server runs as the current user, who moves it into the group.
    [ "$(id -u)" = 0 ] || as_root chown "$(id -u)" "$d/cgroup.procs" || return 1
    if [ "$cg_kind" = v1 ]; then
        # The limit covers the page cache in v1; swap too where accounted.
        as_root sh -c "echo $cap > $d/memory.limit_in_bytes" || return 1
        if [ -f "$d/memory.memsw.limit_in_bytes" ]; then
            as_root sh -c "echo $cap > $d/memory.memsw.limit_in_bytes" || return 1
        fi
    else
        as_root sh -c "echo $cap > $d/memory.max" || return 1
        [ -f "$d/memory.swap.max" ] && as_root sh -c "echo 0 > $d/memory.swap.max"
    fi
    echo "$d"
}

cg_peak() { # DIR: peak bytes charged
    local d="$1"
    if [ -f "$d/memory.max_usage_in_bytes" ]; then
        cat "$d/memory.max_usage_in_bytes"
    elif [ -f "$d/memory.peak" ]; then
        cat "$d/memory.peak"
    else
        echo ""
    fi
}

cg_stat() { # DIR: the cgroup's memory.stat (resident, page cache, mapped, major faults)
    cat "$1/memory.stat" 2>/dev/null
}

# --- servers ----------------------------------------------------------------------

server_pid=""
server_cg=""
port=""
sock=""

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Runs COMMAND... in the background, in the server's cgroup if there is
# one; sets server_pid.
launch() { # LOG COMMAND...
    local log="$1"
    shift
    if [ -n "$server_cg" ]; then
        # The shell joins the cgroup, then becomes the server (exec).
        sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$server_cg" "$@" >>"$log" 2>&1 &
    else
        "$@" >>"$log" 2>&1 &
    fi
    server_pid=$!
}

wait_ready() { # NAME LOG CHECK-COMMAND...
    local name="$1" log="$2" i
    shift 2
    for ((i = 0; i < 1200; i++)); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "$tool: $name exited at start ($log):" >&2
            tail -5 "$log" >&2
            server_pid=""
            return 1
        fi
        sleep 0.1
    done
    echo "$tool: $name did not answer within 120 s ($log)" >&2
    return 1
}

start_server() { # NAME DIR: sets port, sock, server_pid, server_cg
    local name="$1" dir="$2" log="$2/server.log"
    mkdir -p "$dir"
    port=$(free_port) || return 1
    sock="$dir/mysqld.sock"
    server_cg=""
    if [ -n "$cg_kind" ]; then
        server_cg=$(cg_make "$name") || { echo "$tool: cgroup for $name failed" >&2; return 1; }
        cgroups+=("$server_cg")
    fi
    if [ "$name" = cairndb ]; then
        # shellcheck disable=SC2086 # the options split at spaces
        # Under the cap, without --cache-size, the server sizes its own
        # budgets from its cgroup's limit (docs/sql.md, "Memory").
        local cache_opt=(--block-cache-size="$cache")
        if [ "$memory" = capped ] && [ -z "$cache_given" ]; then
            cache_opt=()
        fi
        launch "$log" "$bin" server --datadir="$dir/data" --port="$port" --bind=127.0.0.1 \
            "${cache_opt[@]}" $cairndb_args
        wait_ready "$name" "$log" mariadb -h127.0.0.1 -P"$port" -uroot -e "SELECT 1" || return 1
        mariadb -h127.0.0.1 -P"$port" -uroot -e "CREATE DATABASE $db" || return 1
        return 0
    fi
    local me
    me=$(id -un)
    mariadb-install-db --no-defaults --datadir="$dir/data" --user="$me" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/install-db.log" 2>&1 ||
        { echo "$tool: mariadb-install-db failed ($dir/install-db.log)" >&2; return 1; }
    local opts=(--no-defaults --datadir="$dir/data" --socket="$sock" --port="$port"
        --bind-address=127.0.0.1 --user="$me" --pid-file="$dir/mysqld.pid"
        --log-error="$dir/error.log" --skip-log-bin --max-connections=200
        --innodb-buffer-pool-size="$cache" --innodb-flush-log-at-trx-commit=1
        --loose-innodb-read-only-compressed=OFF)
    if [ "$name" = myrocks ]; then
        opts+=(--plugin-load-add=ha_rocksdb.so --rocksdb-block-cache-size="$cache"
            --rocksdb-flush-log-at-trx-commit=1 --default-storage-engine=ROCKSDB
            --innodb-buffer-pool-size=$((16 << 20)))
    fi
    launch "$log" "$mariadbd_bin" "${opts[@]}"
    wait_ready "$name" "$dir/error.log" mariadb --socket="$sock" -uroot -e "SELECT 1" || return 1
    mariadb --socket="$sock" -uroot -e "
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
        GRANT ALL ON *.* TO 'root'@'127.0.0.1';
        CREATE DATABASE $db;" || return 1
}

stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null
    local i
    for ((i = 0; i < 1200; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        echo "$tool: server $server_pid did not stop in 120 s; killed" >&2
        kill -KILL "$server_pid" 2>/dev/null
    fi
    wait "$server_pid" 2>/dev/null
    server_pid=""
    if [ -n "$server_cg" ] && [ -d "$server_cg" ]; then
        as_root rmdir "$server_cg" 2>/dev/null
    fi
}

cleanup() {
    stop_server
    local d
    for d in "${cgroups[@]}"; do
        [ -d "$d" ] && as_root rmdir "$d" 2>/dev/null
    done
}


# Bytes of the files under DIR whose names match PATTERN (find -name).
bytes_of() { # DIR PATTERN
    find "$1" -type f -name "$2" -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# Waits until DIR has not changed size for 10 s (polled every second, at
# most 120 s), as background work (compaction, purge, page flushes) goes on
# after a load; prints the bytes then and the seconds waited.
settled_size() { # DIR
    local bytes last="" same=0 waited=0
    while [ "$waited" -lt 120 ]; do
        bytes=$(du -sb "$1" | awk '{ print $1 }')
        if [ "$bytes" = "$last" ]; then
            same=$((same + 1))
            [ "$same" -ge 10 ] && break
        else
            same=0
            last=$bytes
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "$bytes $waited"
}
