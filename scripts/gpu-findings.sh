#!/usr/bin/env bash
# Real captures for the findings and failure tests, into OUT/captures.tgz:
#  1. a workload that fails before its capture range opens (an exception, os._exit(7), a
#     SIGSEGV) under nsys and ncu as stage2 runs them, and under stage2 itself;
#  2. a CUDA-graph workload (static KV cache, compiled decode) captured by hand with nsys's
#     default graph tracing, exported as stage2 reads a folder, with NVIDIA's own summaries;
#  3. generate() called twice with a cold first call (two kinds of decode step), under stage2.
#
#   source .gpu/nsight-env.sh && scripts/gpu-findings.sh OUT
set -uo pipefail
out=${1:?usage: scripts/gpu-findings.sh OUT}
w=$out/work
mkdir -p "$w"
stage2=./target/release/stage2
gate=(--trace=cuda,nvtx --sample=none --capture-range=nvtx --nvtx-capture=decode
  --env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0)
declare -A crash=(
  [raise]='import torch; torch.ones(4, device="cuda"); print("loading weights from /models/x", flush=True); raise RuntimeError("checkpoint /models/x not found")'
  [exit7]='import os, torch; torch.ones(1, device="cuda"); print("bye", flush=True); os._exit(7)'
  [segv]='import os, signal, torch; torch.ones(1, device="cuda"); os.kill(os.getpid(), signal.SIGSEGV)'
)
for k in raise exit7 segv; do
  nsys profile "${gate[@]}" --capture-range-end=stop -o "$w/crash_$k" python3 -c "${crash[$k]}" \
    >"$w/nsys_crash_$k.log" 2>&1
  echo "exit $?" >>"$w/nsys_crash_$k.log"
  ncu --target-processes all --clock-control none --nvtx --nvtx-include decode/ -o "$w/crash_$k" \
    python3 -c "${crash[$k]}" >"$w/ncu_crash_$k.log" 2>&1
  echo "exit $?" >>"$w/ncu_crash_$k.log"
done
$stage2 profile --run-id crash --nvtx-capture decode ncu.clock_control=none -- \
  python3 -c "${crash[raise]}" >"$w/stage2_crash.log" 2>&1
echo "exit $?" >>"$w/stage2_crash.log"
mkdir -p "$w/stage2-crash" && cp -r tmp/stage2/crash/. "$w/stage2-crash/"

g=$w/graphs
mkdir -p "$g/nsys"
nsys profile "${gate[@]}" --capture-range-end=none -o "$g/run" \
  python3 examples/workloads/hf_generate.py --arch qwen2 --static >"$g/profile.log" 2>&1
echo "exit $?" >>"$g/profile.log"
nsys stats --report cuda_gpu_kern_sum --report nvtx_sum --report cuda_api_sum \
  --report nvtx_gpu_proj_sum --report nvtx_kern_sum --format csv --force-export=true \
  -o "$g/nsys/summary" "$g/run.nsys-rep" >"$g/stats.log" 2>&1
nsys export --type sqlite --force-overwrite=true -o "$g/nsys/run.sqlite" "$g/run.nsys-rep" \
  >"$g/export.log" 2>&1
rm -f "$g/run.sqlite"
$stage2 report "$g" >"$g/report.log" 2>&1
echo "exit $?" >>"$g/report.log"

$stage2 profile --run-id twice --nvtx-capture decode --no-ncu nsys.capture_range_end=none -- \
  python3 examples/workloads/hf_generate.py --arch qwen2 --warmup 0 --repeat 2 \
  >"$w/stage2_twice.log" 2>&1
echo "exit $?" >>"$w/stage2_twice.log"
mkdir -p "$w/twice" && cp -r tmp/stage2/twice/. "$w/twice/"
find "$w" -name '*.nsys-rep' -delete -o -name '*.ncu-rep' -delete -o -name '*.qdstrm' -delete
tar czf "$out/captures.tgz" -C "$w" .
ls -la "$out"
for f in "$w"/*.log "$g"/*.log; do echo "== $f"; tail -n 12 "$f"; done
