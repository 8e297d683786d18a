#!/usr/bin/env bash
# Benchmark (not a test): what a deep profile costs on this GPU machine, for the transformers
# generate() workloads. For each variant, side by side in one run: the bare workload, a first
# `stage2 profile` with an empty metrics cache (nsys pass, ncu pass with its predicted and
# actual cost), and a re-run with the cache the first one filled. Prints a Markdown table.
#
#   scripts/bench-gpu.sh [VARIANT...]     variants: eager static large moe loop lead
#                                         (default: eager static large)
#   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/bench), STAGE2_EXTRA (e.g. ncu.clock_control=none),
#        CAPTURE (the range nsys is gated on: decode; prefill is the README's lead command)
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
# One untimed run first: the first import of torch reads its files from disk, and every timed
# run below should see the same warm file cache.
"$py" $w --arch qwen2 --new-tokens 1 >/dev/null 2>&1
rows=()
for v in "${@:-eager static large}"; do
  for variant in $v; do
    args=$(argv_of "$variant") || exit 2
    stamp=$(date -u +%H%M%S)
    cache="$root/cache-$variant-$stamp"
    t0=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || { echo "bench: bare $variant failed" >&2; continue; }
    t1=$(now)
    for pass in first warm; do
      id="bench-$variant-$pass-$stamp"
      # shellcheck disable=SC2086
      "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$cache" \
        --nvtx-capture "$(capture_of "$variant")" ${STAGE2_EXTRA:-} -- "$py" $args >"$root/$id.log" 2>&1 \
        || echo "bench: stage2 profile $variant ($pass) failed (see $root/$id.log)" >&2
      eval "t_$pass=$(now)"
    done
    # shellcheck disable=SC2154
    rows+=("$("$py" - "$root" "$variant" "$stamp" "$t0" "$t1" "$t_first" "$t_warm" <<'PY'
import json, sys
root, v, stamp, t0, t1, tf, tw = sys.argv[1:]
t0, t1, tf, tw = map(float, (t0, t1, tf, tw))
bare, first, warm = t1 - t0, tf - t1, tw - tf
def passes(pass_):
    st = json.load(open(f"{root}/bench-{v}-{pass_}-{stamp}/status.json"))["passes"]
    return st["nsys"], st["ncu"]
nsys, ncu = passes("first")
rec = ncu.get("ncu") or {}
plan, act = rec.get("cost") or {}, rec.get("actual") or {}
warm_ncu = passes("warm")[1]
hits = ((warm_ncu.get("ncu") or {}).get("cache") or {}).get("hits", 0)
shapes = rec.get("shapes") or {}
shape_col = (f"{'every' if shapes.get('every_shape') else 'first'} ({shapes.get('first_shapes_pct', 0):.0f}% in first)"
             if shapes else "-")
f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"
print(f"| {v} | {bare:.1f} | {f(nsys.get('duration_s'))} | {f(ncu.get('duration_s'))} | "
      f"{shape_col} | {act.get('kernels', '-')} | {act.get('passes_per_kernel', '-')} | {f(act.get('s_per_kernel'), 2)} | "
      f"{f(plan.get('predicted_s'))} | {f(act.get('prediction_error_pct'), 0)}% | "
      f"{first:.1f} | {first / bare:.2f}x | {warm:.1f} ({hits} cached, ncu {f(warm_ncu.get('duration_s'))} s) | {warm / bare:.2f}x |")
PY
)")
  done
done
echo
echo "| variant | bare (s) | nsys pass (s) | ncu pass (s) | launch configurations | launches profiled | passes per kernel | s per kernel | predicted ncu (s) | prediction error | whole, first run (s) | first / bare | whole, warm cache (s) | warm / bare |"
echo "|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${rows[@]}"
