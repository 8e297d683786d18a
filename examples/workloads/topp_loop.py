"""A hand-written step loop that samples its next token with top-p (sort, cumulative sum,
multinomial), as serving engines do: the scan runs in CUB, which emits NVTX ranges of its own
(`cub::DeviceScan::...`, in its own NVTX domain) inside the loop's `step` ranges.

    python3 examples/workloads/topp_loop.py [--steps N] [--vocab V] [--batch B]
"""

import argparse

import torch
import torch.cuda.nvtx as nvtx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    a = p.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    head = torch.randn(a.hidden, a.vocab, device=dev, dtype=torch.bfloat16) * 0.02
    embed = torch.randn(a.vocab, a.hidden, device=dev, dtype=torch.bfloat16) * 0.02
    tokens = torch.zeros(a.batch, dtype=torch.long, device=dev)
    for _ in range(a.steps):
        nvtx.range_push("step")
        logits = (embed[tokens] @ head).float()
        probs = logits.softmax(-1)
        sorted_p, idx = probs.sort(-1, descending=True)
        keep = sorted_p.cumsum(-1) <= 0.9
        keep[:, 0] = True
        sorted_p = sorted_p * keep
        pick = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1)
        tokens = idx.gather(-1, pick).squeeze(-1)
        nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"topp_loop done: {a.steps} steps, last tokens {tokens[:4].tolist()}")


if __name__ == "__main__":
    main()
