#!/usr/bin/env bash
# Fixture-making (not a test; tests/data/hf/gpu-metrics came from it): what nsys GPU-metrics
# sampling gives on this GPU machine, beside the ncu pass of the same workload. Prints the tools'
# own answers (metric sets, devices, an error of a second sampler) and the ncu pass count of
# candidate metric lists, and leaves run directories (eager and CUDA-graph decode at 10/50/200
# kHz) under RUN_ROOT for the parsers.
#
#   source .gpu/nsight-env.sh && scripts/gpu-metrics-capture.sh OUT
set -uo pipefail
out=${1:?usage: scripts/gpu-metrics-capture.sh OUT}
root=${RUN_ROOT:-tmp/probe}
bin=${STAGE2_BIN:-target/release/stage2}
w=examples/workloads/hf_generate.py
mkdir -p "$root"
nsys --version; ncu --version | tail -1
nvidia-smi --query-gpu=name,index,pci.bus_id,driver_version --format=csv
echo "== gpu-metrics-devices=help"; nsys profile --gpu-metrics-devices=help 2>&1 | head -20
echo "== gpu-metrics-set=help"; nsys profile --gpu-metrics-set=help 2>&1 | head -30
echo "== stats reports with metric"; nsys stats --help-reports 2>&1 | grep -i -A3 "metric" | head -30
now() { date +%s.%N; }
python3 $w --arch qwen2 --new-tokens 1 >/dev/null 2>&1
t0=$(now); python3 $w --arch qwen2 >/dev/null 2>&1; t1=$(now)
echo "bare eager: $(echo "$t1 - $t0" | bc) s"
t0=$(now); python3 $w --arch qwen2 --static >/dev/null 2>&1; t1=$(now)
echo "bare static: $(echo "$t1 - $t0" | bc) s"
gm() { echo "nsys.extra_args=[--gpu-metrics-devices=0,--gpu-metrics-set=gh100,--gpu-metrics-frequency=$1]"; }
run() { # id, then args
  local id=$1; shift
  local t0; t0=$(now)
  "$bin" profile --run-root "$root" --run-id "$id" --nvtx-capture decode ncu.clock_control=none "$@" >"$root/$id.log" 2>&1
  echo "run $id: exit $? in $(echo "$(now) - $t0" | bc) s"
}
run eager-none --no-ncu -- python3 $w --arch qwen2
for f in 10000 200000; do run eager-$f --no-ncu "$(gm $f)" -- python3 $w --arch qwen2; done
run eager-50000 ncu.shapes=all "$(gm 50000)" -- python3 $w --arch qwen2
run static-50000 ncu.shapes=all "$(gm 50000)" -- python3 $w --arch qwen2 --static
for r in eager-50000 static-50000; do bash scripts/nvidia-summaries.sh "$root/$r" >/dev/null 2>&1; done
echo "== schema"
python3 - "$root/eager-50000/nsys/run.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for t in ["GPU_METRICS", "TARGET_INFO_GPU_METRICS", "TARGET_INFO_GPU"]:
    print(t, c.execute(f"SELECT sql FROM sqlite_master WHERE name='{t}'").fetchone())
print(c.execute("SELECT * FROM TARGET_INFO_GPU_METRICS").fetchall())
print(c.execute("SELECT count(*), min(timestamp), max(timestamp) FROM GPU_METRICS").fetchone())
print(c.execute("SELECT * FROM GPU_METRICS ORDER BY timestamp LIMIT 30").fetchall())
print([r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")])
PY
echo "== a second sampler on the same GPU"
nsys profile --trace=cuda --gpu-metrics-devices=0 -o "$root/hold" python3 -c 'import torch,time; x=torch.ones(4096,4096,device="cuda"); t=time.time()
while time.time()-t<12: x=x@x*0.5; torch.cuda.synchronize()' >"$root/hold.log" 2>&1 &
sleep 6
nsys profile --trace=cuda --gpu-metrics-devices=0 -o "$root/second" python3 -c 'import torch; torch.ones(4,device="cuda")' 2>&1 | tail -15
echo "second exit ${PIPESTATUS[0]}"; wait
echo "== ncu passes per metric list"
B=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_issued.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
F=smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_hadd_pred_on.sum,smsp__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum
T=sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp8_sparsity_off.sum,sm__ops_path_tensor_src_int8.sum
P=dram__bytes.sum.peak_sustained,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained,sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained,launch__shared_mem_per_block_dynamic
D=dram__throughput.avg.pct_of_peak_sustained_elapsed
S=sm__throughput.avg.pct_of_peak_sustained_elapsed
for name in B B+P B+P+F B+P+F+T B+P+F+T+D B+D+S; do
  list=$(echo "$name" | sed "s/B/$B/;s/P/$P/;s/F/$F/;s/T/$T/;s/D/$D/;s/S/$S/;s/+/,/g")
  t0=$(now)
  ncu --clock-control none --nvtx --nvtx-include decode/ --launch-count 4 --kill on --metrics "$list" \
    python3 $w --arch qwen2 --new-tokens 3 2>&1 | grep -E "passes|ERR" | sed 's/.*- //' | sort | uniq -c | head -4
  echo "  list $name: $(echo "$list" | tr , '\n' | wc -l) metrics, $(echo "$(now) - $t0" | bc) s"
done
# The run directories, reports left out (size); the SQLite exports kept whole; one file each.
for r in eager-50000 static-50000 eager-none eager-10000 eager-200000; do
  tar -C "$root" --exclude='*.nsys-rep' --exclude='*.qdstrm' -cJf "$out/$r.tar.xz" "$r" "$r.log"
done
tar -C "$root" -cJf "$out/logs.tar.xz" hold.log
ls -la "$out"
