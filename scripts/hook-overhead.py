#!/usr/bin/env python3
"""What stage2's Python hook costs a transformers generate() loop, measured in one process so
that the rows compare like with like: rounds alternate between the hook's automatic phases off
and on, and Python sampling off and at each rate, and each setting's median generate() time is
reported with its cost per new token against the plain run. No profiler is attached (the NVTX
calls are then the cheap no-op they are for any NVTX-marked workload outside a capture).

    PYTHONPATH=src/passes/workload/hook STAGE2_AUTO_NVTX=1 python3 scripts/hook-overhead.py [--rounds 7]

Prints one Markdown table.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "workloads"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--rates", default="100,200,1000")
    a = p.parse_args()
    import sitecustomize as hook  # stage2's hook, first on PYTHONPATH
    import torch
    import transformers
    from transformers.generation.utils import GenerationMixin
    from transformers.modeling_utils import PreTrainedModel

    if "__call__" not in PreTrainedModel.__dict__:
        sys.exit("run with STAGE2_AUTO_NVTX=1 and the hook first on PYTHONPATH")
    hooked = (PreTrainedModel.__dict__["__call__"], GenerationMixin.generate)
    plain = (None, GenerationMixin.generate.__wrapped__)

    def phases(on):
        call, gen = hooked if on else plain
        if call is None:
            if "__call__" in PreTrainedModel.__dict__:
                del PreTrainedModel.__call__
        else:
            PreTrainedModel.__call__ = call
        GenerationMixin.generate = gen

    cfg = transformers.Qwen2Config(
        vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
        num_attention_heads=16, num_key_value_heads=8, pad_token_id=0, eos_token_id=None,
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(1, 32000, (4, 256), device="cuda")
    gen = dict(max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, do_sample=False)

    def once():
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **gen)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    rates = [float(r) for r in a.rates.split(",") if r]
    settings = [("no hook", False, 0.0), ("auto phases", True, 0.0)]
    settings += [(f"sampling {r:g} Hz", False, r) for r in rates]
    times = {name: [] for name, _, _ in settings}
    folder = tempfile.mkdtemp()
    with torch.inference_mode():
        phases(False)
        once()
        for _ in range(a.rounds):
            for name, on, hz in settings:
                phases(on)
                sampler = None
                if hz:
                    sampler = hook._Sampler(hz, folder)
                    import threading

                    threading.Thread(target=sampler.run, daemon=True).start()
                times[name].append(once())
                if sampler:
                    sampler.stopped = True
                    time.sleep(2 / hz)
                    sampler.close()
    base = statistics.median(times["no hook"])
    print(f"| setting | median generate() (ms), {a.rounds} rounds | per new token (ms) | cost per new token (us) | vs no hook |")
    print("|---|--:|--:|--:|--:|")
    for name, _, _ in settings:
        m = statistics.median(times[name])
        print(
            f"| {name} | {1e3 * m:.1f} | {1e3 * m / a.new_tokens:.3f} | "
            f"{1e6 * (m - base) / a.new_tokens:+.1f} | {100 * (m - base) / base:+.1f}% |"
        )


if __name__ == "__main__":
    main()
