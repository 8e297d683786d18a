"""A hand-written step loop over CUDA graphs (no transformers): each `step` NVTX range replays
two captured graphs with kernels launched outside them in between (a softmax, an argmax, the
copy that feeds the next step), as serving engines do around their decode graphs.

    python3 examples/workloads/graph_loop.py [--steps N] [--hidden H] [--layers L] [--record-in-step]

With --record-in-step the graphs are warmed up and captured inside the first `step` range, as an
engine that records its graphs on its first request does (the other steps only replay). With
--rerecord-every K they are captured again every K steps, as a loop whose shapes change (or whose
graph cache misses) does.
"""

import argparse

import torch
import torch.cuda.nvtx as nvtx


def block(x, weights):
    for w in weights:
        x = torch.nn.functional.gelu(x @ w)
    return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--record-in-step", action="store_true")
    p.add_argument("--rerecord-every", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    weights = [torch.randn(a.hidden, a.hidden, device=dev, dtype=dt) * 0.01 for _ in range(a.layers)]
    first, second = weights[: a.layers // 2], weights[a.layers // 2 :]
    state = torch.randn(a.batch, a.hidden, device=dev, dtype=dt)
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()

    def record():
        # Warm up on a side stream before capturing, as torch.cuda.graph requires.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                block(block(state, first), second)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(g1):
            mid = block(state, first)
        with torch.cuda.graph(g2):
            out = block(mid, second)
        return mid, out

    if not a.record_in_step:
        mid, out = record()
    for i in range(a.steps):
        nvtx.range_push("step")
        if a.record_in_step and i == 0:
            mid, out = record()
        elif a.rerecord_every and i > 0 and i % a.rerecord_every == 0:
            g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
            mid, out = record()
        g1.replay()
        probs = mid.float().softmax(-1)
        g2.replay()
        token = out.argmax(-1)
        state.copy_(out)
        nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"graph_loop done: {a.steps} steps, last token {int(token[0])}, p {float(probs[0, 0]):.3g}")


if __name__ == "__main__":
    main()
