"""Small transformers models of other families, built from configs with random weights, run
through generate() with no NVTX of their own (for `--auto-nvtx`), or through a hand-written
decode loop whose steps are NVTX start/end ranges (`--loop`).

    python3 examples/workloads/families.py --arch gpt2|gemma2|phi3|neox|opt|mistral|qwen3moe|
        deepseek3|mamba|t5 [--loop] [--new-tokens N]

t5 is an encoder-decoder (generate() runs the encoder once, then the decoder per token); mamba
is a state-space model (no attention, no KV cache), run on transformers' own PyTorch path.
"""

import argparse

import torch
import transformers


def build(arch):
    small = dict(vocab_size=8192, num_hidden_layers=4, pad_token_id=0, eos_token_id=None)
    if arch == "gpt2":
        cfg = transformers.GPT2Config(n_embd=512, n_head=8, n_positions=1024, **small)
        return transformers.GPT2LMHeadModel(cfg)
    if arch == "gemma2":
        cfg = transformers.Gemma2Config(
            hidden_size=512, intermediate_size=1408, num_attention_heads=8,
            num_key_value_heads=4, head_dim=64, **small)
        return transformers.Gemma2ForCausalLM(cfg)
    if arch == "phi3":
        cfg = transformers.Phi3Config(
            hidden_size=512, intermediate_size=1408, num_attention_heads=8,
            num_key_value_heads=8, **small)
        return transformers.Phi3ForCausalLM(cfg)
    if arch == "opt":
        cfg = transformers.OPTConfig(
            hidden_size=512, ffn_dim=1408, num_attention_heads=8, word_embed_proj_dim=512,
            max_position_embeddings=1024, **small)
        return transformers.OPTForCausalLM(cfg)
    if arch == "mistral":
        cfg = transformers.MistralConfig(
            hidden_size=512, intermediate_size=1408, num_attention_heads=8,
            num_key_value_heads=4, sliding_window=32, **small)
        return transformers.MistralForCausalLM(cfg)
    if arch == "qwen3moe":
        cfg = transformers.Qwen3MoeConfig(
            hidden_size=512, intermediate_size=1408, moe_intermediate_size=256, num_experts=8,
            num_experts_per_tok=2, num_attention_heads=8, num_key_value_heads=4, head_dim=64,
            **small)
        return transformers.Qwen3MoeForCausalLM(cfg)
    if arch == "deepseek3":
        cfg = transformers.DeepseekV3Config(
            hidden_size=512, intermediate_size=1408, moe_intermediate_size=256,
            num_attention_heads=8, num_key_value_heads=8, n_routed_experts=8, n_shared_experts=1,
            num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1,
            q_lora_rank=128, kv_lora_rank=64, qk_rope_head_dim=16, qk_nope_head_dim=32,
            v_head_dim=32, **small)
        return transformers.DeepseekV3ForCausalLM(cfg)
    if arch == "mamba":
        cfg = transformers.MambaConfig(hidden_size=512, state_size=16, **small)
        return transformers.MambaForCausalLM(cfg)
    if arch == "t5":
        cfg = transformers.T5Config(
            vocab_size=8192, d_model=512, d_kv=64, d_ff=1408, num_layers=4, num_heads=8,
            decoder_start_token_id=0, pad_token_id=0, eos_token_id=None)
        return transformers.T5ForConditionalGeneration(cfg)
    cfg = transformers.GPTNeoXConfig(
        hidden_size=512, intermediate_size=1408, num_attention_heads=8, **small)
    return transformers.GPTNeoXForCausalLM(cfg)


def chunked(model, ids, steps):
    """A serving-style step loop: each `step` decodes one token for the running sequences and
    every 4th also prefills a chunk of a new prompt (forward passes unmarked: `--auto-nvtx`)."""
    nvtx = torch.cuda.nvtx
    out = model(input_ids=ids, use_cache=True)
    cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    chunk = ids[:1, :32]
    for k in range(steps):
        nvtx.range_push("step")
        out = model(input_ids=token, past_key_values=cache, use_cache=True)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        if k % 4 == 3:
            model(input_ids=chunk, use_cache=False)
        nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"chunked: {steps} steps, {steps // 4} with a prompt chunk")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="gpt2", choices=["gpt2", "gemma2", "phi3", "neox", "opt", "mistral", "qwen3moe", "deepseek3", "mamba",
                 "t5"])
    p.add_argument("--loop", action="store_true", help="hand-written loop, start/end ranges")
    p.add_argument(
        "--chunked",
        action="store_true",
        help="a `step` push/pop range per decode step; every 4th step also runs a prompt chunk",
    )
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--prompt-len", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=16)
    a = p.parse_args()
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = build(a.arch).to(torch.bfloat16).eval()
    ids = torch.randint(1, 8000, (a.batch, a.prompt_len), device="cuda")
    with torch.no_grad():
        if a.chunked:
            chunked(model, ids, a.new_tokens)
            return
        if not a.loop:
            out = model.generate(ids, max_new_tokens=a.new_tokens, do_sample=False)
            # An encoder-decoder's output is the decoder's tokens after its start token.
            made = out.shape[1] - (1 if a.arch == "t5" else ids.shape[1])
            print(f"{a.arch}: generated {made} tokens per sequence")
            return
        nvtx = torch.cuda.nvtx
        r = nvtx.range_start("prefill")
        out = model(input_ids=ids, use_cache=True)
        nvtx.range_end(r)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(a.new_tokens):
            r = nvtx.range_start("decode")
            out = model(input_ids=token, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
            nvtx.range_end(r)
        torch.cuda.synchronize()
        print(f"{a.arch}: {a.new_tokens} decode steps by hand")


if __name__ == "__main__":
    main()
