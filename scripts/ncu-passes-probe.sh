#!/usr/bin/env bash
# Probe (not a test): how many replay passes each group of the ncu pass's metrics costs, and the
# replay time per pass, on one bf16 GEMM and one elementwise kernel. Prints a Markdown table.
#   env: PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
tmp=$(mktemp -d)
cat >"$tmp/k.py" <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("decode")
b = a @ a
c = a * 2.0
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
PY
base="gpu__time_duration.sum,sm__inst_issued.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,smsp__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes.sum.per_second,dram__bytes.sum.peak_sustained,launch__shared_mem_per_block_dynamic"
tensor="sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
s=smsp__sass_thread_inst_executed_op
fp32="${s}_fadd_pred_on.sum.per_cycle_elapsed,${s}_fmul_pred_on.sum.per_cycle_elapsed,${s}_ffma_pred_on.sum.per_cycle_elapsed"
fp16="${s}_hadd_pred_on.sum.per_cycle_elapsed,${s}_hmul_pred_on.sum.per_cycle_elapsed,${s}_hfma_pred_on.sum.per_cycle_elapsed"
fp64="${s}_dadd_pred_on.sum.per_cycle_elapsed,${s}_dmul_pred_on.sum.per_cycle_elapsed,${s}_dfma_pred_on.sum.per_cycle_elapsed"
peaks="sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained,sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained,sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained"
p=sm__ops_path_tensor
paths="${p}_src_bf16_dst_fp32.sum.per_second,${p}_src_fp16.sum.per_second,${p}_src_fp64.sum.per_second,${p}_src_tf32_dst_fp32.sum.per_second,${p}_src_int8.sum.per_second,${p}_src_fp8_sparsity_off.sum.per_second"
paths3="${p}_src_bf16_dst_fp32.sum.per_second,${p}_src_fp16.sum.per_second,${p}_src_fp8_sparsity_off.sum.per_second"
tpeaks="${p}_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second,${p}_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second"
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
