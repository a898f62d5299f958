#!/usr/bin/env bash
# loom models of buffer-pool's concurrency core (buffer-pool/tests/loom.rs), the
# workspace's only concurrent `unsafe` code, built with `--cfg loom` in a target directory of their own so the main build is not
# invalidated.
set -euo pipefail
cd "$(dirname "$0")/../.."
CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p sv2c-buffer-pool --test loom --release -- --test-threads 1 --nocapture
