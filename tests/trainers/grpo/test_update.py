"""trainers.grpo.update: the GRPO update on hand-worked batches of a bigram policy.

The policy is a table ``W`` of logits (``logits[t] = W[token t]``), so log-probabilities,
advantages, losses and gradients are written out by hand: with ``W = 0`` every token has
probability 1/V, and the gradient of ``log p(j | i)`` with respect to ``W[i]`` is
``onehot(j) - p(· | i)``.
"""

from __future__ import annotations

import contextlib
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from trainers.grpo import GRPOConfig
from trainers.grpo.config import STD_EPS
from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import Rollouts
from trainers.grpo.update import (
    PolicyModels,
    grpo_update,
    micro_batches,
    old_logprobs,
    optimizer_step,
    prepare_batch,
)

V = 4  # tokens: 0 pad, 1 the prompt, 2 and 3 completions


class Bigram(torch.nn.Module):
    """``logits[b, t] = W[input_ids[b, t]]``: the next token depends on this one alone."""

    def __init__(self, table: torch.Tensor | None = None) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(V, V) if table is None else table.clone())

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False,
                output_hidden_states=False):  # fmt: skip
        logits = self.table[input_ids]  # [b, L, V]
        return SimpleNamespace(logits=logits, hidden_states=(logits,))


def _models(policy: Bigram, ref: Bigram | None = None, lr: float = 1.0) -> PolicyModels:
    return PolicyModels(
        model=policy,
        policy=policy,
        ref_model=ref,
        optimizer=torch.optim.SGD(policy.parameters(), lr=lr),
        pad_id=0,
        ranks=Ranks(),
        autocast=contextlib.nullcontext,
    )


def _cfg(**kw) -> GRPOConfig:
    base = dict(batch_size=1, group_size=2, max_completion_length=2, loss_type="dapo")
    return GRPOConfig(**{**base, **kw})


def _rollouts(rewards, completions, engine_lp) -> Rollouts:
    ro = Rollouts(len(rewards))
    ro.rewards = [list(r) for r in rewards]
    ro.completion_ids = [[list(c) for c in q] for q in completions]
    ro.logprobs = [[np.asarray(lp, dtype=np.float32) for lp in q] for q in engine_lp]
    return ro


#: two rollouts of one prompt: token 2 (reward 1) and token 3 (reward 0)
A = 0.5 / (math.sqrt(0.5) + STD_EPS)  # |advantage|: mean 0.5, unbiased std sqrt(0.5)


def _two_rollouts(engine_lp=((-1.0,), (-2.0,))) -> Rollouts:
    return _rollouts([[1.0, 0.0]], [[[2], [3]]], [engine_lp])


def test_two_rollouts_by_hand():
    policy = Bigram()
    stats = grpo_update(_models(policy), _cfg(max_grad_norm=0.0), _two_rollouts(), [[1]])
    # ratio 1: the loss is -Σ w·A = -(A - A)/2 = 0; each of the two tokens weighs 1/2
    assert stats["loss"] == pytest.approx(0.0, abs=1e-7)
    assert stats["tokens"] == 2.0 and stats["trained"] == 2.0 and stats["skipped"] == 0.0
    assert (stats["kl"], stats["low"], stats["high"]) == (0.0, 0.0, 0.0)
    assert stats["entropy"] == pytest.approx(math.log(V))  # uniform over 4 tokens
    # |log(1/4) + 1| and |log(1/4) + 2|, per token: (log 4 - 1 + 2 - log 4) / 2
    assert stats["lp_diff"] == pytest.approx(0.5)
    # grad W[1] = -(A/2)(e2 - 1/4) + (A/2)(e3 - 1/4) = (0, 0, -A/2, A/2); SGD with lr 1
    assert stats["grad_norm"] == pytest.approx(A / math.sqrt(2))
    expect = torch.zeros(V, V)
    expect[1] = torch.tensor([0.0, 0.0, A / 2, -A / 2])
    torch.testing.assert_close(policy.table.detach(), expect)
    assert policy.table.grad is None  # zeroed after the update


