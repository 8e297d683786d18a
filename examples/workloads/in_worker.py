"""Run a workload script in a spawned worker process, as serving stacks run their model: the
parent only waits, the NVTX ranges and kernels come from the child.

    python3 examples/workloads/in_worker.py SCRIPT [ARGS...]
"""

import multiprocessing as mp
import runpy
import sys


def run(argv):
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: in_worker.py SCRIPT [ARGS...]")
    worker = mp.get_context("spawn").Process(target=run, args=(sys.argv[1:],))
    worker.start()
    worker.join()
    sys.exit(worker.exitcode)
