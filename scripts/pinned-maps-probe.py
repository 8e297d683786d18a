#!/usr/bin/env python3
"""Probe (not a test): what a workload maps from the NVIDIA driver (host memory CUDA pinned
for it shows as mappings of /dev/nvidia*), polled from /proc/<pid>/maps of the workload and
its children every 0.3 s while it runs bare. Prints, per workload, the most GB mapped per
device file, and the moment (s from launch) each peak was first seen.

    scripts/pinned-maps-probe.py [synthetic-pinned|synthetic-none|VARIANT ...]
"""
import os
import subprocess
import sys
import time


def children(pid):
    out = [pid]
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                for c in f.read().split():
                    out += children(int(c))
    except OSError:
        pass
    return out


def mapped(pids):
    by = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 6 or not parts[5].startswith("/dev/nvidia"):
                        continue
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    key = parts[5].rstrip("0123456789")
                    by[key] = by.get(key, 0) + hi - lo
        except OSError:
            pass
    return by


def probe(label, argv):
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = {}
    while p.poll() is None:
        for k, v in mapped(children(p.pid)).items():
            if v > peak.get(k, (0, 0))[0]:
                peak[k] = (v, time.time() - t0)
        time.sleep(0.3)
    cells = ", ".join(f"{k} {v / 2**30:.2f} GB at {t:.0f} s" for k, (v, t) in sorted(peak.items()))
    print(f"| {label} | {time.time() - t0:.1f} | {cells} |", flush=True)


def main(args):
    print("| workload | wall (s) | most mapped from the driver |")
    print("|---|--:|---|")
    for a in args:
        if a.startswith("synthetic-"):
            probe(a, ["python3", "/tmp/synth.py", "0", "1", a.split("-", 1)[1]])
        else:
            argv = subprocess.run(["bash", "-c", f". scripts/hf-workloads.sh; argv_of {a}"],
                                  capture_output=True, text=True).stdout.split()
            probe(a, ["python3"] + argv)


main(sys.argv[1:])
