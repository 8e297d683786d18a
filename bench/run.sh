#!/usr/bin/env bash
# The benchmarks: one runner, one Markdown table per run on stdout. Keep a run's table as
# bench/runs/DATE-MACHINE-WHAT.md (raw numbers, its first line naming the machine and command).
#
#   bench/run.sh gpu [VARIANT...]     what a deep profile costs: per variant the bare workload
#                                     before and after, a first run (empty metrics cache), a warm
#                                     re-run on that cache and --quick (a cache of its own), every
#                                     ratio against the mean of the two bare runs. Variants:
#                                     scripts/hf-workloads.sh (default eager static large; the
#                                     whole table: eager lead static moeworker spec compile loop
#                                     large moe, about 25 minutes on an H100; split needs 2 GPUs)
#   bench/run.sh warm [VARIANT...]    REPEATS rounds of bare / warm re-run / --quick, alternated
#                                     so all three see the same machine state, then the medians
#   bench/run.sh sampling [HZ...]     GPU-metrics frequency against ncu on the eager decode: one
#                                     full profile measuring every launch configuration, then
#                                     --quick at each frequency (default 10000 50000 200000)
#   bench/run.sh families [SHAPE...]  loop shapes and model families: bare run, then a first run
#                                     with run.crosscheck=true (NVIDIA's own summaries beside
#                                     stage2's figures). Default: auto startend chunked profapi
#                                     graphs topp nested neox; more: opt mistral qwen3moe
#                                     deepseek3 mamba t5
#   bench/run.sh levers               each lever stage2 sizes on a base run, applied for real: nsys
#                                     passes (--no-ncu) of eager against static (CUDA graphs) and
#                                     torch.compile, batch 1 against 8, and the cuDNN loop against
#                                     the same loop without cuDNN's attention; predicted saving per
#                                     step (per token for the batch) against the measured change,
#                                     and whether their ratio is in the band the reports state
#   bench/run.sh scale [COPIES...]    `stage2 report` on the sample run's export repeated COPIES
#                                     times (scripts/synth-export.py) against the sqlite3 scan
#                                     floor; no GPU (default 1024 4096: 1.5M, 6M launches)
#   bench/run.sh samples [COPIES...]  reading GPU-metrics samples: `stage2 report` on the
#                                     GPU-metrics capture (tests/data/hf/gpu-metrics) repeated
#                                     COPIES times, with and without its GPU_METRICS rows (the
#                                     difference is the samples' cost), against sqlite3 scanning
#                                     the rows; no GPU (default 12 243: 1M, 20M rows)
#
# env: STAGE2_BIN (target/release/stage2), PYTHON (python3), RUN_ROOT (tmp/bench-WHAT),
#      STAGE2_EXTRA (overrides for every profile, e.g. ncu.clock_control=none), CAPTURE (the
#      range nsys is gated on; decode), REPEATS (3). Each profile's log, every line behind the
#      seconds since it started, is RUN_ROOT/ID.log.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
what=${1:-}
[ $# -gt 0 ] && shift
root=${RUN_ROOT:-tmp/bench-$what}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }'; }
need_bin() { [ -x "$bin" ] || { echo "bench: no stage2 binary at $bin (cargo build --release)" >&2; exit 1; }; }
# One untimed run first: the first import of torch reads its files from disk, and every timed
# run should see the same warm file cache.
warm_files() { "$py" $hf_workload --arch qwen2 --new-tokens 1 >/dev/null 2>&1; }
# profile ID CACHE VARIANT [FLAGS...]: stage2 profile of a variant, its log stamped.
profile() {
  local id=$1 cache=$2 v=$3; shift 3
  # shellcheck disable=SC2046,SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$cache" "$@" \
    --nvtx-capture "$(capture_of "$v")" ${STAGE2_EXTRA:-} -- "$py" $(argv_of "$v") 2>&1 \
    | stamp >"$root/$id.log"
  [ "${PIPESTATUS[0]}" = 0 ] || echo "bench: $id failed (see $root/$id.log)" >&2
}
# A --quick run's cache: fresh, but for the machine's answer of which GPUs nsys can sample,
# as any earlier run on the machine leaves it.
quick_cache() { mkdir -p "$2" && cp -r "$1/nsys-devices" "$2/" 2>/dev/null; echo "$2"; }

