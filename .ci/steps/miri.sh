#!/usr/bin/env bash
# Miri over the workspace's `unsafe` code:
# - buffer-pool's tests (its arena, free list and thread cache; Miri also checks the
#   cross-thread tests for data races);
# - binary-sv2's one `unsafe` module, src/raw_copy.rs (the hand-over of a decoded message
#   in whole stores and the inline write of short values), through its unit tests.
# For buffer-pool, sizes are reduced under cfg(miri), each where the test says why; every
# test still runs, and so do the doctests (a few seconds). About 4 minutes on a 2-core
# machine from an empty target/miri, of which about 75 s build (criterion, used only by
# the benchmarks, is not built under Miri: buffer-pool/Cargo.toml).
# No -Zmiri-many-seeds: one seed, Miri's default checks (Stacked Borrows, data races, weak
# memory emulation, leaks) all on.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  rustup component add miri rust-src --toolchain nightly
fi
cargo +nightly miri setup
# Isolation off: the stress test reads SV2C_POOL_STRESS_OPS from the environment.
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p sv2c-buffer-pool
# binary-sv2's one `unsafe` module, `src/raw_copy.rs`, through its unit tests, and the owned
# storage beside it (`backing`); not the crate's other tests (the proptest ones take minutes
# under Miri).
cargo +nightly miri test -p sv2c-binary --lib -- raw_copy backing
