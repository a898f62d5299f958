#!/usr/bin/env bash
# Every run behind BENCHMARKS.md's "Servers under load": `loadgen` against the `pool` and
# `mining_proxy` examples and, when `pool_sv2` is on the PATH, SRI's pool. Each run's
# table goes to OUT/NAME-I.txt; `scripts/servers_report.py OUT` turns them into the
# section's tables. About 20 minutes on 2 cores (RUNS=3); nothing else should run.
#
#   scripts/servers_bench.sh [OUT]          # OUT defaults to target/servers-bench
#   RUNS=1 SRI=0 scripts/servers_bench.sh   # one run of each, without SRI's pool
#   SERVERS=/other/target/release/examples NO_BUILD=1 scripts/servers_bench.sh OUT
#                                           # another build's pool and mining_proxy
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/servers-bench}
runs=${RUNS:-3}
mkdir -p "$out"
ulimit -n 20000
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p sv2c-examples --example pool --example mining_proxy --example loadgen
fi
# loadgen from this tree; the servers from SERVERS (default: this tree's build).
loadgen=$PWD/target/release/examples/loadgen
bin=${SERVERS:-$PWD/target/release/examples}
sri=${SRI:-1}
if [ "$sri" = 1 ] && ! command -v pool_sv2 >/dev/null; then
  echo "servers_bench: no pool_sv2 on the PATH: SRI's runs skipped" >&2
  sri=0
fi

# The ports: below 32768, where loadgen's own sockets do not take them.
pool_port=24254 upstream_port=24400 proxy_port=25000 sri_port=24601 tp_port=24600
# SRI's pool behind loadgen's Template Provider (the configuration of
# roles/tests/pool_sv2_interop.rs).
sri_key=9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72
cat >"$out/pool_sv2.toml" <<EOF
authority_public_key = "$sri_key"
authority_secret_key = "mkDLTBBRxdBv998612qipDYoTK3YUrqLe8uWw7gu3iXbSrn2n"
cert_validity_sec = 3600
listen_address = "127.0.0.1:$sri_port"
coinbase_reward_script = "addr(tb1qa0sm0hxzj0x25rh8gw5xlzwlsfvvyz8u96w3p8)"
server_id = 1
pool_signature = "sv2c bench"
shares_per_minute = 60.0
share_batch_size = 1

[template_provider_type.Sv2Tp]
address = "127.0.0.1:$tp_port"
EOF

# lg NAME LOADGEN-ARGS... : one loadgen run, its table in OUT/NAME.txt.
lg() {
  local name=$1
  shift
  echo "servers_bench: $name" >&2
  # The label goes before the arguments, which may end with `-- COMMAND...`.
  "$loadgen" "$1" --label "$name" "${@:2}" >"$out/$name.txt" 2>"$out/$name.err" ||
    echo "servers_bench: $name: loadgen exited with $? (see $out/$name.err)" >&2
}

server= upstream=
trap 'kill $upstream $server 2>/dev/null || true' EXIT
key_of() {
  local key=
  for _ in $(seq 100); do
    key=$(grep -o 'authority public key [A-Za-z0-9]*' "$1" | awk '{print $4}' || true)
    [ -n "$key" ] && break
    sleep 0.1
  done
  echo "$key"
}
# start_upstream POOL-ARGS... : (re)starts the pool the proxy runs in front of, and sets
# `proxy`, the proxy's command.
start_upstream() {
  if [ -n "$upstream" ]; then
    kill "$upstream"
    wait "$upstream" 2>/dev/null || true
  fi
  local log=$out/upstream-pool.log
  "$bin/pool" --noise --difficulty-bits 0 --listen "127.0.0.1:$upstream_port" "$@" \
    >"$log" 2>&1 &
  upstream=$!
  proxy=("$bin/mining_proxy" --upstream "127.0.0.1:$upstream_port"
    --authority-key "$(key_of "$log")" --listen "127.0.0.1:$proxy_port" --listen-noise)
}
start_upstream

pool=("$bin/pool" --noise --listen "127.0.0.1:$pool_port")
at_pool=(--target "127.0.0.1:$pool_port")
at_proxy=(--target "127.0.0.1:$proxy_port")
at_sri=(--tp "127.0.0.1:$tp_port" --target "127.0.0.1:$sri_port" --authority-key "$sri_key")
sri_cmd=(pool_sv2 --config "$out/pool_sv2.toml")

