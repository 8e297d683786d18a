#!/usr/bin/env python3
"""Probe (not a test): what ncu's kernel replay costs per kernel, against the GPU memory the
workload holds. Part A: a synthetic workload holding N GB (in one tensor or in many 2 MB
ones) and running 8 distinct small kernels in an NVTX range `decode`. Part B: the bench
variants (scripts/hf-workloads.sh). Each run is `ncu` with the reports' metrics on the first
8 kernels of the range, `--kill`; its `==PROF==` lines are stamped, the GPU's used memory is
polled (nvidia-smi, every 0.2 s). Prints one table: GB used before ncu's first kernel, the
most used, seconds per kernel (median gap between ncu's lines), passes per kernel.

    scripts/replay-cost-probe.py [synthetic|VARIANT ...]
"""
import re
import statistics
import subprocess
import sys
import threading
import time

METRICS = ("gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,"
           "dram__throughput.avg.pct_of_peak_sustained_elapsed")
VERBOSE = bool(__import__("os").environ.get("VERBOSE"))
SYNTH = r'''
import sys, torch
gb, chunks = float(sys.argv[1]), int(sys.argv[2])
extra = sys.argv[3] if len(sys.argv) > 3 else ""
keep = []
if extra == "threads":
    import threading, time
    for _ in range(64):
        threading.Thread(target=lambda: [time.sleep(0.01) for _ in iter(int, 1)], daemon=True).start()
if extra == "pinned":
    keep.append(torch.empty(4 * 2**30, dtype=torch.uint8, pin_memory=True))
if extra == "modules":
    a = torch.randn(256, 256, device="cuda")
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        b = a.to(dt)
        for name in dir(torch):
            f = getattr(torch, name)
            if name.startswith("_") or not callable(f):
                continue
            try:
                f(b)
            except Exception:
                pass
    torch.cuda.synchronize()
if gb > 0:
    per = int(gb * 2**30 / chunks)
    keep = [torch.ones(per // 2, dtype=torch.bfloat16, device="cuda") for _ in range(chunks)]
x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
def step(x):
    y = x @ w; y = torch.nn.functional.gelu(y); y = y + x; y = torch.softmax(y, -1)
    y = y * 0.5; y = torch.nn.functional.silu(y); y = y.sum(-1, keepdim=True) + y; return torch.tanh(y)
for _ in range(3): step(x)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("decode")
for _ in range(5): x = step(x)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
print("held GB", torch.cuda.memory_reserved() / 2**30)
'''


def used_mib():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout.split()
    return float(out[0]) if out else float("nan")


def probe(label, argv):
    base = used_mib()
    samples, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            samples.append((time.time(), used_mib()))
            time.sleep(0.2)

    t = threading.Thread(target=poll)
    t.start()
    cmd = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "decode/",
           "--launch-count", "8", "--kill", "yes", "--metrics", METRICS, "-f", "-o", "/tmp/probe"] + argv
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = []
    for line in p.stdout:
        if line.startswith("==PROF== Profiling") and "100%" in line:
            m = re.search(r"- (\d+) pass", line)
            done.append((time.time(), int(m.group(1)) if m else None))
            if VERBOSE:
                print(f"   {done[-1][0] - t0:7.2f} {line.strip()[:150]}", flush=True)
    p.wait()
    wall = time.time() - t0
    stop.set()
    t.join()
    first = done[0][0] if done else time.time()
    before = max((u for ts, u in samples if ts < first), default=float("nan")) - base
    peak = max((u for _, u in samples), default=float("nan")) - base
    gaps = [b[0] - a[0] for a, b in zip(done, done[1:])]
    pace = statistics.median(gaps) if gaps else float("nan")
    passes = statistics.median([d[1] for d in done if d[1]]) if done else float("nan")
    print(f"| {label} | {before / 1024:.2f} | {peak / 1024:.2f} | {len(done)} | {passes} | "
          f"{pace:.3f} | {first - t0:.1f} | {wall:.1f} |", flush=True)


def main(args):
    print("| workload | GB used before ncu's first kernel | GB used at most | kernels | passes | s per kernel | first kernel at (s) | wall (s) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for a in args or ["synthetic"]:
        if a == "synthetic":
            open("/tmp/synth.py", "w").write(SYNTH)
            for gb, chunks in [(0, 1), (2, 1), (8, 1), (32, 1), (4, 2048), (0, 1)]:
                probe(f"synthetic {gb} GB in {chunks}", ["python3", "/tmp/synth.py", str(gb), str(chunks)])
        elif a.startswith("synthetic-"):
            open("/tmp/synth.py", "w").write(SYNTH)
            extra = a.split("-", 1)[1]
            probe(a, ["python3", "/tmp/synth.py", "0", "1", extra])
        else:
            argv = subprocess.run(["bash", "-c", f". scripts/hf-workloads.sh; argv_of {a}"],
                                  capture_output=True, text=True).stdout.split()
            probe(a, ["python3"] + argv)


main(sys.argv[1:])
