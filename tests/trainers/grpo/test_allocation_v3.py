"""Version 3 allocation settings in the trainer: pools, equal rounds, grouped fitted priors."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer


def cfg(model_dir: Path, **kw: Any) -> GRPOConfig:
    base: dict[str, Any] = {
        "model": str(model_dir),
        "task_size": 2000,
        "batch_size": 8,
        "group_size": 4,
        "eval_every": 0,
        "tensorboard": False,
        "progress": False,
        "device": "cpu",
        "threads": 1,
    }
    base.update(kw)
    return GRPOConfig(**base)


def test_a_pool_gives_adaptive_allocators_more_candidates_same_budget(tiny_model_dir):
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="bamdp", pool_size=16, utility="snr(8)"))
    seen: set[int] = set()
    empty = 0
    for _ in range(3):
        r = t.train_step()
        assert r.questions == 16 and r.rollouts == 32  # 16 candidates, budget B·G = 32
        assert r.rounds >= 2
        seen |= {e.id for e in t.examples}
        empty += round(r.empty_frac * r.questions)
    assert len(seen) == 48  # every step draws a fresh pool of 16
    assert empty > 0  # the allocator left some candidates without rollouts
    # uniform ignores the pool: B prompts × G, one round
    u = GRPOTrainer(cfg(tiny_model_dir, allocator="uniform", pool_size=16))
    r = u.train_step()
    assert r.questions == 8 and r.rollouts == 32 and r.empty_frac == 0.0 and r.rounds == 1
    assert [len(b) for b in u.peek_batches(2)] == [8, 8]
    assert [len(b) for b in t.peek_batches(2)] == [16, 16]


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_rounds_sets_equal_rounds(tiny_model_dir, rounds):
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="bamdp", rounds=rounds))
    assert t.round_size == -(-32 // rounds)
    r = t.train_step()
    assert r.rounds == rounds and r.rollouts == 32


def test_grouped_fitted_priors_follow_the_levels(tiny_model_dir, tmp_path):
    t = GRPOTrainer(
        cfg(
            tiny_model_dir,
            allocator="uniform",
            batch_size=32,
            group_size=4,
            belief_prior="fitted",
            belief_group="level",
        )
    )
    t.beliefs.min_fit = 5
    for _ in range(6):
        t.train_step()
    fits = t.beliefs.group_priors()
    assert "*" in fits and len(fits) >= 3  # the whole store and several levels of their own
    means = {k: a / (a + b) for k, (a, b) in fits.items() if k != "*"}
    lo, hi = min(means, key=lambda k: int(k)), max(means, key=lambda k: int(k))
    assert means[lo] > means[hi]  # the easiest level is predicted easier than the hardest
    # the next step's priors differ by level
    t.begin_step()
    alpha = np.asarray(t.params.prior_alpha) if t.params is not None else None
    assert alpha is not None and len(set(np.round(alpha, 6))) > 1
    cal = t.beliefs.calibration()
    assert cal["store"]["rollouts"] > 0 and np.isfinite(cal["store"]["log_loss"])
    # beliefs.json carries what the simulator needs: counts, groups, group fits, calibration
    import json

    from trainers.run.grpo_command import write_beliefs

    path = tmp_path / "beliefs.json"
    write_beliefs(t, path)
    rec = json.loads(path.read_text())
    n = len(rec["ids"])
    assert n == len(t.beliefs) and len(rec["groups"]) == n == len(rec["successes"])
    assert len(rec["seen"]) == n and max(rec["seen"]) == t.step - 1  # the last step's prompts
    levels = {e.id: str(e.level) for e in t.task.train}
    assert all(str(g) == levels[i] for i, g in zip(rec["ids"], rec["groups"], strict=True))
    np.testing.assert_allclose(
        np.add(rec["successes"], rec["failures"]), rec["rollouts"], rtol=1e-12
    )
    assert rec["group_priors"].keys() == fits.keys()
    assert rec["calibration"]["store"]["rollouts"] == cal["store"]["rollouts"]


@pytest.mark.parametrize("fit", ["discounted", "weighted"])
def test_the_store_fits_as_configured(tiny_model_dir, fit):
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="uniform", belief_fit=fit))
    assert t.beliefs.fit == fit
    assert GRPOTrainer(cfg(tiny_model_dir, allocator="uniform")).beliefs.fit == "weighted"
    # with a fixed prior nothing is fitted: the rule is not used, whichever it is
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="uniform", belief_prior="fixed", belief_fit=fit))
    assert t.beliefs.base_prior() == (1.0, 1.0)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": 2, "round_size": 8}, "both set"),
        ({"rounds": 100}, "exceeds the budget"),
        ({"pool_size": 4}, "smaller than batch_size"),
        ({"belief_group": "level", "belief_prior": "fixed"}, "needs --belief-prior fitted"),
        ({"belief_group": " ", "belief_prior": "fitted"}, "belief_group is empty"),
        ({"belief_fit": "counts"}, r"belief_fit must be one of \['discounted', 'weighted'\]"),
        ({"pool_size": 16, "pilot": 2}, "pilot·pool_size"),
    ],
)
def test_bad_settings(tiny_model_dir, kw, match):
    with pytest.raises(ValueError, match=match):
        cfg(tiny_model_dir, **kw)


def test_belief_groups_by_a_jsonl_column(tiny_model_dir, tmp_path):
    """--belief-group <column> groups a jsonl task's prompts by that column of their rows."""
    import json

    from trainers.run.grpo_command import write_beliefs

    rows = [
        {"question": f"{a}+{a}=", "answer": str(2 * a), "subject": "sums" if a % 2 else "other"}
        for a in range(40)
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    c = cfg(tiny_model_dir, task=f"jsonl:{path}", belief_prior="fitted", belief_group="subject")
    t = GRPOTrainer(c)
    t.train_step()
    assert {e.columns["subject"] for e in t.examples} <= {"sums", "other"}
    assert t._belief_groups() == [e.columns["subject"] for e in t.examples]
    write_beliefs(t, tmp_path / "beliefs.json")
    rec = json.loads((tmp_path / "beliefs.json").read_text())
    by_id = {e.id: e.columns["subject"] for e in t.task.train}
    assert rec["groups"] == [by_id[i] for i in rec["ids"]]
    with pytest.raises(ValueError, match=r"'topic'.*no such column.*\['subject'\]"):
        GRPOTrainer(dataclasses.replace(c, belief_group="topic"))
    with pytest.raises(ValueError, match="no such column"):  # arithmetic rows have no columns
        GRPOTrainer(cfg(tiny_model_dir, belief_prior="fitted", belief_group="subject"))


@pytest.mark.parametrize(
    ("spec", "sizes"),
    [("24,8", [24, 8]), ("0.5,0.25,0.25", [16, 8, 8]), ("8+24", [8, 24])],
)
def test_round_schedule_spends_the_budget_in_its_rounds(tiny_model_dir, spec, sizes):
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="bamdp", utility="snr(8)", round_schedule=spec))
    assert t.round_size == sizes[0]
    seen: list[int] = []
    run_round = t.run_round

    def spy(counts: Any) -> Any:
        seen.append(t.next_round_size)
        assert int(np.sum(counts)) == t.next_round_size
        return run_round(counts)

    t.run_round = spy  # type: ignore[method-assign]
    r = t.train_step()
    assert seen == sizes and r.rounds == len(sizes) and r.rollouts == 32


