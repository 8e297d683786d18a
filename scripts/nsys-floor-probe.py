#!/usr/bin/env python3
"""Probe (not a test): where a warm re-run's and a --quick run's time over the bare workload goes.

For each variant (scripts/hf-workloads.sh names): one first `stage2 profile` fills a metrics
cache, then ROUNDS rounds, each alternating the bare workload, stage2's own unsampled nsys line
(from a warm run's cmd.txt), the same line sampling (the first run's), a warm re-run and a
--quick run on a fresh cache. hf_generate.py prints when (seconds since its interpreter started)
the model was built, the measured generate() began and it was done; the rest of a run's wall
time is the interpreter's start and everything after the workload's last line (nsys finishing
its report, stage2's export and report). Prints one table and the medians.

  scripts/nsys-floor-probe.py [VARIANT...]   env: ROUNDS (3), STAGE2_BIN, STAGE2_EXTRA, PYTHON
"""

import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("STAGE2_BIN", os.path.join(ROOT, "target/release/stage2"))
PY = os.environ.get("PYTHON", "python3")
EXTRA = shlex.split(os.environ.get("STAGE2_EXTRA", ""))
MARKS = re.compile(r"since start: model built ([\d.]+) s, measured from ([\d.]+) s, done ([\d.]+) s")


def sh(fn, *args):
    """A function of scripts/hf-workloads.sh."""
    cmd = f". scripts/hf-workloads.sh && {fn} {' '.join(map(shlex.quote, args))}"
    return subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def timed(argv, log):
    """Run argv; its wall seconds, and each output line with the seconds since the start."""
    t0 = time.time()
    lines = []
    with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            lines.append((time.time() - t0, line.rstrip()))
    wall = time.time() - t0
    with open(log, "w") as f:
        f.writelines(f"{t:7.2f} {line}\n" for t, line in lines)
    return wall, lines


def marks(lines, files=()):
    """(built, measured from, done) from the workload's line, in the output or in run files."""
    text = [line for _, line in lines]
    for path in files:
        if os.path.exists(path):
            text += open(path, errors="replace").read().splitlines()
    for line in text:
        m = MARKS.search(line)
        if m:
            return tuple(float(x) for x in m.groups())
    return None


def stamp_of(lines, pattern):
    for t, line in lines:
        if pattern in line:
            return t
    return None


def nsys_line(run_dir, out):
    """stage2's nsys profile line from a run's cmd.txt, writing to `out` instead."""
    argv = shlex.split(open(os.path.join(run_dir, "nsys/cmd.txt")).readline())
    i = argv.index("-o")
    argv[i + 1] = out
    return argv[:i] + ["--force-overwrite=true"] + argv[i:]


def main():
    variants = sys.argv[1:] or ["eager", "large"]
    rounds = int(os.environ.get("ROUNDS", "3"))
    tmp = tempfile.mkdtemp(prefix="nsys-floor-")
    rows = []
    print("| variant | round | run | wall (s) | model built (s) | measured from (s) | workload done (s) | wall - done (s) | nsys 'Generating' after done (s) |")
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|")
    for v in variants:
        args = shlex.split(sh("argv_of", v))
        capture = sh("capture_of", v)
        work = [PY] + args
        subprocess.run(work + ["--new-tokens", "1"], cwd=ROOT, capture_output=True)
        cache = os.path.join(tmp, f"cache-{v}")

        def stage2(run_id, *depth, cache=cache):
            return [BIN, "profile", "--run-root", tmp, "--run-id", run_id, "--cache-dir", cache,
                    "--nvtx-capture", capture, *depth, *EXTRA, "--"] + work

        timed(stage2(f"{v}-first"), os.path.join(tmp, f"{v}-first.log"))
        timed(stage2(f"{v}-warm-0"), os.path.join(tmp, f"{v}-warm-0.log"))
        sampled_line = nsys_line(os.path.join(tmp, f"{v}-first"), os.path.join(tmp, "probe-sampled"))
        unsampled_line = nsys_line(os.path.join(tmp, f"{v}-warm-0"), os.path.join(tmp, "probe"))
        print(f"<!-- {v} unsampled nsys: {shlex.join(unsampled_line)[:400]} -->", flush=True)
        for r in range(1, rounds + 1):
            runs = [
                ("bare", work, ()),
                ("nsys, unsampled", unsampled_line, ()),
                ("nsys, sampled", sampled_line, ()),
                ("stage2 warm", stage2(f"{v}-warm-{r}"), (os.path.join(tmp, f"{v}-warm-{r}/nsys/nsys.log"),)),
                ("stage2 --quick", stage2(f"{v}-quick-{r}", "--quick", cache=os.path.join(tmp, f"q-{v}-{r}")),
                 (os.path.join(tmp, f"{v}-quick-{r}/nsys/nsys.log"),)),
            ]
            for name, argv, files in runs:
                wall, lines = timed(argv, os.path.join(tmp, f"{v}-{r}-{name.split()[0]}.log"))
                m = marks(lines, files)
                gen = stamp_of(lines, "Generating '")
                done_at = stamp_of(lines, "since start:")
                after = f"{gen - done_at:.2f}" if gen is not None and done_at is not None else "-"
                cells = [f"{x:.2f}" for x in m] if m else ["-"] * 3
                rest = f"{wall - m[2]:.2f}" if m else "-"
                rows.append((v, name, wall, m))
                print(f"| {v} | {r} | {name} | {wall:.2f} | {' | '.join(cells)} | {rest} | {after} |", flush=True)
    print()
    print("| variant | run | wall median (s) | / bare | model built | measured from | done | wall - done |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for v in variants:
        base = statistics.median(w for vv, n, w, _ in rows if vv == v and n == "bare")
        for name in dict.fromkeys(n for vv, n, _, _ in rows if vv == v):
            sel = [(w, m) for vv, n, w, m in rows if vv == v and n == name]
            wall = statistics.median(w for w, _ in sel)
            ms = [m for _, m in sel if m]
            med = [f"{statistics.median(m[i] for m in ms):.2f}" for i in range(3)] if ms else ["-"] * 3
            rest = f"{statistics.median(w - m[2] for w, m in sel if m):.2f}" if ms else "-"
            print(f"| {v} | {name} | {wall:.2f} | {wall / base:.2f}x | {' | '.join(med)} | {rest} |")
    out = os.environ.get("OUT")
    if out:
        keep = os.path.join(out, "nsys-floor")
        shutil.copytree(tmp, keep, ignore=shutil.ignore_patterns("*.sqlite", "*.nsys-rep", "*.ncu-rep", "*.qdstrm", "cache-*", "q-*"))


if __name__ == "__main__":
    main()
