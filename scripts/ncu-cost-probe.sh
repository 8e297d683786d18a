#!/usr/bin/env bash
# Probe (not a test): where an ncu pass's time goes on one workload variant. Runs the bare
# workload, ncu attached but profiling nothing (its injection and launch interception alone),
# then stage2's own ncu command from a first run, each ncu line stamped with seconds since start.
#
#   scripts/ncu-cost-probe.sh VARIANT     (see scripts/hf-workloads.sh)
#   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/probe), STAGE2_EXTRA (e.g. ncu.clock_control=none)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/probe}
v=${1:-moeworker}
args=$(argv_of "$v") || exit 2
mkdir -p "$root"
stamp() {
  "$py" -u -c '
import sys, time
t0 = time.time()
for line in sys.stdin:
    if "==" in line:
        print(f"{time.time() - t0:7.1f}s {line.rstrip()[:150]}", flush=True)
print(f"{time.time() - t0:7.1f}s end", flush=True)'
}
t0=$(now)
# shellcheck disable=SC2086
"$py" $args >/dev/null 2>&1
t1=$(now)
echo "bare: $("$py" -c "print(f'{$t1 - $t0:.1f}')") s"
echo "--- ncu attached, nothing matches"
# shellcheck disable=SC2086
ncu --target-processes all --nvtx --nvtx-include decode/ --kernel-name regex:^NOMATCH_ \
  --metrics gpu__time_duration.sum --clock-control none -f -o "$root/$v-nomatch" $py $args 2>&1 | stamp | tail -4
id="probe-$v-$(date -u +%H%M%S)"
# shellcheck disable=SC2086
# Launched, not held (ncu.early_start=false): cmd.txt's first line is then the one ncu line
# that profiles, run again below.
"$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" --nvtx-capture decode \
  ${STAGE2_EXTRA:-} ncu.early_start=false -- $py $args >"$root/$id.log" 2>&1
"$py" - "$root/$id/status.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["passes"]
for k in ("nsys", "ncu"):
    p = st.get(k) or {}
    print(k, p.get("duration_s"), json.dumps((p.get(k) or {}).get("actual") or {}))
PY
echo "--- stage2's ncu command again, stamped"
cmd=$(head -1 "$root/$id/ncu/cmd.txt")
echo "$cmd" | cut -c1-400
# -f (overwrite the first run's report) goes right after ncu's own path, before the workload.
cmd=$(echo "$cmd" | sed -E 's#^([^ ]+) #\1 -f #')
eval "$cmd" 2>&1 | stamp
echo "--- where the chosen kernels' first launches are in the nsys export"
"$py" scripts/first-launches.py "$root/$id"
echo "--- ncu --print-summary per-kernel (first lines)"
rep=$(ls "$root/$id"/ncu/*.ncu-rep | head -1)
ncu --import "$rep" --print-summary per-kernel 2>&1 | head -60
