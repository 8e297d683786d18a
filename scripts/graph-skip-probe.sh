#!/usr/bin/env bash
# Probe (not a test): which of ncu's filters could find a graph step's instance without a
# launch skip counted from the first workload of the range (the count a compiling warm-up
# changes between runs). On `examples/workloads/graph_loop.py` (two graphs a step, kernels
# between; 40 steps, the first 2 warm-up): ncu's own words on the filter options, then three
# graph-level profiles, each listing what ncu profiled (name, and which of the results are
# graphs): a kernel-name filter, per-launch-config counting, a skip counted before a match, and
# the NVTX range instance by number (`--range-filter ::5`: the 5th `step`).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
root=${RUN_ROOT:-tmp/probe}
mkdir -p "$root"
w="$py examples/workloads/graph_loop.py"
ncu --help | grep -A10 -E -- "--(graph-profiling|filter-mode|launch-skip-before-match|range-filter|kernel-name) " | cut -c1-160
m=gpu__time_duration.sum,dram__bytes_read.sum
probe() {
  name=$1; shift
  echo "--- $name: $*"
  # shellcheck disable=SC2086
  timeout 120 ncu --target-processes all --nvtx --nvtx-include step/ --graph-profiling graph \
    --kill on --metrics $m --clock-control none "$@" -f -o "$root/$name" $w 2>&1 \
    | grep '==PROF==\|==ERROR==\|==WARNING==' | cut -c1-170 | tail -12
  ncu --import "$root/$name.ncu-rep" --csv --page raw 2>/dev/null \
    | python3 -c "import csv,sys; r=list(csv.reader(sys.stdin)); h=r[0]; k=h.index('Kernel Name'); print(len(r)-2, 'results:', [x[k][:40] for x in r[2:]])"
}
probe name-regex --kernel-name regex:. --launch-skip 4 --launch-count 3
probe per-config --filter-mode per-launch-config --launch-skip 4 --launch-count 1
probe before-match --launch-skip-before-match 6 --launch-count 3
probe range-filter --range-filter ::5 --launch-count 5
