#!/usr/bin/env bash
# Probe (not a test): `ncu.shapes=all` and its bounds on a GPU machine. For each case, one
# `stage2 profile` of the workload with every launch configuration measured, then a table:
# the ncu pass's state, why it stopped, launches ncu wrote to its report (rows of the raw
# CSV), the launches counted from ncu's own lines, and the pass's seconds. The ncu.log tails
# show what ncu printed when it was stopped.
#
#   scripts/shapes-bound-probe.sh [CASE...]   cases: launches (ncu.shapes_max_launches=6),
#                                             budget (ncu.shapes_budget_s=25), known (the
#                                             defaults: stop once the export's configurations
#                                             are measured); default: launches known
#   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/bound), STAGE2_EXTRA, VARIANT (eager)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/bound}
py=${PYTHON:-python3}
args=$(argv_of "${VARIANT:-eager}") || exit 2
mkdir -p "$root"
echo "| case | ncu state | stopped because | launches in the report | launches in ncu's lines | ncu pass (s) |"
echo "|---|---|---|--:|--:|--:|"
for c in "${@:-launches known}"; do
  for name in $c; do
    case $name in
      launches) extra=(ncu.shapes_max_launches=6) ;;
      budget) extra=(ncu.shapes_budget_s=25) ;;
      known) extra=() ;;
      *) echo "unknown case $name" >&2; continue ;;
    esac
    id="bound-$name-$(date -u +%H%M%S)"
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --no-cache --nvtx-capture decode \
      ncu.shapes=all "${extra[@]}" ${STAGE2_EXTRA:-} -- "$py" $args >"$root/$id.log" 2>&1
    "$py" - "$root/$id" "$name" <<'PY'
import csv, json, sys
run, name = sys.argv[1:]
ncu = json.load(open(f"{run}/status.json"))["passes"].get("ncu", {})
rec = ncu.get("ncu") or {}
try:
    rows = max(0, sum(1 for _ in csv.reader(open(f"{run}/ncu/decode_raw.csv"))) - 2)
except OSError:
    rows = "-"
lines = sum(1 for l in open(f"{run}/ncu/ncu.log", errors="replace") if l.startswith("==PROF== Profiling"))
d = ncu.get("duration_s")
print(f"| {name} | {ncu.get('state')} | {rec.get('bounded') or ncu.get('reason') or '-'} | {rows} | {lines} | {d if d is None else round(d, 1)} |")
PY
    echo "--- $id: ncu.log, last lines" >&2
    tail -n 6 "$root/$id/ncu/ncu.log" >&2
  done
done
