#!/usr/bin/env bash
# Probe (not a test): a first run with ncu.early_start on and off, side by side with the bare
# workload on one machine (eager generate(), empty metrics cache each). Prints one line each.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
w=${WORKLOAD:-examples/workloads/hf_generate.py --arch qwen2}
root=${RUN_ROOT:-tmp/early}
# shellcheck disable=SC2086
$py $w --new-tokens 1 >/dev/null 2>&1
t0=$(date +%s.%N); $py $w >/dev/null 2>&1; t1=$(date +%s.%N)
bare=$(secs "$t0" "$t1"); echo "bare: $bare s"
for early in true false; do
  id="early-$early-$(date -u +%H%M%S)"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" --nvtx-capture decode \
    ncu.clock_control=none ncu.early_start=$early -- $py $w >"$root-$id.log" 2>&1
  t1=$(date +%s.%N)
  python3 - "$root/$id/status.json" "$(secs "$t0" "$t1")" "$bare" "$early" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["passes"]
whole, bare = float(sys.argv[2]), float(sys.argv[3])
n = st["ncu"]; rec = n.get("ncu") or {}
act = rec.get("actual") or {}
print(f"early_start={sys.argv[4]}: first run {whole:.1f} s = {whole / bare:.2f}x bare; nsys pass {st['nsys'].get('duration_s', 0):.1f} s, "
      f"ncu pass {n.get('duration_s', 0):.1f} s (before first kernel {act.get('before_first_s', 0):.1f} s, {act.get('kernels')} kernels, "
      f"prediction {act.get('prediction_error_pct', 0):+.0f}%); held: {json.dumps(rec.get('early_start'))}; nsys warnings: {st['nsys'].get('warnings')}")
PY
done
