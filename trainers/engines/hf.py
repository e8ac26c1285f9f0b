"""``HFEngine``: generation with transformers' ``generate``, batched, ragged per prompt."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from adaroll_env.errors import check_int
from trainers.engines.base import Generation, SamplingSpec, check_request
from trainers.models.collate import pad_batch
from trainers.models.dropout import has_dropout


class HFEngine:
    """Generate with a transformers causal LM (CPU or GPU, the model's own dtype).

    The engine samples from the very module the trainer updates, so ``sync_weights`` is free
    when handed that module; given another one, it copies the weights. Prompts are repeated
    ``counts[i]`` times, left-padded and generated in chunks of ``batch_size`` sequences. Seeds
    are honoured without touching the caller's random state (a forked torch RNG).

    >>> engine = HFEngine(model, tokenizer)                                  # doctest: +SKIP
    >>> gen = engine.generate([[1, 5, 6]], [4], SamplingSpec(), seed=0)       # doctest: +SKIP
    """

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 256) -> None:
        check_int("batch_size", batch_size, 1)
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.eos_id = tokenizer.eos_token_id
        self._configs: dict[SamplingSpec, Any] = {}
        self._dropout = has_dropout(model)  # checked once: the trainer turns dropout off

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        counts: Sequence[int],
        sampling: SamplingSpec,
        *,
        seed: int,
    ) -> Generation:
        """``counts[i]`` completions of each prompt; see ``trainers.engines.base.Engine``."""
        c = check_request(prompt_ids, counts)
        start = time.perf_counter()
        rows = np.repeat(np.arange(len(prompt_ids), dtype=np.int64), c)
        completion_ids: list[list[int]] = []
        logprobs: list[np.ndarray] = []
        truncated = np.zeros(rows.size, dtype=bool)
        device = next(self.model.parameters()).device
        was_training = self.model.training
        # train() and eval() differ only by dropout; without any, skip the switch (it walks
        # every module on each call)
        switch = was_training and self._dropout
        if switch:
            self.model.eval()
        devices = [device] if device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(seed)
                for lo in range(0, rows.size, self.batch_size):
                    chunk = rows[lo : lo + self.batch_size]
                    ids, lps, trunc = self._generate_chunk(
                        [list(prompt_ids[i]) for i in chunk], sampling, device
                    )
                    completion_ids.extend(ids)
                    logprobs.extend(lps)
                    truncated[lo : lo + chunk.size] = trunc
        finally:
            if switch:
                self.model.train(was_training)
        # (batch_decode([]) gives [""]: no rows, no texts)
        texts = (
            self.tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
            if completion_ids
            else []
        )
        return Generation(
            prompt_index=rows,
            completion_ids=completion_ids,
            texts=list(texts),
            logprobs=logprobs,
            truncated=truncated,
            seconds=time.perf_counter() - start,
        )

    def _generate_chunk(
        self, prompts: list[list[int]], sampling: SamplingSpec, device: torch.device
    ) -> tuple[list[list[int]], list[np.ndarray], np.ndarray]:
        input_ids, attention = pad_batch(
            prompts, pad_id=self.pad_id, side="left", device=device
        )  # [b, P]
        width = input_ids.shape[1]
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            generation_config=self._generation_config(sampling),
        )
        new = out.sequences[:, width:].cpu()  # [b, T]
        t = sampling.temperature if sampling.temperature > 0 else 1.0
        logits = torch.stack(out.logits, dim=1).float().cpu()  # [b, T, V]
        logp = torch.log_softmax(logits / t, dim=-1)  # [b, T, V]
        picked = torch.gather(logp, -1, new.unsqueeze(-1)).squeeze(-1)  # [b, T]
        ids: list[list[int]] = []
        lps: list[np.ndarray] = []
        trunc = np.zeros(len(prompts), dtype=bool)
        for j in range(len(prompts)):
            row = new[j].tolist()
            end = row.index(self.eos_id) + 1 if self.eos_id in row else len(row)
            trunc[j] = self.eos_id not in row
            ids.append(row[:end])
            lps.append(picked[j, :end].numpy().astype(np.float32))
        return ids, lps, trunc

    def _generation_config(self, sampling: SamplingSpec) -> Any:
        """One ``GenerationConfig`` per sampling setting (built once; no top-k)."""
        found = self._configs.get(sampling)
        if found is None:
            from transformers import GenerationConfig

            greedy = sampling.temperature == 0
            kwargs: dict[str, Any] = {
                "max_new_tokens": sampling.max_new_tokens,
                "do_sample": not greedy,
                "pad_token_id": self.pad_id,
                "eos_token_id": self.eos_id,
                "return_dict_in_generate": True,
                "output_logits": True,
                "use_cache": True,
            }
            if not greedy:
                kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
            found = GenerationConfig(**kwargs)
            self._configs[sampling] = found
        return found

    def sync_weights(self, model: Any) -> None:
        """Use ``model``'s weights: free when it is the engine's own module, else a copy."""
        if model is self.model:
            return
        self.model.load_state_dict(model.state_dict())

    def close(self) -> None:
        """Nothing to release: the model belongs to the trainer."""
