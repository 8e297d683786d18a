"""Scenarios for stage2's Python hook; prints what it emitted as JSON, one scenario a line."""
import json
import sys
import time

import torch
from transformers.generation.utils import GenerationMixin
from transformers.modeling_utils import PreTrainedModel


class Inner(PreTrainedModel):
    def forward(self, input_ids=None, **kw):
        return input_ids


class Embedding:
    def __init__(self, *shape):
        self.weight = torch.Tensor(*shape)


class MoeConfig:
    num_hidden_layers = 2
    num_attention_heads = 4
    num_key_value_heads = 2
    hidden_size = 64
    num_local_experts = 8
    num_experts_per_tok = 2


class Outer(PreTrainedModel, GenerationMixin):
    """A mixture-of-experts model in bf16: a 1000-byte embedding table (not shared with the
    output layer), 4000 bytes of other weights, 2000 of them expert weights; KV: 2 layers x 2
    heads x 16 dims."""

    config = MoeConfig()

    def __init__(self):
        self.inner = Inner()
        self.embed = Embedding(500)

    def named_parameters(self):
        return [
            ("embed.weight", self.embed.weight),
            ("layers.0.attn.weight", torch.Tensor(1000)),
            ("layers.0.mlp.experts.gate_up_proj", torch.Tensor(1000)),
        ]

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids=None, inputs_embeds=None, fail=False):
        self.inner(input_ids=input_ids)
        if fail:
            raise ValueError("boom")
        return input_ids


class Seq2Seq(PreTrainedModel):
    """An encoder-decoder: generate() runs its encoder (a model of its own) once, then the
    model per decoder token with the encoder's output."""

    def __init__(self):
        self.encoder = Inner()

    def forward(self, input_ids=None, decoder_input_ids=None, encoder_outputs=None):
        return decoder_input_ids


def scenario(name, fn):
    del torch.LOG[:]
    try:
        fn()
    except ValueError as e:
        torch.LOG.append(["raised", str(e)])
    print(json.dumps({name: [x for x in torch.LOG if not str(x).startswith("['mark', 'stage2:clock")]}))


m = Outer()
print(json.dumps({"startup": list(torch.LOG)}))
scenario("prefill", lambda: m(input_ids=torch.Tensor(2, 5)))
scenario("decode", lambda: m(torch.Tensor(4, 1)))
scenario("embeds", lambda: m(inputs_embeds=torch.Tensor(1, 7, 64)))
scenario("no_ids", lambda: m())
scenario("exception", lambda: m(input_ids=torch.Tensor(1, 1), fail=True))
scenario("generate", lambda: m.generate(torch.Tensor(1, 4)))
scenario("generate_compiled", lambda: m.generate(torch.Tensor(1, 4), compiled=True))
scenario("assisted", lambda: m.generate(torch.Tensor(1, 4), assistant_model=Outer()))
s2s = Seq2Seq()
scenario("seq2seq_encoder", lambda: s2s.encoder(input_ids=torch.Tensor(2, 6)))
scenario("seq2seq_decoder", lambda: s2s(encoder_outputs=[1], decoder_input_ids=torch.Tensor(2, 1)))
scenario("seq2seq_whole", lambda: s2s(input_ids=torch.Tensor(2, 6), decoder_input_ids=torch.Tensor(2, 1)))
if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))
