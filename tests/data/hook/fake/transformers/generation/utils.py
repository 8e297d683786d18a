class GenerationMixin:
    def generate(self, input_ids, new_tokens=3, compiled=False, assistant_model=None):
        """Prefill with the whole prompt, then one token per step, as transformers does. With
        an assistant: each round the assistant's own generate() drafts 2 tokens and the model
        checks them in one pass over 3 tokens (transformers' assisted decoding), accepting one of
        them in the first round and both in the second. Returns the prompt and the new tokens."""
        import torch

        batch, prompt = input_ids.shape
        self(input_ids=input_ids)
        if assistant_model is not None:
            for _ in range(2):
                assistant_model.generate(torch.Tensor(batch, 2), new_tokens=2)
                self(input_ids=torch.Tensor(batch, 3))
            # The prompt's token, then 1 + 1 and 2 + 1 from the two checks.
            return torch.Tensor(batch, prompt + 6)
        step = self.get_compiled_call(None) if compiled else self.__call__
        for _ in range(new_tokens - 1):
            step(input_ids=torch.Tensor(batch, 1))
        return torch.Tensor(batch, prompt + new_tokens)
