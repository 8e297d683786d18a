class GenerationMixin:
    def generate(self, input_ids, new_tokens=3, compiled=False):
        """Prefill with the whole prompt, then one token per step, as transformers does."""
        import torch

        self(input_ids=input_ids)
        step = self.get_compiled_call(None) if compiled else self.__call__
        for _ in range(new_tokens - 1):
            step(input_ids=torch.Tensor(input_ids.shape[0], 1))
        return "done"
