#!/usr/bin/env bash
# Probe (not a test): why an export is large: the largest tables of the cub probe's export against
# a raw `nsys profile` of the same workload with the same flags, and the raw export's time.
source .gpu/nsight-env.sh >/dev/null 2>&1
cat /tmp/cub/topp/nsys/cmd.txt | head -3
tables() { python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = []
for (t,) in c.execute("select name from sqlite_master where type='table'"):
    n = c.execute(f'select count(*) from "{t}"').fetchone()[0]
    rows.append((n, t))
for n, t in sorted(rows, reverse=True)[:8]:
    print(f"  {t}: {n}")
PY
}
echo "stage2's export:"; tables /tmp/cub/topp/nsys/run.sqlite
nsys profile --trace=cuda,nvtx --sample=none --cuda-graph-trace=node --cpuctxsw=none --capture-range=nvtx --nvtx-capture=step --env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0 --capture-range-end=none -o /tmp/cub/raw python3 examples/workloads/topp_loop.py >/dev/null 2>&1
t=$(date +%s.%N); nsys export --type sqlite --force-overwrite=true -o /tmp/cub/raw.sqlite /tmp/cub/raw.nsys-rep >/dev/null 2>&1; python3 -c "import time;print('raw export s', time.time()-$t)"
ls -la /tmp/cub/raw.*; echo "raw export:"; tables /tmp/cub/raw.sqlite
env | grep -i "^PYTHON\|STAGE2" | head
