#!/usr/bin/env bash
# Probe (not a test): library NVTX ranges (CUB) inside a loop's steps: the export's domains and
# what the reports make of them (examples/workloads/topp_loop.py under --quick).
source .gpu/nsight-env.sh >/dev/null 2>&1
target/release/stage2 profile --run-root /tmp/cub --run-id topp --quick --nvtx-capture step --no-gpu-metrics -- python3 examples/workloads/topp_loop.py 2>&1 | tail -3 | cut -c1-300
python3 - /tmp/cub/topp/nsys/run.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print([r[1] for r in c.execute("pragma table_info(NVTX_EVENTS)")])
for r in c.execute("select eventType, domainId, coalesce(text, (select value from StringIds where id=textId)) t, count(*) from NVTX_EVENTS group by 1,2,3 order by 4 desc limit 20"):
    print(r)
PY
grep -n "cub" /tmp/cub/topp/kernels.md | cut -c1-300 | head
cat /tmp/cub/topp/nsys/summary_nvtx_sum.csv | head
ls -la /tmp/cub/topp/nsys/
mkdir -p $OUT/cub; cp -r /tmp/cub/topp $OUT/cub/ 2>/dev/null; rm -f $OUT/cub/topp/nsys/*.nsys-rep
