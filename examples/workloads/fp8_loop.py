#!/usr/bin/env python3
"""A decode-like loop whose projections are FP8 GEMMs (torch._scaled_mm, e4m3), with the work an
FP8 layer does around them: each step scales its activations by their absolute maximum (a
reduction), casts them to FP8, multiplies, and casts back. Random weights; one `decode` NVTX range
per step. Needs a GPU with FP8 tensor cores (Hopper or later)."""

import argparse

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=16, help="rows per step (a batch of tokens)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--steps", type=int, default=24)
    a = p.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    # Weights quantised once, per tensor: (out, in) in FP8, as _scaled_mm wants its second operand
    # column-major.
    weights = []
    for _ in range(a.layers):
        w = torch.randn(a.hidden, a.hidden, device=dev, dtype=torch.bfloat16) / a.hidden**0.5
        s = w.abs().max().float() / FP8_MAX
        weights.append(((w / s).to(FP8), s))
    x = torch.randn(a.tokens, a.hidden, device=dev, dtype=torch.bfloat16)
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push("decode")
        h = x
        for wq, ws in weights:
            amax = h.abs().max().float().clamp(min=1e-6)
            hs = amax / FP8_MAX
            hq = (h / hs).to(FP8)
            y = torch._scaled_mm(hq, wq.t(), scale_a=hs, scale_b=ws, out_dtype=torch.bfloat16)
            h = torch.nn.functional.silu(y) + h
        x = h / h.norm(dim=-1, keepdim=True)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print(f"fp8_loop: {a.steps} steps of {a.layers} FP8 projections, {a.tokens} rows")


if __name__ == "__main__":
    main()
