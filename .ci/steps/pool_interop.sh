#!/usr/bin/env bash
# Interop with SRI's programs that take templates from a Template Provider: our
# template_provider program -> pool_sv2 0.7.0 -> our miner (directly, and behind our
# aggregating proxy, and an SV1 miner on SRI's sv1_api through our mining_proxy program),
# and our template_provider -> jd_client_sv2 0.6.0 in solo mining mode -> our miner, over
# Noise on both hops; every share is a block the Template Provider must accept
# (roles/tests/pool_sv2_interop.rs). SRI's programs: installed ones, or builds of their
# own (.ci/steps/sri_programs.sh). Our programs: the ones `cargo test --workspace` built,
# or, when the step runs alone, built here.
set -euo pipefail
cd "$(dirname "$0")/../.."
. .ci/steps/sri_programs.sh
examples="${CARGO_TARGET_DIR:-target}/debug/examples"
if [ ! -x "$examples/template_provider" ] || [ ! -x "$examples/mining_proxy" ]; then
  cargo build --workspace --example template_provider --example mining_proxy
fi
CI=true cargo test --workspace --test pool_sv2_interop -- --ignored
