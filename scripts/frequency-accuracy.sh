#!/usr/bin/env bash
# Probe (not a test): the GPU-metrics sampling frequency against its accuracy and its cost, on
# real decode loops. Per workload: one full `stage2 profile` at 50 kHz fills the metrics cache
# with ncu's figures; then a re-run per frequency (ncu served from the cache, so each differs
# only in its sampling) compares the sampled DRAM % with ncu's per kernel and launch
# configuration (summary.json gpu_metrics.agreement) and times the nsys pass. Prints a table.
#
#   scripts/frequency-accuracy.sh [VARIANT...]   (default: eager static; see hf-workloads.sh)
#   env: FREQS (default "50000 25000 10000 5000"), STAGE2_EXTRA, PYTHON, RUN_ROOT
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-/tmp/freq}
freqs=${FREQS:-50000 25000 10000 5000}
mkdir -p "$root"
"$py" $hf_workload --arch qwen2 --new-tokens 1 >/dev/null 2>&1
echo "| workload | frequency (Hz) | nsys pass (s) | export + stats (s) | export MB | kernels compared | DRAM % mean / worst diff (points) | bound class same (% of time) | coverage |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
for v in ${*:-eager static}; do
  args=$(argv_of "$v") || exit 2
  cache="$root/cache-$v"
  rm -rf "$cache"
  for hz in first $freqs; do
    f=$hz; [ "$hz" = first ] && f=50000
    id="$v-$hz"
    rm -rf "${root:?}/$id"
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$cache" --nvtx-capture "$(capture_of "$v")" \
      "nsys.gpu_metrics.frequency_hz=$f" ${STAGE2_EXTRA:-} -- "$py" $args >"$root/$id.log" 2>&1 \
      || echo "probe: $id failed (see $root/$id.log)" >&2
    [ "$hz" = first ] && continue
    "$py" - "$root/$id" "$v" "$f" <<'PY'
import json, os, sys
run, v, f = sys.argv[1:]
s = json.load(open(f"{run}/summary.json"))
st = json.load(open(f"{run}/status.json"))["passes"]["nsys"]
t = (st.get("nsys") or {}).get("timing") or {}
gm = s.get("gpu_metrics") or {}
a = gm.get("agreement") or {}
cov = (gm.get("all_kernels") or {}).get("coverage_pct")
mb = os.path.getsize(f"{run}/nsys/run.sqlite") / 2**20
fmt = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"
print(f"| {v} | {f} | {fmt(st.get('duration_s'))} | {fmt(t.get('post_steps_s'))} | {mb:.0f} | {a.get('compared', '-')} | "
      f"{fmt(a.get('dram_mean_diff_points'))} / {fmt(a.get('dram_worst_diff_points'))} | {fmt(a.get('same_class_pct'))} | {fmt(cov)}% |")
PY
  done
done
