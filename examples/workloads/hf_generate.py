#!/usr/bin/env python3
"""A real transformers `generate()` loop for profiling: random weights, built from a config.

transformers' own `generate()` drives prefill and decode. NVTX marks are added from outside the
model code: a forward pre/post hook on the outermost model marks each forward pass `prefill`
(more than one new token) or `decode` (one new token), with a `stage2:tokens batch=B new=N` mark
inside as stage2's hook puts it, and `generate` surrounds the call. With
`--static` the KV cache is static and transformers compiles the decode step with torch.compile
(CUDA graphs); the compiled call is wrapped so its steps are marked too (hooks do not run inside
a compiled region).

Architectures: llama, qwen2, mixtral (mixture of experts). `--large` is a ~1.2B-parameter Llama
shape for which prefill at batch 8 x 1024 tokens is compute-bound.

Switches for profiling experiments:
  --no-nvtx         emit no NVTX at all (for automatic-phase tests)
  --profiler-api    call torch.cuda.profiler.start()/stop() around each measured generate()
  --repeat K        K measured generate() calls (each in its own profiler window)
  --extra-work N    N extra (hidden x hidden) matrix products in every decode step (a slowdown)
  --assistant-layers N  speculative decoding: generate(assistant_model=...) with a draft model of
                    N layers of the same shape; the target's passes over the draft's candidates
                    are marked `verify` (the draft model's passes are not marked: `--no-nvtx`
                    under stage2's `--auto-nvtx` marks them, and each step's tokens accepted)
  --compile         a hand-written decode loop over torch.compile(mode="reduce-overhead") (CUDA
                    graphs) instead of generate(); each step is marked `decode`
"""

import argparse
import contextlib
import sys
import time

T_START = time.time()  # before torch's import: the probes split a run's time at these marks