def test_clipping_with_the_engines_old_logprobs():
    # the engine's log-probs put the ratio at 1.5 for the rewarded token (clipped at 1.2) and
    # at 0.5 for the other (clipped at 0.8): both clipped, so no gradient flows
    lp = -math.log(V)
    engine = ((lp - math.log(1.5),), (lp - math.log(0.5),))
    policy = Bigram()
    cfg = _cfg(old_logprobs="engine", max_grad_norm=0.0)
    stats = grpo_update(_models(policy), cfg, _two_rollouts(engine), [[1]])
    assert stats["loss"] == pytest.approx(0.5 * (-1.2 * A) + 0.5 * (0.8 * A), rel=1e-5)
    assert stats["high"] == 0.5 and stats["low"] == 0.5  # one clipped token of two each
    assert stats["grad_norm"] == pytest.approx(0.0, abs=1e-7)
    assert stats["lp_diff"] == pytest.approx((math.log(1.5) + math.log(2.0)) / 2, rel=1e-5)
    torch.testing.assert_close(policy.table.detach(), torch.zeros(V, V))


def test_the_kl_penalty_by_hand():
    ref_table = torch.zeros(V, V)
    ref_table[1, 2] = math.log(2.0)  # the reference: p(· | 1) = (1, 1, 2, 1) / 5
    d0, d1 = math.log((2 / 5) / (1 / 4)), math.log((1 / 5) / (1 / 4))
    kl0, kl1 = math.exp(d0) - d0 - 1, math.exp(d1) - d1 - 1
    stats = grpo_update(_models(Bigram(), Bigram(ref_table)), _cfg(beta=0.1), _two_rollouts(),
                        [[1]])  # fmt: skip
    assert stats["kl"] == pytest.approx((kl0 + kl1) / 2, rel=1e-5)
    # -Σ w·A vanishes; what remains is β·Σ w·kl
    assert stats["loss"] == pytest.approx(0.1 * (kl0 + kl1) / 2, rel=1e-4)


def test_prepare_batch_on_a_three_question_ragged_batch():
    # question 0: rewards 1, 0; question 1: 1, 1 (no signal); question 2: one rollout
    ro = _rollouts(
        [[1.0, 0.0], [1.0, 1.0], [0.0]],
        [[[2, 2], [3]], [[2], [2, 3, 3]], [[3]]],
        [[[-1, -1], [-1]], [[-1], [-1, -1, -1]], [[-1]]],
    )
    prompts = [[1], [1, 2], [3]]
    batch = prepare_batch(ro, prompts, _cfg(loss_type="grpo", max_completion_length=3))
    assert batch.groups.tolist() == [0, 0, 1, 1, 2]
    assert batch.prompts == [[1], [1], [1, 2], [1, 2], [3]]
    assert batch.completions == [[2, 2], [3], [2], [2, 3, 3], [3]]
    np.testing.assert_allclose(batch.advantages, [A, -A, 0, 0, 0])
    assert batch.width == 3 and batch.rows.tolist() == [0, 1]  # only rows with an advantage
    # grpo: 1 / (M · len_i) on each real token, M = 5
    expect = torch.tensor([[1 / 10, 1 / 10, 0], [1 / 5, 0, 0], [1 / 5, 0, 0],
                           [1 / 15, 1 / 15, 1 / 15], [1 / 5, 0, 0]])  # fmt: skip
    torch.testing.assert_close(batch.weights, expect)
    assert [lp.tolist() for lp in batch.engine_logprobs][3] == [-1.0, -1.0, -1.0]
    # with a KL penalty every rollout carries gradient
    with_kl = prepare_batch(ro, prompts, _cfg(beta=0.04))
    assert with_kl.rows.tolist() == [0, 1, 2, 3, 4]
    dapo = prepare_batch(ro, prompts, _cfg(loss_type="dapo"))
    torch.testing.assert_close(dapo.weights.sum(), torch.tensor(1.0))  # 1 / Σ tokens, 8 tokens
    assert dapo.weights[3, 2].item() == pytest.approx(1 / 8)


