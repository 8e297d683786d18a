#!/usr/bin/env bash
# Profile the transformers generate() workloads on the GPU machine and print one table.
#
#   scripts/hf-samples.sh VARIANT...     (eager, static, large, moe)
#
# Each variant: a bare run of the workload (timed), then `stage2 profile` of it, then NVIDIA's
# own summaries of the reports it made (scripts/nvidia-summaries.sh).
# Env: STAGE2_BIN (target/release/stage2), RUN_ROOT (tmp/hf), PYTHON (python3),
# STAGE2_EXTRA (extra overrides/flags for every profile, e.g. ncu.clock_control=none),
# CAPTURE (the NVTX range nsys captures; default decode).
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/hf}
py=${PYTHON:-python3}
w=$hf_workload
rows=()
for v in "$@"; do
  args=$(argv_of "$v") || exit 2
  echo "== $v: bare"
  t0=$(now)
  # shellcheck disable=SC2086
  "$py" $args; brc=$?
  t1=$(now)
  id="hf-$v-$(date -u +%Y%m%d-%H%M%S)"
  echo "== $v: stage2 profile ($id)"
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --nvtx-capture "${CAPTURE:-decode}" \
    ${STAGE2_EXTRA:-} -- "$py" $args
  prc=$?
  t2=$(now)
  scripts/nvidia-summaries.sh "$root/$id" >/dev/null 2>&1 || echo "== $v: nvidia summaries failed"
  st="$root/$id/status.json"
  d() { "$py" -c "import json,sys; p=json.load(open('$st'))['passes'].get('$1',{}); print('%.1f' % (p.get('duration_s') or 0))" 2>/dev/null || echo "?"; }
  bare=$(secs "$t0" "$t1"); whole=$(secs "$t1" "$t2")
  ratio=$(awk -v a="$bare" -v b="$whole" 'BEGIN { printf "%.2f", b / a }')
  rows+=("| $v | $brc | $bare | $(d nsys) | $(d ncu) | $whole | ${ratio}x | $prc | $id |")
done
echo
echo "| variant | bare rc | bare (s) | nsys pass (s) | ncu pass (s) | whole (s) | whole/bare | profile rc | run |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|---|"
printf '%s\n' "${rows[@]}"
