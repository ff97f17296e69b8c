#!/usr/bin/env bash
# Runs the memtable's unsafe core (arena and skiplist unit tests) and the
# per-thread super-version slots (db::sv_cache) under Miri,
# which checks every pointer access against Rust's aliasing and memory
# model. Needs the nightly toolchain with Miri:
#   rustup toolchain install nightly --profile minimal
#   rustup +nightly component add miri
# Not part of scripts/test.sh: it takes several minutes on 2 cores.
# height_distribution is skipped: 100,000 RNG draws, no unsafe code.
#
# usage: scripts/miri.sh [EXTRA TEST FILTER...]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri.sh: Miri is not installed; run: rustup +nightly component add miri" >&2
    exit 2
fi
exec cargo +nightly miri test -p cairndb --lib -- \
    memtable::arena memtable::skiplist db::sv_cache --skip height_distribution "$@"
