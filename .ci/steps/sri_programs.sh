#!/usr/bin/env bash
# Installs SRI's programs used by the interop and load tests, when not already installed:
# pool_sv2 0.7.0 (needs the Cap'n Proto compiler and schemas: Debian's capnproto,
# libcapnp-dev) and translator_sv2 0.6.0. Both are built in one target directory, so the
# dependencies they share (tokio, secp256k1, ring, SRI's protocol crates) are compiled
# once, with a lean release profile: no LTO, parallel codegen, no debug info. They are
# peers for functional tests and the load generator's side-by-side table, not the
# subject of a benchmark of their own. Sourced by the steps that need them.
set -euo pipefail
bin="${CARGO_HOME:-$HOME/.cargo}/bin"
lean() {
  CARGO_TARGET_DIR=target/sri-install \
    CARGO_PROFILE_RELEASE_LTO=false \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo install --locked --no-default-features "$@"
}
if [ ! -x "$bin/pool_sv2" ]; then
  if ! command -v capnp >/dev/null 2>&1 || [ ! -f /usr/include/capnp/c++.capnp ]; then
    apt-get update -qq && apt-get install -y -qq capnproto libcapnp-dev
  fi
  lean pool_sv2 --version 0.7.0
fi
if [ ! -x "$bin/translator_sv2" ]; then
  lean translator_sv2 --version 0.6.0
fi
rm -rf target/sri-install
