#!/usr/bin/env bash
# Probe (not a test): the graph step (`ncu.graph_step`) on the CUDA-graph variants, through
# bench-gpu.sh (bare, first, warm, quick side by side), then NVIDIA's own reading of each
# graph-step report (`ncu --import ... --print-summary per-kernel`) beside stage2's figures.
# The first runs' small files are copied to OUT_DIR (default tmp/graph-step) to be kept.
#
#   scripts/graph-step-probe.sh [VARIANT...]   (default: static)
set -uo pipefail
cd "$(dirname "$0")/.."
root=${RUN_ROOT:-/tmp/graph-step-bench}
out=${OUT_DIR:-tmp/graph-step}
mkdir -p "$root" "$out"
RUN_ROOT=$root bash scripts/bench-gpu.sh "${@:-static}"
for run in "$root"/bench-*-first-*; do
  [ -d "$run" ] || continue
  name=$(basename "$run")
  mkdir -p "$out/$name/ncu" "$out/$name/nsys"
  for rep in "$run"/ncu/*.graph-step.ncu-rep; do
    [ -f "$rep" ] || continue
    echo "--- $name: ncu --print-summary per-kernel of $(basename "$rep")"
    ncu --import "$rep" --print-summary per-kernel 2>&1 | tee "$out/$name/ncu/graph_step_summary.txt" | head -40
  done
  grep -h "whole\|graph step" "$run"/*.log "$root/$name.log" 2>/dev/null | cut -c1-300 | head -8
  grep -A3 "measured whole" "$run/kernels.md" | head -8
  cp "$run"/ncu/*.csv "$run"/ncu/*.log "$run"/ncu/cmd.txt "$out/$name/ncu/" 2>/dev/null
  cp "$run"/status.json "$run"/kernels.md "$run"/stakeholder_summary.md "$out/$name/" 2>/dev/null
  cp "$run"/nsys/summary_*.csv "$run"/nsys/cmd.txt "$out/$name/nsys/" 2>/dev/null
  sz=$(stat -c %s "$run/nsys/run.sqlite" 2>/dev/null || echo 0)
  [ "$sz" -lt 8000000 ] && cp "$run/nsys/run.sqlite" "$out/$name/nsys/"
done
for run in "$root"/bench-*-warm-*; do
  [ -d "$run" ] || continue
  echo "--- $(basename "$run"): $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["passes"]["ncu"].get("ncu",{}).get("graph_step"))' "$run/status.json")"
done
