#!/usr/bin/env bash
# Miri over the workspace's `unsafe` code:
# - buffer-pool's tests (its arena, free list and thread cache; Miri also checks the
#   cross-thread tests for data races);
# - binary-sv2's `unsafe` code, through its unit tests: the reference-counted buffer, its
#   per-thread cache and its unlocked counting in the enums' decodes (src/shared_buf.rs,
#   ADR 0001), the hand-over of a decoded message
#   (src/handoff.rs), the inline write of short values (src/short_put.rs) and the boxed
#   messages built in their box by the derive's field writes (ADR 0004, `in_place` in
#   src/wire/backing.rs, about 4 s); about 35 s after the build.
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
# binary-sv2's `unsafe` code, through its unit tests: `shared_buf`, `handoff`, `short_put`
# and `in_place` (not the crate's other tests: the proptest ones take minutes under Miri, and
# one leaks static slices on purpose).
cargo +nightly miri test -p sv2c-binary --lib -- shared_buf handoff short_put in_place backing
