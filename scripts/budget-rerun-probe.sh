#!/usr/bin/env bash
# Probe (not a test): speculative decoding (scripts/hf-workloads.sh spec) profiled three times
# with one metrics cache, printing each run's ncu plan, its ncu line and which kernels have ncu
# figures: does a budget that affords fewer kernels give ncu the largest? Needs a GPU.
#   scripts/budget-rerun-probe.sh   (OUT: where the runs' status.json and kernels.md go)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-tmp/budget-rerun}
. scripts/hf-workloads.sh
args=$(argv_of spec)
root=$OUT/runs; rm -rf "$root"; mkdir -p "$root"
for r in first warm warm2; do
  t0=$(now)
  target/release/stage2 profile --run-root $root --run-id $r --cache-dir $root/cache --nvtx-capture decode ncu.clock_control=none -- python3 $args > $root/$r.log 2>&1
  echo "== $r rc=$? $(secs $t0 $(now)) s"
  grep -E "ncu: (plan|profil)|plan|afford" $root/$r.log | head -5 | cut -c1-400
  sed -n 4p $root/$r/kernels.md | cut -c1-700
  grep -n "^| [0-9]* |" $root/$r/kernels.md | head -13 | awk -F'|' '{print $2, $3, $7, $8, $9}'
  mkdir -p $OUT/sc/$r; cp $root/$r/status.json $root/$r/kernels.md $root/$r.log $OUT/sc/$r/ 2>/dev/null
done