# pinned NAME LOADGEN-ARGS... -- SERVER-COMMAND... : the server started here, its runtime's
# worker threads pinned (the k-th `tokio-rt-worker` thread on core k mod 2), then
# measured.
pinned() {
  local name=$1
  shift
  local args=()
  while [ "$1" != -- ]; do
    args+=("$1")
    shift
  done
  shift
  local log=$out/$name.server.log
  "$@" >"$log" 2>&1 &
  server=$!
  local key
  key=$(key_of "$log")
  sleep 1
  local k=0
  for task in /proc/$server/task/*; do
    if [ "$(cat "$task/comm")" = tokio-rt-worker ]; then
      taskset -p -c $((k % 2)) "$(basename "$task")" >/dev/null
      k=$((k + 1))
    fi
  done
  [ "$k" -gt 0 ] || echo "servers_bench: $name: no runtime thread found to pin" >&2
  lg "$name" "${args[@]}" --pid "$server" --authority-key "$key"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
}

for i in $(seq "$runs"); do
  # 1,000 miners: the storm, then 5 s of shares with 32 in flight each.
  shares=(shares --miners 1000 --seconds 5)
  lg "pool-1000-$i" "${shares[@]}" "${at_pool[@]}" -- "${pool[@]}" --difficulty-bits 0
  lg "pool-threads1-1000-$i" "${shares[@]}" "${at_pool[@]}" \
    -- "${pool[@]}" --difficulty-bits 0 --threads 1
  lg "proxy-1000-$i" "${shares[@]}" "${at_proxy[@]}" -- "${proxy[@]}"
  lg "proxy-workers1-1000-$i" "${shares[@]}" "${at_proxy[@]}" -- "${proxy[@]}" --workers 1
  lg "proxy-threads2-1000-$i" "${shares[@]}" "${at_proxy[@]}" -- "${proxy[@]}" --threads 2
  lg "proxy-aggregate-1000-$i" "${shares[@]}" "${at_proxy[@]}" \
    -- "${proxy[@]}" --workers 1 --aggregate
  if [ "$sri" = 1 ]; then
    lg "sri-1000-$i" "${shares[@]}" "${at_sri[@]}" -- "${sri_cmd[@]}"
  fi
  # 20 shares/s per miner, the servers' runtime threads pinned.
  rate=(shares --miners 1000 --rate 20 --seconds 10)
  pinned "pool-pinned-rate20-$i" "${rate[@]}" "${at_pool[@]}" \
    -- "${pool[@]}" --difficulty-bits 0
  pinned "pool-threads1-pinned-rate20-$i" "${rate[@]}" "${at_pool[@]}" \
    -- "${pool[@]}" --difficulty-bits 0 --threads 1
  pinned "proxy-pinned-rate20-$i" "${rate[@]}" "${at_proxy[@]}" -- "${proxy[@]}"
  pinned "proxy-workers1-pinned-rate20-$i" "${rate[@]}" "${at_proxy[@]}" \
    -- "${proxy[@]}" --workers 1
  # 15,000 miners, a share every 5 s each, pinned.
  rate=(shares --miners 15000 --rate 0.2 --seconds 10)
  pinned "pool-pinned-15000-rate0.2-$i" "${rate[@]}" "${at_pool[@]}" \
    -- "${pool[@]}" --difficulty-bits 0
  pinned "proxy-pinned-15000-rate0.2-$i" "${rate[@]}" "${at_proxy[@]}" -- "${proxy[@]}"
  pinned "proxy-workers1-pinned-15000-rate0.2-$i" "${rate[@]}" "${at_proxy[@]}" \
    -- "${proxy[@]}" --workers 1
done

# 15,000 miners: two waves (the second after the first left), the connection alone, the
# storm without the key stock, three new blocks (job fan-out), 16 jobs held.
waves=(connect --miners 15000 --waves 2)
lg pool-15000-waves "${waves[@]}" "${at_pool[@]}" -- "${pool[@]}"
lg proxy-15000-waves "${waves[@]}" "${at_proxy[@]}" -- "${proxy[@]}"
lg proxy-workers1-15000-waves "${waves[@]}" "${at_proxy[@]}" -- "${proxy[@]}" --workers 1
nochan=(connect --miners 15000 --no-channel)
lg pool-15000-nochannel "${nochan[@]}" "${at_pool[@]}" -- "${pool[@]}"
lg proxy-15000-nochannel "${nochan[@]}" "${at_proxy[@]}" -- "${proxy[@]}"
lg proxy-workers1-15000-nochannel "${nochan[@]}" "${at_proxy[@]}" -- "${proxy[@]}" --workers 1
lg pool-15000-nostock connect --miners 15000 "${at_pool[@]}" -- "${pool[@]}" --key-stock 0
lg proxy-15000-nostock connect --miners 15000 "${at_proxy[@]}" -- "${proxy[@]}" --key-stock 0
lg proxy-workers1-15000-nostock connect --miners 15000 "${at_proxy[@]}" \
  -- "${proxy[@]}" --workers 1 --key-stock 0
blocks=(--job-interval 3 --jobs-per-prev-hash 1)
start_upstream "${blocks[@]}"
lg pool-1000-fanout connect --miners 1000 --fanout 3 "${at_pool[@]}" -- "${pool[@]}" "${blocks[@]}"
lg pool-15000-fanout connect --miners 15000 --fanout 3 "${at_pool[@]}" -- "${pool[@]}" "${blocks[@]}"
lg proxy-15000-fanout connect --miners 15000 --fanout 3 "${at_proxy[@]}" -- "${proxy[@]}"
lg proxy-workers1-15000-fanout connect --miners 15000 --fanout 3 "${at_proxy[@]}" \
  -- "${proxy[@]}" --workers 1
lg proxy-aggregate-15000-fanout connect --miners 15000 --fanout 3 "${at_proxy[@]}" \
  -- "${proxy[@]}" --workers 1 --aggregate
lg pool-15000-jobs16 connect --miners 15000 --fanout 1 "${at_pool[@]}" \
  -- "${pool[@]}" --job-interval 0.5 --jobs-per-prev-hash 17
# Memory between shares: about 125 shares each.
lg pool-2000-rate10 shares --miners 2000 --rate 10 --seconds 12 "${at_pool[@]}" \
  -- "${pool[@]}" --difficulty-bits 0
if [ "$sri" = 1 ]; then
  lg sri-1000-fanout connect --miners 1000 --fanout 3 "${at_sri[@]}" -- "${sri_cmd[@]}"
  lg sri-15000 connect --miners 15000 "${at_sri[@]}" -- "${sri_cmd[@]}"
fi
echo "servers_bench: done; scripts/servers_report.py $out" >&2
