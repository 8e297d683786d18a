#!/usr/bin/env bash
# Probe (not a test): a first call that records CUDA graphs or compiles, as the reports name it.
# Two workloads under `stage2 profile --quick`: a hand-written step loop whose first `step`
# records two CUDA graphs (graph_loop.py --record-in-step), and a torch.compile
# (mode="reduce-overhead") decode loop. Prints each instance-group sentence, NVIDIA's own count
# of the calls (nsys stats cuda_api_sum) and the per-instance counts read straight from the
# export; copies the small files of each run to OUT_DIR (default tmp/first-call).
#
#   scripts/first-call-probe.sh     env: STAGE2_BIN, PYTHON, RUN_ROOT, OUT_DIR, STAGE2_EXTRA
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
py=${PYTHON:-python3}
root=${RUN_ROOT:-/tmp/first-call}
out=${OUT_DIR:-tmp/first-call}
mkdir -p "$root" "$out"
profile() {
  local id=$1 range=$2 more=$3; shift 3
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --quick --nvtx-capture "$range" \
    ${STAGE2_EXTRA:-} $more -- "$py" "$@" >"$root/$id.log" 2>&1 || echo "probe: $id failed (see $root/$id.log)"
  tail -3 "$root/$id.log" | cut -c1-600
}
profile graphrec step --no-gpu-metrics \
  examples/workloads/graph_loop.py --record-in-step --steps 20 --hidden 1024 --layers 4
profile compile decode "" examples/workloads/hf_generate.py --arch qwen2 --compile --new-tokens 32
for id in graphrec compile; do
  run=$root/$id
  echo "=== $id"
  grep "not one kind" "$run/kernels.md" | cut -c1-1200
  echo "--- NVIDIA's nsys stats cuda_api_sum (whole capture):"
  grep -i "GraphInstantiate\|ModuleLoad\|LibraryLoad" "$run"/nsys/summary_cuda_api_sum.csv
  echo "--- per instance, straight from the export (calls on the range's thread inside it):"
  "$py" - "$run/nsys/run.sqlite" "$( [ $id = graphrec ] && echo step || echo decode )" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); name = sys.argv[2]
rows = db.execute("""select n.start, n.end, n.globalTid from NVTX_EVENTS n
  left join StringIds s on s.id = n.textId where coalesce(n.text, s.value) = ? and n.eventType = 59
  order by n.start""", (name,)).fetchall()
calls = db.execute("""select r.start, r.globalTid, s.value from CUPTI_ACTIVITY_KIND_RUNTIME r
  join StringIds s on s.id = r.nameId where s.value like '%GraphInstantiate%'
  or s.value like 'cuModuleLoad%' or s.value like 'cuLibraryLoad%'""").fetchall()
for i, (a, b, t) in enumerate(rows[:5]):
    inside = [c for c in calls if c[1] == t and a <= c[0] < b]
    g = sum("GraphInstantiate" in c[2] for c in inside)
    print(f"#{i + 1}: {(b - a) / 1e6:.2f} ms, graphs instantiated {g}, modules loaded {len(inside) - g}")
print(f"{len(rows)} instances")
PY
  mkdir -p "$out/$id/nsys"
  cp "$run"/{kernels.md,stakeholder_summary.md,summary.json,status.json,config.yaml,env.json,inputs.yaml} "$out/$id/" 2>/dev/null
  cp "$run"/nsys/summary_*.csv "$run"/nsys/cmd.txt "$out/$id/nsys/" 2>/dev/null
  sz=$(stat -c %s "$run/nsys/run.sqlite" 2>/dev/null || echo 0)
  echo "export: $sz bytes"
  [ "$sz" -lt 12000000 ] && cp "$run/nsys/run.sqlite" "$out/$id/nsys/"
done
