#!/usr/bin/env bash
# Probe (not a test): can the ncu pass's workload start while the nsys pass runs? ncu
# --mode=launch starts the workload and holds it at its first CUDA call until an
# `ncu --mode=attach` brings the profiling options; the attach's time is what the pass would
# cost once the kernels are chosen. Every step is bounded; output is printed as it comes.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
py=${PYTHON:-python3}
w=${WORKLOAD:-examples/workloads/hf_generate.py --arch qwen2}
# Leftovers of an earlier probe would hold the GPU.
pkill -9 -f "[n]cu --mode" 2>/dev/null
opts=(--nvtx-include decode/ --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-count 5 --kill on --clock-control none)
t0=$(date +%s.%N)
setsid ncu --mode=launch --nvtx --target-processes all $py $w >/tmp/launch.log 2>&1 &
lp=$!
sleep "${WAIT_S:-15}"
echo "launch mode after ${WAIT_S:-15} s: alive=$(kill -0 $lp 2>/dev/null && echo yes || echo no); $(tail -3 /tmp/launch.log | tr '\n' ' ' | cut -c1-300)"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | head -3
t1=$(date +%s.%N)
timeout -s INT 60 ncu --mode=attach --hostname 127.0.0.1 "${opts[@]}" -f -o /tmp/att >/tmp/att.log 2>&1
rc=$?
t2=$(date +%s.%N)
echo "attach: rc $rc in $(secs "$t1" "$t2") s, $(grep -c '==PROF== Profiling' /tmp/att.log) profiled"
tail -5 /tmp/att.log | cut -c1-200
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 $lp 2>/dev/null || break; sleep 1; done
echo "launched process alive after attach + 10 s: $(kill -0 $lp 2>/dev/null && echo yes || echo no)"
tail -4 /tmp/launch.log | cut -c1-200
kill -9 -- -$lp 2>/dev/null
ls -la /tmp/att.ncu-rep 2>&1 | tail -1
t0=$(date +%s.%N)
# shellcheck disable=SC2086
timeout 120 ncu --nvtx "${opts[@]}" -f -o /tmp/full $py $w >/tmp/full.log 2>&1
t1=$(date +%s.%N)
echo "launch-and-attach, whole: $(secs "$t0" "$t1") s, $(grep -c '==PROF== Profiling' /tmp/full.log) profiled"
t0=$(date +%s.%N)
# shellcheck disable=SC2086
$py $w >/dev/null 2>&1
t1=$(date +%s.%N)
echo "bare: $(secs "$t0" "$t1") s"
