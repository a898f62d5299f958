#!/usr/bin/env bash
# A small load test of the servers, as a regression check by a factor (not a benchmark):
# 2,000 simulated Noise miners against the pool (idle, then two new blocks reaching them
# all; once they have left, most of their memory must be back with the OS), then 3 s of
# shares, measured by the load generator from /proc. It uses the servers
# `cargo test --workspace` built (its test profile: the workspace at opt-level 1, its
# dependencies at opt-level 2) and builds `loadgen` in the same profile and with the
# workspace's features, which the test step's build already holds (the tests build only
# its test harness; the dev profile would build the workspace again at opt-level 0, and
# `-p sv2c-examples` its dependencies again with fewer features); the bounds are set well
# above what that build measures (BENCHMARKS.md, "Servers under load", has the release
# numbers and the commands).
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
bin=target/debug/examples
cargo build --profile test --workspace --example loadgen --example pool --example mining_proxy
# Idle, then two new blocks, each of which must reach all 2,000 miners (job fan-out).
"$bin/loadgen" connect --miners 2000 --fanout 2 --target 127.0.0.1:24254 --label "pool, idle" \
  --max-kib-per-miner 8 --max-kib-left-per-miner 1.5 \
  -- "$bin/pool" --listen 127.0.0.1:24254 --noise --job-interval 1 --jobs-per-prev-hash 1
"$bin/loadgen" shares --miners 2000 --seconds 3 --target 127.0.0.1:24254 --label "pool, shares" \
  --max-cpu-per-share-us 20 \
  -- "$bin/pool" --listen 127.0.0.1:24254 --noise --difficulty-bits 0
# The proxy in front of the pool: miners' memory at the proxy.
log=target/loadgen-pool.log
"$bin/pool" --listen 127.0.0.1:24264 --noise >"$log" 2>&1 &
pool=$!
trap 'kill "$pool" 2>/dev/null || true' EXIT
key=
for _ in $(seq 100); do
  key=$(grep -o 'authority public key [A-Za-z0-9]*' "$log" | awk '{print $4}' || true)
  [ -n "$key" ] && break
  sleep 0.1
done
# What stays after the miners left includes each worker's own tables and runtime, which
# the next miners reuse (one worker per core: 1.06-1.09 KiB per miner measured on 2 cores,
# 0.62 with --workers 1); a proxy that gave nothing back would keep 4.5.
"$bin/loadgen" connect --miners 2000 --target 127.0.0.1:24265 --label "proxy, idle" \
  --max-kib-per-miner 14 --max-kib-left-per-miner 2 \
  -- "$PWD/$bin/mining_proxy" --upstream 127.0.0.1:24264 --authority-key "$key" \
     --listen 127.0.0.1:24265 --listen-noise
