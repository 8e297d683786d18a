#!/usr/bin/env bash
# Does the ncu pass's held copy (ncu.early_start), still starting while nsys captures, change the
# captured range's times? Alternates first runs with ncu.early_start=true and =false (ROUNDS
# rounds) on one workload and prints, per run, whether the nsys pass warned that the copy was
# still starting, and the captured `decode` instances' median wall time after the first.
#
#   scripts/early-start-capture-probe.sh   env: STAGE2_BIN, ARCH (qwen3moe), ROUNDS (2),
#                                          RUN_ROOT (tmp/esc), STAGE2_EXTRA
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/esc}
mkdir -p "$root"
echo "| run | rc | held copy still starting during the capture | decode instances | median after the first (ms) | min (ms) |"
echo "|---|--:|---|--:|--:|--:|"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for early in true false; do
    id=early-$early-$round-$(date -u +%H%M%S)
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" --auto-nvtx \
      --nvtx-capture decode ncu.early_start=$early ${STAGE2_EXTRA:-} \
      -- python3 examples/workloads/families.py --arch "${ARCH:-qwen3moe}" >"$root/$id.log" 2>&1
    rc=$?
    python3 - "$root/$id" "$early $round" "$rc" <<'PY'
import json, statistics as st, sys
sys.path.insert(0, "scripts")
from range_walls import walls
run, label, rc = sys.argv[1:4]
st_ = json.load(open(run + "/status.json"))
warn = next((w for w in st_["passes"]["nsys"].get("warnings", []) if "still starting" in w), "")
warn = warn.split("(ncu.early_start)")[0].split("for ")[-1].strip() if warn else "no"
w = walls(run, "decode")
print(f"| {label} | {rc} | {warn} | {len(w)} | {st.median(w[1:]):.2f} | {min(w[1:]):.2f} |")
PY
  done
done
