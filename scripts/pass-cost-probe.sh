#!/usr/bin/env bash
# Probe (not a test): what each part of the two passes costs on the eager generate() workload.
# nsys: stage2's own `nsys profile` line with and without sampling, without CUDA tracing, and
# with graph-level CUDA-graph tracing (the profile alone, no export). ncu: stage2's own ncu line
# from a first run, again with metric lists of 5, 3 and 1 replay passes (seconds per kernel).
#   env: STAGE2_BIN, PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
w="examples/workloads/hf_generate.py --arch qwen2"
tmp=$(mktemp -d)
$py $w --new-tokens 1 >/dev/null 2>&1
t0=$(date +%s.%N); $py $w >/dev/null 2>&1; t1=$(date +%s.%N); echo "bare: $(secs "$t0" "$t1") s"
"$bin" profile --run-root "$tmp/r" --run-id first --cache-dir "$tmp/cache" --nvtx-capture decode ncu.clock_control=none -- $py $w >"$tmp/first.log" 2>&1
tail -1 "$tmp/first.log"
nsys_cmd=$(head -1 "$tmp/r/first/nsys/cmd.txt")
ncu_cmd=$(head -1 "$tmp/r/first/ncu/cmd.txt")
echo "nsys: ${nsys_cmd:0:300}"
echo "| nsys variant | profile (s) |"
echo "|---|--:|"
variant() {
  local name=$1; shift
  local cmd=$nsys_cmd
  for sub in "$@"; do cmd=$(echo "$cmd" | sed -E "$sub"); done
  cmd=$(echo "$cmd" | sed -E "s# -o [^ ]+# -o $tmp/v --force-overwrite=true#")
  t0=$(date +%s.%N); eval "$cmd" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "| $name | $(secs "$t0" "$t1") |"
}
variant "stage2's line"
variant "no sampling" 's# --gpu-metrics-[a-z]+=[^ ]+##g'
variant "no sampling, trace nvtx only" 's# --gpu-metrics-[a-z]+=[^ ]+##g' 's#--trace=[^ ]+#--trace=nvtx#'
variant "no sampling, cuda-graph-trace=graph" 's# --gpu-metrics-[a-z]+=[^ ]+##g' 's#--cuda-graph-trace=[^ ]+#--cuda-graph-trace=graph#'
variant "sampling 10 kHz" 's#--gpu-metrics-frequency=[^ ]+#--gpu-metrics-frequency=10000#'
variant "no sampling, capture-range-end=stop" 's# --gpu-metrics-[a-z]+=[^ ]+##g' 's#--capture-range-end=[^ ]+#--capture-range-end=stop#'
echo "ncu: ${ncu_cmd:0:200} ... ${ncu_cmd: -300}"
base="gpu__time_duration.sum,sm__inst_issued.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,smsp__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes.sum.per_second,dram__bytes.sum.peak_sustained,launch__shared_mem_per_block_dynamic,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
s=smsp__sass_thread_inst_executed_op
fp="${s}_fadd_pred_on.sum.per_cycle_elapsed,${s}_fmul_pred_on.sum.per_cycle_elapsed,${s}_ffma_pred_on.sum.per_cycle_elapsed,${s}_hadd_pred_on.sum.per_cycle_elapsed,${s}_hmul_pred_on.sum.per_cycle_elapsed,${s}_hfma_pred_on.sum.per_cycle_elapsed,${s}_dadd_pred_on.sum.per_cycle_elapsed,${s}_dmul_pred_on.sum.per_cycle_elapsed,${s}_dfma_pred_on.sum.per_cycle_elapsed"
echo "| ncu metric list | passes | ncu (s) | kernels |"
echo "|---|--:|--:|--:|"
for list in "stage2" "$base,$fp" "$base"; do
  cmd=$ncu_cmd
  [ "$list" != stage2 ] && cmd=$(echo "$cmd" | sed -E "s#--metrics [^ ]+#--metrics $list#")
  cmd=$(echo "$cmd" | sed -E "s# -o [^ ]+# -f -o $tmp/n#")
  t0=$(date +%s.%N); eval "$cmd" >"$tmp/ncu.log" 2>&1; t1=$(date +%s.%N)
  passes=$(grep -o '[0-9]* pass' "$tmp/ncu.log" | head -1 | awk '{print $1}')
  echo "| ${list:0:20} | $passes | $(secs "$t0" "$t1") | $(grep -c '==PROF== Profiling' "$tmp/ncu.log") |"
done
rm -rf "$tmp"
