#!/usr/bin/env bash
# Benchmark (not a test): GPU-metrics sampling frequency against coverage and resolution on the
# eager decode loop, on this GPU. One full profile at 50 kHz with ncu measuring every launch
# configuration is the reference; `--quick` runs at each frequency give the nsys pass's time,
# the export's size, the coverage, and the sampled DRAM figure of each configuration of >= 5%
# of decode's kernel time beside ncu's (points, weighed by time). Prints a Markdown table.
#
#   source .gpu/nsight-env.sh && scripts/bench-sampling.sh [FREQUENCY...]   (default 10000 50000 200000)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/bench-sampling}
w="examples/workloads/hf_generate.py --arch qwen2"
mkdir -p "$root"
stamp=$(date -u +%H%M%S)
# shellcheck disable=SC2086
"$bin" profile --run-root "$root" --run-id "ref-$stamp" --no-cache --nvtx-capture decode \
  ncu.shapes=all ncu.clock_control=none -- python3 $w >"$root/ref-$stamp.log" 2>&1 \
  || echo "bench: the reference profile failed (see $root/ref-$stamp.log)" >&2
for f in "${@:-10000 50000 200000}"; do
  for hz in $f; do
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "q$hz-$stamp" --quick --nvtx-capture decode \
      "nsys.gpu_metrics.frequency_hz=$hz" -- python3 $w >"$root/q$hz-$stamp.log" 2>&1 \
      || echo "bench: --quick at $hz Hz failed" >&2
  done
done
python3 - "$root" "$stamp" "${@:-10000 50000 200000}" <<'PY'
import json, os, sys
root, stamp, *freqs = sys.argv[1:]
freqs = [int(x) for f in freqs for x in f.split()]
ref = json.load(open(f"{root}/ref-{stamp}/summary.json"))
ncu = {(r["kernel"], r["grid"], r["block"]): r["ncu_dram_pct"] for r in ref["gpu_metrics"]["beside_ncu"]}
print("| frequency | nsys pass (s) | export (MB) | coverage | samples | configurations compared | DRAM diff, mean (points) | worst | same class |")
print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for hz in freqs:
    run = f"{root}/q{hz}-{stamp}"
    try:
        s = json.load(open(f"{run}/summary.json"))
    except OSError:
        print(f"| {hz} | failed |"); continue
    gm = s.get("gpu_metrics") or {}
    a = gm.get("all_kernels") or {}
    total = a.get("time_ns") or 1
    rows = []
    for k in s["kernels"]:
        for c in (k.get("sampled") or {}).get("configs", []):
            key = (k["name"], c["grid"], c["block"])
            if key in ncu and c["time_ns"] / total >= 0.05 and c["coverage_pct"] >= 80 and c.get("dram_pct") is not None:
                rows.append((c["time_ns"], abs(c["dram_pct"] - ncu[key]), c["bound"]))
    t = sum(r[0] for r in rows) or 1
    mean = sum(r[0] * r[1] for r in rows) / t
    worst = max((r[1] for r in rows), default=0)
    ncu_bounds = {(r["kernel"], r["grid"], r["block"]): r["ncu_bound"] for r in ref["gpu_metrics"]["beside_ncu"]}
    same = 0
    for k in s["kernels"]:
        for c in (k.get("sampled") or {}).get("configs", []):
            key = (k["name"], c["grid"], c["block"])
            if key in ncu and c["time_ns"] / total >= 0.05 and c["coverage_pct"] >= 80:
                same += c["time_ns"] * (c["bound"] == ncu_bounds[key])
    size = os.path.getsize(f"{run}/nsys/run.sqlite") / 1e6
    nsys_s = s["passes"]["nsys"].get("duration_s") or 0
    print(f"| {hz / 1e3:g} kHz | {nsys_s:.1f} | {size:.0f} | {a.get('coverage_pct', 0):.1f}% | {a.get('samples', 0)} | {len(rows)} | {mean:.1f} | {worst:.1f} | {100 * same / t:.0f}% |")
PY
