#!/usr/bin/env bash
# Interop with SRI's pool_sv2 0.7.0: our Template Provider -> pool_sv2 -> our miner, over
# Noise on both hops (roles/tests/pool_sv2_interop.rs). Building pool_sv2 needs the Cap'n
# Proto compiler and its schema files (Debian: capnproto, libcapnp-dev). Installing it took
# minutes (.ci/steps/sri_programs.sh); an installed binary is reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
.ci/steps/sri_programs.sh
CI=true cargo test --workspace --test pool_sv2_interop -- --ignored
