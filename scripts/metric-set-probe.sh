#!/usr/bin/env bash
# Probe (not a test): what a GPU-metrics set of only the five metrics the reports read costs
# against nsys's default set, on one generate() variant: `nsys profile` with stage2's flags at
# 50 kHz, sampling off, the default set (gh100 here) and a set file made from it with GR Active,
# DRAM read/write bandwidth, SM issue and tensor activity only; each timed (profile, export),
# the export's size and GPU_METRICS rows, and each metric's mean over the working samples.
#
#   scripts/metric-set-probe.sh [VARIANT...]     (default: static eager)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
out=${RUN_ROOT:-/tmp/metric-set}
mkdir -p "$out"
nsys profile --gpu-metrics-devices=help 2>&1 | head -20
sets=$(dirname "$(readlink -f "$(command -v nsys)")")/GpuMetrics
"$py" - "$sets/gh100.config" "$out/five.config" <<'PY'
import sys, yaml
keep = {"GR Active", "DRAM Read Bandwidth", "DRAM Write Bandwidth", "SM Issue", "Tensor Active"}
doc = yaml.safe_load(open(sys.argv[1]))
for s in doc["metricSets"]:
    s["alias"] = "five"
    s["name"] = "The five metrics stage2 reads"
    s["metrics"] = [m for m in s["metrics"] if m["name"] in keep]
    rows = []
    for r in s.get("displayRows", []):
        r["metrics"] = [m for m in r["metrics"] if m in keep]
        if r["metrics"]:
            rows.append(r)
    s["displayRows"] = rows
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PY
echo "| variant | set | nsys profile (s) | export (s) | export MB | GPU_METRICS rows | metrics | means over working samples |"
echo "|---|---|--:|--:|--:|--:|--:|---|"
for v in "${@:-static eager}"; do
  args=$(argv_of "$v")
  # shellcheck disable=SC2086
  "$py" $args --new-tokens 1 >/dev/null 2>&1
  for set in off default "file:$out/five.config"; do
    flags=()
    [ "$set" != off ] && flags=(--gpu-metrics-devices=cuda-visible --gpu-metrics-frequency=50000)
    [ "${set#file:}" != "$set" ] && flags+=("--gpu-metrics-set=$set")
    rep="$out/$v-${set##*/}"
    rm -f "$rep".*
    a=$(now)
    # shellcheck disable=SC2086
    nsys profile --trace=cuda,nvtx --sample=none --cuda-graph-trace=node --cpuctxsw=none \
      --capture-range=nvtx --nvtx-capture=decode --env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0 \
      --capture-range-end=none "${flags[@]}" -o "$rep" "$py" $args >"$rep.log" 2>&1
    b=$(now)
    nsys export --type sqlite --force-overwrite=true -o "$rep.sqlite" "$rep.nsys-rep" >/dev/null 2>&1
    c=$(now)
    "$py" - "$rep.sqlite" "$a" "$b" "$c" "$v" "${set##*/}" <<'PY'
import sqlite3, sys, os
db, a, b, c, v, s = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5], sys.argv[6]
con = sqlite3.connect(db)
mb = os.path.getsize(db) / 2**20
try:
    rows = con.execute("select count(*) from GPU_METRICS").fetchone()[0]
    names = dict(con.execute("select metricId, metricName from TARGET_INFO_GPU_METRICS").fetchall())
    gr = [k for k, n in names.items() if n == "GR Active [Throughput %]"][0]
    con.execute("create index if not exists probe_t on GPU_METRICS(timestamp, metricId)")
    means = []
    for k, n in sorted(names.items()):
        if n.split(" [")[0] in ("GR Active", "DRAM Read Bandwidth", "DRAM Write Bandwidth", "SM Issue", "Tensor Active"):
            m = con.execute(f"select avg(g.value) from GPU_METRICS g join GPU_METRICS r on r.timestamp = g.timestamp and r.metricId = {gr} where g.metricId = {k} and r.value > 0").fetchone()[0]
            means.append(f"{n.split(' [')[0]} {m:.1f}")
    metrics = len(names)
except Exception as e:
    rows, metrics, means = 0, 0, [str(e)[:40]]
print(f"| {v} | {s} | {b - a:.2f} | {c - b:.2f} | {mb:.0f} | {rows} | {metrics} | {', '.join(means)} |")
PY
  done
done
