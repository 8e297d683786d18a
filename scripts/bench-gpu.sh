#!/usr/bin/env bash
# Benchmark (not a test): what a deep profile costs on this GPU machine. For the tiny LLM at 8
# and 32 decode steps, in one run: the bare workload, `stage2 profile` (nsys on decode, then
# the focused ncu pass: the kernels covering 95% of decode kernel time, each once), and a naive
# ncu pass (every launch in decode, capped at NAIVE_CAP_S seconds, its full cost extrapolated
# from the launches it covered). Prints a Markdown table.
#
#   scripts/bench-gpu.sh            env: STAGE2_BIN, PYTHON, STEPS ("8 32"), NAIVE_CAP_S (120),
#                                        STAGE2_EXTRA (e.g. ncu.clock_control=none)
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
cap=${NAIVE_CAP_S:-120}
root=${RUN_ROOT:-tmp/bench}
[ -x "$bin" ] || { echo "bench: no stage2 binary at $bin (cargo build --release)" >&2; exit 1; }
ncu=$(command -v ncu) || { echo "bench: ncu not on PATH" >&2; exit 1; }
now() { date +%s.%N; }
mkdir -p "$root"
# One untimed run first: the first import of torch after boot reads its files from disk, and
# every timed run below should see the same warm file cache.
"$py" examples/workloads/tiny_llm.py --new-tokens 1 >/dev/null 2>&1
rows=()
for steps in ${STEPS:-8 32}; do
  wl=("$py" examples/workloads/tiny_llm.py --new-tokens "$steps")
  t0=$(now); "${wl[@]}" >/dev/null 2>&1 || { echo "bench: bare workload failed" >&2; exit 1; }; t1=$(now)
  id="bench-$steps-$(date -u +%H%M%S)"
  # shellcheck disable=SC2086
  "$bin" -q profile --run-root "$root" --run-id "$id" --nvtx-capture decode ${STAGE2_EXTRA:-} -- "${wl[@]}" \
    >"$root/$id.log" 2>&1 || { echo "bench: stage2 profile failed (see $root/$id.log)" >&2; }
  t2=$(now)
  naive_log="$root/$id/naive-ncu.log"
  t3=$(now)
  timeout -k 10 "$cap" "$ncu" --target-processes all --clock-control none --nvtx --nvtx-include decode/ \
    --set roofline -f -o "$root/$id/naive" "${wl[@]}" >"$naive_log" 2>&1
  t4=$(now)
  rows+=("$("$py" - "$root/$id" "$steps" "$t0" "$t1" "$t2" "$t3" "$t4" "$naive_log" "$cap" <<'PY'
import json, sys
run, steps, t0, t1, t2, t3, t4, naive_log, cap = sys.argv[1:]
t0, t1, t2, t3, t4, cap = map(float, (t0, t1, t2, t3, t4, cap))
st = json.load(open(f"{run}/status.json"))["passes"]
sm = json.load(open(f"{run}/summary.json"))
bare, whole, naive = t1 - t0, t2 - t1, t4 - t3
nsys_s = st["nsys"].get("duration_s") or 0
ncu_s = st["ncu"].get("duration_s") or 0
covered = sum(1 for l in open(naive_log, errors="replace") if "==PROF== Profiling" in l)
total = sm["totals"]["kernel_launches"]
capped = naive >= cap - 1
naive_full = naive * total / max(covered, 1) if capped else naive
cov = sm["totals"].get("ncu_coverage_pct")
print(f"| {steps} | {bare:.1f} | {nsys_s:.1f} | {ncu_s:.1f} | {whole:.1f} | {whole / bare:.2f}x | "
      f"{naive:.0f}{' (capped)' if capped else ''} | {covered} of {total} | {naive_full:.0f} | "
      f"{naive_full / max(ncu_s, 1e-9):.1f}x | {cov:.1f}% |")
PY
)")
done
echo
echo "| decode steps | bare (s) | nsys pass (s) | focused ncu (s) | whole stage2 profile (s) | whole / bare | naive ncu (s) | naive launches profiled | naive full cost, extrapolated (s) | naive / focused | ncu coverage of decode kernel time |"
echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${rows[@]}"
