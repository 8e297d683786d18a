#!/usr/bin/env python3
"""A large nsys SQLite export made from a real one: the capture repeated COPIES times, one
after the other in time, with fresh correlation ids (kernels, memcpys, memsets, runtime and
driver calls, NVTX ranges and marks, GPU-metrics samples). Rows stay in start order, as nsys
writes them. For scale benchmarks (`bench/run.sh scale` and `samples`,
benches/report_scale.rs).

    scripts/synth-export.py SRC.sqlite DST.sqlite COPIES
"""
import shutil
import sqlite3
import sys

TABLES = [
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
    "GPU_METRICS",
]

# The column that orders a table's rows in time, and the columns shifted with each copy.
TIME = {"GPU_METRICS": "timestamp"}
SHIFTED = {"start", "end", "timestamp", "rawTimestamp"}


def main(src, dst, copies):
    shutil.copyfile(src, dst)
    c = sqlite3.connect(dst)
    c.execute("PRAGMA journal_mode=OFF")
    c.execute("PRAGMA synchronous=OFF")
    have = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = [t for t in TABLES if t in have]
    at = lambda t: TIME.get(t, "start")
    end = lambda t: "timestamp" if t in TIME else "coalesce(end, start)"
    lo = min(c.execute(f"SELECT min({at(t)}) FROM {t}").fetchone()[0] or 0 for t in tables)
    hi = max(c.execute(f"SELECT max({end(t)}) FROM {t}").fetchone()[0] or 0 for t in tables)
    span = hi - lo + 1000
    corr = 1 + max(
        c.execute(f"SELECT max(correlationId) FROM {t}").fetchone()[0] or 0
        for t in tables
        if t not in ("NVTX_EVENTS", "GPU_METRICS")
    )
    cols = {t: [r[1] for r in c.execute(f"PRAGMA table_info({t})")] for t in tables}
    n = 1
    while n < copies:
        k = min(n, copies - n)
        for t in tables:
            exprs = []
            for col in cols[t]:
                if col in SHIFTED:
                    exprs.append(f'"{col}" + {n * span}')
                elif col == "correlationId":
                    exprs.append(f"correlationId + {n * corr}")
                elif col in ("id", "rowid"):
                    exprs.append("NULL")
                else:
                    exprs.append(f'"{col}"')
            names = ", ".join(f'"{x}"' for x in cols[t])
            c.execute(
                f"INSERT INTO {t} ({names}) SELECT {', '.join(exprs)} FROM {t} "
                f"WHERE {at(t)} < {lo + k * span} ORDER BY rowid"
            )
        c.commit()
        n += k
    kernels = c.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    samples = c.execute("SELECT count(*) FROM GPU_METRICS").fetchone()[0] if "GPU_METRICS" in tables else 0
    print(f"{dst}: {copies} copies, {kernels} kernel launches, {samples} GPU_METRICS rows")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