def test_round_schedule_after_a_pilot_and_for_uniform(tiny_model_dir):
    # pilot 1 on 8 prompts: 24 rollouts left, in rounds of 16 and 8 (+1 round: the pilot)
    t = GRPOTrainer(cfg(tiny_model_dir, allocator="bamdp", pilot=1, round_schedule="16,8"))
    r = t.train_step()
    assert r.rounds == 3 and r.rollouts == 32
    # uniform never reads outcomes: one round whatever the schedule
    u = GRPOTrainer(cfg(tiny_model_dir, allocator="uniform", round_schedule="24,8"))
    assert u.round_size == 32
    r = u.train_step()
    assert r.rounds == 1 and r.rollouts == 32 and r.questions == 8


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"round_schedule": "24,4"}, "hands out 28 rollouts.*sum to 32"),
        ({"round_schedule": "0.5,0.4"}, "summing to 0.9"),
        ({"round_schedule": "24,8", "rounds": 2}, "round_schedule .* and rounds .* both set"),
        ({"round_schedule": "24,8", "round_size": 8}, "both set"),
        ({"round_schedule": "24,8", "pilot": 1}, "hand out 24"),
    ],
)
def test_bad_round_schedules(tiny_model_dir, kw, match):
    with pytest.raises(ValueError, match=match):
        cfg(tiny_model_dir, **kw)
