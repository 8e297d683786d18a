#!/usr/bin/env bash
# Probe (not a test): which held workloads one `ncu --mode=attach` reaches when two are held on
# one host: two launches on ncu's default ports, then two on ports of their own (--port,
# --max-connections). Prints each copy's log after each attach.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
out=${OUT:-/tmp}/attach-port
mkdir -p "$out"
prog='import torch; x = torch.ones(4, device="cuda"); print("ran", (x * 2).sum().item(), flush=True)'
ncu --help | grep -iE -A3 -- "--port|--max-connections|--hostname" | head -30
held() { # NAME PORTARGS...
  local name=$1; shift
  ncu --mode=launch "$@" python3 -c "$prog" >"$out/$name.log" 2>&1 &
  echo $! >"$out/$name.pid"
}
attach() { # NAME PORTARGS...
  local name=$1; shift
  timeout 90 ncu --mode=attach --hostname 127.0.0.1 "$@" --metrics gpu__time_duration.sum -o "$out/$name" >"$out/attach-$name.log" 2>&1
  echo "attach $name rc=$?"
}
show() { for f in "$@"; do echo "--- $f"; grep -E "PROF|ERR|ran|WARN" "$out/$f.log" | head -8; done; }
stop() { for n in "$@"; do kill -9 "$(cat "$out/$n.pid")" 2>/dev/null; done; }
echo "== two launches on the default ports, one attach on the default ports"
held c; held d; sleep 20
attach cd; sleep 5; show c d attach-cd; stop c d; sleep 2
echo "== two launches on ports of their own, one attach on b's"
held a --port 49400 --max-connections 8; held b --port 49500 --max-connections 8; sleep 20
attach b --port 49500 --max-connections 8; sleep 5; show a b attach-b
echo "== then one on a's"
attach a --port 49400 --max-connections 8; sleep 5; show a attach-a
stop a b
