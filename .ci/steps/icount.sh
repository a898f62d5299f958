#!/usr/bin/env bash
# Instruction counts of the hot paths (owned/Ref decode and encode of every catalog message
# on the enum path, and the stream case), measured under callgrind and compared with the
# committed baseline benches/icount-baseline.txt; fails on a regression above 5 % in any
# case. See BENCHMARKS.md, "Instruction counts". Refresh the baseline after an intended
# change with: cargo run --release -p sv2c-benches --bin sv2c-icount -- check --bless
# (or add a new message's cases alone with: ... -- check --bless-new)
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v valgrind >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq valgrind
fi
cargo build --release -p sv2c-benches --bin sv2c-icount
target/release/sv2c-icount check
