"""Behaviour cloning: start a learned allocator from an expert allocator's decisions.

PPO from a random policy finds most of what an allocator can gain in the rounds env, but the
last part of the rounds-aware ``bamdp``'s gain is a precise, state-dependent split of each round
that a Gaussian policy rarely stumbles on. Cloning the expert first and then letting PPO improve
on it (``adaroll train-sb3 --clone bamdp``) is the standard remedy: the policy starts where the
expert is, and the return is still the env's, so PPO may go beyond it.

The data are the expert's own episodes in the training env: at every decision the flat features
the policy sees (``agents.sb3.features.flat_features``) and, as the target, the action that
decodes to exactly the expert's counts, a = 2·c/K − 1 with K the largest count the expert gives
in any decision of the data (so a question the expert leaves out is −1, and a question's target
depends on its own count alone; the rounds env splits a round in proportion to (a + 1)/2). The
policy's action mean is fitted to it by mean squared error and the value head to the expert's
return-to-go (the env's rewards summed to the end of the episode, γ = 1 as in the shipped
hyperparameters), so that PPO's first advantages are not noise around an untrained critic. Box-
action (rounds) envs only: a sequential env's expert would be cloned by cross-entropy on its
choice, which is not built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

import adaroll_env
from agents.sb3.features import flat_features

__all__ = ["CloneReport", "behaviour_clone", "expert_dataset"]

#: A question the expert leaves out is fitted below -1 by this margin (its clipped action is -1).
ZERO_MARGIN = 0.25


@dataclass(frozen=True)
class CloneReport:
    """What cloning did: decisions seen, epochs, and the losses before and after."""

    expert: str
    episodes: int
    decisions: int
    epochs: int
    action_mse_before: float
    action_mse_after: float
    value_mse_before: float
    value_mse_after: float


def expert_dataset(
    env_id: str, env_kwargs: dict[str, Any], expert: str, episodes: int, seed: int
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
    """``(features [n, D], actions [n, B], returns-to-go [n])`` of ``episodes`` expert episodes
    (seeds ``seed``, ``seed + 1``, ...) in a fresh ``env_id`` env."""
    from agents.registry import make_allocator

    gym.register_envs(adaroll_env)
    env = gym.make(env_id, **env_kwargs)
    if not isinstance(env.action_space, gym.spaces.Box):
        raise ValueError(
            f"behaviour cloning fits Box (rounds) actions; {env_id} has {env.action_space}: "
            "use AdaRoll/BetaBernoulliRounds-v0"
        )
    params = env.unwrapped.params  # type: ignore[attr-defined]
    alloc = make_allocator(expert, env)
    xs: list[NDArray[np.float32]] = []
    cs: list[NDArray[np.int64]] = []
    gs: list[float] = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        rewards: list[float] = []
        done = False
        while not done:
            counts = alloc.allocate(obs)
            action = adaroll_env.encode_counts(counts)
            xs.append(flat_features(params, obs))
            cs.append(np.asarray(counts, dtype=np.int64))
            obs, reward, terminated, truncated, _ = env.step(action)
            rewards.append(float(reward))
            done = bool(terminated or truncated)
        gs.extend(np.cumsum(rewards[::-1])[::-1].tolist())
    env.close()
    counts_all = np.stack(cs)
    scale = max(int(counts_all.max()), 1)
    # One scale for every decision: a = 2·c/K − 1 with K the largest count the expert gave, so
    # a question's target depends on its own count only (decoding is proportional: any common
    # scale gives back the same counts).
    actions = (2.0 * counts_all / scale - 1.0).astype(np.float32)
    return np.stack(xs).astype(np.float32), actions, np.asarray(gs, dtype=np.float32)


def behaviour_clone(
    model: Any,
    env_id: str,
    env_kwargs: dict[str, Any],
    *,
    expert: str = "bamdp",
    episodes: int = 2000,
    epochs: int = 200,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> CloneReport:
    """Fit ``model.policy`` (an SB3 actor-critic with Box actions) to ``expert``'s decisions in
    place: action mean by MSE to the expert's encoded counts, value by MSE to its return-to-go.
    The expert's episodes use seeds from ``seed + 20_000`` (disjoint from training's and the
    evaluation's); the policy's log-std is left as built."""
    import torch as th

    x, y, g = expert_dataset(env_id, env_kwargs, expert, episodes, seed + 20_000)
    policy = model.policy
    device = policy.device
    X = th.as_tensor(x, device=device)
    Y = th.as_tensor(y, device=device)
    G = th.as_tensor(g, device=device)

    left_out = Y <= -1.0  # questions the expert gave nothing: any mean <= -1 decodes to 0

    def action_loss(mean: Any, target: Any, out: Any) -> Any:
        # squared error to the target, except that a left-out question is only pushed below
        # -1 - margin (the allocator clips to [-1, 1], so it then decodes to exactly 0)
        hinge = th.clamp(mean - (-1.0 - ZERO_MARGIN), min=0.0)
        return th.where(out, hinge, mean - target).pow(2).mean()

    def losses() -> tuple[float, float]:
        with th.no_grad():
            mean = policy.get_distribution(X).distribution.mean
            value = policy.predict_values(X).squeeze(-1)
            return float(action_loss(mean, Y, left_out)), float(((value - G) ** 2).mean())

    before = losses()
    trainable = [p for name, p in policy.named_parameters() if name != "log_std"]
    opt = th.optim.Adam(trainable, lr=lr)
    gen = th.Generator().manual_seed(seed)
    n = X.shape[0]
    scale = float(G.abs().mean().clamp(min=1e-6))  # the value loss in units of a typical return
    for _ in range(epochs):
        order = th.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            xb = X[idx]
            mean = policy.get_distribution(xb).distribution.mean
            value = policy.predict_values(xb).squeeze(-1)
            value_loss = (((value - G[idx]) / scale) ** 2).mean()
            loss = action_loss(mean, Y[idx], left_out[idx]) + value_loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    after = losses()
    return CloneReport(
        expert=expert,
        episodes=episodes,
        decisions=int(n),
        epochs=epochs,
        action_mse_before=before[0],
        action_mse_after=after[0],
        value_mse_before=before[1],
        value_mse_after=after[1],
    )
