"""trainers.engines.hf: ``HFEngine`` on the tiny model: ragged counts, seeds, log-probs, modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import LlamaForCausalLM

from trainers import models as models_mod
from trainers.engines import SamplingSpec
from trainers.engines.hf import HFEngine
from trainers.grpo import per_token_logps
from trainers.models.loading import build_tiny_tokenizer, load_policy


@pytest.fixture(scope="module")
def policy(tiny_model_dir: Path) -> tuple[Any, Any]:
    """The warm-started tiny policy, shared by the tests that do not change it."""
    return load_policy(str(tiny_model_dir))


def test_hf_engine_ragged_counts_seeds_and_logprobs(policy: tuple[Any, Any]) -> None:
    model, tok = policy
    engine = HFEngine(model, tok, batch_size=5)  # chunks cut across prompts
    prompts = [tok(p).input_ids for p in ("1+2=", "33+4=", "5*6=", "12-7=")]
    spec = SamplingSpec(max_new_tokens=6, temperature=1.0)
    gen = engine.generate(prompts, [3, 0, 5, 1], spec, seed=7)
    assert gen.prompt_index.tolist() == [0, 0, 0, 2, 2, 2, 2, 2, 3]
    assert len(gen.texts) == len(gen.logprobs) == 9
    again = engine.generate(prompts, [3, 0, 5, 1], spec, seed=7)
    assert again.completion_ids == gen.completion_ids  # seeds are honoured
    for j, c in enumerate(gen.completion_ids):
        assert len(gen.logprobs[j]) == len(c)
        assert gen.truncated[j] == (c[-1] != tok.eos_token_id)
        p = prompts[gen.prompt_index[j]]
        with torch.no_grad():
            logits = model(torch.tensor([p + c])).logits[:, len(p) - 1 : -1]
        lp = per_token_logps(logits, torch.tensor([c]))[0].numpy()
        np.testing.assert_allclose(lp, gen.logprobs[j], atol=1e-4)
    nothing = engine.generate(prompts, [0, 0, 0, 0], spec, seed=0)
    assert len(nothing) == 0 and nothing.texts == [] and nothing.num_tokens == 0
    greedy = engine.generate(prompts, [1, 1, 1, 1], SamplingSpec(temperature=0.0), seed=0)
    assert greedy.texts[0] == "3"  # the warm start solves one-digit sums


def test_the_hf_engine_samples_without_the_dropout_modules_copied(one_layer_llama):
    """A model built with attention dropout (not through load_policy) and left in train mode:
    the engine still samples from the dropout-free policy the trainer scores."""
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine

    torch.manual_seed(0)
    model = LlamaForCausalLM(one_layer_llama(vocab_size=50, attention_dropout=0.5, eos_token_id=2))
    model.train()
    assert models_mod.has_dropout(model)
    tok = build_tiny_tokenizer()
    prompts = [[1, 5, 7, 9], [1, 11]]
    gen = HFEngine(model, tok).generate(prompts, [2, 1], SamplingSpec(max_new_tokens=4), seed=3)
    assert model.training  # the engine gives the model back in the mode it found it
    model.eval()
    for row, ids, lp in zip(gen.prompt_index, gen.completion_ids, gen.logprobs, strict=True):
        full = torch.tensor([prompts[row] + ids])
        with torch.no_grad():
            logits = model(input_ids=full, use_cache=False).logits[0, len(prompts[row]) - 1 : -1]
        expect = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None])
        torch.testing.assert_close(torch.from_numpy(lp), expect[:, 0], atol=1e-4, rtol=1e-4)
    models_mod.disable_dropout(model)
    assert not models_mod.has_dropout(model)


# --- added with the mirrored layout ----------------------------------------------------------


def test_logprobs_are_of_the_tempered_distribution(policy: tuple[Any, Any]) -> None:
    model, tok = policy
    prompts = [tok(p).input_ids for p in ("41+7=", "6*7=")]
    gen = HFEngine(model, tok).generate(prompts, [2, 2], SamplingSpec(temperature=0.5), seed=1)
    for j, c in enumerate(gen.completion_ids):
        p = prompts[gen.prompt_index[j]]
        with torch.no_grad():
            logits = model(torch.tensor([p + c])).logits[0, len(p) - 1 : -1]
        expect = torch.log_softmax(logits / 0.5, -1).gather(-1, torch.tensor(c)[:, None])[:, 0]
        np.testing.assert_allclose(gen.logprobs[j], expect.numpy(), atol=1e-4)
        assert gen.logprobs[j].dtype == np.float32


def test_a_one_token_limit_truncates_unless_eos_comes_first(policy: tuple[Any, Any]) -> None:
    model, tok = policy
    prompts = [tok(p).input_ids for p in ("1+1=", "37+5=", "9*9=")]
    gen = HFEngine(model, tok).generate(prompts, [3, 3, 3], SamplingSpec(max_new_tokens=1), seed=0)
    assert all(len(c) == 1 for c in gen.completion_ids)
    assert gen.truncated.tolist() == [c[0] != tok.eos_token_id for c in gen.completion_ids]
    assert gen.num_tokens == 9 and gen.seconds > 0.0


def test_generation_configs_per_sampling_setting(policy: tuple[Any, Any]) -> None:
    model, tok = policy
    engine = HFEngine(model, tok)
    greedy = engine._generation_config(SamplingSpec(max_new_tokens=3, temperature=0.0))
    sampled = engine._generation_config(SamplingSpec(max_new_tokens=5, temperature=0.7, top_p=0.9))
    assert engine._generation_config(SamplingSpec(max_new_tokens=3, temperature=0.0)) is greedy
    assert (greedy.do_sample, greedy.max_new_tokens) == (False, 3)
    assert (sampled.do_sample, sampled.temperature, sampled.top_p, sampled.top_k) == (
        True, 0.7, 0.9, 0)  # fmt: skip
    assert (sampled.pad_token_id, sampled.eos_token_id) == (0, 2)
    assert sampled.return_dict_in_generate and sampled.output_logits


def test_sync_weights_copies_another_module_and_keeps_its_own() -> None:
    a, b = (torch.nn.Linear(3, 2) for _ in range(2))
    tok = build_tiny_tokenizer()
    engine = HFEngine(a, tok)
    engine.sync_weights(a)  # its own module: nothing to do
    assert engine.model is a
    engine.sync_weights(b)
    assert engine.model is a and torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    engine.close()  # the model belongs to the trainer: still usable
    assert a.weight.shape == (2, 3)


def test_arguments_are_checked(policy: tuple[Any, Any]) -> None:
    model, tok = policy
    with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1, got 0"):
        HFEngine(model, tok, batch_size=0)
    engine = HFEngine(model, tok)
    with pytest.raises(ValueError, match=r"counts has shape \(1,\) but there are 2 prompts"):
        engine.generate([[1, 5], [1, 6]], [1], SamplingSpec(), seed=0)
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        engine.generate([[1, 5], []], [1, 1], SamplingSpec(), seed=0)


def test_a_tokenizer_without_a_pad_token_pads_with_zero() -> None:
    tok = build_tiny_tokenizer()
    tok.pad_token = None
    engine = HFEngine(torch.nn.Linear(2, 2), tok)
    assert (engine.pad_id, engine.eos_id) == (0, 2)
