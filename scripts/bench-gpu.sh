#!/usr/bin/env bash
# Benchmark (not a test): what a deep profile costs on this GPU machine, for the transformers
# generate() workloads. For each variant, side by side in one run: the bare workload, a first
# `stage2 profile` with an empty metrics cache (nsys pass, ncu pass with its predicted and
# actual cost), a re-run with the cache the first one filled, and the shallow depth (`--quick`:
# the nsys pass alone, with GPU-metrics sampling). Prints a Markdown table; each run's log
# ($RUN_ROOT/<id>.log) has every line behind the seconds since that run started.
#
# The bare workload runs twice, before the three profiles and after them, and every ratio is
# taken against the mean of the two: a bare run of one workload varies 12-20 s between runs on
# these machines, and bracketing the profiles reads them against the machine of their minutes.
#
# The quick run has a metrics cache of its own, so it samples as a first run does (only the
# machine's answer of which GPUs nsys can sample is copied in, as any earlier run on the machine
# leaves it); the warm re-run reuses the first run's sampled figures (nsys.gpu_metrics.reuse).
#
#   scripts/bench-gpu.sh [VARIANT...]     variants: eager static large moe moeworker loop lead
#                                         spec compile (default: eager static large; the
#                                         whole table: all nine, about 24 minutes on an H100);
#                                         split (two GPUs: a model split across them)
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
echo "| variant | bare, before and after (s) | nsys pass (s) | capture start (s) | export + stats (s) | ncu pass (s) | ncu before first kernel (s) | launch configurations | launches profiled | passes per kernel | s per kernel | predicted ncu (s) | prediction error | whole, first run (s) | beside the passes (s) | first / bare | whole, warm cache (s) | warm / bare | quick (s) | quick / bare | sampling (quick; warm) | held copy busy (s from start; capture) | ncu time budget, first run | sampled DRAM vs ncu, first run (mean / worst) |"
echo "|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|---|---|"
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
    for pass in first warm quick; do
      id="bench-$variant-$pass-$stamp"
      depth=(); [ "$pass" = quick ] && depth=(--quick)
      # The shallow depth as a first run: a cache of its own, so it samples (a re-run of the
      # same command would reuse the first run's sampled figures: the warm column).
      # What the machine answered once (which GPUs nsys can sample) is kept, as in a user's
      # cache after any earlier run on this machine: the column times a new command.
      run_cache=$cache
      if [ "$pass" = quick ]; then
        run_cache="$cache-quick"
        mkdir -p "$run_cache" && cp -r "$cache/nsys-devices" "$run_cache/" 2>/dev/null
      fi
      # shellcheck disable=SC2086
      # Each log line behind the seconds since the run started: where stage2's own time goes.
      "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$run_cache" "${depth[@]}" \
        --nvtx-capture "$(capture_of "$variant")" ${STAGE2_EXTRA:-} -- "$py" $args 2>&1 \
        | stamp >"$root/$id.log" \
        || echo "bench: stage2 profile $variant ($pass) failed (see $root/$id.log)" >&2
      eval "t_$pass=$(now)"
    done
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || echo "bench: bare $variant (after) failed" >&2
    t_after=$(now)
    # shellcheck disable=SC2154
    rows+=("$("$py" - "$root" "$variant" "$stamp" "$t0" "$t1" "$t_first" "$t_warm" "$t_quick" "$t_after" <<'PY'
import json, sys
root, v, stamp, t0, t1, tf, tw, tq, ta = sys.argv[1:]
t0, t1, tf, tw, tq, ta = map(float, (t0, t1, tf, tw, tq, ta))
before, after = t1 - t0, ta - tq
bare, first, warm, quick = (before + after) / 2, tf - t1, tw - tf, tq - tw
def passes(pass_):
    st = json.load(open(f"{root}/bench-{v}-{pass_}-{stamp}/status.json"))["passes"]
    return st["nsys"], st["ncu"]
def sampled(run):
    try:
        gm = json.load(open(f"{run}/summary.json")).get("gpu_metrics") or {}
    except (OSError, ValueError):
        return "-"
    a = gm.get("all_kernels") or {}
    r = gm.get("reused")
    reused = (f", reused from {r['run']} ({r['unseen']['configs']} configurations unseen, {r['moved']['configs']} moved)"
              if r else "")
    return f"{gm.get('frequency_hz', 0) / 1e3:.0f} kHz, {a.get('coverage_pct', 0):.0f}% covered{reused}" if a else (gm.get("note") or "none")
def agreement(run):
    try:
        ag = (json.load(open(f"{run}/summary.json")).get("gpu_metrics") or {}).get("agreement")
    except (OSError, ValueError):
        return "-"
    if not ag:
        return "none compared"
    return (f"{ag['compared']} configurations: {ag['dram_mean_diff_points']:.1f} / {ag['dram_worst_diff_points']:.1f} points, "
            f"{ag['same_class_pct']:.0f}% same class")
nsys, ncu = passes("first")
rec = ncu.get("ncu") or {}
plan, act = rec.get("cost") or {}, rec.get("actual") or {}
warm_ncu = passes("warm")[1]
hits = ((warm_ncu.get("ncu") or {}).get("cache") or {}).get("hits", 0)
warm_nsys = passes("warm")[0]
warm_t = (warm_nsys.get("nsys") or {}).get("timing") or {}
# What a warm run spends beside the nsys pass's profile and post steps (query, selection, report).
warm_rest = None
if warm_nsys.get("duration_s") is not None:
    warm_rest = warm - warm_nsys["duration_s"] - (warm_t.get("post_steps_s") or 0.0)
# What a first run spends outside its two passes: start-up (tools, env.json), selection, report.
beside = None
if nsys.get("duration_s") is not None and ncu.get("duration_s") is not None:
    beside = first - nsys["duration_s"] - ncu["duration_s"]
shapes = rec.get("shapes") or {}
shape_col = (f"{'every' if shapes.get('every_shape') else 'first'} ({shapes.get('first_shapes_pct', 0):.0f}% in first)"
             if shapes else "-")
f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"
budget = rec.get("budget") or {}
budget_col = f"{budget['s']:.0f} s, {'reached' if budget.get('reached') else 'not reached'}" if budget else "none"
timing = (nsys.get("nsys") or {}).get("timing") or {}
held = (rec.get("early_start") or {})
held_col = (f"{f(held.get('held_after_s'))} ({f(timing.get('capture_start_s'))}-{f(timing.get('capture_end_s'))}), "
            f"{'attached' if held.get('attached') else 'not attached'}") if held else "not started"
print(f"| {v} | {before:.1f}, {after:.1f} | {f(nsys.get('duration_s'))} | {f(timing.get('capture_start_s'))} | {f(timing.get('post_steps_s'))} | "
      f"{f(ncu.get('duration_s'))} | {f(act.get('before_first_s'))} | "
      f"{shape_col} | {act.get('kernels', '-')} | {act.get('passes_per_kernel', '-')} | {f(act.get('s_per_kernel'), 2)} | "
      f"{f(plan.get('predicted_s'))} | {f(act.get('prediction_error_pct'), 0)}% | "
      f"{first:.1f} | {f(beside)} | {first / bare:.2f}x | {warm:.1f} ({hits} cached, ncu {f(warm_ncu.get('duration_s'))} s, {f(warm_rest)} s beside nsys) | {warm / bare:.2f}x | "
      f"{quick:.1f} | {quick / bare:.2f}x | {sampled(f'{root}/bench-{v}-quick-{stamp}')}; warm: {sampled(f'{root}/bench-{v}-warm-{stamp}')} | {held_col} | {budget_col} | {agreement(f'{root}/bench-{v}-first-{stamp}')} |")
PY
)")
    echo "${rows[-1]}"
  done
done
