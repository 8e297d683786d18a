#!/usr/bin/env bash
# GPU check of the DRAM bytes per step stage2 reads from the nsys pass's samples: known traffic
# (examples/workloads/copy_steps.py: 40 passes over 1 GiB in `copy`, 30 decode-like `step`s
# reading 256 MiB of weights each) profiled twice, nsys gated on each range, then a table of
# the known bytes, stage2's bytes per instance and their ratio, and stage2's bytes per step
# beside ncu's dram__bytes_read.sum + dram__bytes_write.sum of the same kernels. It also lists
# the metrics the export holds, to show the byte counters were sampled. About 3 minutes.
#
#   source .gpu/nsight-env.sh && scripts/gpu-bytes-check.sh
#
# Env: STAGE2_BIN (target/release/stage2), PYTHON (python3), OUT (tmp/bytes-check): the table
# is OUT/bytes-check.md, the run directories OUT/runs (reports left out).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
out=${OUT:-tmp/bytes-check}
root="$out/runs"
[ -x "$bin" ] || { echo "bytes-check: no stage2 binary at $bin (cargo build --release)" >&2; exit 1; }
mkdir -p "$root"
w=examples/workloads/copy_steps.py
nsys --version; ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$py" "$w" --known >"$out/known.json" || exit 1
s=$(date -u +%H%M%S)
for r in copy step; do
  # Sampling is not reused from an earlier run of the same command: this one samples.
  "$bin" profile --run-root "$root" --run-id "$r-$s" --nvtx-capture "$r" ncu.clock_control=none \
    ncu.max_kernels=8 nsys.gpu_metrics.reuse=false -- "$py" "$w" >"$out/$r-$s.log" 2>&1
  echo "profile $r-$s: exit $? (log: $out/$r-$s.log)"
done
"$py" - "$root" "$s" "$out/known.json" <<'PY' | tee "$out/bytes-check.md"
import csv, json, os, sqlite3, sys
root, stamp, known = sys.argv[1:]
known = json.load(open(known))
UNIT = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}

def ncu_bytes(run, rng):
    """ncu's DRAM bytes per launch of each kernel it measured, by mangled name (mean of its rows)."""
    p = f"{run}/ncu/{rng}_raw_mangled.csv"
    if not os.path.exists(p):
        return {}
    rows = list(csv.reader(open(p)))
    head, units, rows = rows[0], rows[1], rows[2:]
    cols = [head.index(c) for c in ("dram__bytes_read.sum", "dram__bytes_write.sum") if c in head]
    if len(cols) < 2:
        return {}
    out = {}
    for r in rows:
        try:
            v = sum(float(r[c].replace(",", "")) * UNIT.get(units[c], 1) for c in cols)
        except ValueError:
            continue
        out.setdefault(r[head.index("Kernel Name")], []).append(v)
    return {k: sum(v) / len(v) for k, v in out.items()}

print("| range | instances | source | coverage | known read (GB) | stage2 read (GB) | ratio | known write (GB) | stage2 write (GB) | ratio | ncu, same kernels (GB) | stage2 / ncu | ncu's share of kernel time |")
print("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for rng in ("copy", "step"):
    run = f"{root}/{rng}-{stamp}"
    try:
        s = json.load(open(f"{run}/summary.json"))
    except OSError as e:
        print(f"| {rng} | no summary.json ({e}) |"); continue
    step = next((r.get("dram_per_step") for r in s["ranges"] if r["name"] == rng), None)
    if not step:
        gm = s.get("gpu_metrics") or {}
        print(f"| {rng} | no bytes: {gm.get('note') or gm.get('not_sampled') or gm.get('bytes_note') or '-'} |"); continue
    k = known[rng]
    r, wr = step["dram_read_bytes"], step["dram_write_bytes"]
    ratio = lambda a, b: f"{a / b:.4f}" if b else "-"
    # ncu: bytes per launch times launches per instance, over the kernels it measured.
    per = ncu_bytes(run, rng)
    n = k["instances"]
    ncu, measured, total = 0.0, 0.0, 0.0
    for kern in s["kernels"]:
        total += kern["total_time_ns"]
        b = per.get(kern.get("mangled") or "")
        if b is not None:
            ncu += b * kern["instances"] / n
            measured += kern["total_time_ns"]
    kw = k.get("write")
    print(f"| {rng} | {step['instances']} | {step['source']} | {step['coverage_pct']:.1f}% | {k['read'] / 1e9:.3f} | "
          f"{r / 1e9:.3f} | {ratio(r, k['read'])} | {'-' if kw is None else f'{kw / 1e9:.3f}'} | {wr / 1e9:.3f} | "
          f"{'-' if kw is None else ratio(wr, kw)} | {ncu / 1e9:.3f} | {ratio(r + wr, ncu)} | "
          f"{100 * measured / total if total else 0:.1f}% |")
print()
for rng in ("copy", "step"):
    run = f"{root}/{rng}-{stamp}"
    try:
        s = json.load(open(f"{run}/summary.json"))
        st = json.load(open(f"{run}/status.json"))
    except OSError:
        continue
    step = next((r.get("dram_per_step") for r in s["ranges"] if r["name"] == rng), None) or {}
    gm = s.get("gpu_metrics") or {}
    sampling = st["passes"]["nsys"].get("nsys", {}).get("sampling") or {}
    print(f"{rng}: set {sampling.get('set')}; dropped by nsys: {gm.get('dropped') or 'none'}; "
          f"bytes note: {gm.get('bytes_note') or 'none'}; within ±{(step.get('bytes_within') or 0) / 1e9:.3f} GB; "
          f"floor {step.get('memory_floor_ms')} ms at {step.get('ceiling')}; use {step.get('bandwidth_use_pct')}%; "
          f"step {step.get('step_ms')} ms")
    line = next((l for l in open(f"{run}/kernels.md") if l.startswith("DRAM traffic per step")), "-")
    print(f"{rng}: kernels.md: {line.strip()}")
    db = f"{run}/nsys/run.sqlite"
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        names = [r[0] for r in c.execute("SELECT DISTINCT metricName FROM TARGET_INFO_GPU_METRICS")]
        print(f"{rng}: the export's metrics: {names}")
        for m in ("DRAM Read Bytes [Bytes]", "DRAM Write Bytes [Bytes]"):
            row = c.execute("SELECT count(*), min(g.value), max(g.value) FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t "
                            "ON t.metricId = g.metricId AND t.typeId = g.typeId WHERE t.metricName = ?", (m,)).fetchone()
            print(f"{rng}: {m}: {row[0]} samples, {row[1]} to {row[2]} bytes a window")
    except sqlite3.Error as e:
        print(f"{rng}: {db}: {e}")
PY
# What comes back: the table, the logs, the run directories without the reports.
find "$root" \( -name '*.nsys-rep' -o -name '*.qdstrm' -o -name '*.ncu-rep' \) -delete
ls -la "$out"
