#!/usr/bin/env bash
# Runs every test binary of sv2c-buffer-pool (unit + integration tests, not
# doctests) under valgrind's memcheck. Fails on any memory error and on
# definite leaks (a pool arena that is never freed is a definite leak).
# "Possibly lost" blocks are not errors: the test harness's own thread
# handles show up as such.
#
# Usage (from anywhere): buffer-pool/ci/valgrind.sh
# SV2C_POOL_STRESS_OPS lowers the stress test's 1 000 000 acquisitions.
set -euo pipefail
cd "$(dirname "$0")/../.."

bins=$(cargo test -p sv2c-buffer-pool --tests --no-run --message-format=json \
    | grep -o '"executable":"[^"]*"' | cut -d'"' -f4)
[ -n "$bins" ] || { echo "no test binaries found" >&2; exit 1; }

for bin in $bins; do
    echo "== valgrind: $bin"
    valgrind --tool=memcheck --error-exitcode=1 --leak-check=full \
        --errors-for-leak-kinds=definite --show-possibly-lost=no -q \
        "$bin" --test-threads=1
done