import torch  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="llama", choices=["llama", "qwen2", "mixtral"])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--intermediate", type=int, default=0, help="default: 2.75 x hidden")
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--experts", type=int, default=8, help="mixtral: experts per layer")
    p.add_argument("--top-k", type=int, default=2, help="mixtral: experts per token")
    p.add_argument("--large", action="store_true", help="~1.2B Llama: 16 layers, hidden 2048")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--prompt-len", type=int, default=256)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--static", action="store_true", help="static KV cache: compiled decode")
    p.add_argument("--warmup", type=int, default=1, help="unmarked generate() calls first")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--no-nvtx", action="store_true")
    p.add_argument("--profiler-api", action="store_true")
    p.add_argument("--extra-work", type=int, default=0, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--assistant-layers", type=int, default=0, metavar="N")
    p.add_argument("--compile", action="store_true")
    p.add_argument(
        "--split-gpus",
        action="store_true",
        help="second half of the layers, the norm and the LM head on cuda:1 (one process, two GPUs)",
    )
    return p.parse_args()


def build_model(args, dtype):
    import transformers

    if args.large:
        args.layers, args.hidden, args.heads, args.kv_heads = 16, 2048, 32, 8
        args.intermediate = args.intermediate or 8192
    inter = args.intermediate or int(args.hidden * 2.75) // 64 * 64
    common = dict(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=inter,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=max(4096, args.prompt_len + args.new_tokens + 8),
        pad_token_id=0,
        eos_token_id=None,
    )
    if args.arch == "llama":
        cfg = transformers.LlamaConfig(**common)
        cls = transformers.LlamaForCausalLM
    elif args.arch == "qwen2":
        cfg = transformers.Qwen2Config(**common)
        cls = transformers.Qwen2ForCausalLM
    else:
        cfg = transformers.MixtralConfig(
            **common, num_local_experts=args.experts, num_experts_per_tok=args.top_k
        )
        cls = transformers.MixtralForCausalLM
    torch.manual_seed(args.seed)
    with torch.device("cuda"):
        model = cls(cfg).to(dtype).eval()
    return model


class PhaseMarks:
    """NVTX `prefill`/`decode` around each forward pass of the outermost model.

    Eager forwards are marked by hooks; a compiled forward (static cache) by a wrapper around the
    compiled call, since hooks are traced away inside a compiled region.
    """

    def __init__(self, model, assisted=False):
        self.enabled = False
        # Assisted generation: the target's passes over several tokens after its first check
        # the draft's candidates (`verify`, as stage2's hook names them), not a prompt.
        self.assisted = assisted
        self.passes = 0
        # Inside a wrapped compiled call the hooks may still run (eagerly, around the compiled
        # region): the wrapper's range is the one that counts.
        self.in_compiled = False
        self.open = 0
        self.counts = {"prefill": 0, "decode": 0, "verify": 0}
        model.register_forward_pre_hook(self._pre, with_kwargs=True)
        # always_call: an exception in forward still closes the range.
        model.register_forward_hook(self._post, with_kwargs=True, always_call=True)
        if hasattr(model, "get_compiled_call"):
            original = model.get_compiled_call

            def compiled_call(*a, **kw):
                return self._wrap(original(*a, **kw))

            model.get_compiled_call = compiled_call

    @staticmethod
    def _ids(args, kwargs):
        ids = kwargs.get("input_ids")
        if ids is None:
            ids = kwargs.get("inputs_embeds")
        if ids is None and args:
            ids = args[0]
        return ids

    def _push(self, args, kwargs):
        ids = self._ids(args, kwargs)
        name = "decode" if ids is not None and ids.shape[1] == 1 else "prefill"
        if self.assisted and self.passes > 0 and name == "prefill":
            name = "verify"
        self.passes += 1
        self.counts[name] += 1
        torch.cuda.nvtx.range_push(name)
        # The tokens the pass handles, as stage2's hook marks them (a verify pass's are
        # candidates, not output): per-token figures and the small-batch lever read them.
        if ids is not None and name != "verify":
            torch.cuda.nvtx.mark(f"stage2:tokens batch={ids.shape[0]} new={ids.shape[1]}")
        self.open += 1

    def _pop(self):
        if self.open:
            self.open -= 1
            torch.cuda.nvtx.range_pop()

    def _hooks_on(self):
        return self.enabled and not self.in_compiled and not torch.compiler.is_compiling()

    def _pre(self, module, args, kwargs):
        if self._hooks_on():
            self._push(args, kwargs)

    def _post(self, module, args, kwargs, output):
        if self._hooks_on():
            self._pop()

    def _wrap(self, fn):
        def call(*args, **kwargs):
            if not self.enabled:
                return fn(*args, **kwargs)
            self._push(args, kwargs)
            self.in_compiled = True
            try:
                return fn(*args, **kwargs)
            finally:
                self.in_compiled = False
                self._pop()

        return call


def split_across_gpus(model):
    """The second half of the decoder layers, the final norm and the LM head on cuda:1, as a
    model too large for one GPU is split by device_map; the logits come back to cuda:0."""
    second = torch.device("cuda", 1)

    def to(x):
        if torch.is_tensor(x):
            return x.to(second)
        if isinstance(x, tuple):
            return tuple(to(v) for v in x)
        return x

    def pre(module, args, kwargs):
        return to(args), {k: to(v) for k, v in kwargs.items()}

    layers = model.model.layers
    for m in [*layers[len(layers) // 2 :], model.model.norm, model.lm_head]:
        m.to(second)
        m.register_forward_pre_hook(pre, with_kwargs=True)

    def back(module, args, kwargs, output):
        output.logits = output.logits.to("cuda:0")
        return output

    model.register_forward_hook(back, with_kwargs=True)


def add_extra_work(model, n, dtype):
    """n extra matrix products per decode step, folded into the logits so nothing drops them."""
    h = model.config.hidden_size
    w = torch.randn(h, h, device="cuda", dtype=dtype)

    def hook(module, inputs, output):
        x = inputs[0]
        if x.shape[1] != 1:
            return output
        y = x[:, -1, :]
        for _ in range(n):
            y = torch.tanh(y @ w)
        return output + 0.0 * y.sum()

    model.lm_head.register_forward_hook(hook)


def compiled_loop(model, ids, new_tokens):
    """Greedy decode over a static cache with the step compiled as CUDA graphs, as serving code
    written against torch.compile does it: prefill eagerly, then one compiled call per token."""
    from transformers import StaticCache

    batch, prompt = ids.shape
    cache = StaticCache(config=model.config, max_cache_len=prompt + new_tokens + 1)
    step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
    pos = torch.arange(prompt, device=ids.device)
    torch.cuda.nvtx.range_push("prefill")
    torch.cuda.nvtx.mark(f"stage2:tokens batch={batch} new={prompt}")
    logits = model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True).logits
    torch.cuda.nvtx.range_pop()
    tok = logits[:, -1:].argmax(-1)
    out = [tok]
    for i in range(new_tokens - 1):
        torch.cuda.nvtx.range_push("decode")
        torch.cuda.nvtx.mark(f"stage2:tokens batch={batch} new=1")
        pos = torch.tensor([prompt + i], device=ids.device)
        logits = step(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True).logits
        tok = logits[:, -1:].argmax(-1).clone()
        torch.cuda.nvtx.range_pop()
        out.append(tok)
    return torch.cat([ids, *out], dim=1)


def main():
    args = parse_args()
    dtype = getattr(torch, args.dtype)
    model = build_model(args, dtype)
    built = time.time() - T_START
    if args.assistant_layers:
        layers, args.layers = args.layers, args.assistant_layers
        assistant = build_model(args, dtype)
        args.layers = layers
    if args.extra_work:
        add_extra_work(model, args.extra_work, dtype)
    if args.split_gpus:
        split_across_gpus(model)
    marks = None if args.no_nvtx or args.compile else PhaseMarks(model, bool(args.assistant_layers))
    ids = torch.randint(1, args.vocab, (args.batch, args.prompt_len), device="cuda")
    mask = torch.ones_like(ids)
    gen = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False)
    if args.static:
        gen["cache_implementation"] = "static"
    if args.assistant_layers:
        gen["assistant_model"] = assistant

    def generate():
        if args.compile:
            return compiled_loop(model, ids, args.new_tokens)
        return model.generate(input_ids=ids, attention_mask=mask, **gen)

    t0 = time.perf_counter()
    with torch.inference_mode():
        for _ in range(args.warmup):
            generate()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        measured = time.time() - T_START
        times = []
        for _ in range(args.repeat):
            if marks:
                marks.enabled = True
                marks.passes = 0
            if args.profiler_api:
                torch.cuda.profiler.start()
            s = time.perf_counter()
            ctx = contextlib.nullcontext() if args.no_nvtx else torch.cuda.nvtx.range("generate")
            with ctx:
                out = generate()
                torch.cuda.synchronize()
            times.append(time.perf_counter() - s)
            if args.profiler_api:
                torch.cuda.profiler.stop()
            if marks:
                marks.enabled = False
    new = out.shape[1] - args.prompt_len
    params = sum(p.numel() for p in model.parameters())
    compiled = hasattr(model, "_compiled_call") and model._compiled_call is not None
    best = min(times)
    print(
        f"hf_generate arch={args.arch} params={params / 1e6:.0f}M layers={args.layers} "
        f"hidden={args.hidden} batch={args.batch} prompt={args.prompt_len} new_tokens={new} "
        f"dtype={args.dtype} static={args.static} compiled_decode={compiled} "
        f"extra_work={args.extra_work}: warm-up {t1 - t0:.1f} s, generate {1e3 * best:.1f} ms "
        f"({args.batch * new / best:.0f} tokens/s)"
        + (
            f", nvtx prefill={marks.counts['prefill']} decode={marks.counts['decode']}"
            + (f" verify={marks.counts['verify']}" if args.assistant_layers else "")
            if marks
            else ""
        )
        + f"; since start: model built {built:.2f} s, measured from {measured:.2f} s, "
        f"done {time.time() - T_START:.2f} s",
        flush=True,
    )
    if new != args.new_tokens:
        print(f"hf_generate: generated {new} tokens, asked for {args.new_tokens}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
