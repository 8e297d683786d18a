#!/usr/bin/env bash
# Probe (not a test): what an attached ncu keeps when it is stopped before it has profiled every
# kernel it was asked for. A workload is held by `ncu --mode=launch`, an `ncu --mode=attach`
# with --launch-count N --kill on attaches, and after S seconds either the attach (a) or the
# held workload (b) gets SIGINT. Prints, per way, the exit codes, the kernels the report holds
# and whether the workload ended.
#   scripts/ncu-stop-probe.sh [VARIANT] [S]     (default eager 6)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
v=${1:-eager}
after=${2:-6}
args=$(argv_of "$v") || exit 2
tmp=$(mktemp -d)
metrics=gpu__time_duration.sum,dram__bytes_read.sum,sm__inst_issued.avg.pct_of_peak_sustained_elapsed,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed
for way in attach workload; do
  port=$((49300 + RANDOM % 200))
  # shellcheck disable=SC2086
  PYTORCH_NVML_BASED_CUDA_CHECK=1 setsid ncu --mode=launch --port "$port" --max-connections 4 \
    --nvtx --target-processes all python3 $args >"$tmp/launch-$way.log" 2>&1 &
  lpid=$!
  sleep 20
  t0=$(now)
  setsid ncu --mode=attach --hostname 127.0.0.1 --port "$port" --nvtx-include decode/ \
    --metrics "$metrics" --launch-count 20 --kill on -o "$tmp/rep-$way" \
    >"$tmp/attach-$way.log" 2>&1 &
  apid=$!
  sleep "$after"
  n_before=$(grep -c '==PROF== Profiling' "$tmp/attach-$way.log")
  if [ "$way" = attach ]; then kill -INT -- -"$apid"; else kill -INT -- -"$lpid"; fi
  ts=$(now)
  wait "$apid"; arc=$?
  ta=$(now)
  for _ in $(seq 1 100); do kill -0 "$lpid" 2>/dev/null || break; sleep 0.1; done
  alive=no; kill -0 "$lpid" 2>/dev/null && alive=yes
  kill -KILL -- -"$lpid" 2>/dev/null; wait "$lpid"; lrc=$?
  kernels=-
  [ -f "$tmp/rep-$way.ncu-rep" ] && kernels=$(ncu --import "$tmp/rep-$way.ncu-rep" --csv --page raw 2>/dev/null | tail -n +3 | wc -l)
  echo "## SIGINT to the $way after $after s: profiled lines before $n_before, attach rc $arc ($(secs "$ts" "$ta") s after the signal, $(secs "$t0" "$ta") s in all), launch rc $lrc, workload alive 10 s later: $alive, report kernels: $kernels"
  echo "attach tail:"; tail -n 6 "$tmp/attach-$way.log"
  echo "launch tail:"; tail -n 4 "$tmp/launch-$way.log"
done
