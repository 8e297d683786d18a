#!/usr/bin/env python3
"""A tiny decoder-only LLM for profiling: random weights, built from a config, never downloaded.

It runs one prefill pass over the prompt and a KV-cached greedy decode loop, marked with NVTX:
`prefill`, `decode`, one `step` range per decode step and, inside them, one range per model
stage (`attn`, `mlp`). `--nvtx-style startend` emits start/end ranges instead of push/pop so
both kinds of gating are exercised. Prints tokens/s.

Uses transformers' Llama classes when importable, else a small pure-PyTorch decoder.
"""

import argparse
import contextlib
import os
import sys
import time

import torch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=8)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--nvtx-style", default="pushpop", choices=["pushpop", "startend"])
    p.add_argument("--no-stage-ranges", action="store_true", help="no attn/mlp ranges")
    p.add_argument("--impl", default="auto", choices=["auto", "hf", "torch"])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print-tokens", action="store_true", help="print the generated token ids")
    p.add_argument(
        "--no-cudnn-sdp",
        action="store_true",
        help="turn PyTorch's cuDNN attention backend off (torch.backends.cuda.enable_cudnn_sdp): "
        "SDPA then uses a backend that does not build a kernel for each new KV length",
    )
    p.add_argument(
        "--dist",
        action="store_true",
        help="data parallel over torch.distributed/NCCL (run under torchrun): one model per rank "
        "on cuda:LOCAL_RANK, and an all-reduce of the logits in prefill and every decode step",
    )
    p.add_argument(
        "--tp",
        type=int,
        default=0,
        metavar="N",
        help="tensor parallel over N ranks (run under torchrun with N processes; hf impl): "
        "attention heads and MLP columns split across ranks, an NCCL all-reduce after each "
        "attention and MLP block",
    )
    return p.parse_args()


class Nvtx:
    """NVTX ranges in either style; start/end ranges are closed in LIFO order here."""

    def __init__(self, style):
        self.style = style
        self.stack = []

    def push(self, name):
        if self.style == "pushpop":
            torch.cuda.nvtx.range_push(name)
        else:
            self.stack.append(torch.cuda.nvtx.range_start(name))

    def pop(self):
        if self.style == "pushpop":
            torch.cuda.nvtx.range_pop()
        else:
            torch.cuda.nvtx.range_end(self.stack.pop())

    @contextlib.contextmanager
    def range(self, name):
        self.push(name)
        try:
            yield
        finally:
            self.pop()


def hf_model(args, dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=int(args.hidden * 2.75),
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        max_position_embeddings=max(2048, args.prompt_len + args.new_tokens + 8),
    )
    model = LlamaForCausalLM(cfg).to(device=args.device, dtype=dtype).eval()
    stages = []
    for layer in model.model.layers:
        stages.append(("attn", layer.self_attn))
        stages.append(("mlp", layer.mlp))
    return "hf-llama", model, stages


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.Linear(d, 3 * d, bias=False)
        self.proj = torch.nn.Linear(d, d, bias=False)
        self.norm2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d, bias=False), torch.nn.GELU(), torch.nn.Linear(4 * d, d, bias=False)
        )

    def forward(self, x, cache):
        b, t, d = x.shape
        q, k, v = self.attn(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x)), (k, v)


class TinyDecoder(torch.nn.Module):
    def __init__(self, args):
        super().__init__()
        self.embed = torch.nn.Embedding(args.vocab, args.hidden)
        self.blocks = torch.nn.ModuleList(Block(args.hidden, args.heads) for _ in range(args.layers))
        self.head = torch.nn.Linear(args.hidden, args.vocab, bias=False)

    def forward(self, ids, cache=None):
        x = self.embed(ids)
        new = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, None if cache is None else cache[i])
            new.append(kv)
        return self.head(x), new


def shard_tp(model, dist):
    """Megatron-style tensor parallelism on a built HF Llama: every rank built the same weights
    (same seed) and keeps its slice. q/k/v and gate/up keep a block of output rows (heads,
    MLP columns); o_proj and down_proj keep the matching input columns, and their partial
    outputs are summed across ranks by an all-reduce."""
    rank, size = dist.get_rank(), dist.get_world_size()

    def rows(linear):
        n = linear.weight.shape[0] // size
        linear.weight = torch.nn.Parameter(linear.weight[rank * n : (rank + 1) * n].clone())

    def cols(linear):
        n = linear.weight.shape[1] // size
        linear.weight = torch.nn.Parameter(linear.weight[:, rank * n : (rank + 1) * n].clone())
        linear.register_forward_hook(lambda m, a, out: dist.all_reduce(out) or out)

    for layer in model.model.layers:
        a, m = layer.self_attn, layer.mlp
        for lin in (a.q_proj, a.k_proj, a.v_proj, m.gate_proj, m.up_proj):
            rows(lin)
        cols(a.o_proj)
        cols(m.down_proj)