gpu() {
  need_bin; mkdir -p "$root"; warm_files
  echo "| variant | bare, before and after (s) | nsys pass (s) | capture start (s) | export + stats (s) | ncu pass (s) | ncu before first kernel (s) | launch configurations | launches profiled | passes per kernel | s per kernel | predicted ncu (s) | prediction error | whole, first run (s) | beside the passes (s) | first / bare | whole, warm cache (s) | warm / bare | quick (s) | quick / bare | sampling (quick; warm) | held copy busy (s from start; capture) | ncu time budget, first run | sampled DRAM vs ncu, first run (mean / worst) |"
  echo "|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|---|"
  local v args s cache t0 t1 tf tw tq ta
  for v in ${*:-eager static large}; do
    args=$(argv_of "$v") || exit 2
    s=$(date -u +%H%M%S); cache="$root/cache-$v-$s"
    t0=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || { echo "bench: bare $v failed" >&2; continue; }
    t1=$(now); profile "bench-$v-first-$s" "$cache" "$v"
    tf=$(now); profile "bench-$v-warm-$s" "$cache" "$v"
    tw=$(now); profile "bench-$v-quick-$s" "$(quick_cache "$cache" "$cache-quick")" "$v" --quick
    tq=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || echo "bench: bare $v (after) failed" >&2
    ta=$(now)
    "$py" - "$root" "$v" "$s" "$t0" "$t1" "$tf" "$tw" "$tq" "$ta" <<'PY'
import json, sys
root, v, s, *t = sys.argv[1:]
t0, t1, tf, tw, tq, ta = map(float, t)
before, after = t1 - t0, ta - tq
bare, first, warm, quick = (before + after) / 2, tf - t1, tw - tf, tq - tw
run = lambda p: f"{root}/bench-{v}-{p}-{s}"
def load(p, name):
    try:
        return json.load(open(f"{run(p)}/{name}"))
    except (OSError, ValueError):
        return {}
f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"
def sampled(p):
    gm = load(p, "summary.json").get("gpu_metrics") or {}
    a, r = gm.get("all_kernels") or {}, gm.get("reused")
    re = (f", reused from {r['run']} ({r['unseen']['configs']} configurations unseen, "
          f"{r['moved']['configs']} moved)") if r else ""
    return (f"{gm.get('frequency_hz', 0) / 1e3:.0f} kHz, {a.get('coverage_pct', 0):.0f}% covered{re}"
            if a else (gm.get("note") or "none"))
ag = (load("first", "summary.json").get("gpu_metrics") or {}).get("agreement")
agree = (f"{ag['compared']} configurations: {ag['dram_mean_diff_points']:.1f} / "
         f"{ag['dram_worst_diff_points']:.1f} points, {ag['same_class_pct']:.0f}% same class"
         if ag else "none compared")
st = load("first", "status.json").get("passes") or {}
nsys, ncu = st.get("nsys") or {}, st.get("ncu") or {}
wst = load("warm", "status.json").get("passes") or {}
wnsys, wncu = wst.get("nsys") or {}, wst.get("ncu") or {}
rec = ncu.get("ncu") or {}
plan, act = rec.get("cost") or {}, rec.get("actual") or {}
timing = (nsys.get("nsys") or {}).get("timing") or {}
hits = ((wncu.get("ncu") or {}).get("cache") or {}).get("hits", 0)
wpost = ((wnsys.get("nsys") or {}).get("timing") or {}).get("post_steps_s") or 0.0
wrest = warm - wnsys["duration_s"] - wpost if wnsys.get("duration_s") is not None else None
beside = (first - nsys["duration_s"] - ncu["duration_s"]
          if None not in (nsys.get("duration_s"), ncu.get("duration_s")) else None)
sh = rec.get("shapes") or {}
shapes = (f"{'every' if sh.get('every_shape') else 'first'} ({sh.get('first_shapes_pct', 0):.0f}% in first)"
          if sh else "-")
b = rec.get("budget") or {}
budget = f"{b['s']:.0f} s, {'reached' if b.get('reached') else 'not reached'}" if b else "none"
h = rec.get("early_start") or {}
held = (f"{f(h.get('held_after_s'))} ({f(timing.get('capture_start_s'))}-{f(timing.get('capture_end_s'))}), "
        f"{'attached' if h.get('attached') else 'not attached'}") if h else "not started"
print(f"| {v} | {before:.1f}, {after:.1f} | {f(nsys.get('duration_s'))} | {f(timing.get('capture_start_s'))} | "
      f"{f(timing.get('post_steps_s'))} | {f(ncu.get('duration_s'))} | {f(act.get('before_first_s'))} | {shapes} | "
      f"{act.get('kernels', '-')} | {act.get('passes_per_kernel', '-')} | {f(act.get('s_per_kernel'), 2)} | "
      f"{f(plan.get('predicted_s'))} | {f(act.get('prediction_error_pct'), 0)}% | {first:.1f} | {f(beside)} | "
      f"{first / bare:.2f}x | {warm:.1f} ({hits} cached, ncu {f(wncu.get('duration_s'))} s, {f(wrest)} s beside nsys) | "
      f"{warm / bare:.2f}x | {quick:.1f} | {quick / bare:.2f}x | {sampled('quick')}; warm: {sampled('warm')} | "
      f"{held} | {budget} | {agree} |")
PY
  done
}

