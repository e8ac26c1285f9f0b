"""The gradient-noise ratio κ (trainers.allocation.gradient_noise) and its measurement in the
trainer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from trainers.allocation.gradient_noise import Projection, noise_ratio
from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer
from trainers.models.architectures import ARCHITECTURES

#: the tiny model and every model family (smoke warm starts, trained on a parity reward)
MODELS = ["tiny", *ARCHITECTURES]


@pytest.mark.parametrize("sb, sw", [(1.0, 2.0), (2.0, 1.0), (1.0, 0.5)])
def test_noise_ratio_recovers_known_variances(sb, sw):
    rng = np.random.default_rng(1)
    P, n, k = 600, 6, 8
    mu = rng.normal(0.0, sb, (P, k))
    g = np.repeat(mu, n, axis=0) + rng.normal(0.0, sw, (P * n, k))
    out = noise_ratio(g, np.repeat(np.arange(P), n))
    assert out["prompts"] == P
    assert out["within"] == pytest.approx(k * sw**2, rel=0.05)
    # the sampling noise of the prompt means (sw²/n a dimension) is removed from the spread
    assert out["between"] == pytest.approx(k * sb**2, rel=0.12)
    assert out["kappa"] == pytest.approx(sw**2 / sb**2, rel=0.15)


def test_noise_ratio_ragged_groups_and_degenerate_cases():
    rng = np.random.default_rng(2)
    sizes = rng.integers(2, 12, 500)
    ids = np.repeat(np.arange(500), sizes)
    mu = rng.normal(0.0, 1.0, (500, 4))
    g = mu[ids] + rng.normal(0.0, 3.0, (ids.size, 4))
    assert noise_ratio(g, ids)["kappa"] == pytest.approx(9.0, rel=0.2)
    # groups of one carry no within-prompt information and are left out
    assert noise_ratio(np.ones((3, 2)), np.array([0, 1, 2]))["prompts"] == 0
    assert math.isnan(noise_ratio(np.ones((3, 2)), np.array([0, 1, 2]))["kappa"])
    # identical prompt means: the spread is all sampling noise
    same = noise_ratio(rng.normal(0, 1, (4000, 2)), np.repeat(np.arange(400), 10))
    assert same["kappa"] > 20 or same["kappa"] == math.inf
    with pytest.raises(ValueError, match="one group id per row"):
        noise_ratio(np.ones((3, 2)), np.array([0, 1]))


def test_projection_reads_the_output_layer_gradient():
    """z_k = r_kᵀ G c_k with G = ∇_W Σ_t log π(y_t), W the output layer (checked by autograd)."""
    torch.manual_seed(0)
    b, T, d, V, temp = 3, 5, 7, 11, 0.7
    h = torch.randn(b, T, d)
    W = torch.randn(V, d, requires_grad=True)
    y = torch.randint(0, V, (b, T))
    mask = torch.ones(b, T)
    mask[1, 3:] = 0  # a shorter completion
    logits = h @ W.T  # [b, T, V]
    proj = Projection(V, d, dim=6, seed=3)
    z = proj.rollouts(h, logits.detach(), y, mask, temp)  # [b, 6]
    for row in range(b):
        W.grad = None
        lp = torch.log_softmax(logits[row] / temp, dim=-1).gather(-1, y[row, :, None])[:, 0]
        (lp * mask[row]).sum().backward(retain_graph=True)
        G = W.grad  # [V, d]
        want = torch.einsum("vk,vd,dk->k", proj.r, G, proj.c)
        torch.testing.assert_close(z[row], want, rtol=1e-4, atol=1e-5)


def _cfg(model_dir, **kw):
    base = dict(
        model=str(model_dir),
        task_size=2000,
        batch_size=16,
        group_size=4,
        eval_every=0,
        tensorboard=False,
        progress=False,
        device="cpu",
        threads=1,
    )
    base.update(kw)
    return GRPOConfig(**base)


@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_the_trainer_logs_kappa_every_n_steps(model_case):
    # every family's output layer (GPT-NeoX: an untied embed_out) and last hidden state
    tiny_model_dir, task = model_case.directory, model_case.task_kwargs()
    t = GRPOTrainer(_cfg(tiny_model_dir, gradient_noise_every=2), **task)
    reports = [t.train_step() for _ in range(4)]
    measured = [r for r in reports if "gradient_noise/kappa" in r.extra]
    assert [r.step for r in measured] == [1, 3]  # steps are numbered from 1: the 1st and 3rd
    assert any(r.extra["gradient_noise/prompts"] >= 2 for r in measured)
    for r in measured:
        if r.extra["gradient_noise/prompts"] >= 2:
            assert r.extra["gradient_noise/within"] > 0
            assert not math.isnan(r.extra["gradient_noise/kappa"])
    assert "gradient_noise/kappa" in measured[0].as_dict()
    off = GRPOTrainer(_cfg(tiny_model_dir, gradient_noise_every=0), **task)
    assert "gradient_noise/kappa" not in off.train_step().extra


@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_measuring_changes_no_update(model_case):
    """The measurement reads the update's forward passes and changes no weight."""
    tiny_model_dir, task = model_case.directory, model_case.task_kwargs()
    a = GRPOTrainer(_cfg(tiny_model_dir, gradient_noise_every=1), **task)
    b = GRPOTrainer(_cfg(tiny_model_dir, gradient_noise_every=0), **task)
    start = [p.detach().clone() for p in a.policy.parameters()]
    for _ in range(2):
        a.train_step()
        b.train_step()
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    assert any(not torch.equal(s, p) for s, p in zip(start, a.policy.parameters(), strict=True))


def test_auto_kappa_follows_the_median_on_a_grid():
    from trainers.allocation.gradient_noise import AutoKappa

    auto = AutoKappa(window=3)
    assert auto.utility == "snr(8)"  # until three measurements exist
    assert not auto.update(4.0) and not auto.update(float("nan")) and not auto.update(5.0)
    assert auto.kappa == 8.0
    assert auto.update(6.0)  # median 5 snaps to 10^(3/4) = 5.623
    assert auto.utility == "snr(5.623)"
    assert not auto.update(5.2)  # median of (5, 6, 5.2) snaps to the same point
    auto.update(math.inf)
    auto.update(math.inf)
    assert auto.kappa == 1000.0  # clipped: the spread is all sampling noise
    copy = AutoKappa(window=3)
    copy.load_state_dict(auto.state_dict())
    assert copy.kappa == auto.kappa and copy.measured == auto.measured


def test_snr_auto_in_the_trainer(tiny_model_dir):
    t = GRPOTrainer(
        _cfg(tiny_model_dir, utility="snr(auto)", allocator="bamdp", gradient_noise_every=1)
    )
    t.auto_kappa.window = 2
    used = []
    for _ in range(4):
        r = t.train_step()
        used.append(r.extra["gradient_noise/kappa_used"])
        assert t.params is not None and t.params.utility == f"snr({used[-1]:.4g})"
    assert used[0] == 8.0
    assert len(t.auto_kappa.measured) == 2  # the last two finite measurements
    k = t.auto_kappa.kappa  # their median, on the grid of four points a decade
    assert math.isclose(4 * math.log10(k), round(4 * math.log10(k)), abs_tol=1e-3)
    state = t.state_dict()
    assert state["auto_kappa"] == t.auto_kappa.state_dict()
    with pytest.raises(ValueError, match="gradient_noise_every = 0"):
        _cfg(tiny_model_dir, utility="snr(auto)", gradient_noise_every=0)