def torch_model(args, dtype):
    model = TinyDecoder(args).to(device=args.device, dtype=dtype).eval()
    stages = []
    for blk in model.blocks:
        stages.append(("attn", blk.attn))
        stages.append(("mlp", blk.mlp))
    return "torch-decoder", model, stages


def add_stage_ranges(nvtx, stages):
    for name, module in stages:
        module.register_forward_pre_hook(lambda m, a, n=name: nvtx.push(n))
        module.register_forward_hook(lambda m, a, o: nvtx.pop())


def main():
    args = parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("tiny_llm: no CUDA device visible", file=sys.stderr)
        return 2
    dist = None
    if args.tp:
        args.dist = True
        if args.impl == "torch" or args.heads % args.tp:
            print("tiny_llm: --tp needs the hf impl and --heads divisible by N", file=sys.stderr)
            return 2
    if args.dist:
        import torch.distributed as dist

        # torchrun sets RANK/WORLD_SIZE/LOCAL_RANK; under srun or mpirun, take them from there.
        for rank, size, local in (
            ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
        ):
            if "RANK" not in os.environ and rank in os.environ:
                os.environ["RANK"] = os.environ[rank]
                os.environ["WORLD_SIZE"] = os.environ.get(size, "1")
                os.environ["LOCAL_RANK"] = os.environ.get(local, "0")
        os.environ.setdefault("MASTER_ADDR", os.environ.get("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"))
        os.environ.setdefault("MASTER_PORT", "29500")

        dist.init_process_group("nccl")
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        args.device = f"cuda:{local}"
        if args.tp and args.tp != dist.get_world_size():
            print(f"tiny_llm: --tp {args.tp} but {dist.get_world_size()} ranks", file=sys.stderr)
            return 2
    torch.manual_seed(args.seed)
    if args.no_cudnn_sdp:
        torch.backends.cuda.enable_cudnn_sdp(False)
    dtype = getattr(torch, args.dtype)
    impl, model, stages = None, None, None
    if args.impl in ("auto", "hf"):
        try:
            impl, model, stages = hf_model(args, dtype)
        except ImportError:
            if args.impl == "hf":
                raise
    if model is None:
        impl, model, stages = torch_model(args, dtype)
    if args.tp:
        if impl != "hf-llama":
            print("tiny_llm: --tp needs transformers (the hf impl)", file=sys.stderr)
            return 2
        shard_tp(model, dist)
        impl = f"hf-llama-tp{args.tp}"
    # Data parallel: each rank has the whole model; tensor parallel: the layers already reduce.
    reduce_logits = dist is not None and not args.tp
    nvtx = Nvtx(args.nvtx_style)
    if not args.no_stage_ranges:
        add_stage_ranges(nvtx, stages)
    ids = torch.randint(0, args.vocab, (args.batch, args.prompt_len), device=args.device)

    t0 = time.perf_counter()
    with torch.inference_mode():
        with nvtx.range("prefill"):
            if impl.startswith("hf-llama"):
                out = model(input_ids=ids, use_cache=True)
                logits, cache = out.logits, out.past_key_values
            else:
                logits, cache = model(ids)
            if reduce_logits:
                dist.all_reduce(logits)
            token = logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        generated = [token]
        with nvtx.range("decode"):
            for _ in range(args.new_tokens):
                with nvtx.range("step"):
                    if impl.startswith("hf-llama"):
                        out = model(input_ids=token, past_key_values=cache, use_cache=True)
                        logits, cache = out.logits, out.past_key_values
                    else:
                        logits, cache = model(token, cache)
                    if reduce_logits:
                        dist.all_reduce(logits)
                    token = logits[:, -1:].argmax(-1)
                    generated.append(token)
            torch.cuda.synchronize()
        t2 = time.perf_counter()
    decoded = args.batch * args.new_tokens
    rank = f"rank {dist.get_rank()}/{dist.get_world_size()} " if dist else ""
    print(
        f"{rank}tiny_llm {impl} {args.dtype} batch={args.batch} prompt={args.prompt_len} "
        f"new_tokens={args.new_tokens} nvtx={args.nvtx_style}: prefill {1e3 * (t1 - t0):.1f} ms, "
        f"decode {1e3 * (t2 - t1):.1f} ms, {decoded / max(t2 - t1, 1e-9):.1f} tokens/s"
    )
    if args.print_tokens:
        print(f"{rank}tokens {torch.cat(generated, 1).tolist()}")
    if dist:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
