"""GRPO math on hand-worked ragged batches: advantages, surrogate, KL, loss normalisation (the
config's tests are in test_config.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.grpo import (
    clipped_surrogate,
    expand_groups,
    group_advantages,
    kl_k3,
    per_token_logps,
    token_weights,
)


# --- advantages -------------------------------------------------------------------------------
def test_three_prompt_ragged_batch_by_hand() -> None:
    # prompt 0: rewards 1, 0, 0 (mean 1/3, unbiased std sqrt(1/3)); prompt 1: a single rollout;
    # prompt 2: 1, 1 (zero variance)
    rewards = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    groups = np.array([0, 0, 0, 1, 2, 2])
    std = math.sqrt(((2 / 3) ** 2 + 2 * (1 / 3) ** 2) / 2)
    adv = group_advantages(rewards, groups, scale="group")
    expect = [(2 / 3) / (std + 1e-4), (-1 / 3) / (std + 1e-4), (-1 / 3) / (std + 1e-4), 0, 0, 0]
    np.testing.assert_allclose(adv, expect, rtol=1e-12)
    np.testing.assert_allclose(
        group_advantages(rewards, groups, scale="none"), [2 / 3, -1 / 3, -1 / 3, 0, 0, 0]
    )
    batch_std = float(np.std(rewards, ddof=1))
    np.testing.assert_allclose(
        group_advantages(rewards, groups, scale="batch"),
        np.array([2 / 3, -1 / 3, -1 / 3, 0, 0, 0]) / (batch_std + 1e-4),
    )


def test_advantages_keep_torch_type_and_group_labels_need_not_be_sorted() -> None:
    r = torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=torch.float64)
    g = torch.tensor([5, 9, 5, 9])
    adv = group_advantages(r, g, scale="none")
    assert isinstance(adv, torch.Tensor) and adv.dtype == torch.float64
    assert adv.tolist() == [-0.5, 0.5, 0.5, -0.5]


def test_advantages_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        group_advantages(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="NaN"):
        group_advantages(np.array([np.nan, 1.0]), np.array([0, 0]))
    with pytest.raises(ValueError, match="scale must be one of"):
        group_advantages(np.zeros(2), np.zeros(2), scale="std")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=8),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["group", "batch", "none"]),
)
def test_advantages_sum_to_zero_per_group(counts: list[int], seed: int, scale: str) -> None:
    rng = np.random.default_rng(seed)
    groups = expand_groups(counts)
    rewards = rng.integers(0, 2, size=groups.size).astype(float)
    adv = group_advantages(rewards, groups, scale=scale)  # type: ignore[arg-type]
    for g in np.unique(groups):
        sel = groups == g
        assert abs(adv[sel].sum()) < 1e-9
        if sel.sum() < 2 or np.ptp(rewards[sel]) == 0:
            assert np.all(adv[sel] == 0)


def test_expand_groups() -> None:
    assert expand_groups([2, 0, 3]).tolist() == [0, 0, 2, 2, 2]
    with pytest.raises(ValueError):
        expand_groups([1, -1])


# --- log-probs, surrogate, KL ------------------------------------------------------------------
def test_per_token_logps_match_log_softmax_with_temperature() -> None:
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    tokens = torch.tensor([[0, 4, 2], [1, 1, 3]])
    got = per_token_logps(logits, tokens, temperature=0.5)
    ref = torch.log_softmax(logits / 0.5, -1).gather(-1, tokens[..., None]).squeeze(-1)
    torch.testing.assert_close(got, ref)


def test_clipped_surrogate_by_hand() -> None:
    # ratio 1.5 with A = +1 clips at 1.2; ratio 0.5 with A = -1 clips at 0.8
    lp = torch.log(torch.tensor([[1.5, 0.5, 1.0]]))
    old = torch.zeros(1, 3)
    loss, low, high = clipped_surrogate(lp, old, torch.tensor([1.0]), epsilon=0.2)
    torch.testing.assert_close(loss, torch.tensor([[-1.2, -0.5, -1.0]]))
    assert high.tolist() == [[True, False, False]] and not low.any()
    loss, low, high = clipped_surrogate(lp, old, torch.tensor([-1.0]), epsilon=0.2)
    torch.testing.assert_close(loss, torch.tensor([[1.5, 0.8, 1.0]]))
    assert low.tolist() == [[False, True, False]] and not high.any()
    # clip-higher: the upper bound moves to 1 + 0.28
    loss, _, _ = clipped_surrogate(lp, old, torch.tensor([1.0]), epsilon=0.2, epsilon_high=0.28)
    torch.testing.assert_close(loss[0, 0], torch.tensor(-1.28))


def test_kl_k3_zero_at_equal_and_positive_elsewhere() -> None:
    a = torch.tensor([[-1.0, -2.0]])
    assert torch.all(kl_k3(a, a) == 0)
    assert torch.all(kl_k3(a, a + 0.3) > 0)
    d = 0.3
    torch.testing.assert_close(kl_k3(a, a + d)[0, 0], torch.tensor(math.exp(d) - d - 1))


# --- loss normalisation ------------------------------------------------------------------------
def test_token_weights_by_hand() -> None:
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    g = token_weights(mask, loss_type="grpo", max_completion_length=4)
    torch.testing.assert_close(g, torch.tensor([[0.25, 0.25, 0.0], [0.5, 0.0, 0.0]]))
    d = token_weights(mask, loss_type="dr_grpo", max_completion_length=4)
    torch.testing.assert_close(d, mask / 8)
    a = token_weights(mask, loss_type="dapo", max_completion_length=4)
    torch.testing.assert_close(a, mask / 3)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_micro_batches_sum_to_the_full_batch_gradient(loss_type: str) -> None:
    torch.manual_seed(0)
    w = torch.randn(4, 6, requires_grad=True)
    x = torch.randn(5, 3, 4)
    tokens = torch.randint(0, 6, (5, 3))
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 0, 0]]).float()
    adv = torch.tensor([1.0, -0.5, 0.3, 0.0, 2.0])
    weights = token_weights(mask, loss_type=loss_type, max_completion_length=3)  # type: ignore[arg-type]

    def loss_of(rows: list[int]) -> torch.Tensor:
        lp = per_token_logps(x[rows] @ w, tokens[rows])
        per_tok, _, _ = clipped_surrogate(lp, lp.detach() - 0.1, adv[rows], epsilon=0.2)
        return (per_tok * weights[rows]).sum()

    loss_of([0, 1, 2, 3, 4]).backward()
    full = w.grad.clone()  # type: ignore[union-attr]
    w.grad = None
    for rows in ([0, 1], [2], [3, 4]):
        loss_of(rows).backward()
    torch.testing.assert_close(w.grad, full)
