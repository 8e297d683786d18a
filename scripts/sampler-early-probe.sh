#!/usr/bin/env bash
# Does the nsys pass's GPU-metrics sampler slow the first instances of the captured range?
# Alternates sampled and unsampled nsys-only runs of one workload (ROUNDS rounds) and prints, per
# run, the first `decode` instance and the medians of the thirds of the others, then every wall.
#
#   scripts/sampler-early-probe.sh   env: STAGE2_BIN, ARCH (mistral), ROUNDS (3), RUN_ROOT (tmp/se)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/se}
mkdir -p "$root"
echo "| run | first instance (ms) | first third | middle third | last third | walls (ms) |"
echo "|---|--:|--:|--:|--:|---|"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for arm in sampled unsampled; do
    extra=""; [ "$arm" = unsampled ] && extra="--no-gpu-metrics"
    id=$arm-$round-$(date -u +%H%M%S)
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" --auto-nvtx \
      --nvtx-capture decode --no-ncu $extra nsys.gpu_metrics.reuse=false \
      -- python3 examples/workloads/families.py --arch "${ARCH:-mistral}" >"$root/$id.log" 2>&1
    python3 - "$root/$id" "$arm $round" <<'PY'
import statistics as st, sys
sys.path.insert(0, "scripts")
from range_walls import walls
w = walls(sys.argv[1], "decode")
s = w[1:]; t = len(s) // 3
print(f"| {sys.argv[2]} | {w[0]:.2f} | {st.median(s[:t]):.2f} | {st.median(s[t:-t]):.2f} | "
      f"{st.median(s[-t:]):.2f} | {' '.join(f'{x:.1f}' for x in s)} |")
PY
  done
done
