"""trainers.engines.vllm without vLLM: argument checks, the missing-extra error, the pure helpers,
and ``generate``/``sync_weights``/``close`` against a scripted stand-in for ``vllm.LLM``.

The engine against a real vLLM is tested in tests/vllm (``make test-vllm``).
"""

from __future__ import annotations

import importlib.util
import os
import random
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from trainers.engines import make_engine
from trainers.engines.base import SamplingSpec
from trainers.engines.vllm import (
    ENV_DEFAULTS,
    VLLMEngine,
    _caller_random_state,
    _sampled_logprobs,
    _vllm_dtype,
    import_vllm,
)

HAS_VLLM = importlib.util.find_spec("vllm") is not None
needs_no_vllm = pytest.mark.skipif(HAS_VLLM, reason="checks the error when vLLM is missing")


@needs_no_vllm
def test_a_missing_vllm_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    with pytest.raises(ImportError) as exc:
        import_vllm()
    assert str(exc.value).startswith("engine 'vllm' needs vLLM, which is not installed: ")
    assert 'pip install -e ".[vllm]"' in str(exc.value) and "make test-vllm" in str(exc.value)
    # the environment defaults are set before the import is tried
    assert ENV_DEFAULTS == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")  # a user's own value wins
    with pytest.raises(ImportError):
        import_vllm()
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
    with pytest.raises(ImportError, match="needs vLLM"):
        make_engine("vllm", torch.nn.Linear(1, 1), None, model_path=tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be an integer >= 1, got 0"),
        ({"logprobs_mode": "logits"}, ValueError,
         "logprobs_mode must be 'processed_logprobs' or 'raw_logprobs', got 'logits'"),
        ({"dtype": "int8"}, ValueError,
         "dtype must be 'auto', 'float32', 'bfloat16' or 'float16', got 'int8'"),
        ({"kv_cache_gib": 0.0}, ValueError, "kv_cache_gib must be > 0 GiB, got 0.0"),
    ],
)  # fmt: skip
def test_arguments_are_refused_before_vllm_is_imported(kwargs, exc, message, tmp_path):
    with pytest.raises(exc) as info:
        VLLMEngine(torch.nn.Linear(1, 1), None, model_path=tmp_path, **kwargs)
    assert str(info.value) == message


def test_data_parallel_runs_are_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError) as info:
        VLLMEngine(torch.nn.Linear(1, 1), None, model_path=tmp_path)
    assert str(info.value) == (
        "engine 'vllm' runs in a single process (WORLD_SIZE is 2): data-parallel runs use "
        "--engine hf"
    )


def test_auto_dtype_is_the_policys():
    assert _vllm_dtype("auto", torch.nn.Linear(2, 2)) == "float32"
    assert _vllm_dtype("auto", torch.nn.Linear(2, 2).to(torch.bfloat16)) == "bfloat16"
    assert _vllm_dtype("auto", torch.nn.Linear(2, 2).half()) == "float16"
    assert _vllm_dtype("auto", torch.nn.Linear(2, 2).double()) == "auto"  # vLLM decides
    assert _vllm_dtype("auto", torch.nn.Sequential()) == "auto"  # no parameters
    assert _vllm_dtype("auto", object()) == "auto"
    assert _vllm_dtype("bfloat16", torch.nn.Linear(2, 2)) == "bfloat16"  # explicit wins


def _lp(token_logprobs: dict[int, float]) -> dict[int, SimpleNamespace]:
    return {t: SimpleNamespace(logprob=v) for t, v in token_logprobs.items()}


def test_sampled_logprobs_pick_the_sampled_token_at_each_position():
    per_token = [_lp({5: -0.25, 9: -3.0}), _lp({2: -1.5})]
    out = _sampled_logprobs([5, 2], per_token)
    assert out.dtype == np.float32 and out.tolist() == [-0.25, -1.5]
    assert _sampled_logprobs([], []).shape == (0,)
    with pytest.raises(RuntimeError, match=r"^vLLM returned log-probs for 1 of 2 tokens$"):
        _sampled_logprobs([5, 2], per_token[:1])
    with pytest.raises(RuntimeError, match=r"^vLLM returned log-probs for None of 2 tokens$"):
        _sampled_logprobs([5, 2], None)


