#!/usr/bin/env bash
# BENCHMARKS.md's "The proxy under faults": two `pool` programs (A preferred, B second),
# `mining_proxy --upstream A --upstream B` in front of them (forwarding mode; AGGREGATE=1
# adds --aggregate) and `loadgen faults`: MINERS simulated Noise miners mining through the
# proxy at RATE shares a second each, reconnecting by themselves. One after another:
#   a  pool A killed (SIGKILL), B up
#   c  pool A started again: the proxy's return to it after the hold (counted from the
#      first miner connection the return ends)
#   b  pool A stopped (SIGSTOP) for 10 s, then continued; b-return: the return after it
#   d  the proxy killed (SIGKILL) and started again with the miners connected
#   e  (TP=1: pool A takes its templates from the `template_provider` example) the
#      Template Provider killed (SIGKILL) and started again 5 s later
# and prints one markdown table: each fault's recovery (from the fault until each miner
# has a share accepted again: p50 / p99 / max over miners), miners lost (no accepted share
# within DEADLINE s), connections the miners lost, and the shares acknowledged to the
# miners against those counted by the pools (sv2c_shares_accepted_total) from the quiet
# point before the fault to the one after it.
# Logs and the table (table.md) go to OUT. About 50 s at 5,000 miners on 2 cores, once built.
#
#   scripts/faults.sh [OUT]                     # OUT defaults to target/faults
#   AGGREGATE=1 scripts/faults.sh
#   TP=1 scripts/faults.sh                      # with fault e
#   MINERS=500 RATE=0.5 HOLD=5 SILENCE=2 DEADLINE=30 NO_BUILD=1 scripts/faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/faults}
miners=${MINERS:-5000}
rate=${RATE:-0.2}
hold=${HOLD:-5}
silence=${SILENCE:-2}
deadline=${DEADLINE:-30}
mkdir -p "$out"
ulimit -n 20000
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p sv2c-examples --example pool --example mining_proxy --example loadgen \
    ${TP:+--example template_provider}
fi
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/examples

