#!/usr/bin/env bash
# Benchmark (not a test): `ncu.second_gpu` on a machine with two GPUs of one model. Per
# variant, side by side in one run: the bare workload, `stage2 profile` with the passes one
# after the other, and with the ncu pass on the second GPU while the nsys pass runs. Both
# profiles use the defaults (nsys captures prefill, ncu profiles each distinct decode kernel),
# where ncu's kernels do not come from the nsys pass. The nsys pass's kernel time (prefill,
# from its cuda_gpu_kern_sum) shows whether the ncu pass beside it disturbed its timings.
# Prints a Markdown table.
#
#   scripts/bench-second-gpu.sh [VARIANT...]   variants: eager large (default: both)
#   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/bench), STAGE2_EXTRA (e.g. ncu.clock_control=none)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/bench}
w=$hf_workload
[ -x "$bin" ] || { echo "bench: no stage2 binary at $bin (cargo build --release)" >&2; exit 1; }
mkdir -p "$root"
"$py" $w --arch qwen2 --new-tokens 1 >/dev/null 2>&1
rows=()
for variant in ${@:-eager large}; do
  args=$(argv_of "$variant") || exit 2
  stamp=$(date -u +%H%M%S)
  t0=$(now)
  # shellcheck disable=SC2086
  "$py" $args >/dev/null 2>&1 || { echo "bench: bare $variant failed" >&2; continue; }
  t1=$(now)
  for mode in seq beside; do
    id="second-$variant-$mode-$stamp"
    extra=""; [ "$mode" = beside ] && extra="ncu.second_gpu=true"
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --no-cache $extra ${STAGE2_EXTRA:-} \
      -- "$py" $args >"$root/$id.log" 2>&1 \
      || echo "bench: stage2 profile $variant ($mode) failed (see $root/$id.log)" >&2
    eval "t_$mode=$(now)"
  done
  # shellcheck disable=SC2154
  rows+=("$("$py" - "$root" "$variant" "$stamp" "$t0" "$t1" "$t_seq" "$t_beside" <<'PY'
import csv, json, sys
root, v, stamp, t0, t1, ts, tb = sys.argv[1:]
t0, t1, ts, tb = map(float, (t0, t1, ts, tb))
bare, seq, beside = t1 - t0, ts - t1, tb - ts
def facts(mode):
    d = f"{root}/second-{v}-{mode}-{stamp}"
    st = json.load(open(f"{d}/status.json"))["passes"]
    with open(f"{d}/nsys/summary_cuda_gpu_kern_sum.csv") as f:
        ms = sum(float(r["Total Time (ns)"]) for r in csv.DictReader(f)) / 1e6
    g = ((st["ncu"].get("ncu") or {}).get("second_gpu") or {})
    return st["nsys"].get("duration_s"), st["ncu"].get("duration_s"), ms, g
for mode, whole in (("seq", seq), ("beside", beside)):
    n, c, ms, g = facts(mode)
    where = f"GPU {g['nsys']} + GPU {g['ncu']} at once" if g else "one after the other"
    print(f"| {v} | {where} | {bare:.1f} | {n:.1f} | {c:.1f} | {ms:.2f} | {whole:.1f} | {whole / bare:.2f}x |")
PY
)")
done
echo
echo "| variant | passes | bare (s) | nsys pass (s) | ncu pass (s) | nsys prefill kernel time (ms) | whole (s) | whole / bare |"
echo "|---|---|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${rows[@]}"
