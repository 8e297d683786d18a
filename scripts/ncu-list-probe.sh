#!/usr/bin/env bash
# Probe (not a test): what leaving a group out of the reports' ncu metric list saves. Replay
# passes per list on one bf16 GEMM and one elementwise kernel, then the eager decode's first 13
# kernels in `decode` profiled with each list (seconds from ncu's first kernel to its last, the
# replay alone). Prints Markdown tables.
#   env: PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
tmp=$(mktemp -d)
# shellcheck source=scripts/ncu-metric-groups.sh
. scripts/ncu-metric-groups.sh
gemm_kernel "$tmp"
lists=("base,tensor,fp32,fp16,fp64,peaks,bf16,f16,fp8,tpeaks" "base,tensor,fp32,fp16,peaks,bf16,f16,fp8,tpeaks" "base,tensor,fp32,fp16,fp64,peaks,bf16,f16,tpeaks" "base,tensor,fp32,fp16,peaks,bf16,f16,tpeaks" "base,tensor,fp32,peaks,bf16,tpeaks" "base,tensor,fp32,fp16,fp64,peaks" "base,tensor,bf16,f16,fp8,tpeaks")
of() { local list="" part; for part in ${1//,/ }; do list="$list,${!part}"; done; echo "${list#,}"; }
echo "| metrics | passes (GEMM, elementwise) |"
echo "|---|--:|"
for g in "${lists[@]}"; do
  ncu --nvtx --nvtx-include decode/ --metrics "$(of "$g")" --clock-control none "$py" "$tmp/k.py" >"$tmp/log" 2>&1
  echo "| $g | $(grep -o '[0-9]* pass' "$tmp/log" | awk '{print $1}' | tr '\n' ' ') |"
done
w=$(argv_of eager)
# shellcheck disable=SC2086
$py $w --new-tokens 1 >/dev/null 2>&1
echo "| metrics (eager decode, 13 kernels) | passes per kernel | first to last kernel (s) | whole ncu run (s) |"
echo "|---|--:|--:|--:|"
for g in "${lists[0]}" "${lists[1]}" "${lists[3]}" "${lists[5]}"; do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  ncu --target-processes all --nvtx --nvtx-include decode/ --launch-count 13 --kill on --metrics "$(of "$g")" --clock-control none -f -o "$tmp/e" $py $w 2>&1 \
    | python3 -u -c '
import sys, time
for line in sys.stdin:
    if "==PROF== Profiling" in line or "100% -" in line:
        print(f"{time.time():.3f} {line.strip()[-12:]}", flush=True)' >"$tmp/stamps"
  t1=$(date +%s.%N)
  first=$(head -1 "$tmp/stamps" | cut -d' ' -f1); last=$(tail -1 "$tmp/stamps" | cut -d' ' -f1)
  passes=$(grep -o '[0-9]* passes' "$tmp/stamps" | head -1)
  echo "| $g | ${passes:-?} | $(secs "$first" "$last") | $(secs "$t0" "$t1") |"
done
rm -rf "$tmp"
