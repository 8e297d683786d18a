#!/usr/bin/env python3
"""Part of the ncu test double: replays a real ncu raw export (tests/data/ncu/decode_raw.csv,
H100) as a profile run would, honouring the kernel filter it is given (--kernel-name-base,
--kernel-id ::regex:R:N, --kernel-name regex:R, --launch-count, --filter-mode per-launch-config). It writes the kept rows as the
"report" (and their mangled twin beside it, for --import) and prints ncu's own lines for them.

    ncu_replay.py DATA_DIR REPORT_BASE -- NCU_ARGS...
"""
import csv
import os
import re
import sys
import time


def short_name(demangled):
    """Function name: no return type, namespaces, templates or parameters (ncu's `function`)."""
    n = demangled.replace("(anonymous namespace)", "<unnamed>").strip()
    n = n[5:] if n.startswith("void ") else n
    depth, end = 0, len(n)
    for i, c in enumerate(n):
        if c == "<" and not n[i:].startswith("<unnamed>"):
            if depth == 0:
                end = min(end, i)
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif c == "(" and depth == 0:
            end = min(end, i)
            break
    return n[:end].split("::")[-1]


def arg(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def chosen(args):
    """(name base, regex or None, launches wanted or None) from ncu's arguments."""
    base = arg(args, "--kernel-name-base") or "function"
    regex = None
    kid = arg(args, "--kernel-id")
    if kid and "regex:" in kid:
        regex = kid.split("regex:", 1)[1].rsplit(":", 1)[0]
    name = arg(args, "--kernel-name")
    if name and name.startswith("regex:"):
        regex = name[len("regex:"):]
    count = arg(args, "--launch-count")
    # Per launch configuration, the count applies to each configuration of each kernel.
    if arg(args, "--filter-mode") == "per-launch-config":
        return base, regex, None, True
    return base, regex, int(count) if count else None, False


def main():
    data, out, args = sys.argv[1], sys.argv[2], sys.argv[4:]
    with open(f"{data}/ncu/decode_raw.csv", newline="") as f:
        raw = list(csv.reader(f))
    with open(f"{data}/ncu/decode_raw_mangled.csv", newline="") as f:
        mangled = list(csv.reader(f))
    col = raw[0].index("Kernel Name")
    base, regex, count, per_shape = chosen(args)
    grid, block = raw[0].index("Grid Size"), raw[0].index("Block Size")
    # `--kernel-id ...:1`: each matching kernel's first launch once, as ncu counts invocations
    # per distinct name.
    keep, seen = [], set()
    for i in range(2, len(raw)):
        demangled, mangled_name = raw[i][col], mangled[i][col]
        name = {"mangled": mangled_name, "demangled": demangled}.get(base, short_name(demangled))
        key = (name, raw[i][grid], raw[i][block]) if per_shape else name
        if (regex is None or re.search(regex, name)) and key not in seen:
            seen.add(key)
            keep.append(i)
    if count is not None:
        keep = keep[:count]
    # FAKE_NCU_KEEP=N (hand-made): the workload under ncu reached only the first N chosen kernels.
    if os.environ.get("FAKE_NCU_KEEP"):
        keep = keep[: int(os.environ["FAKE_NCU_KEEP"])]
    # As ncu: no report when nothing was profiled.
    for rows, path in ((raw, f"{out}.ncu-rep"), (mangled, f"{out}.ncu-rep.mangled")):
        if not keep:
            break
        with open(path, "w", newline="") as f:
            w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
            w.writerows(rows[:2] + [rows[i] for i in keep])
    print("==PROF== Connected to process 641 (/usr/bin/python3.12)", flush=True)
    # FAKE_NCU_PACE=S: each kernel takes S s to profile, as a slow replay does.
    pace = float(os.environ.get("FAKE_NCU_PACE") or 0)
    for i in keep:
        time.sleep(pace)
        print(
            f'==PROF== Profiling "{raw[i][col]}" - {i - 2}: 0%....50%....100% - 16 passes',
            flush=True,
        )
    print("==PROF== Disconnected from process 641")
    if keep:
        print(f"==PROF== Report: {out}.ncu-rep")
    else:
        print("==WARNING== No kernels were profiled.")


if __name__ == "__main__":
    main()
