#!/usr/bin/env bash
# Interop with SRI's pool_sv2 0.7.0: our Template Provider -> pool_sv2 -> our miner, over
# Noise on both hops (roles/tests/pool_sv2_interop.rs). The program: an installed one, or
# a build of its own (.ci/steps/sri_programs.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. .ci/steps/sri_programs.sh
CI=true cargo test --workspace --test pool_sv2_interop -- --ignored
