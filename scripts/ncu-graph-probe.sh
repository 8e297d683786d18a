#!/usr/bin/env bash
# Probe (not a test): two ncu behaviours the ncu pass leans on.
#  1. `--graph-profiling graph` on a CUDA-graph decode (static variant): one result per graph
#     launch, with the step's DRAM bytes; raw CSV and summary kept under RUN_ROOT.
#  2. ncu ended by SIGINT part-way through a per-launch-config pass (moe variant): whether the
#     report written so far survives, and with how many results.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
root=${RUN_ROOT:-tmp/probe}
mkdir -p "$root"
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
echo "--- graph-level profile, static decode"
# shellcheck disable=SC2086
timeout 200 ncu --target-processes all --nvtx --nvtx-include decode/ --graph-profiling graph \
  --launch-count 6 --kill on --metrics $m --clock-control none -f -o "$root/graph" \
  $py $(argv_of static) 2>&1 | grep '==' | cut -c1-200 | tail -15
ncu --import "$root/graph.ncu-rep" --csv --page raw > "$root/graph_raw.csv" 2>&1
ncu --import "$root/graph.ncu-rep" --print-summary per-kernel 2>&1 | head -40
cut -c1-300 "$root/graph_raw.csv" | head -12
echo "--- SIGINT after 40 s, per-launch-config, moe"
t0=$(now)
# shellcheck disable=SC2086
timeout -s INT -k 60 40 ncu --target-processes all --nvtx --nvtx-include decode/ \
  --filter-mode per-launch-config --launch-count 1 --metrics $m --clock-control none \
  -f -o "$root/sigint" $py $(argv_of moe) > "$root/sigint.log" 2>&1
echo "rc $? after $("$py" -c "import time; print(f'{time.time() - $t0:.1f}')") s"
grep -c '==PROF== Profiling' "$root/sigint.log"; tail -5 "$root/sigint.log" | cut -c1-200
ls -la "$root"/sigint* 
ncu --import "$root/sigint.ncu-rep" --csv --page raw 2>&1 | wc -l
