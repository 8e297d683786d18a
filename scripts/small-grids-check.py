"""Probe helper (not a test): a run's small_grids finding beside NVIDIA's own per-grid reading
of the same export. Runs `nsys stats --report cuda_gpu_kern_gb_sum:nvtx-name` on the run's
SQLite export (kept as RUN/nvidia/gb_cuda_gpu_kern_gb_sum.csv), whose kernel names carry the
innermost NVTX range around each launch (`range/kernel`), and sums the captured range's launches of at most
half as many thread blocks as the GPU has SMs. Equal to the finding's share where no range
nests inside the captured one (nsys then names the inner range instead).

    python3 scripts/small-grids-check.py RUN_DIR   (nsys on PATH)

Prints one line: ours | NVIDIA's | the capture's kernel time per NVIDIA's rows.
"""

import csv
import json
import os
import sqlite3
import subprocess
import sys

run = sys.argv[1]
s = json.load(open(os.path.join(run, "summary.json")))
cap = s.get("nsys_capture")
f = next((f for f in s.get("findings", []) if f.get("kind") == "small_grids" and "abstain" not in f), None)
ours = "none"
if f:
    ev = {e["quantity"]: e["value"] for e in f["evidence"] if "kernel" not in e["scope"]}
    ours = f"{ev['small_grid_share_pct']:.2f}%"
db = os.path.join(run, "nsys", "run.sqlite")
if not os.path.exists(db) or not cap:
    print(f"{ours} | no export or captured range | -")
    sys.exit()
sms = {r[0] for r in sqlite3.connect(db).execute("SELECT smCount FROM TARGET_INFO_GPU")}
os.makedirs(os.path.join(run, "nvidia"), exist_ok=True)
out = os.path.join(run, "nvidia", "gb")
p = subprocess.run(
    ["nsys", "stats", "--report", "cuda_gpu_kern_gb_sum:nvtx-name", "--format", "csv",
     "--force-export=false", "-o", out, db],
    capture_output=True, text=True)
path = out + "_cuda_gpu_kern_gb_sum_nvtx-name.csv"
cands = [x for x in os.listdir(os.path.dirname(out)) if x.startswith("gb_")]
if not cands:
    print(f"{ours} | nsys stats wrote nothing (rc {p.returncode}: {p.stderr.strip()[-200:]}) | -")
    sys.exit()
path = os.path.join(os.path.dirname(out), cands[0])
rows = list(csv.DictReader(open(path)))
if len(sms) != 1:
    print(f"{ours} | GPUs of {sorted(sms)} SMs | -")
    sys.exit()
half = next(iter(sms)) // 2
total = small = 0
for r in rows:
    name = r.get("Name", "")
    if not name.startswith(cap + "/"):
        continue
    g = 1
    for d in r["GridXYZ"].split():
        g *= int(d)
    ns = int(float(r["Total Time (ns)"]))
    total += ns
    if g <= half:
        small += ns
theirs = f"{100 * small / total:.2f}%" if total else "no rows named for the range"
print(f"{ours} | {theirs} | {total} ns ({os.path.basename(path)}, first name: {rows[0].get('Name', '')[:60] if rows else '-'})")
