#!/usr/bin/env bash
# GPU probe (not a test): does GPU-metrics sampling slow a workload's start-up before the
# capture range? The nsys pass alone (`--no-ncu`) of one workload without sampling and at two
# sampling rates, alternated, each with a fresh cache (nothing reused); prints when the nsys pass
# reached the capture and how long the pass took, from each run's status.json.
#   scripts/sampling-startup-probe.sh [VARIANT] [REPEATS]   (default: lead 2; on the GPU machine)
source .gpu/nsight-env.sh >/dev/null 2>&1
. scripts/hf-workloads.sh
v=${1:-lead}; n=${2:-2}; root=${RUN_ROOT:-/tmp/ssp}; rm -rf "$root"; mkdir -p "$root"
echo "| variant | sampling | run | capture start (s) | nsys pass (s) |"
echo "|---|---|--:|--:|--:|"
for i in $(seq "$n"); do
  for f in off 10000 50000; do
    id="$v-$f-$i"
    case $f in off) s=(--no-gpu-metrics) ;; *) s=("nsys.gpu_metrics.enable=true" "nsys.gpu_metrics.frequency_hz=$f") ;; esac
    # shellcheck disable=SC2046
    target/release/stage2 profile --no-ncu --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" \
      --nvtx-capture "$(capture_of "$v")" "${s[@]}" -- python3 $(argv_of "$v") >"$root/$id.log" 2>&1
    python3 - "$root/$id" "$v" "$f" "$i" <<'PY'
import json, sys
d, v, f, i = sys.argv[1:]
n = json.load(open(d + "/status.json"))["passes"]["nsys"]
t = (n.get("nsys") or {}).get("timing") or {}
print(f"| {v} | {f} | {i} | {t.get('capture_start_s', 0):.1f} | {n.get('duration_s', 0):.1f} |")
PY
  done
done
