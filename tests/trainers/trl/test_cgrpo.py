"""C-GRPO as a peer (trainers.trl.cgrpo): the missing extra named, its answer extractor per task,
its meter on a stand-in trainer (counts worked out by hand) and its conformal state through JSON.
A real C-GRPO run, its rollouts checked against what the model generated and its resume, is in
tests/trainers/experiments/test_trl_run.py (the cgrpo extra, TRL 1.14: ``make test-trl114``)."""

from __future__ import annotations

import json
import math
import random
import sys
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from trainers.trl.cgrpo import (
    CGRPO_TRL,
    CGRPOMeter,
    answer_extractor,
    arithmetic_answer,
    cgrpo_state,
    load_cgrpo_state,
    require_cgrpo,
)


def test_a_missing_trl_cgrpo_names_the_extra_and_the_trl_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "trl_cgrpo", None)  # import fails as if not installed
    with pytest.raises(ImportError) as exc:
        require_cgrpo()
    message = str(exc.value)
    assert 'pip install -e ".[cgrpo]"' in message and CGRPO_TRL in message
    assert "TRL 1.14 line" in message and ".venv-trl114" in message


def test_the_answer_is_what_the_tasks_verifier_compares() -> None:
    assert arithmetic_answer(" 42\n") == "42"
    assert answer_extractor("arithmetic") is arithmetic_answer
    assert answer_extractor("rg:chain_sum?num_train=10")(" 7 ") == "7"  # score_answer(strip)
    assert answer_extractor("sample")("so the answer is\n#### 12") == "12"


class _CGRPO:
    """The calls of a ``CGRPOTrainer`` that the meter wraps, scripted: groups of width 4, two
    prompts a batch."""

    num_generations = 4

    def __init__(self) -> None:
        self.model = torch.nn.Linear(1, 1)
        self.model.train()
        self.reward_weights = torch.ones(1)
        self._metrics: dict[str, Any] = {"train": {"cgrpo/calibration_rollouts": []}}

    def _sample(self, prompt_ids: list[Any], need: int) -> Any:
        return [[1]] * len(prompt_ids), None

    def calibrate(self) -> None:
        self._metrics["train"]["cgrpo/calibration_rollouts"].append(3 * 4)  # 3 prompts x 4

    def _calculate_rewards(self, rewards: list[list[float]]) -> torch.Tensor:
        return torch.tensor(rewards)

    def _generate_and_score_completions(self, batch: Any) -> dict[str, Any]:
        for rows in batch["stages"]:
            self._sample(rows, 1)
        self._calculate_rewards(batch["rewards"])
        return {"advantages": torch.tensor(batch["advantages"])}


def test_the_meter_counts_what_cgrpo_draws() -> None:
    trainer = _CGRPO()
    meter = CGRPOMeter()
    meter.attach(trainer)
    trainer.calibrate()
    nan = math.nan
    # prompt 0 stops after 2 draws (1 right, 1 wrong: informative), prompt 1 draws all 4, all
    # wrong; padded rows score NaN: 2 stages of 4 rows then 2 rows = 6 completions drawn
    batch = {"stages": [[0, 0, 1, 1], [1, 1]],
             "rewards": [[1.0], [0.0], [nan], [nan], [0.0], [0.0], [0.0], [0.0]],
             "advantages": [0.7, -0.7, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}  # fmt: skip
    trainer._generate_and_score_completions(batch)
    assert (meter.train_rollouts, meter.calibration_rollouts) == (6, 12)
    assert meter.prompts == [2] and meter.informative_prompts == [1] and meter.informative == [0.5]
    assert meter.rounds == [2] and meter.gradient_rollouts == [2.0] and len(meter.seconds) == 1
    trainer.model.eval()  # an evaluation batch records no figures (its draws are not sampled
    trainer._calculate_rewards(batch["rewards"])  # through C-GRPO's stages)
    assert meter.prompts == [2]


def test_the_conformal_state_goes_through_json_and_back() -> None:
    trainer = SimpleNamespace(qhats={2: 0.5, 32: 1.0}, delta=0.3, _last_calibration_step=50,
                              _rng=random.Random(7))  # fmt: skip
    trainer._rng.random()
    state = json.loads(json.dumps(cgrpo_state(trainer)))
    expected = trainer._rng.random()
    fresh = SimpleNamespace(qhats=None, delta=None, _last_calibration_step=None,
                            _rng=random.Random(0))  # fmt: skip
    load_cgrpo_state(fresh, state)
    assert fresh.qhats == {2: 0.5, 32: 1.0} and fresh.delta == 0.3
    assert fresh._last_calibration_step == 50 and fresh._rng.random() == expected
    load_cgrpo_state(fresh, {**state, "qhats": None})  # before the first calibration
    assert fresh.qhats is None
