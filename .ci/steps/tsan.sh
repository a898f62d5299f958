#!/usr/bin/env bash
# ThreadSanitizer over buffer-pool's cross-thread tests (see buffer-pool/ci/tsan.sh;
# about 2.5 minutes from cold, most of it rebuilding std with the sanitizer).
set -euo pipefail
cd "$(dirname "$0")/../.."
buffer-pool/ci/tsan.sh
