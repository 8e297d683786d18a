#!/usr/bin/env bash
# NVIDIA's own summaries of a run's reports, to check stage2's figures against: `nsys stats`
# (nvtx_kern_sum, nvtx_gpu_proj_sum, cuda_gpu_kern_sum, nvtx_sum, cuda_gpu_kern_gb_sum:nvtx-name)
# of every nsys report and
# `ncu --print-summary per-kernel` of every ncu report, written to RUN/nvidia/.
#
#   scripts/nvidia-summaries.sh RUN_DIR
#
# Needs nsys and ncu on PATH (the GPU machine). Exits non-zero when a tool fails.
set -uo pipefail
run=${1:?usage: scripts/nvidia-summaries.sh RUN_DIR}
out=$run/nvidia
mkdir -p "$out"
rc=0
for rep in "$run"/nsys/*.nsys-rep; do
  [ -f "$rep" ] || continue
  b=$(basename "$rep" .nsys-rep)
  # A copy, so that nsys stats' own SQLite export does not touch the run's.
  cp "$rep" "$out/$b.nsys-rep"
  nsys stats --report nvtx_kern_sum --report nvtx_gpu_proj_sum --report cuda_gpu_kern_sum \
    --report nvtx_sum --report cuda_gpu_kern_gb_sum:nvtx-name --format csv --force-export=true -o "$out/$b" "$out/$b.nsys-rep" \
    >"$out/$b.stats.log" 2>&1 || rc=1
  rm -f "$out/$b.nsys-rep" "$out/$b.sqlite"
done
for rep in "$run"/ncu/*.ncu-rep; do
  [ -f "$rep" ] || continue
  b=$(basename "$rep" .ncu-rep)
  ncu --import "$rep" --print-summary per-kernel --csv >"$out/${b}_print_summary.csv" \
    2>"$out/$b.ncu.log" || rc=1
done
ls -la "$out"
exit $rc
