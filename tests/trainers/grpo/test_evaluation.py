"""The one evaluation function (trainers.grpo.evaluation) on a scripted engine, by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from trainers.engines.base import SamplingSpec
from trainers.grpo.evaluation import evaluate_examples, held_out_subset
from trainers.tasks import Example


class ScriptedEngine:
    """Answers prompt ``i``'s ``k`` samples with its scripted texts; records the calls."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def generate(self, prompts, counts, sampling, *, seed):
        self.calls.append((prompts, counts, seed))
        index = np.repeat(np.arange(len(prompts)), counts)
        texts = [
            self.answers[p[0]][j] for p, n in zip(prompts, counts, strict=True) for j in range(n)
        ]
        return SimpleNamespace(prompt_index=index, texts=texts, completion_ids=[[1]] * len(texts))


def _examples():
    return [Example(id=i, prompt=str(i), answer="y", level=i % 2) for i in range(4)]


def test_pass_at_1_and_k_by_hand():
    # successes of k = 2 samples: prompt 0: 2, 1: 0, 2: 1, 3: 1
    engine = ScriptedEngine({0: "yy", 1: "nn", 2: "yn", 3: "ny"})
    ex = _examples()
    r = evaluate_examples(
        engine,
        ex,
        encode=lambda e: [e.id],
        score=lambda exs, texts, ids: [1.0 if t == "y" else 0.0 for t in texts],
        sampling=SamplingSpec(),
        k=2,
        seed=5,
    )
    assert r.correct.tolist() == [2, 0, 1, 1]
    assert r.figures["pass@1"] == pytest.approx(4 / 8)
    assert r.figures["pass@2"] == pytest.approx(3 / 4)  # three prompts solved at least once
    assert r.figures["pass@1/level0"] == pytest.approx(3 / 4)  # prompts 0 and 2
    assert r.figures["pass@1/level1"] == pytest.approx(1 / 4)  # prompts 1 and 3
    assert r.figures["prompts"] == 4 and engine.calls[0][1:] == ([2, 2, 2, 2], 5)


def test_threshold_and_a_task_scores_object():
    engine = ScriptedEngine({0: "y", 1: "y", 2: "n", 3: "y"})
    scores = SimpleNamespace(rewards=np.array([0.4, 0.6, 0.0, 1.0]), errors=0)
    r = evaluate_examples(
        engine, _examples(), encode=lambda e: [e.id], score=lambda *_: scores,
        sampling=SamplingSpec(), k=1, seed=0,
    )  # fmt: skip
    assert r.correct.tolist() == [0, 1, 0, 1]  # a success is a reward >= 0.5


def test_held_out_subset_is_spread_and_fixed():
    ex = [Example(id=i, prompt=str(i), answer="", level=0) for i in range(10)]
    assert [e.id for e in held_out_subset(ex, 4)] == [0, 3, 6, 9]
    assert held_out_subset(ex, None) == ex and held_out_subset(ex, 50) == ex