warm() {
  need_bin; mkdir -p "$root"; warm_files
  echo "| variant | round | bare (s) | warm (s) | warm / bare | quick (s) | quick / bare |"
  echo "|---|--:|--:|--:|--:|--:|--:|"
  local v args i t0 t1 t2 t3 rounds
  for v in ${*:-eager static}; do
    args=$(argv_of "$v") || exit 2
    profile "$v-first" "$root/cache-$v" "$v"
    rounds=()
    for i in $(seq "${REPEATS:-3}"); do
      t0=$(now)
      # shellcheck disable=SC2086
      "$py" $args >/dev/null 2>&1 || echo "bench: bare $v failed" >&2
      t1=$(now); profile "$v-warm-$i" "$root/cache-$v" "$v"
      t2=$(now); profile "$v-quick-$i" "$(quick_cache "$root/cache-$v" "$root/cache-$v-quick-$i")" "$v" --quick
      t3=$(now)
      rounds+=("$(secs "$t0" "$t1") $(secs "$t1" "$t2") $(secs "$t2" "$t3")")
      read -r b w q <<<"${rounds[-1]}"
      echo "| $v | $i | $b | $w | $(ratio "$b" "$w") | $q | $(ratio "$b" "$q") |"
    done
    printf '%s\n' "${rounds[@]}" | "$py" -c '
import statistics as s, sys
p = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
b, w, q = (s.median(x[i] for x in p) for i in range(3))
rw, rq = (s.median(x[i] / x[0] for x in p) for i in (1, 2))
print(f"| {sys.argv[1]} | median | {b:.1f} | {w:.1f} | {w / b:.2f}x (rounds {rw:.2f}x) | {q:.1f} | {q / b:.2f}x (rounds {rq:.2f}x) |")' "$v"
  done
}

