#!/usr/bin/env bash
# Probe (not a test): which processes of a workload held by `ncu --mode=launch` use the CPU,
# and when they stop (the workload's start-up up to its first CUDA call). Prints, every second,
# each process of the group with the CPU seconds it used in that second.
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
w=${WORKLOAD:-examples/workloads/hf_generate.py --arch qwen2}
# shellcheck disable=SC2086
setsid ncu --mode=launch --target-processes all --nvtx $py $w >/tmp/held.log 2>&1 &
lp=$!
python3 - "$lp" <<'PY'
import os, sys, time
pg = int(sys.argv[1]); tck = os.sysconf("SC_CLK_TCK"); last = {}
for sec in range(1, 21):
    time.sleep(1)
    now = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        rest = st.rsplit(")", 1)[1].split()
        if int(rest[2]) != pg:
            continue
        name = st.split("(", 1)[1].rsplit(")", 1)[0]
        now[(int(p), name)] = (int(rest[11]) + int(rest[12])) / tck
    row = ", ".join(f"{pid} {name} +{t - last.get((pid, name), 0):.2f}" for (pid, name), t in sorted(now.items()))
    print(f"{sec:2d}s {row}", flush=True)
    last = now
PY
kill -9 -- -"$lp" 2>/dev/null
