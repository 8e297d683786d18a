# Sourced by the ncu metric-list probes (ncu-passes-probe.sh, ncu-levers-probe.sh,
# ncu-list-probe.sh): the ncu pass's metrics in groups, and a workload of one bf16 GEMM and one
# elementwise kernel in a
# `decode` range.
#   gemm_kernel DIR    writes DIR/k.py
# shellcheck disable=SC2034
gemm_kernel() {
  cat >"$1/k.py" <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("decode")
b = a @ a
c = a * 2.0
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
PY
}
base="gpu__time_duration.sum,sm__inst_issued.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,smsp__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes.sum.per_second,dram__bytes.sum.peak_sustained,launch__shared_mem_per_block_dynamic"
tensor="sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
s=smsp__sass_thread_inst_executed_op
fp32="${s}_fadd_pred_on.sum.per_cycle_elapsed,${s}_fmul_pred_on.sum.per_cycle_elapsed,${s}_ffma_pred_on.sum.per_cycle_elapsed"
fp16="${s}_hadd_pred_on.sum.per_cycle_elapsed,${s}_hmul_pred_on.sum.per_cycle_elapsed,${s}_hfma_pred_on.sum.per_cycle_elapsed"
fp64="${s}_dadd_pred_on.sum.per_cycle_elapsed,${s}_dmul_pred_on.sum.per_cycle_elapsed,${s}_dfma_pred_on.sum.per_cycle_elapsed"
peaks="sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained,sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained,sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained"
p=sm__ops_path_tensor
# The tensor-core sources the reports count (BF16, FP16, FP8) and the tensor peaks.
bf16="${p}_src_bf16_dst_fp32.sum.per_second"
f16="${p}_src_fp16.sum.per_second"
fp8="${p}_src_fp8_sparsity_off.sum.per_second"
tpeaks="${p}_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second,${p}_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second"
