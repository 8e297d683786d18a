#!/usr/bin/env python3
"""A serving loop that batches requests: every step decodes one token for each active request,
and a step in which a request arrives also runs that request's prefill (a chunk of its prompt),
so decode-only steps and mixed steps alternate as requests come and go. A small pure-PyTorch
decoder with random weights; one `step` NVTX range per loop step, `prefill` and `decode` inside
it."""

import argparse

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.out = torch.nn.Linear(d, d, bias=False)
        self.up = torch.nn.Linear(d, 4 * d, bias=False)
        self.down = torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x, cache):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        k = torch.cat([cache[0], k.transpose(1, 2)], dim=2) if cache else k.transpose(1, 2)
        v = torch.cat([cache[1], v.transpose(1, 2)], dim=2) if cache else v.transpose(1, 2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, is_causal=cache is None)
        x = x + self.out(o.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(x))), (k, v)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--every", type=int, default=5, help="a request arrives every N steps")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--lifetime", type=int, default=20, help="tokens each request decodes")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=6)
    a = p.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    layers = [Layer(a.hidden, 16).to(dev, dt) for _ in range(a.layers)]
    active = []  # [caches, last hidden, tokens left]
    with torch.no_grad():
        for step in range(a.steps):
            torch.cuda.nvtx.range_push("step")
            if step % a.every == 0:
                torch.cuda.nvtx.range_push("prefill")
                x = torch.randn(1, a.prompt, a.hidden, device=dev, dtype=dt)
                caches = []
                for layer in layers:
                    x, c = layer(x, None)
                    caches.append(c)
                active.append([caches, x[:, -1:], a.lifetime])
                torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("decode")
            for r in active:
                x = r[1]
                for i, layer in enumerate(layers):
                    x, r[0][i] = layer(x, r[0][i])
                r[1], r[2] = x, r[2] - 1
            active = [r for r in active if r[2] > 0]
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
    print(f"batching_loop: {a.steps} steps, a request every {a.every}")


if __name__ == "__main__":
    main()
