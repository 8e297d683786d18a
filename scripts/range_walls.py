"""A range's instance wall times from a run directory's nsys export, in ms and start order.

The probes import `walls`; `python3 scripts/range_walls.py RUN RANGE` prints them.
"""
import sqlite3
import sys


def walls(run, name):
    c = sqlite3.connect(f"{run}/nsys/run.sqlite")
    rows = c.execute(
        'select e."end" - e.start from NVTX_EVENTS e left join StringIds s on s.id = e.textId '
        "where coalesce(e.text, s.value) = ? order by e.start",
        (name,),
    )
    return [r[0] / 1e6 for r in rows]


if __name__ == "__main__":
    print("\n".join(f"{w:.3f}" for w in walls(sys.argv[1], sys.argv[2])))
