#!/usr/bin/env bash
# Interop with SRI's translator_sv2 0.6.0: SV1 miners -> translator_sv2 -> our pool, and
# SV1 miners -> translator_sv2 -> our proxy -> our pool, over Noise (roles/tests/
# translator_interop.rs), also with the translator requiring extension 0x0002 and the pool
# counting shares per worker. Installing the translator takes about 8 CPU-minutes; an installed
# binary is reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/translator_sv2" ]; then
  cargo install translator_sv2 --version 0.6.0 --locked --no-default-features
fi
CI=true cargo test -p sv2c-roles --test translator_interop -- --ignored --test-threads 1
