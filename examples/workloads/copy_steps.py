"""Known DRAM traffic, to check the bytes per step stage2 reads from nsys's samples
(scripts/gpu-bytes-check.sh): a `copy` range of element-wise passes over a buffer of 1 GiB
(each reads 1 GiB and writes 1 GiB, far past the 50 MB L2), then `step`s of a decode-like loop
(a BF16 [batch, hidden] activation through `layers` [hidden, hidden] weights, each step reading
all the weights once and waiting for its result, as a decode step waits for its token).

    python3 examples/workloads/copy_steps.py [--copies N] [--gib G] [--steps N] [--layers L] [--known]

With --known it prints the known bytes as JSON and runs nothing.
"""

import argparse
import json

import torch
import torch.cuda.nvtx as nvtx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--copies", type=int, default=40)
    p.add_argument("--gib", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--known", action="store_true")
    a = p.parse_args()
    copied = a.copies * a.gib * 2**30
    known = {
        "copy": {"instances": 1, "read": copied, "write": copied},
        # The weights alone: the activations add a few KB.
        "step": {"instances": a.steps, "read": a.layers * a.hidden * a.hidden * 2},
    }
    if a.known:
        print(json.dumps(known))
        return
    dev, dt = "cuda", torch.bfloat16
    n = a.gib * 2**30 // 2
    src = torch.ones(n, device=dev, dtype=dt)
    dst = torch.empty_like(src)
    # Outside any range: the kernel's first launch loads its code.
    torch.add(src, 1, out=dst)
    torch.cuda.synchronize()
    nvtx.range_push("copy")
    for _ in range(a.copies):
        torch.add(src, 1, out=dst)
    torch.cuda.synchronize()
    nvtx.range_pop()
    del src, dst
    weights = [torch.randn(a.hidden, a.hidden, device=dev, dtype=dt) * 0.01 for _ in range(a.layers)]
    x = torch.randn(a.batch, a.hidden, device=dev, dtype=dt)

    def forward(x):
        for w in weights:
            x = x @ w
        return x

    for _ in range(3):
        forward(x)
    torch.cuda.synchronize()
    for _ in range(a.steps):
        nvtx.range_push("step")
        x = forward(x)
        x.sum().item()
        nvtx.range_pop()


if __name__ == "__main__":
    main()