# Ports below 32768, where loadgen's own sockets do not take them.
a_port=24501 b_port=24502 a_metrics=24511 b_metrics=24512
proxy_port=25100 proxy_metrics=25101 tp_port=24520
a_args=()
[ -n "${TP:-}" ] && a_args=(--template-provider "127.0.0.1:$tp_port")
mode=()
[ -n "${AGGREGATE:-}" ] && mode=(--aggregate)
secret=$out/proxy.secret
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$secret"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_for FILE PATTERN: until FILE has a line with PATTERN (10 s).
wait_for() {
  for _ in $(seq 200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "faults: no \"$2\" in $1" >&2
  exit 1
}

# start_tp: the Template Provider (a tip every 30 s; blocks need 40 zero bits, which the
# miners' shares do not reach), once it listens; sets tp_pid.
start_tp() {
  starts[tp]=$((${starts[tp]:-0} + 1))
  "$bin/template_provider" --listen "127.0.0.1:$tp_port" --difficulty-bits 40 >"$out/tp-${starts[tp]}.log" 2>&1 &
  tp_pid=$!
  disown "$tp_pid"
  pids+=("$tp_pid")
  for _ in $(seq 200); do
    (: >"/dev/tcp/127.0.0.1/$tp_port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "faults: the Template Provider does not listen" >&2
  exit 1
}

# start_pool NAME PORT METRICS_PORT [ARGS...]: sets pool_pid; its log is OUT/pool-NAME-K.log, K
# counting the starts of NAME.
declare -A starts
start_pool() {
  starts[$1]=$((${starts[$1]:-0} + 1))
  local log=$out/pool-$1-${starts[$1]}.log
  : >"$log"
  "$bin/pool" --listen "127.0.0.1:$2" --difficulty-bits 0 --metrics "127.0.0.1:$3" "${@:4}" \
    >>"$log" 2>&1 &
  pool_pid=$!
  disown "$pool_pid"
  pids+=("$pool_pid")
  wait_for "$log" "metrics at"
}

# start_proxy: sets proxy_pid and proxy_log.
start_proxy() {
  starts[proxy]=$((${starts[proxy]:-0} + 1))
  proxy_log=$out/proxy-${starts[proxy]}.log
  : >"$proxy_log"
  "$bin/mining_proxy" --upstream "127.0.0.1:$a_port" --upstream "127.0.0.1:$b_port" \
    --upstream-return-hold "$hold" --upstream-silence-timeout "$silence" \
    --listen "127.0.0.1:$proxy_port" --authority-secret-file "$secret" \
    --metrics "127.0.0.1:$proxy_metrics" "${mode[@]}" >>"$proxy_log" 2>&1 &
  proxy_pid=$!
  disown "$proxy_pid"
  pids+=("$proxy_pid")
}

# metric PORT NAME: a sample of a pool's metrics.
metric() {
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

# accepted PORT: the pool's sv2c_shares_accepted_total.
accepted() {
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
    awk '$1 == "sv2c_shares_accepted_total" { print $2 }'
}

[ -n "${TP:-}" ] && start_tp
start_pool a "$a_port" "$a_metrics" "${a_args[@]}"
a_pid=$pool_pid
start_pool b "$b_port" "$b_metrics"
b_pid=$pool_pid
start_proxy
wait_for "$proxy_log" "miners connect to"
key=$(grep -o 'authority public key [A-Za-z0-9]*' "$proxy_log" | awk '{print $4}')

coproc LG {
  exec "$bin/loadgen" faults --miners "$miners" --rate "$rate" --deadline "$deadline" \
    --target "127.0.0.1:$proxy_port" --authority-key "$key" 2>"$out/loadgen.err"
}
pids+=("$LG_PID")
send() { echo "$1" >&"${LG[1]}"; }
# recv PREFIX: loadgen's next answer line (it must start with PREFIX).
recv() {
  local line
  read -r -t 180 line <&"${LG[0]}" || { echo "faults: no answer from loadgen" >&2; exit 1; }
  echo "$line" >>"$out/loadgen.out"
  case $line in "$1"*) echo "$line" ;; *) echo "faults: loadgen said: $line" >&2; exit 1 ;; esac
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

: >"$out/loadgen.out"
recv ready >/dev/null
# Shares counted by pool instances that were killed, as last read before the kill.
gone=0
# A's counter is not read while it is stopped.
a_stopped=0
counted() {
  local a=0
  [ "$a_stopped" = 0 ] && a=$(accepted "$a_metrics")
  echo $((gone + ${a:-0} + $(accepted "$b_metrics")))
}
# quiet: the miners pause until no share is unanswered; sets acked, counted_now, unanswered.
quiet() {
  send pause
  local c
  c=$(recv counts)
  acked=$(field accepted "$c")
  rejected=$(field rejected "$c")
  unanswered=$(field unanswered "$c")
  counted_now=$(counted)
  send resume
}

rows=()
# row NAME RECOVERED-LINE [ACCOUNTING]
row() {
  local r=$2
  local p50 p99 max
  p50=$(field p50_ms "$r") p99=$(field p99_ms "$r") max=$(field max_ms "$r")
  rows+=("| $1 | $p50 / $p99 / $max ms | $(field lost "$r") of $(field miners "$r") | $(field connections_lost "$r") | ${3:-} |")
}
# window: a new quiet point, and in `cell` the shares acknowledged against counted since
# the last one.
window() {
  local a0=$acked c0=$counted_now u0=$unanswered r0=$rejected
  quiet
  cell="$((acked - a0)) vs $((counted_now - c0)) ($((unanswered - u0)) unanswered at a lost connection"
  [ "$rejected" != "$r0" ] && cell="$cell; $((rejected - r0)) rejected"
  cell="$cell)"
}

quiet
sleep 2
# (a) pool A killed, B up.
send "fault a"
gone=$((gone + $(accepted "$a_metrics")))
kill -9 "$a_pid"
ra=$(recv "recovered a")
sleep 1
window
row "(a) pool A killed (SIGKILL), B up" "$ra" "$cell"

# (c) pool A back: the return after the hold.
sleep 2
start_pool a "$a_port" "$a_metrics" "${a_args[@]}"
a_pid=$pool_pid
send "switch c"
rc=$(recv "recovered c")
sleep 1
window
row "(c) pool A back: the return after the ${hold} s hold" "$rc" "$cell"

# (b) pool A stopped for 10 s, then continued (and the return after the hold).
sleep 2
send "fault b"
a_before_stop=$(accepted "$a_metrics")
gone=$((gone + a_before_stop))
a_stopped=1
kill -STOP "$a_pid"
stopped_at=$(date +%s.%N)
rb=$(recv "recovered b")
sleep "$(awk -v t="$stopped_at" -v now="$(date +%s.%N)" 'BEGIN { s = 10 - (now - t); print (s > 0 ? s : 0) }')"
kill -CONT "$a_pid"
a_stopped=0
# A's counter goes on from where it was read: counted() reads it again.
gone=$((gone - a_before_stop))
send "switch b-return"
# Before the return (after the hold) A counts only what it reads, once running, from the
# connection the proxy left.
sleep 1
a_late=$(($(accepted "$a_metrics") - a_before_stop))
rbr=$(recv "recovered b-return")
sleep 1
window
row "(b) pool A stopped (SIGSTOP) 10 s, silence timeout ${silence} s" "$rb" "$cell, with the return; $a_late counted by A after SIGCONT from the connection the proxy had left"
row "(b) then continued: the return after the ${hold} s hold" "$rbr" "in (b)"

# (d) the proxy killed and started again.
sleep 2
send "fault d"
kill -9 "$proxy_pid"
while kill -0 "$proxy_pid" 2>/dev/null; do sleep 0.01; done
start_proxy
rd=$(recv "recovered d")
sleep 1
window
row "(d) proxy killed (SIGKILL) and started again" "$rd" "$cell"

# (e) the Template Provider of pool A killed, started again 5 s later.
if [ -n "${TP:-}" ]; then
  sleep 2
  send "fault e"
  kill -9 "$tp_pid"
  sleep 5
  start_tp
  tp_back=$(date +%s.%N)
  while [ "$(metric "$a_metrics" sv2c_pool_template_provider_connected)" != 1 ]; do sleep 0.05; done
  tp_again=$(awk -v t="$tp_back" -v now="$(date +%s.%N)" 'BEGIN { printf "%.2f", now - t }')
  re=$(recv "recovered e")
  sleep 1
  window
  row "(e) pool A's Template Provider killed, started again 5 s later (A on it again ${tp_again} s after)" "$re" "$cell"
fi

send quit
wait "$LG_PID" 2>/dev/null || true
{
  echo "| fault (${miners} miners, ${rate} shares/s each; mining_proxy ${mode[*]:-forwarding}) | recovery p50 / p99 / max | miners lost | connections lost | acknowledged vs counted |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out/table.md"
echo
cat "$out/table.md"
