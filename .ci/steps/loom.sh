#!/usr/bin/env bash
# loom models of buffer-pool's concurrency core (buffer-pool/tests/loom.rs) and of
# binary-sv2's reference-counted buffer (the `loom_*` unit tests of src/shared_buf.rs),
# built with `--cfg loom` in a target directory of their own so the main build is not
# invalidated.
set -euo pipefail
cd "$(dirname "$0")/../.."
CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p sv2c-buffer-pool --test loom --release -- --test-threads 1 --nocapture
CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p sv2c-binary --lib --release loom_ -- --test-threads 1