sampling() {
  need_bin; mkdir -p "$root"
  local s hz freqs=(${*:-10000 50000 200000})
  s=$(date -u +%H%M%S)
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "ref-$s" --no-cache --nvtx-capture decode \
    ncu.shapes=all ${STAGE2_EXTRA:-} -- "$py" $(argv_of eager) 2>&1 | stamp >"$root/ref-$s.log"
  for hz in "${freqs[@]}"; do
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "q$hz-$s" --quick --nvtx-capture decode \
      "nsys.gpu_metrics.frequency_hz=$hz" -- "$py" $(argv_of eager) 2>&1 | stamp >"$root/q$hz-$s.log"
  done
  "$py" - "$root" "$s" "${freqs[@]}" <<'PY'
import json, os, sys
root, s, *freqs = sys.argv[1:]
ref = {(r["kernel"], r["grid"], r["block"]): r
       for r in json.load(open(f"{root}/ref-{s}/summary.json"))["gpu_metrics"]["beside_ncu"]}
print("| frequency | nsys pass (s) | export (MB) | coverage | samples | configurations compared | DRAM diff, mean (points) | worst | same class |")
print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for hz in map(int, freqs):
    run = f"{root}/q{hz}-{s}"
    try:
        sm = json.load(open(f"{run}/summary.json"))
    except OSError:
        print(f"| {hz / 1e3:g} kHz | failed |"); continue
    a = (sm.get("gpu_metrics") or {}).get("all_kernels") or {}
    total = a.get("time_ns") or 1
    rows = [(c["time_ns"], abs(c["dram_pct"] - ref[key]["ncu_dram_pct"]), c["bound"] == ref[key]["ncu_bound"])
            for k in sm["kernels"] for c in (k.get("sampled") or {}).get("configs", [])
            for key in [(k["name"], c["grid"], c["block"])]
            if key in ref and c["time_ns"] / total >= 0.05 and c["coverage_pct"] >= 80
            and c.get("dram_pct") is not None]
    t = sum(r[0] for r in rows) or 1
    print(f"| {hz / 1e3:g} kHz | {sm['passes']['nsys'].get('duration_s') or 0:.1f} | "
          f"{os.path.getsize(f'{run}/nsys/run.sqlite') / 1e6:.0f} | {a.get('coverage_pct', 0):.1f}% | "
          f"{a.get('samples', 0)} | {len(rows)} | {sum(r[0] * r[1] for r in rows) / t:.1f} | "
          f"{max((r[1] for r in rows), default=0):.1f} | {100 * sum(r[0] for r in rows if r[2]) / t:.0f}% |")
PY
}

shape() {
  local w=examples/workloads
  case $1 in
    auto) echo "--auto-nvtx --nvtx-capture decode -- $py $w/families.py --arch gpt2" ;;
    startend) echo "--nvtx-capture decode -- $py $w/families.py --arch gemma2 --loop" ;;
    chunked) echo "--nvtx-capture step -- $py $w/families.py --arch phi3 --chunked --new-tokens 24" ;;
    profapi) echo "nsys.capture_range=cudaProfilerApi -- $py $hf_workload --arch llama --profiler-api" ;;
    graphs) echo "--nvtx-capture step -- $py $w/graph_loop.py" ;;
    topp) echo "--nvtx-capture step -- $py $w/topp_loop.py" ;;
    nested) echo "--nvtx-capture work -- $py $w/nested_ranges.py" ;;
    neox|opt|mistral|qwen3moe|deepseek3|mamba|t5)
      echo "--auto-nvtx --nvtx-capture decode -- $py $w/families.py --arch $1" ;;
    *) echo "unknown shape $1" >&2; return 1 ;;
  esac
}