def test_micro_batches_and_accumulation_equal_one_batch():
    rows = np.arange(5)
    assert [c.tolist() for c in micro_batches(Ranks(), rows, 2)] == [[0, 1], [2, 3], [4]]
    assert micro_batches(Ranks(), np.zeros(0, dtype=np.int64), 2) == []

    class Busier:  # another rank has four chunks
        def gather(self, n):
            return torch.cat([n, torch.tensor([4])])

    padded = micro_batches(Ranks(accelerator=Busier(), world=2), rows, 2)
    assert [c.tolist() for c in padded] == [[0, 1], [2, 3], [4], []]
    # an update in micro-batches of one equals one of the whole batch
    ro = _rollouts([[1.0, 0.0, 0.0], [0.0, 1.0]], [[[2], [3, 3], [2, 3]], [[3], [2, 2]]],
                   [[[-1], [-1, -1], [-1, -1]], [[-1], [-1, -1]]])  # fmt: skip
    torch.manual_seed(0)
    start = torch.randn(V, V)
    whole, parts = Bigram(start), Bigram(start)
    a = grpo_update(_models(whole, lr=0.1), _cfg(micro_batch_size=64), ro, [[1], [2]])
    b = grpo_update(_models(parts, lr=0.1), _cfg(micro_batch_size=1), ro, [[1], [2]])
    torch.testing.assert_close(whole.table, parts.table)
    assert not torch.equal(whole.table.detach(), start)
    for key in ("loss", "tokens", "entropy", "grad_norm", "lp_diff"):
        assert a[key] == pytest.approx(b[key], rel=1e-5), key


def test_nothing_to_learn_is_no_update():
    policy = Bigram()
    m = _models(policy)
    ro = _rollouts([[1.0, 1.0]], [[[2], [3]]], [[[-1], [-1]]])  # zero variance
    stats = grpo_update(m, _cfg(), ro, [[1]])
    assert stats["trained"] == 0.0 and stats["grad_norm"] == 0.0 and math.isnan(stats["lp_diff"])
    assert m.optimizer.state == {}  # the optimizer never stepped
    torch.testing.assert_close(policy.table.detach(), torch.zeros(V, V))


def test_recomputed_old_logprobs_are_the_policys_before_the_update():
    policy = Bigram()
    m = _models(policy)
    batch = prepare_batch(_two_rollouts(), [[1]], _cfg())
    chunks = micro_batches(m.ranks, batch.rows, 64)
    assert old_logprobs(m, _cfg(), batch, chunks) == {}  # one iteration: not needed
    old = old_logprobs(m, _cfg(num_iterations=2), batch, chunks)
    assert sorted(old) == [0, 1]
    for r in (0, 1):
        torch.testing.assert_close(old[r], torch.tensor([-math.log(V)]))
        assert not old[r].requires_grad
    # two iterations at lr 0.1: the second starts from the first's weights, its ratios
    # (about 1.036 and 0.965) inside the clip range, so the rewarded token rises further
    one, two = Bigram(), Bigram()
    grpo_update(_models(one, lr=0.1), _cfg(max_grad_norm=0.0), _two_rollouts(), [[1]])
    cfg2 = _cfg(max_grad_norm=0.0, num_iterations=2)
    grpo_update(_models(two, lr=0.1), cfg2, _two_rollouts(), [[1]])
    assert one.table[1, 2].item() == pytest.approx(0.1 * A / 2)
    assert two.table[1, 2].item() > one.table[1, 2].item()
    # at lr 1 the first step moves W[1] to (0, 0, A/2, -A/2): the ratios are about 1.38 and
    # 0.68, both clipped, so the second iteration has no gradient and changes nothing
    one, two = Bigram(), Bigram()
    grpo_update(_models(one), _cfg(max_grad_norm=0.0), _two_rollouts(), [[1]])
    grpo_update(_models(two), cfg2, _two_rollouts(), [[1]])
    torch.testing.assert_close(two.table, one.table)


def test_a_non_finite_gradient_skips_the_step_with_a_warning():
    policy = Bigram()
    m = _models(policy)
    policy.table.grad = torch.full((V, V), float("nan"))
    stats = {"tokens": 1.0, "skipped": 0.0}
    with pytest.warns(RuntimeWarning) as record:
        ok = optimizer_step(m, _cfg(), stats, first=True, diffs=[], step=7, skipped_before=2)
    assert ok is False and stats["skipped"] == 1.0 and "grad_norm" not in stats
    assert str(record[0].message) == (
        "step 7: non-finite loss or gradient (nan); the update is skipped (3 skipped so far)"
    )
    assert policy.table.grad is None
    torch.testing.assert_close(policy.table.detach(), torch.zeros(V, V))
    # a finite gradient above max_grad_norm is clipped to it; the norm before is reported
    policy.table.grad = torch.full((V, V), 0.5)  # norm 0.5·4 = 2
    stats = {"tokens": 2.0, "skipped": 0.0}
    assert optimizer_step(m, _cfg(max_grad_norm=1.0), stats, first=True, diffs=[1.0, 0.5])
    assert stats["grad_norm"] == pytest.approx(2.0) and stats["lp_diff"] == pytest.approx(0.75)
    torch.testing.assert_close(policy.table.detach(), torch.full((V, V), -0.25))


