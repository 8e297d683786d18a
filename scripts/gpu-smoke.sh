#!/usr/bin/env bash
# GPU smoke run: `stage2 doctor`, then a real `stage2 profile` of the tiny LLM (nsys gated on
# prefill, ncu on decode), then checks on the run directory and a table of wall times.
#
#   scripts/gpu-smoke.sh [pushpop|startend]
#
# Env: STAGE2_BIN (default: build with cargo, else target/release/stage2), PYTHON (python3),
# RUN_ROOT (tmp/smoke), NEW_TOKENS (8), STAGE2_EXTRA (extra overrides, e.g. ncu.clock_control=none).
# Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
style=${1:-pushpop}
py=${PYTHON:-python3}
root=${RUN_ROOT:-tmp/smoke}
bin=${STAGE2_BIN:-}
if [ -z "$bin" ]; then
  if command -v cargo >/dev/null 2>&1; then
    cargo build --release --locked || exit 1
  fi
  bin=target/release/stage2
fi
[ -x "$bin" ] || { echo "smoke: no stage2 binary at $bin" >&2; exit 1; }
workload=("$py" examples/workloads/tiny_llm.py --new-tokens "${NEW_TOKENS:-8}" --nvtx-style "$style")

echo "== stage2 doctor"
"$bin" doctor || { echo "smoke: doctor says profiling cannot work here" >&2; exit 1; }

echo "== bare workload"
t0=$(now); "${workload[@]}" || { echo "smoke: the bare workload failed" >&2; exit 1; }; t1=$(now)

id="smoke-$style-$(date -u +%Y%m%d-%H%M%S)"
echo "== stage2 profile ($id)"
# shellcheck disable=SC2086
"$bin" profile --run-root "$root" --run-id "$id" --nvtx-capture prefill \
  ncu.nvtx_include=decode ${STAGE2_EXTRA:-} -- "${workload[@]}"
rc=$?
t2=$(now)
run="$root/$id"
[ -d "$run" ] || { echo "smoke: no run directory $run" >&2; exit 1; }

echo "== checks"
"$py" - "$run" "$rc" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "$style" <<'PY'
import csv, json, os, sys
run, rc, bare, whole, style = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
fails = []
layout = ["config.yaml", "env.json", "inputs.yaml", "status.json", "nsys/cmd.txt", "nsys/nsys.log",
          "nsys/run.nsys-rep", "nsys/summary_cuda_gpu_kern_sum.csv", "nsys/summary_nvtx_sum.csv",
          "nsys/summary_cuda_api_sum.csv", "nsys/run.sqlite", "ncu/cmd.txt", "ncu/ncu.log",
          "ncu/sections.txt", "ncu/decode.ncu-rep", "ncu/decode_raw.csv", "kernels.md",
          "stakeholder_summary.md", "kernels.csv", "summary.json"]
for f in layout:
    p = os.path.join(run, f)
    if not os.path.isfile(p) or os.path.getsize(p) == 0:
        fails.append(f"missing or empty: {f}")
if rc != 0:
    fails.append(f"stage2 profile exited {rc}")
rows = list(csv.DictReader(open(os.path.join(run, "kernels.csv")))) if os.path.exists(os.path.join(run, "kernels.csv")) else []
if len(rows) < 10:
    fails.append(f"kernels.csv has {len(rows)} kernels, want >= 10")
md = open(os.path.join(run, "kernels.md")).read() if os.path.exists(os.path.join(run, "kernels.md")) else ""
if md.count("\n| ") < 10:
    fails.append("kernels.md lists fewer than 10 kernels")
# When ncu profiled another range than nsys captured, its kernels have their own rows.
ncu_rows = [r for r in rows if r.get("time_source") == "ncu"] or rows
measured = [r for r in ncu_rows[:3] if r.get("sm_throughput_pct")]
if len(measured) < min(3, len(ncu_rows)):
    fails.append("ncu metrics missing for the top 3 kernels")
try:
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["schema_version"] >= 1
except Exception as e:
    fails.append(f"summary.json invalid: {e}")
    summary = {}
status = json.load(open(os.path.join(run, "status.json")))
p = status.get("passes", {})
d = lambda k: p.get(k, {}).get("duration_s") or 0.0
cov = summary.get("totals", {}).get("ncu_coverage_pct")
print()
print(f"| NVTX style | bare workload (s) | nsys pass (s) | ncu pass (s) | whole stage2 profile (s) | kernels | ncu coverage |")
print(f"|---|--:|--:|--:|--:|--:|--:|")
print(f"| {style} | {bare:.1f} | {d('nsys'):.1f} | {d('ncu'):.1f} | {whole:.1f} | {len(rows)} | {'n/a (ncu profiled another range)' if cov is None else f'{cov:.1f}%'} |")
print()
for f in fails:
    print("FAIL", f)
print("smoke:", "FAILED" if fails else "passed", run)
sys.exit(1 if fails else 0)
PY
