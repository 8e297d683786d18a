class _Candidates:
    """An assistant's candidate generator, as transformers' assisted decoding drives it: each
    round the assistant's own generate() drafts 2 tokens past the ids it is given."""

    def __init__(self, assistant):
        self.assistant = assistant

    def get_candidates(self, input_ids):
        import torch

        batch, n = input_ids.shape
        self.assistant.generate(torch.Tensor(batch, 2), new_tokens=2)
        return torch.Tensor(batch, n + 2), None

    def update_candidate_strategy(self, input_ids, scores, num_matches):
        pass


class GenerationMixin:
    def _get_candidate_generator(self, assistant_model=None, **kwargs):
        return _Candidates(assistant_model)

    def generate(self, input_ids, new_tokens=3, compiled=False, assistant_model=None):
        """Prefill with the whole prompt, then one token per step, as transformers does. With
        an assistant: each round the candidate generator drafts 2 tokens (the assistant's own
        generate()) and the model checks them in one pass over 3 tokens (transformers' assisted
        decoding), accepting one of them in the first round and both in the second, then tells
        the generator the new ids and how many matched. Returns the prompt and the new tokens."""
        import torch

        batch, prompt = input_ids.shape
        self(input_ids=input_ids)
        if assistant_model is not None:
            candidates = self._get_candidate_generator(assistant_model=assistant_model)
            ids = torch.Tensor(batch, prompt + 1)
            for accepted in (1, 2):
                candidates.get_candidates(ids)
                self(input_ids=torch.Tensor(batch, 3))
                ids = torch.Tensor(batch, ids.shape[1] + accepted + 1)
                candidates.update_candidate_strategy(ids, None, accepted)
            # The prompt's token, then 1 + 1 and 2 + 1 from the two checks.
            return ids
        step = self.get_compiled_call(None) if compiled else self.__call__
        for _ in range(new_tokens - 1):
            step(input_ids=torch.Tensor(batch, 1))
        return torch.Tensor(batch, prompt + new_tokens)
