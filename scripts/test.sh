#!/usr/bin/env bash
# The project's test command: formatting, lints, then every test.
# README.md names this script; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
# Every backticked path and test name in docs/ exists.
scripts/check-docs.sh
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
# Kill-and-verify crash loop for a bounded time (docs/reliability.md).
scripts/crash-test.sh --duration 60
