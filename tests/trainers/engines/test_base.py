"""trainers.engines.base: the sampling settings, the ``Generation`` record, the request check and
the ``Engine`` protocol."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.engines import ENGINES, make_engine
from trainers.engines.base import Engine, Generation, SamplingSpec, check_request


def test_sampling_spec_defaults_and_checks():
    assert SamplingSpec() == SamplingSpec(max_new_tokens=8, temperature=1.0, top_p=1.0)
    SamplingSpec(temperature=0.0, top_p=1e-3)  # greedy and a narrow nucleus are fine
    with pytest.raises(ValueError, match=r"^max_new_tokens must be an integer >= 1, got 0$"):
        SamplingSpec(max_new_tokens=0)
    with pytest.raises(TypeError, match=r"max_new_tokens must be an integer >= 1, got 2.5"):
        SamplingSpec(max_new_tokens=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^temperature must be >= 0, got -0.5$"):
        SamplingSpec(temperature=-0.5)
    with pytest.raises(ValueError, match=r"^temperature must be >= 0, got nan$"):
        SamplingSpec(temperature=float("nan"))
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match=rf"^top_p must be in \(0, 1\], got {bad}$"):
            SamplingSpec(top_p=bad)
    # frozen and hashable: engines key their generation configs by it
    assert len({SamplingSpec(), SamplingSpec(), SamplingSpec(temperature=0.5)}) == 2


def test_generation_length_and_tokens():
    gen = Generation(
        prompt_index=np.array([0, 0, 2]),
        completion_ids=[[5, 2], [], [7, 8, 9]],
        texts=["a", "", "bcd"],
        logprobs=[np.zeros(2), np.zeros(0), np.zeros(3)],
        truncated=np.array([False, True, True]),
    )
    assert len(gen) == 3 and gen.num_tokens == 5
    assert gen.seconds == 0.0 and gen.extra == {}


def test_check_request():
    c = check_request([[1], [1, 2], []], [2, 0, 0])
    assert c.dtype == np.int64 and c.tolist() == [2, 0, 0]  # an empty prompt asked for nothing
    with pytest.raises(ValueError) as exc:
        check_request([[1], [2]], [1, 1, 1])
    assert str(exc.value) == (
        "counts has shape (3,) but there are 2 prompts: give one count per prompt"
    )
    with pytest.raises(ValueError, match=r"counts has shape \(1, 2\)"):
        check_request([[1]], [[1, 2]])
    with pytest.raises(ValueError, match=r"^counts must be >= 0, got \[1, -2\]$"):
        check_request([[1], [2]], [1, -2])
    with pytest.raises(ValueError, match=r"^prompt 2 is empty: every prompt needs at least one"):
        check_request([[1], [2], []], [1, 1, 1])


class _Complete:
    name = "mine"

    def generate(self, prompt_ids, counts, sampling, *, seed):
        raise NotImplementedError

    def sync_weights(self, model):
        pass

    def close(self):
        pass


class _NoClose:
    name = "half"

    def generate(self, prompt_ids, counts, sampling, *, seed):
        raise NotImplementedError

    def sync_weights(self, model):
        pass


def test_the_engine_protocol_is_checked_at_run_time():
    assert isinstance(_Complete(), Engine)
    assert not isinstance(_NoClose(), Engine)


def test_make_engine_names_the_known_engines():
    assert ENGINES == ("hf", "vllm")
    with pytest.raises(
        ValueError, match=r"^unknown engine 'sglang': choose one of \['hf', 'vllm'\]$"
    ):
        make_engine("sglang", None, None)
