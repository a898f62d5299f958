#!/usr/bin/env bash
# Interop with SRI's programs that take templates from a Template Provider: our
# template_provider program -> pool_sv2 0.7.0 -> our miner (directly, and behind our
# aggregating proxy), and our template_provider -> jd_client_sv2 0.6.0 in solo mining mode
# -> our miner, over Noise on both hops; every share is a block the Template Provider
# must accept (roles/tests/pool_sv2_interop.rs). SRI's programs: installed ones, or builds
# of their own (.ci/steps/sri_programs.sh). The program: the one `cargo test --workspace`
# built, or, when the step runs alone, built here.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .ci/steps/sri_programs.sh
if [ ! -x "${CARGO_TARGET_DIR:-target}/debug/examples/template_provider" ]; then
  cargo build --workspace --example template_provider
fi
CI=true cargo test --workspace --test pool_sv2_interop -- --ignored
