#!/usr/bin/env bash
# ThreadSanitizer over buffer-pool's cross-thread tests (the stress test and the thread
# cache tests): nightly, `-Zsanitizer=thread`, the standard library rebuilt with it
# (`-Zbuild-std`, needs the rust-src component), in a target directory of its own.
#
# Usage (from anywhere): buffer-pool/ci/tsan.sh
# SV2C_POOL_STRESS_OPS lowers the stress test's 1 000 000 acquisitions (default here 200 000).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
  rustup component add rust-src --toolchain nightly
fi
export SV2C_POOL_STRESS_OPS="${SV2C_POOL_STRESS_OPS:-200000}"
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=1"
CARGO_TARGET_DIR=target/tsan cargo +nightly test -Zbuild-std \
  --target x86_64-unknown-linux-gnu -p sv2c-buffer-pool \
  --test stress --test thread_cache -- --test-threads 2
