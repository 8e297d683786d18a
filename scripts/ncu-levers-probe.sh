#!/usr/bin/env bash
# Probe (not a test): what the levers on a first run's ncu side would save, on the eager
# generate() workload: replay passes per metric list, `ncu --query-metrics` with and without
# --chip (and beside a sampling nsys pass), ncu's start-up with nothing to profile, and one
# first `stage2 profile` with every console line timestamped.
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
# shellcheck source=scripts/ncu-metric-groups.sh
. scripts/ncu-metric-groups.sh
gemm_kernel "$tmp"
pipes="sm__inst_executed_pipe_tensor.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fp16.sum,smsp__inst_executed_pipe_fp64.sum"
echo "## passes per metric list"
echo "| metrics | passes (GEMM, elementwise) | s |"
echo "|---|--:|--:|"
for g in "base,tensor,fp32,fp16,fp64,peaks,bf16,f16,fp8,tpeaks" "base,tensor,fp32,fp16,peaks,bf16,f16,fp8,tpeaks" "base,tensor,fp32,fp16,fp64,peaks,bf16,f16,fp8" "base,tensor,fp32,fp16,fp64,peaks,tpeaks" "base,tensor,fp32,fp16,fp64,peaks,bf16,tpeaks" "base,tensor,fp32,fp16,peaks,bf16,tpeaks" "base,tensor,bf16,f16,fp8" "base,tensor,fp32,fp16,fp64" "base,tensor,fp32" "base,tensor,pipes" "base,tensor,peaks,tpeaks"; do
  list=""
  for part in ${g//,/ }; do list="$list,${!part}"; done
  t0=$(date +%s.%N)
  ncu --nvtx --nvtx-include decode/ --metrics "${list#,}" --clock-control none "$py" "$tmp/k.py" >"$tmp/log" 2>&1
  t1=$(date +%s.%N)
  passes=$(grep -o '[0-9]* pass' "$tmp/log" | awk '{print $1}' | tr '\n' ' ')
  echo "| $g | ${passes% } | $(secs "$t0" "$t1") |"
done
grep -i "error\|warn" "$tmp/log" | head -3
echo "## query"
t0=$(date +%s.%N); ncu --query-metrics >"$tmp/q1" 2>&1; t1=$(date +%s.%N)
echo "plain: $(secs "$t0" "$t1") s, $(grep -c __ "$tmp/q1") lines, $(head -c 120 "$tmp/q1" | tr '\n' ' ')"
for chip in gh100 gb100; do
  t0=$(date +%s.%N); ncu --query-metrics --chip $chip >"$tmp/q2" 2>&1; t1=$(date +%s.%N)
  echo "--chip $chip: $(secs "$t0" "$t1") s, $(grep -c __ "$tmp/q2") lines, $(head -c 120 "$tmp/q2" | tr '\n' ' ')"
done
python3 - "$tmp/q1" "$tmp/q2" <<'PY'
import sys
def names(p):
    return {l.split()[0].split('.')[0] for l in open(p, errors='replace') if l.split() and '__' in l.split()[0]}
a = names(sys.argv[1])
print("same base names (plain vs --chip gh100 run last = gb100 file):", len(a))
PY
ncu --query-metrics --chip gh100 >"$tmp/q3" 2>&1
python3 - "$tmp/q1" "$tmp/q3" <<'PY'
import sys
def names(p):
    return {l.split()[0].split('.')[0] for l in open(p, errors='replace') if l.split() and '__' in l.split()[0]}
a, b = names(sys.argv[1]), names(sys.argv[2])
print(f"plain {len(a)} names, --chip gh100 {len(b)}, only plain {sorted(a-b)[:5]}, only chip {sorted(b-a)[:5]}")
PY
ncu --list-chips 2>&1 | head -3
echo "--- the --chip query beside a sampling nsys pass"
"$bin" profile --run-root "$tmp/r" --run-id bg --quick --nvtx-capture decode ncu.clock_control=none -- $py $w >"$tmp/bg.log" 2>&1 &
bgpid=$!
sleep 9
t0=$(date +%s.%N); ncu --query-metrics --chip gh100 >"$tmp/q4" 2>&1; t1=$(date +%s.%N)
echo "beside nsys --chip: $(secs "$t0" "$t1") s, $(grep -c __ "$tmp/q4") lines"
t0=$(date +%s.%N); ncu --query-metrics >"$tmp/q5" 2>&1; t1=$(date +%s.%N)
echo "beside nsys plain: $(secs "$t0" "$t1") s, $(grep -c __ "$tmp/q5") lines, $(head -c 100 "$tmp/q5" | tr '\n' ' ')"
wait $bgpid
tail -2 "$tmp/bg.log"
echo "## ncu start-up, nothing to profile"
t0=$(date +%s.%N); $py $w >/dev/null 2>&1; t1=$(date +%s.%N); echo "bare: $(secs "$t0" "$t1") s"
ncu --nvtx python3 -c "import os; print('CUDA_MODULE_LOADING under ncu:', os.environ.get('CUDA_MODULE_LOADING'))" 2>&1 | grep MODULE
for opts in "--nvtx --nvtx-include decode/" "" "--nvtx --nvtx-include decode/ --kernel-name-base mangled"; do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  ncu --target-processes all $opts --kernel-name regex:^NOMATCH_ --metrics gpu__time_duration.sum --clock-control none -f -o "$tmp/nm" $py $w >/dev/null 2>&1
  t1=$(date +%s.%N); echo "ncu nomatch [$opts]: $(secs "$t0" "$t1") s"
done
t0=$(date +%s.%N)
CUDA_MODULE_LOADING=LAZY ncu --target-processes all --nvtx --nvtx-include decode/ --kernel-name regex:^NOMATCH_ --metrics gpu__time_duration.sum --clock-control none -f -o "$tmp/nm" $py $w >/dev/null 2>&1
t1=$(date +%s.%N); echo "ncu nomatch LAZY: $(secs "$t0" "$t1") s"
t0=$(date +%s.%N)
ncu --target-processes application-only --nvtx --nvtx-include decode/ --kernel-name regex:^NOMATCH_ --metrics gpu__time_duration.sum --clock-control none -f -o "$tmp/nm" $py $w >/dev/null 2>&1
t1=$(date +%s.%N); echo "ncu nomatch application-only: $(secs "$t0" "$t1") s"
echo "## a first stage2 profile, timestamped"
"$bin" profile --run-root "$tmp/r" --run-id first --cache-dir "$tmp/cache" --nvtx-capture decode ncu.clock_control=none -- $py $w 2>&1 | stamp
python3 -c "import json; s=json.load(open('$tmp/r/first/status.json')); print({k:(v.get('duration_s'), (v.get('nsys') or {}).get('timing'), ((v.get('ncu') or {}).get('actual'))) for k,v in s['passes'].items()})"
rm -rf "$tmp"
