#!/usr/bin/env bash
# Interop with SRI's translator_sv2 0.6.0: SV1 miners -> translator_sv2 -> our pool, and
# SV1 miners -> translator_sv2 -> our proxy -> our pool, over Noise (roles/tests/
# translator_interop.rs), also with the translator requiring extension 0x0002 and the pool
# counting shares per worker. The program: an installed one, or a build of its own
# (.ci/steps/sri_programs.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. .ci/steps/sri_programs.sh
CI=true cargo test --workspace --test translator_interop -- --ignored --test-threads 1 --nocapture