def test_dynamic_sampling_normalises_over_the_groups_that_stay():
    # question 0: rewards 1, 0 (kept); question 1: 1, 1 (dropped); question 2: one rollout (dropped)
    ro = _rollouts(
        [[1.0, 0.0], [1.0, 1.0], [0.0]],
        [[[2, 2], [3]], [[2], [2, 3, 3]], [[3]]],
        [[[-1, -1], [-1]], [[-1], [-1, -1, -1]], [[-1]]],
    )
    prompts = [[1], [1, 2], [3]]
    dapo = prepare_batch(ro, prompts, _cfg(loss_type="dapo", dynamic_sampling=True))
    # dapo: 1 / Σ tokens of the kept group (3 tokens), not of the whole batch (8)
    expect = torch.zeros(5, 3)
    expect[0, :2] = 1 / 3
    expect[1, 0] = 1 / 3
    torch.testing.assert_close(dapo.weights, expect)
    assert dapo.rows.tolist() == [0, 1]
    grpo = prepare_batch(ro, prompts, _cfg(loss_type="grpo", dynamic_sampling=True,
                                           max_completion_length=3))  # fmt: skip
    # grpo: 1 / (M_kept · len_i) with M_kept = 2
    torch.testing.assert_close(grpo.weights[:2, :2], torch.tensor([[1 / 4, 1 / 4], [1 / 2, 0]]))
    assert float(grpo.weights[2:].abs().sum()) == 0.0
    # a KL penalty does not bring the dropped groups back: they left the batch
    with_kl = prepare_batch(ro, prompts, _cfg(beta=0.04, dynamic_sampling=True))
    assert with_kl.rows.tolist() == [0, 1]
    # nothing informative: no weights, no rows
    none = prepare_batch(_rollouts([[1.0, 1.0]], [[[2], [3]]], [[[-1], [-1]]]), [[1]],
                         _cfg(dynamic_sampling=True))  # fmt: skip
    assert none.rows.size == 0 and float(none.weights.sum()) == 0.0


def test_dynamic_sampling_takes_a_larger_step_than_the_whole_batch_normaliser():
    ro = _rollouts([[1.0, 0.0], [1.0, 1.0]], [[[2], [3]], [[2], [2]]],
                   [[[-1], [-1]], [[-1], [-1]]])  # fmt: skip
    plain = grpo_update(_models(Bigram()), _cfg(max_grad_norm=0.0), ro, [[1], [1]],
                        measure_update=True)  # fmt: skip
    dyn = grpo_update(_models(Bigram()), _cfg(max_grad_norm=0.0, dynamic_sampling=True), ro,
                      [[1], [1]], measure_update=True)  # fmt: skip
    # 4 tokens against the 2 that carry gradient: twice the gradient, twice the SGD step
    assert dyn["grad_norm"] == pytest.approx(2 * plain["grad_norm"])
    assert dyn["update_norm"] == pytest.approx(2 * plain["update_norm"])


def test_update_norm_is_the_distance_the_weights_moved():
    policy = Bigram()
    stats = grpo_update(_models(policy), _cfg(max_grad_norm=0.0), _two_rollouts(), [[1]],
                        measure_update=True)  # fmt: skip
    # SGD with lr 1 moves W[1] by (0, 0, A/2, -A/2): norm A/sqrt(2), the gradient's norm
    assert stats["update_norm"] == pytest.approx(A / math.sqrt(2))
    assert stats["update_norm"] == pytest.approx(float(policy.table.detach().norm()))
    unmeasured = grpo_update(_models(Bigram()), _cfg(), _two_rollouts(), [[1]])
    assert math.isnan(unmeasured["update_norm"])
