"""agents.benchmarks.per_prompt: priors drawn like training's, coupled episodes, the table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.benchmarks.per_prompt import (
    REFERENCE,
    PerPromptConfig,
    PriorSource,
    episode,
    run,
    table,
)


def test_priors_come_from_a_beliefs_file(tmp_path: Path) -> None:
    f = tmp_path / "beliefs.json"
    f.write_text(json.dumps({
        "groups": [0, 0, 1], "successes": [3.0, 0.0, 8.0], "failures": [5.0, 8.0, 0.0],
        "group_priors": {"*": [1.0, 1.0], "0": [0.5, 2.0], "1": [4.0, 0.2]},
        "fitted_prior": [1.0, 1.0],
    }))  # fmt: skip
    src = PriorSource.from_beliefs(f)
    assert src.levels == [(0.5, 2.0), (4.0, 0.2)]
    assert src.stored[0].tolist() == [[3.0, 5.0], [0.0, 8.0]]
    cfg = PerPromptConfig(batch_size=200, history=0.0)
    a, b = src.draw(np.random.default_rng(0), cfg)
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    assert pairs == {(0.5, 2.0), (4.0, 0.2)}  # no history: the level priors alone
    a, b = src.draw(np.random.default_rng(0), PerPromptConfig(batch_size=200, history=1.0))
    assert np.all(a + b > 2.2)  # every question carries discounted counts
    with pytest.raises(FileNotFoundError, match=r"beliefs\.json"):
        PriorSource.from_beliefs(tmp_path / "missing.json")


def test_an_episode_spends_the_budget_on_coupled_draws() -> None:
    import gymnasium as gym

    import agents

    B, N = 4, 16
    a, b = np.ones(B), np.ones(B)
    truth = np.array([0.0, 1.0, 0.1, 0.1])
    draws = np.tile(np.linspace(0.01, 0.99, N), (B, 1))
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=B, budget=N, round_size=8)
    params = env.unwrapped.params
    alloc = agents.make_allocator("uniform", params)
    alloc.reset(params, seed=0)
    # uniform: 4 each; question 0 all wrong, 1 all right, 2 and 3 two right (draws .01, .08)
    value = episode(alloc, params, a, b, truth, draws, "informative")
    assert value == 2.0


def test_the_table_pairs_every_row_with_uniform_and_the_reference() -> None:
    cfg = PerPromptConfig(allocators="uniform,bamdp", batch_size=8, budget=32, episodes=3)
    rows = run(cfg, progress=False)
    names = [r["allocator"] for r in rows]
    assert names == ["uniform", "bamdp", REFERENCE]
    by = {r["allocator"]: r for r in rows}
    assert by["uniform"]["gain"] == 0.0 and by[REFERENCE]["vs_reference"] == 0.0
    assert by["bamdp"]["gain"] > 0  # Bayes setting: planning on the right beliefs helps
    text = table(rows, cfg)
    assert "| bamdp |" in text and "3 paired episodes" in text


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="equal rounds"):
        PerPromptConfig(budget=30, rounds=4)
    with pytest.raises(ValueError, match="history"):
        PerPromptConfig(history=1.5)
