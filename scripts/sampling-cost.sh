#!/usr/bin/env bash
# Probe (not a test): what GPU-metrics sampling adds to an nsys pass, by frequency, on the eager
# generate() workload: the bare run, then `nsys profile` with stage2's flags, sampling off and at
# several frequencies, each timed whole and split (capture start/end from the export's
# ANALYSIS_DETAILS, export time). Prints a table.
#
#   scripts/sampling-cost.sh [HZ...]      (default: 10000 50000)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
py=${PYTHON:-python3}
w="examples/workloads/hf_generate.py --arch qwen2"
out=${RUN_ROOT:-/tmp/sampling-cost}
mkdir -p "$out"
now() { date +%s.%N; }
# shellcheck disable=SC2086
$py $w --new-tokens 1 >/dev/null 2>&1
t0=$(now); $py $w >/dev/null 2>&1; t1=$(now)
echo "| sampling | nsys profile (s) | capture start (s) | capture end (s) | export (s) | export MB | / bare |"
echo "|---|--:|--:|--:|--:|--:|--:|"
bare=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
echo "| bare workload | $bare | | | | | 1.00x |"
for hz in off "${@:-10000 50000}"; do
  flags=()
  [ "$hz" != off ] && flags=(--gpu-metrics-devices=cuda-visible "--gpu-metrics-frequency=$hz")
  rep="$out/r-$hz"
  rm -f "$rep".*
  a=$(now)
  # shellcheck disable=SC2086
  nsys profile --trace=cuda,nvtx --sample=none --cuda-graph-trace=node --cpuctxsw=none \
    --capture-range=nvtx --nvtx-capture=decode --env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0 \
    --capture-range-end=none "${flags[@]}" -o "$rep" $py $w >/dev/null 2>&1
  b=$(now)
  nsys export --type sqlite --force-overwrite=true -o "$rep.sqlite" "$rep.nsys-rep" >/dev/null 2>&1
  c=$(now)
  python3 - "$rep.sqlite" "$a" "$b" "$c" "$hz" "$bare" <<'PY'
import sqlite3, sys, os
db, a, b, c, hz, bare = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5], float(sys.argv[6])
con = sqlite3.connect(db)
try:
    s, e = con.execute("select startTime, stopTime from ANALYSIS_DETAILS").fetchone()
    s, e = s / 1e9, e / 1e9
except Exception:
    s = e = float("nan")
mb = os.path.getsize(db) / 2**20
print(f"| {hz} | {b - a:.2f} | {s:.2f} | {e:.2f} | {c - b:.2f} | {mb:.0f} | {(b - a + c - b) / bare:.2f}x |")
PY
done
