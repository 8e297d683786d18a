#!/usr/bin/env bash
# Probe (not a test): the ncu pass's time budget on its other paths: the MoE in a spawned worker
# attached with a short budget, speculative decoding launched by ncu (the `auto` budget adds the
# nsys pass's time to its capture), and a launched pass whose budget ends before ncu's first
# kernel. Prints each run's ncu lines, its kernels.md coverage line and status; copies ncu's log
# and NVIDIA's --print-summary of each report to $OUT.
#   env: OUT (where the logs go)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
mkdir -p /tmp/bc "${OUT:=/tmp/bc/out}"
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
python3 examples/workloads/hf_generate.py --arch qwen2 --new-tokens 1 >/dev/null 2>&1
run() { id=$1; v=$2; shift 2
  t0=$(date +%s.%N)
  target/release/stage2 profile --run-root /tmp/bc --run-id $id --cache-dir /tmp/bc/cache-$id --nvtx-capture decode ncu.clock_control=none "$@" -- python3 $(argv_of $v) > /tmp/bc/$id.log 2>&1; rc=$?
  t1=$(date +%s.%N)
  echo "== $id rc=$rc $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.1f", b-a}') s"
  grep -E 'ncu (pass|plan|measured)|warning|error' /tmp/bc/$id.log | cut -c1-330
  grep -h 'Hardware counters' /tmp/bc/$id/kernels.md
  python3 -c "import json;r=json.load(open('/tmp/bc/$id/status.json'))['passes']['ncu'];print(r['state'], r['ncu'].get('budget'), (r['ncu'].get('early_start')))"
  mkdir -p $OUT/$id; cp /tmp/bc/$id/ncu/ncu.log /tmp/bc/$id/ncu/cmd.txt /tmp/bc/$id/status.json $OUT/$id/ 2>/dev/null
  ls /tmp/bc/$id/ncu/*.ncu-rep >/dev/null 2>&1 && ncu --import /tmp/bc/$id/ncu/*.ncu-rep --print-summary per-kernel > $OUT/$id/print-summary.txt 2>&1
}
run moeworker-b8 moeworker ncu.budget_s=8
run spec-launched spec ncu.early_start=false
run eager-launched-b10 eager ncu.early_start=false ncu.budget_s=10
