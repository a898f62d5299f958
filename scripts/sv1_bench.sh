#!/usr/bin/env bash
# BENCHMARKS.md's "SV1 miners: mining_proxy beside translator_sv2": `loadgen sv1-connect`
# and `sv1-shares` against our `mining_proxy --aggregate --sv1-listen` and SRI's
# `translator_sv2` 0.6.0, both in front of one `pool --noise` (a job a second, a new
# chain tip every 40 jobs, so that the 32 jobs a channel keeps fill up). Each run's table
# goes to OUT/NAME.txt. About 9 minutes on 2 cores (both load shapes, both servers);
# nothing else should run.
#
#   scripts/sv1_bench.sh [OUT]                 # OUT defaults to target/sv1-bench
#   BIG=0 scripts/sv1_bench.sh                 # without the 15,000-miner runs
#   PROXY=/path/to/mining_proxy NO_BUILD=1 SRI=0 scripts/sv1_bench.sh   # another build, ours only
#
# TRANSLATOR defaults to the CI's build (.ci/steps/sri_programs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/sv1-bench}
mkdir -p "$out"
ulimit -n 20000
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p sv2c-examples --example pool --example mining_proxy --example loadgen
fi
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/examples
proxy_bin=${PROXY:-$bin/mining_proxy}
translator=${TRANSLATOR:-$HOME/.cache/sv2c-ci/sri-dev/bin/translator_sv2}
sri=${SRI:-1}
big=${BIG:-1}
if [ "$sri" = 1 ] && [ ! -x "$translator" ]; then
  echo "sv1_bench: no translator_sv2 at $translator: its runs skipped" >&2
  sri=0
fi

# Ports below 32768, where loadgen's own sockets do not take them.
pool_port=24254 proxy_port=25000 sv1_port=25333 tproxy_port=25334

"$bin/pool" --noise --listen "127.0.0.1:$pool_port" --job-interval 1 \
  --jobs-per-prev-hash 40 >"$out/pool.log" 2>&1 &
pool=$!
trap 'kill $pool 2>/dev/null || true' EXIT
key=
for _ in $(seq 100); do
  key=$(grep -o 'authority public key [A-Za-z0-9]*' "$out/pool.log" | awk '{print $4}' || true)
  [ -n "$key" ] && break
  sleep 0.1
done
[ -n "$key" ] || { echo "sv1_bench: the pool printed no key" >&2; exit 1; }

ours=("$proxy_bin" --upstream "127.0.0.1:$pool_port" --authority-key "$key"
  --listen "127.0.0.1:$proxy_port" --aggregate --workers 1
  --sv1-listen "127.0.0.1:$sv1_port")
# translator_sv2 as roles/tests/translator_interop.rs configures it: one aggregated
# channel, 4 bytes of extranonce2, no vardiff.
cat >"$out/translator.toml" <<EOF
downstream_address = "127.0.0.1"
downstream_port = $tproxy_port
max_supported_version = 2
min_supported_version = 2
downstream_extranonce2_size = 4
verify_payout = false
aggregate_channels = true
supported_extensions = []
required_extensions = []

[downstream_difficulty_config]
min_individual_miner_hashrate = 5000.0
shares_per_minute = 60.0
enable_vardiff = false
job_keepalive_interval_secs = 60

[[upstreams]]
address = "127.0.0.1"
port = $pool_port
authority_pubkey = "$key"
user_identity = "sv2c-bench"
EOF
theirs=("$translator" -c "$out/translator.toml")

# lg NAME PORT LOADGEN-ARGS... -- COMMAND... : one loadgen run, its table in OUT/NAME.txt.
lg() {
  local name=$1 port=$2
  shift 2
  echo "sv1_bench: $name" >&2
  "$bin/loadgen" "$1" --label "$name" --target "127.0.0.1:$port" "${@:2}" \
    >"$out/$name.txt" 2>"$out/$name.err" ||
    echo "sv1_bench: $name: loadgen exited with $? (see $out/$name.err)" >&2
  sleep 2
}

idle=(sv1-connect --miners 1000 --seconds 35)
storm=(sv1-connect --miners 15000 --seconds 10)
shares=(sv1-shares --miners 100 --in-flight 4 --seconds 10)
lg ours-idle-1000 "$sv1_port" "${idle[@]}" -- "${ours[@]}"
lg ours-shares "$sv1_port" "${shares[@]}" -- "${ours[@]}"
lg ours-shares-per-write "$sv1_port" "${shares[@]}" --share-per-write -- "${ours[@]}"
[ "$big" = 1 ] && lg ours-idle-15000 "$sv1_port" "${storm[@]}" -- "${ours[@]}"
if [ "$sri" = 1 ]; then
  lg sri-idle-1000 "$tproxy_port" "${idle[@]}" -- "${theirs[@]}"
  lg sri-shares "$tproxy_port" "${shares[@]}" -- "${theirs[@]}"
  lg sri-shares-per-write "$tproxy_port" "${shares[@]}" --share-per-write -- "${theirs[@]}"
  [ "$big" = 1 ] && lg sri-idle-15000 "$tproxy_port" "${storm[@]}" -- "${theirs[@]}"
fi
cat "$out"/*.txt
