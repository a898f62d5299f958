#!/usr/bin/env bash
# BENCHMARKS.md's "Job fan-out beside its floor": `loadgen connect --fanout 3` against
# the `pool` making its own blocks (`--job-interval 3 --jobs-per-prev-hash 1`) and against
# `fanout_floor` (one sealed `SetNewPrevHash` and one write per miner, nothing else), on the
# same load, alternating, RUNS times each. Each run's table goes to OUT/{pool,floor}-K.txt
# and one line per run and server is printed: p50 / p99 / last of each block, in ms from
# the first miner's arrival. About 1 minute per run and server at 15,000 miners on 2
# cores; nothing else should run.
#
#   scripts/fanout_floor.sh [OUT]          # OUT defaults to target/fanout-floor
#   MINERS=1000 RUNS=1 scripts/fanout_floor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/fanout-floor}
miners=${MINERS:-15000}
runs=${RUNS:-3}
mkdir -p "$out"
ulimit -n 20000
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p sv2c-examples --example pool --example fanout_floor --example loadgen
fi
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/examples

# Ports below 32768, where loadgen's own sockets do not take them.
for run in $(seq "$runs"); do
  "$bin/loadgen" connect --miners "$miners" --fanout 3 --target 127.0.0.1:24254 \
    --label pool -- "$bin/pool" --noise --listen 127.0.0.1:24254 \
    --job-interval 3 --jobs-per-prev-hash 1 >"$out/pool-$run.txt" 2>&1
  "$bin/loadgen" connect --miners "$miners" --fanout 3 --target 127.0.0.1:24290 \
    --label floor -- "$bin/fanout_floor" --listen 127.0.0.1:24290 --interval 3 \
    >"$out/floor-$run.txt" 2>&1
  for who in pool floor; do
    printf '%s run %s:' "$who" "$run"
    grep -o '[0-9]* of [0-9]*; [0-9.]* / [0-9.]* / [0-9.]* ms' "$out/$who-$run.txt" \
      | sed 's/^/  /' | tr '\n' ' '
    echo
  done
done
