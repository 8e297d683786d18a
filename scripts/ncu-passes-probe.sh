#!/usr/bin/env bash
# Probe (not a test): how many replay passes each group of the ncu pass's metrics costs, and the
# replay time per pass, on one bf16 GEMM and one elementwise kernel. Prints a Markdown table.
#   env: PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
tmp=$(mktemp -d)
# shellcheck source=scripts/ncu-metric-groups.sh
. scripts/ncu-metric-groups.sh
gemm_kernel "$tmp"
paths="${p}_src_bf16_dst_fp32.sum.per_second,${p}_src_fp16.sum.per_second,${p}_src_fp64.sum.per_second,${p}_src_tf32_dst_fp32.sum.per_second,${p}_src_int8.sum.per_second,${p}_src_fp8_sparsity_off.sum.per_second"
paths3="$bf16,$f16,$fp8"
fpinst="smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fp16.sum,smsp__inst_executed_pipe_fp64.sum"
echo "| metrics | passes (GEMM) | passes (elementwise) | s |"
echo "|---|--:|--:|--:|"
for g in base tensor fp32 fp16 fp64 peaks paths tpeaks fpinst "base,tensor" "base,tensor,fp32,fp16,fp64,peaks" "base,tensor,paths,tpeaks" "base,tensor,fp32,fp16,fp64,peaks,paths,tpeaks" "base,tensor,fp32,fp16,fp64,peaks,paths3,tpeaks"; do
  list=""
  for part in ${g//,/ }; do list="$list,${!part}"; done
  t0=$(date +%s.%N)
  ncu --nvtx --nvtx-include decode/ --metrics "${list#,}" --clock-control none "$py" "$tmp/k.py" >"$tmp/log" 2>&1
  t1=$(date +%s.%N)
  passes=$(grep -o '[0-9]* pass' "$tmp/log" | awk '{print $1}' | tr '\n' ' ')
  echo "| $g | ${passes% } | $(python3 -c "print(f'{$t1 - $t0:.1f}')") |"
done
rm -rf "$tmp"