def test_the_callers_random_state_is_restored():
    random.seed(1)
    np.random.seed(1)  # noqa: NPY002
    torch.manual_seed(1)
    expect = (random.random(), np.random.random(), torch.rand(1).item())  # noqa: NPY002
    random.seed(1)
    np.random.seed(1)  # noqa: NPY002
    torch.manual_seed(1)
    with _caller_random_state():
        random.seed(99)
        np.random.seed(99)  # noqa: NPY002
        torch.manual_seed(99)
    assert (random.random(), np.random.random(), torch.rand(1).item()) == expect  # noqa: NPY002


# --- the engine on a scripted vllm.LLM ---------------------------------------------------------


class _Params:
    """Stands in for ``vllm.SamplingParams``: keeps its keyword arguments."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class _LLM:
    """Stands in for ``vllm.LLM``: sample ``j`` of a prompt is ``[prompt[-1] + j, 2]``."""

    def __init__(self, missing_one=False):
        self.calls = []
        self.rpcs = []
        self.resets = 0
        self.missing_one = missing_one
        self.core = SimpleNamespace(shutdowns=0)
        self.core.shutdown = lambda: setattr(self.core, "shutdowns", self.core.shutdowns + 1)
        self.llm_engine = SimpleNamespace(engine_core=self.core)

    def generate(self, prompts, params, use_tqdm):
        self.calls.append((prompts, params))
        outs = []
        for p, sp in zip(prompts, params, strict=True):
            last = p["prompt_token_ids"][-1]
            n = sp.n - (1 if self.missing_one else 0)
            samples = [
                SimpleNamespace(index=j, token_ids=[last + j, 2],
                                logprobs=[_lp({last + j: -0.5 - j}), _lp({2: -0.1})])
                for j in reversed(range(n))  # out of order: the engine sorts by index
            ]  # fmt: skip
            outs.append(SimpleNamespace(outputs=samples))
        return outs

    def collective_rpc(self, method, kwargs=None):
        self.rpcs.append((method, kwargs))
        return []

    def reset_prefix_cache(self):
        self.resets += 1


class _Tok:
    eos_token_id = 2

    def batch_decode(self, rows, skip_special_tokens):
        assert skip_special_tokens
        return [" ".join(str(t) for t in r if t != 2) for r in rows]


def _engine(llm=None, seed=5, logprobs_mode="processed_logprobs"):
    """A ``VLLMEngine`` whose ``vllm.LLM`` is scripted (built without ``__init__``)."""
    engine = VLLMEngine.__new__(VLLMEngine)
    engine.llm = llm if llm is not None else _LLM()
    engine.tokenizer = _Tok()
    engine.seed = seed
    engine.eos_id = 2
    engine.logprobs_mode = logprobs_mode
    engine._warned = set()
    engine._sampling_params = _Params
    engine.last_sync_seconds = float("nan")
    engine.sync_seconds_total = 0.0
    engine.syncs = 0
    return engine


def test_prompt_seeds_mix_the_engines_the_calls_and_the_position():
    engine = _engine(seed=5)
    want = int(np.random.SeedSequence([5, 11, 3]).generate_state(1)[0] >> 1)
    assert engine.prompt_seed(11, 3) == want and 0 <= want < 2**31
    seeds = {engine.prompt_seed(11, i) for i in range(50)}
    assert len(seeds) == 50
    assert engine.prompt_seed(11, 3) != _engine(seed=6).prompt_seed(11, 3)
    # negative seeds are taken modulo 2**32
    assert engine.prompt_seed(-1, 0) == int(
        np.random.SeedSequence([5, 2**32 - 1, 0]).generate_state(1)[0] >> 1
    )


def test_generate_sends_one_request_per_prompt_with_samples():
    llm = _LLM()
    engine = _engine(llm)
    gen = engine.generate([[1, 7], [1, 20], [1, 30]], [2, 0, 3], SamplingSpec(max_new_tokens=4),
                          seed=11)  # fmt: skip
    prompts, params = llm.calls[0]
    assert prompts == [{"prompt_token_ids": [1, 7]}, {"prompt_token_ids": [1, 30]}]
    assert [p.n for p in params] == [2, 3]  # the empty request is not sent
    assert [p.seed for p in params] == [engine.prompt_seed(11, 0), engine.prompt_seed(11, 2)]
    first = params[0].__dict__
    assert first == {"n": 2, "max_tokens": 4, "temperature": 1.0, "top_p": 1.0, "top_k": 0,
                     "seed": engine.prompt_seed(11, 0), "logprobs": 0, "stop_token_ids": [2],
                     "detokenize": False}  # fmt: skip
    assert gen.prompt_index.tolist() == [0, 0, 2, 2, 2]
    assert gen.completion_ids == [[7, 2], [8, 2], [30, 2], [31, 2], [32, 2]]
    assert [lp.tolist() for lp in gen.logprobs] == [
        [-0.5, pytest.approx(-0.1)], [-1.5, pytest.approx(-0.1)],
        [-0.5, pytest.approx(-0.1)], [-1.5, pytest.approx(-0.1)], [-2.5, pytest.approx(-0.1)],
    ]  # fmt: skip
    assert gen.texts == ["7", "8", "30", "31", "32"]
    assert gen.truncated.tolist() == [False] * 5


def test_greedy_asks_once_and_repeats_it():
    llm = _LLM()
    gen = _engine(llm).generate([[1, 7]], [3], SamplingSpec(temperature=0.0), seed=0)
    (p,) = llm.calls[0][1]
    assert (p.n, p.top_p, p.seed, p.temperature) == (1, 1.0, None, 0.0)
    assert gen.completion_ids == [[7, 2]] * 3


def test_generate_refuses_short_answers_nothing_asked_and_closed_engines():
    llm = _LLM()
    empty = _engine(llm).generate([[1], [2]], [0, 0], SamplingSpec(), seed=0)
    assert len(empty) == 0 and empty.texts == [] and llm.calls == []
    with pytest.raises(RuntimeError, match=r"^vLLM returned 1 completions for prompt 0, 2 asked$"):
        _engine(_LLM(missing_one=True)).generate([[1, 4]], [2], SamplingSpec(), seed=0)
    closed = _engine()
    closed.llm = None
    with pytest.raises(RuntimeError, match="this VLLMEngine is closed: build a new one"):
        closed.generate([[1]], [1], SamplingSpec(), seed=0)
    with pytest.raises(RuntimeError, match="this VLLMEngine is closed"):
        closed.sync_weights(torch.nn.Linear(1, 1))
    with pytest.raises(ValueError, match="counts has shape"):
        _engine().generate([[1]], [1, 1], SamplingSpec(), seed=0)


def test_logprob_mode_mismatches_warn_once():
    engine = _engine()
    with pytest.warns(RuntimeWarning, match=r"with top_p=0.9 vLLM's processed log-probs are those "
                      r"of the renormalised nucleus"):  # fmt: skip
        engine._check_logprobs(SamplingSpec(top_p=0.9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine._check_logprobs(SamplingSpec(top_p=0.9))  # the same reason: said once
        engine._check_logprobs(SamplingSpec(temperature=0.7))  # exact at top_p = 1
        engine._check_logprobs(SamplingSpec(temperature=0.0, top_p=0.5))  # greedy: exact
    raw = _engine(logprobs_mode="raw_logprobs")
    with pytest.warns(RuntimeWarning, match=r"raw log-probs ignore temperature=0.7"):
        raw._check_logprobs(SamplingSpec(temperature=0.7))
    assert len(raw._warned) == 1 and len(engine._warned) == 1


def test_sync_weights_pushes_the_unwrapped_state_dict():
    llm = _LLM()
    engine = _engine(llm)
    policy = torch.nn.Linear(2, 1)
    engine.sync_weights(SimpleNamespace(module=policy))  # a DDP-style wrapper
    ((method, kwargs),) = llm.rpcs
    assert method == "reload_weights"
    weights = kwargs["weights_iterator"]
    assert [k for k, _ in weights] == ["weight", "bias"]
    assert torch.equal(weights[0][1], policy.weight) and not weights[0][1].requires_grad
    assert llm.resets == 1 and engine.syncs == 1
    assert engine.sync_seconds_total == engine.last_sync_seconds >= 0.0
    engine.sync_weights(policy)
    assert engine.syncs == 2 and len(llm.rpcs) == 2


def test_close_shuts_the_last_engine_down_once():
    llm = _LLM()
    engine = _engine(llm)
    engine.close()
    assert engine.llm is None and llm.core.shutdowns == 1
    engine.close()  # closed already: nothing to do
    assert llm.core.shutdowns == 1
