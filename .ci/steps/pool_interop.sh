#!/usr/bin/env bash
# Interop with SRI's pool_sv2 0.7.0: our Template Provider -> pool_sv2 -> our miner, over
# Noise on both hops (roles/tests/pool_sv2_interop.rs). Building pool_sv2 needs the Cap'n
# Proto compiler and its schema files (Debian: capnproto, libcapnp-dev). Installing it took
# 4 min 20 s on this 2-core machine; an installed binary is reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/pool_sv2" ]; then
  if ! command -v capnp >/dev/null 2>&1 || [ ! -f /usr/include/capnp/c++.capnp ]; then
    apt-get update -qq && apt-get install -y -qq capnproto libcapnp-dev
  fi
  cargo install pool_sv2 --version 0.7.0 --locked --no-default-features
fi
CI=true cargo test -p sv2c-roles --test pool_sv2_interop -- --ignored
