#!/usr/bin/env bash
# The loop shapes beside the bench's generate() variants, each profiled once with the project
# defaults (a first run, fresh metrics cache) beside its bare run: automatic phases, start/end
# ranges, a serving-style step loop that batches prompt chunks, profiler-API windows, CUDA-graph
# steps, CUB's own NVTX ranges inside steps, nested ranges of one name (and, named, more model
# families: opt mistral qwen3moe deepseek3 mamba t5). Prints one table:
# stage2's exit code, whole / bare, the kernels with ncu figures, the headline's verdict, and
# whether every per-range figure stage2 checked equals NVIDIA's own summaries
# (run.crosscheck=true), and the small_grids share beside NVIDIA's cuda_gpu_kern_gb_sum of the
# same export (scripts/small-grids-check.py). Keeps each run directory's small files under
# $OUT/sweep.
#
#   scripts/shapes-sweep.sh [SHAPE...]   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/sweep), STAGE2_EXTRA
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/sweep}
w=examples/workloads
mkdir -p "$root"
shape() {
  case $1 in
    auto) echo "--auto-nvtx --nvtx-capture decode -- $py $w/families.py --arch gpt2" ;;
    startend) echo "--nvtx-capture decode -- $py $w/families.py --arch gemma2 --loop" ;;
    chunked) echo "--nvtx-capture step -- $py $w/families.py --arch phi3 --chunked --new-tokens 24" ;;
    profapi) echo "nsys.capture_range=cudaProfilerApi -- $py $hf_workload --arch llama --profiler-api" ;;
    graphs) echo "--nvtx-capture step -- $py $w/graph_loop.py" ;;
    topp) echo "--nvtx-capture step -- $py $w/topp_loop.py" ;;
    nested) echo "--nvtx-capture work -- $py $w/nested_ranges.py" ;;
    neox) echo "--auto-nvtx --nvtx-capture decode -- $py $w/families.py --arch neox" ;;
    # More families' generate() (not in the default list): an encoder-decoder, a state-space
    # model, MoE and MLA models.
    opt|mistral|qwen3moe|deepseek3|mamba|t5)
      echo "--auto-nvtx --nvtx-capture decode -- $py $w/families.py --arch $1" ;;
    *) echo "unknown shape $1" >&2; return 1 ;;
  esac
}
echo "| shape | rc | bare (s) | stage2 (s) | / bare | kernels with ncu figures | ncu share of kernel time | verdict | NVIDIA cross-check | ranges.csv rows | warnings | small grids: ours, NVIDIA's cuda_gpu_kern_gb_sum, its range kernel time |"
echo "|---|--:|--:|--:|--:|--:|--:|---|---|--:|--:|---|"
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(auto startend chunked profapi graphs topp nested neox)
for s in "${shapes[@]}"; do
  spec=$(shape "$s") || continue
  workload=${spec#*-- }
  t0=$(now)
  # shellcheck disable=SC2086
  $workload >"$root/$s.bare.log" 2>&1 || echo "sweep: bare $s failed" >&2
  t1=$(now)
  id="sweep-$s-$(date -u +%H%M%S)"
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" \
    run.crosscheck=true ${STAGE2_EXTRA:-} ${spec} >"$root/$s.log" 2>&1
  rc=$?
  t2=$(now)
  run="$root/$id"
  row=$(python3 - "$run" <<'PY'
import csv, json, os, sys
run = sys.argv[1]
try:
    s = json.load(open(os.path.join(run, "summary.json")))
except Exception as e:
    print(f"- | - | no summary.json ({e.__class__.__name__}) | - | - | -"); sys.exit()
t = s.get("totals", {})
cap = s.get("nsys_capture")
verdict = next((f.get("verdict") for f in s.get("findings", [])
                if f.get("kind") == "range_verdict" and f["scope"].get("range") == cap), "-")
def compared(kind):
    f = next((f for f in s.get("findings", []) if f.get("kind") == kind), None)
    if f is None:
        return "-"
    ev = {e["quantity"]: e["value"] for e in f.get("evidence", [])}
    return f"{int(ev.get('nvidia_figures_differ', 0))} of {int(ev.get('nvidia_figures_compared', 0))} differ"
agree = f"nsys: {compared('nvidia_summaries')}; ncu: {compared('nvidia_ncu_summary')}"
path = os.path.join(run, "ranges.csv")
rows = sum(1 for _ in open(path)) - 1 if os.path.exists(path) else 0
st = json.load(open(os.path.join(run, "status.json")))
warns = sum(len(p.get("warnings", [])) for p in st.get("passes", {}).values())
cov = t.get("ncu_coverage_pct")
cov = f"{cov:.1f}%" if cov is not None else "-"
print(f"{t.get('ncu_kernels_measured', '-')} of {t.get('distinct_kernels', '-')} | {cov} | {verdict} | {agree} | {rows} | {warns}")
PY
)
  grids=$(python3 scripts/small-grids-check.py "$run" 2>&1 | tail -1)
  bare=$(secs "$t0" "$t1"); whole=$(secs "$t1" "$t2")
  ratio=$(awk -v a="$bare" -v b="$whole" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')
  echo "| $s | $rc | $bare | $whole | $ratio | $row | $grids |"
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/sweep/$s"
    cp "$root/$s.log" "$OUT/sweep/$s/stage2.log" 2>/dev/null
    (cd "$run" && find . -type f -size -3M ! -name '*.nsys-rep' ! -name '*.ncu-rep' ! -name '*.sqlite' \
      -exec cp --parents {} "$OUT/sweep/$s/" \;) 2>/dev/null
  fi
done
