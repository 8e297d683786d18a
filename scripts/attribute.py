#!/usr/bin/env python3
"""The reference for scripts/bench-scale.sh: per NVTX range name, the kernels launched inside
its instances (launch call on the range's thread, matched by correlation id) and their GPU
time, done the plain way with Python's sqlite3: one join ordered by launch time, a bisect per
launch. Prints one line per range name.

    scripts/attribute.py RUN.sqlite
"""
import bisect
import collections
import sqlite3
import sys


def main(path):
    c = sqlite3.connect(path)
    ranges = collections.defaultdict(list)
    for name, start, end, tid in c.execute(
        "SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)), start, end, "
        "globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL ORDER BY start"
    ):
        ranges[tid].append((start, end, name))
    starts = {tid: [r[0] for r in rs] for tid, rs in ranges.items()}
    # Each range's enclosing range on its thread (ranges of one thread nest).
    parents = {}
    for tid, rs in ranges.items():
        stack, parent = [], []
        for s, e, _ in rs:
            while stack and rs[stack[-1]][1] <= s:
                stack.pop()
            parent.append(stack[-1] if stack else -1)
            stack.append(len(parent) - 1)
        parents[tid] = parent
    kernels = collections.Counter()
    time = collections.Counter()
    for api_start, tid, k_start, k_end in c.execute(
        "SELECT r.start, r.globalTid, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
        "ORDER BY r.start"
    ):
        rs = ranges.get(tid)
        if not rs:
            continue
        i = bisect.bisect_right(starts[tid], api_start) - 1
        parent = parents[tid]
        # The ranges that hold the call: the latest started one still open, and its parents.
        while i >= 0 and rs[i][1] < api_start:
            i = parent[i]
        while i >= 0:
            name = rs[i][2]
            kernels[name] += 1
            time[name] += k_end - k_start
            i = parent[i]
    for name in sorted(kernels):
        print(f"{name}\t{kernels[name]}\t{time[name]}")


if __name__ == "__main__":
    main(sys.argv[1])
