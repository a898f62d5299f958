#!/usr/bin/env bash
# sv2c-channels against SRI's channels_sv2 8.0.0 (channels/diff-tests): target comparison,
# job properties and >= 10,000 share verdicts with one fault each; prints the counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
# `cargo test --workspace` runs these too; this step prints the counts by verdict (with the
# workspace's features, so nothing is built again).
cargo test --workspace --test diff -- --nocapture --test-threads 1
cargo build -p sv2c-channels --no-default-features
