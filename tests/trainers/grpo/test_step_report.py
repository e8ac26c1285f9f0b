"""trainers.grpo.step_report: one step's report, worked by hand on a 3-question batch."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest
import torch

from adaroll_env.utilities import get_utility, list_utilities
from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import Rollouts
from trainers.grpo.step_report import StepReport, build_report

TRAIN = {"loss": 0.5, "kl": 0.01, "entropy": 1.5, "low": 0.1, "high": 0.2, "tokens": 6.0,
         "grad_norm": 3.0, "skipped": 0.0, "trained": 3.0, "lp_diff": 1e-5}  # fmt: skip


def _rollouts() -> Rollouts:
    """Question 0: rewards 1, 0, 1; question 1: 0, 0; question 2: no rollouts."""
    ro = Rollouts(3)
    ro.completion_ids = [[[1, 2], [3], [4, 5, 6]], [[7], [8, 9]], []]
    ro.rewards = [[1.0, 0.0, 1.0], [0.0, 0.0], []]
    ro.truncated = [[False, True, False], [True, False], []]
    ro.errors, ro.tokens, ro.gen_seconds, ro.alloc_seconds, ro.rounds = 2, 9, 0.3, 0.1, 2
    return ro


S, F = np.array([2, 0, 0]), np.array([1, 2, 0])


def _report(**kw) -> StepReport:
    base = dict(step=4, rollouts_total=77, utility="snr(3)", step_start=time.perf_counter() - 2.0,
                nan_skipped=1, abandoned=2)  # fmt: skip
    return build_report(_rollouts(), S, F, TRAIN, 0.7, **{**base, **kw})


def test_the_report_by_hand():
    r = _report()
    assert (r.step, r.rollouts, r.rollouts_total, r.questions) == (4, 5, 77, 3)
    # question 0 is informative, question 1 all wrong, question 2 empty
    assert (r.informative_frac, r.informative_prompts) == (pytest.approx(1 / 3), 1)
    assert (r.all_correct_frac, r.all_wrong_frac, r.empty_frac) == (0.0, 1 / 3, 1 / 3)
    # rewards 1, 0, 1, 0, 0: mean 0.4, population variance 0.4 - 0.16
    assert r.reward == pytest.approx(0.4) and r.reward_std == pytest.approx(math.sqrt(0.24))
    assert r.frac_reward_zero_std == 0.5  # of the two groups with rollouts, question 1's
    assert r.mean_length == pytest.approx(9 / 5) and r.clipped_ratio == pytest.approx(2 / 5)
    assert (r.tokens, r.verifier_errors, r.rounds) == (9, 2, 2)
    assert (r.loss, r.kl, r.entropy, r.clip_ratio_low, r.clip_ratio_high) == (
        0.5, 0.01, 1.5, 0.1, 0.2)  # fmt: skip
    assert (r.grad_norm, r.gradient_rollouts, r.logprob_diff) == (3.0, 3, 1e-5)
    assert r.skipped_update is False and (r.nan_skipped_total, r.abandoned_steps) == (1, 2)
    assert (r.gen_seconds, r.train_seconds, r.alloc_seconds) == (0.3, 0.7, 0.1)
    assert r.step_seconds == pytest.approx(2.0, abs=0.5)
    assert r.alloc_overhead == pytest.approx(0.1 / r.step_seconds)
    assert r.tokens_per_s == pytest.approx(9 / r.step_seconds)
    # every registered utility of the final counts, and the run's own (a family member)
    assert list(r.utilities) == [*list_utilities(), "snr(3)"]
    assert r.utilities["informative"] == 1.0 and r.utilities["hit"] == 1.0
    assert r.utilities["dr_grpo_signal"] == pytest.approx(4 / 9)  # 2·s·f/n² = 2·2·1/9
    assert r.utilities["grpo_signal"] == pytest.approx(2 * math.sqrt(2) / 3)  # 2·sqrt(s·f)/n
    assert r.utilities["snr(3)"] == pytest.approx(4 / (4 + 3 * 3))  # (n-1)²/((n-1)² + κ·n)
    for name, value in r.utilities.items():
        assert value == pytest.approx(float(get_utility(name)(S, F).sum())), name
    assert list(_report(utility="informative").utilities) == list_utilities()  # no repeat


def test_a_skipped_update_and_as_dict():
    r = _report(step_start=time.perf_counter())
    assert r.skipped_update is False
    skipped = build_report(_rollouts(), S, F, {**TRAIN, "skipped": 1.0}, 0.0, step=1,
                           rollouts_total=5, utility="informative",
                           step_start=time.perf_counter())  # fmt: skip
    assert skipped.skipped_update is True
    d = r.as_dict()
    assert "utilities" not in d and "extra" not in d
    assert d["utility/informative"] == 1.0 and d["utility/snr(3)"] == r.utilities["snr(3)"]
    assert d["step"] == 4 and d["reward"] == pytest.approx(0.4)
    r.extra["gradient_noise/kappa"] = 2.5
    assert r.as_dict()["gradient_noise/kappa"] == 2.5


class _TwinRanks:
    """An accelerator whose other rank holds exactly this rank's numbers."""

    def reduce(self, x, reduction):
        assert reduction == "sum"
        return 2 * x


def test_two_identical_ranks_double_the_counts_and_keep_the_fractions():
    one = _report()
    two = _report(ranks=Ranks(accelerator=_TwinRanks(), world=2, device=torch.device("cpu")))
    assert (two.questions, two.rollouts, two.tokens, two.informative_prompts) == (6, 10, 18, 2)
    assert two.verifier_errors == 4
    for name in ("informative_frac", "all_wrong_frac", "empty_frac", "reward", "reward_std",
                 "frac_reward_zero_std", "mean_length", "clipped_ratio"):  # fmt: skip
        assert getattr(two, name) == pytest.approx(getattr(one, name)), name
    # the update's statistics are the mean over ranks; gradient rollouts their sum
    assert (two.loss, two.grad_norm, two.kl) == (0.5, 3.0, 0.01)
    assert two.gradient_rollouts == 6
    assert two.utilities["informative"] == 2.0


def test_old_names_warn():
    r = _report()
    with pytest.warns(DeprecationWarning, match="renamed gradient_rollouts"):
        assert r.trained_rollouts == 3
    with pytest.warns(DeprecationWarning, match="TrainingUtility is renamed StepReport"):
        from trainers.grpo.step_report import TrainingUtility
    assert TrainingUtility is StepReport
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import trainers.grpo.step_report as mod

        with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
            mod.Nope  # noqa: B018
