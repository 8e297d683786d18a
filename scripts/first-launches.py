"""Probe helper (not a test): where the kernels an ncu pass chose first launch in the nsys
export of the same run, counted from the start of the range's first instance: the launches
and the nsys time ncu has to run through before it has profiled every one of them.

    python3 scripts/first-launches.py RUN_DIR
"""

import re
import sqlite3
import sys

run = sys.argv[1]
cmd = open(f"{run}/ncu/cmd.txt").readline()
m = re.search(r"regex:\^\((.*)\)\$:1", cmd)
chosen = set(m.group(1).split("|")) if m else set()
rng = re.search(r"--nvtx-include (\S+?)/", cmd)
rng = rng.group(1) if rng else "decode"
db = sqlite3.connect(f"{run}/nsys/run.sqlite")
q = db.execute(
    "SELECT MIN(e.start), MAX(e.end), COUNT(*) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
    "WHERE COALESCE(e.text, s.value) = ?",
    (rng,),
).fetchone()
s0, s1, n = q
print(f"range {rng}: {n} instances, {(s1 - s0) / 1e9:.3f} s from the first start to the last end")
rows = db.execute(
    "SELECT k.start, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.mangledName "
    "WHERE k.start >= ? AND k.start <= ? ORDER BY k.start",
    (s0, s1),
).fetchall()
first = {}
for i, (t, name) in enumerate(rows):
    if name in chosen and name not in first:
        first[name] = (i, t)
print(f"{len(rows)} launches in the range; {len(first)} of {len(chosen)} chosen kernels found")
last_i, last_t = max(first.values()) if first else (0, s0)
print(f"the last chosen kernel's first launch: launch #{last_i + 1}, {(last_t - s0) / 1e9:.3f} s after the range's first start")
for name, (i, t) in sorted(first.items(), key=lambda x: x[1]):
    print(f"  #{i + 1:6d} {(t - s0) / 1e6:9.2f} ms  {name[:70]}")
