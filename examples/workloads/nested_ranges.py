"""NVTX ranges of one name nested in each other: each `work` instance launches one matmul of its
own and holds an inner `work` that launches a matmul and an add. How the reports count the inner
kernels (once per name, or once per enclosing instance) is compared with `nsys stats` on it.

    python3 examples/workloads/nested_ranges.py [--steps N]
"""

import argparse

import torch
import torch.cuda.nvtx as nvtx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    x = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    for _ in range(a.steps):
        nvtx.range_push("work")
        y = x @ x
        nvtx.range_push("work")
        z = x @ x
        z = z + 1
        nvtx.range_pop()
        nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"nested_ranges done: {float(y[0, 0] + z[0, 0]):.3g}")


if __name__ == "__main__":
    main()