families() {
  need_bin; mkdir -p "$root"
  echo "| shape | rc | bare (s) | stage2 (s) | / bare | kernels with ncu figures | ncu share of kernel time | verdict | NVIDIA cross-check | ranges.csv rows | warnings |"
  echo "|---|--:|--:|--:|--:|--:|--:|---|---|--:|--:|"
  local s spec id rc t0 t1 t2 row
  for s in ${*:-auto startend chunked profapi graphs topp nested neox}; do
    spec=$(shape "$s") || continue
    t0=$(now)
    # shellcheck disable=SC2086
    ${spec#*-- } >"$root/$s.bare.log" 2>&1 || echo "bench: bare $s failed" >&2
    t1=$(now)
    id="families-$s-$(date -u +%H%M%S)"
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" \
      run.crosscheck=true ${STAGE2_EXTRA:-} $spec 2>&1 | stamp >"$root/$id.log"
    rc=${PIPESTATUS[0]}
    t2=$(now)
    row=$("$py" - "$root/$id" <<'PY'
import json, os, sys
run = sys.argv[1]
try:
    s = json.load(open(os.path.join(run, "summary.json")))
except (OSError, ValueError) as e:
    print(f"- | - | no summary.json ({e.__class__.__name__}) | - | - | -"); sys.exit()
t, fs = s.get("totals", {}), s.get("findings", [])
verdict = next((f.get("verdict") for f in fs if f.get("kind") == "range_verdict"
                and f["scope"].get("range") == s.get("nsys_capture")), "-")
def compared(kind):
    f = next((f for f in fs if f.get("kind") == kind), None)
    if f is None:
        return "-"
    ev = {e["quantity"]: e["value"] for e in f.get("evidence", [])}
    return f"{int(ev.get('nvidia_figures_differ', 0))} of {int(ev.get('nvidia_figures_compared', 0))} differ"
p = os.path.join(run, "ranges.csv")
rows = sum(1 for _ in open(p)) - 1 if os.path.exists(p) else 0
st = json.load(open(os.path.join(run, "status.json")))
warns = sum(len(x.get("warnings", [])) for x in st.get("passes", {}).values())
cov = t.get("ncu_coverage_pct")
print(f"{t.get('ncu_kernels_measured', '-')} of {t.get('distinct_kernels', '-')} | "
      f"{'-' if cov is None else f'{cov:.1f}%'} | {verdict} | nsys: {compared('nvidia_summaries')}; "
      f"ncu: {compared('nvidia_ncu_summary')} | {rows} | {warns}")
PY
)
    echo "| $s | $rc | $(secs "$t0" "$t1") | $(secs "$t1" "$t2") | $(ratio "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")") | $row |"
  done
}

scale() {
  need_bin
  local n run launches mb s0 s1 k1 sizes=("$@")
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT  # global: the trap runs after the function
  [ ${#sizes[@]} -gt 0 ] || sizes=(1024 4096)
  echo "| copies | kernel launches | export (MB) | sqlite3 scan floor (s) | stage2 report (s) | report / floor | peak RSS (MB) |"
  echo "|--:|--:|--:|--:|--:|--:|--:|"
  for n in "${sizes[@]}"; do
    run="$tmp/r$n"
    cp -r examples/sample-run "$run" && rm -f "$run"/nsys/*.sqlite
    "$py" scripts/synth-export.py examples/sample-run/nsys/run.sqlite "$run/nsys/run.sqlite" "$n" >/dev/null || exit 1
    launches=$(sqlite3 "$run/nsys/run.sqlite" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    mb=$(( $(stat -c %s "$run/nsys/run.sqlite") / 1048576 ))
    # The floor: every row of the tables the report reads, once, with nothing done with them.
    /usr/bin/time -o "$tmp/t0" -f "%e %M" sqlite3 "$run/nsys/run.sqlite" \
      "SELECT total(start), total(end), total(correlationId), total(globalPid), total(demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
       SELECT total(start), total(end), total(correlationId), total(globalTid), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
       SELECT total(start), total(end), total(globalTid), count(text) FROM NVTX_EVENTS;" >/dev/null
    /usr/bin/time -o "$tmp/t1" -f "%e %M" "$bin" report "$run" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
    read -r s0 _ <"$tmp/t0"; read -r s1 k1 <"$tmp/t1"
    echo "| $n | $launches | $mb | $s0 | $s1 | $(ratio "$s0" "$s1") | $((k1 / 1024)) |"
    rm -rf "$run"
  done
}

levers() {
  need_bin; mkdir -p "$root"; warm_files
  local hf="$hf_workload --arch qwen2 --new-tokens 32 --batch" id
  local -A argv=([eager]="$hf 1" [static]="$hf 1 --static" [compile]="$hf 1 --compile"
    [batch8]="$hf 8" [cudnn]="examples/workloads/tiny_llm.py --new-tokens 32"
    [nocudnn]="examples/workloads/tiny_llm.py --new-tokens 32 --no-cudnn-sdp")
  for id in eager static compile batch8 cudnn nocudnn; do
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" --no-ncu \
      --nvtx-capture decode ${STAGE2_EXTRA:-} -- "$py" ${argv[$id]} >"$root/$id.log" 2>&1 \
      || echo "bench: $id failed (see $root/$id.log)" >&2
  done
  "$py" - "$root" <<'PY'
import json, os, sys
root = sys.argv[1]
def load(i):
    p = os.path.join(root, i, "summary.json")
    return json.load(open(p)) if os.path.exists(p) else None
def fig(f, q):
    return next((e["value"] for e in f["evidence"] if e["quantity"] == q), None)
def step(s):
    f = next(f for f in s["findings"] if f["kind"] == "step")
    return fig(f, "step_ms"), f["basis"], fig(f, "gpu_work_of_step_pct") or 0.0
def levers(s):
    return [f for f in s["findings"] if f["kind"] == "lever" and "abstain" not in f]
def saving(f):
    ms = fig(f, "saving_ms_per_step")
    return (f"{ms:.2f}" if ms is not None else
            f"{fig(f, 'saving_ms_per_token'):.3f}/token" if fig(f, "saving_ms_per_token") is not None else
            f"{fig(f, 'saving_ms_once'):.2f} once")
def band(f, ratio):
    """The band the base run's reports print for the lever, and whether the ratio is in it at
    the reports' two decimals."""
    b = (f or {}).get("band")
    if not b:
        return "none stated (not yet checked)", "-"
    lo, hi = (f"{b['lo']:.2f}", f"{b['hi']:.2f}")
    text = lo if lo == hi else f"{lo}-{hi}"
    if ratio is None:
        return text, "-"
    return text, "within its band" if float(lo) <= round(ratio, 2) <= float(hi) else "misses its band"
def batch_at(f, to):
    """The small-batch lever's time per token at `to` sequences a pass, by its own split of the
    step (analysis::batching::StepCost): the compiling once a step, one pass's fixed part, the
    growing part scaled from the step's sequences to `to`."""
    lv = f["lever"]
    rows = lv["forwards"] * lv["batch"]
    then = ((fig(f, "compile_ms_per_step") or 0.0) + fig(f, "fixed_ms_per_step") / lv["forwards"]
            + fig(f, "growing_ms_per_step") * to / rows)
    return fig(f, "token_ms_now"), then / to
print("| base -> change | base step (ms, basis, GPU work %) | levers on the base (saving, ms) | changed step (ms) | predicted saving (ms) | measured saving (ms) | measured / predicted | band the reports state | |")
print("|---|---|---|--:|--:|--:|--:|---|---|")
for base, var, lever, to in [("eager", "static", "host_work", None), ("eager", "compile", "host_work", None),
                             ("eager", "batch8", "batch", 8), ("cudnn", "nocudnn", "compile", None)]:
    a, b = load(base), load(var)
    if not a or not b:
        print(f"| {base} -> {var} | no run | | | | | | | |")
        continue
    (sa, basis, work), (sb, _, _) = step(a), step(b)
    lv = levers(a)
    f = next((f for f in lv if f["lever"]["what"] == lever), None)
    listed = "; ".join(f"{x['lever']['what']} {saving(x)}" for x in lv)
    if f is None:
        print(f"| {base} -> {var} | {sa:.2f}, {basis}, {work:.1f} | {listed} | {sb:.2f} | no {lever} lever | {sa - sb:.2f} | - | - | |")
        continue
    if to is None:
        pred, meas, unit = fig(f, "saving_ms_per_step"), sa - sb, ""
    else:
        # Per token: the changed run's step carries `to` sequences' tokens.
        now, then = batch_at(f, to)
        pred, meas, unit = now - then, now - sb / to, f" a token at {to} ({now:.3f} now, {then:.3f} predicted, {sb / to:.3f} measured)"
    ratio = meas / pred if pred else None
    text, verdict = band(f, ratio)
    print(f"| {base} -> {var} | {sa:.2f}, {basis}, {work:.1f} | {listed} | {sb:.2f} | {pred:.3f}{unit} | "
          f"{meas:.3f} | {'-' if ratio is None else f'{ratio:.2f}'} | {text} | {verdict} |")
PY
}

samples() {
  need_bin
  local n run rows launches mb s0 s1 k1 s2 k2 u0 u1 u2 y0 y1 y2 sizes=("$@")
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT  # global: the trap runs after the function
  [ ${#sizes[@]} -gt 0 ] || sizes=(12 243)
  # Each time is wall (CPU: user + system) seconds: a shared VM's wall times move with its load.
  echo "| copies | GPU_METRICS rows | kernel launches | export (MB) | sqlite3 scan of the rows (s) | stage2 report (s) | the same without GPU_METRICS (s) | the samples' share: launches, samples, attribution (s) | share / scan | peak RSS with / without (MB) |"
  echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  for n in "${sizes[@]}"; do
    run="$tmp/r$n"
    cp -r tests/data/hf/gpu-metrics "$run" && rm -f "$run"/nsys/*.sqlite
    "$py" scripts/synth-export.py tests/data/hf/gpu-metrics/nsys/run.sqlite "$run/nsys/run.sqlite" "$n" >/dev/null || exit 1
    rows=$(sqlite3 "$run/nsys/run.sqlite" "SELECT count(*) FROM GPU_METRICS")
    launches=$(sqlite3 "$run/nsys/run.sqlite" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    mb=$(( $(stat -c %s "$run/nsys/run.sqlite") / 1048576 ))
    cp -r "$run" "$run-none"
    sqlite3 "$run-none/nsys/run.sqlite" "DROP TABLE GPU_METRICS; DROP TABLE TARGET_INFO_GPU_METRICS;"
    # The floor: every column the reader takes, of every row, once.
    /usr/bin/time -o "$tmp/t0" -f "%e %U %S %M" sqlite3 "$run/nsys/run.sqlite" \
      "SELECT total(timestamp), total(typeId), total(metricId), total(value) FROM GPU_METRICS;" >/dev/null
    /usr/bin/time -o "$tmp/t1" -f "%e %U %S %M" "$bin" report "$run" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
    /usr/bin/time -o "$tmp/t2" -f "%e %U %S %M" "$bin" report "$run-none" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
    read -r s0 u0 y0 _ <"$tmp/t0"; read -r s1 u1 y1 k1 <"$tmp/t1"; read -r s2 u2 y2 k2 <"$tmp/t2"
    local c0 c1 c2 d dc
    c0=$(awk -v u="$u0" -v s="$y0" 'BEGIN { printf "%.2f", u + s }')
    c1=$(awk -v u="$u1" -v s="$y1" 'BEGIN { printf "%.2f", u + s }')
    c2=$(awk -v u="$u2" -v s="$y2" 'BEGIN { printf "%.2f", u + s }')
    d=$(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.2f", a - b }')
    dc=$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", a - b }')
    echo "| $n | $rows | $launches | $mb | $s0 ($c0) | $s1 ($c1) | $s2 ($c2) | $d ($dc) | $(ratio "$c0" "$dc") CPU | $((k1 / 1024)) / $((k2 / 1024)) |"
    rm -rf "$run" "$run-none"
  done
}

case $what in
  gpu|warm|sampling|families|scale|samples|levers) "$what" "$@" ;;
  *) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
