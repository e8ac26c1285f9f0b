"""``check_allocator``: a conformance check in the spirit of Gymnasium's ``check_env``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from adaroll_env import model
from agents.base import Allocator, read_beliefs
from agents.contract import AllocationError, check_allocation


class AllocatorCheckError(AssertionError):
    """An allocator broke the protocol; the message says where and how."""


def _fail(name: str, msg: str) -> AllocatorCheckError:
    return AllocatorCheckError(f"allocator {name!r}: {msg}")


def _check_counts(name: str, counts: Any, env: gym.Env, obs: dict) -> np.ndarray:
    """The allocation contract (``agents.check_allocation``), raised as a check failure."""
    params = env.unwrapped.params  # type: ignore[attr-defined]
    b = read_beliefs(params, obs)
    try:
        return check_allocation(
            repr(name), counts, round_size=b.round_size, spent=b.rollouts, caps=params.cap
        )
    except AllocationError as exc:
        raise AllocatorCheckError(f"allocate(): {exc}") from exc


def _action_counts(name: str, action: Any, env: gym.Env) -> np.ndarray:
    """Counts that ``action`` decodes to in the env's current state; checks the space."""
    u = env.unwrapped
    space = env.action_space
    p, state = u.episode_params, u.state  # type: ignore[attr-defined]
    if isinstance(space, gym.spaces.Discrete):
        a = np.asarray(action)
        if a.size != 1 or a.dtype.kind not in "iu" or not space.contains(int(a.reshape(-1)[0])):
            raise _fail(name, f"act() returned {action!r}, which is not in {space}")
        counts = np.zeros(p.num_questions, dtype=np.int64)
        counts[int(a.reshape(-1)[0])] = 1
        return counts
    a = np.asarray(action)
    if a.shape != space.shape or not space.contains(a.astype(np.float32)):
        raise _fail(name, f"act() returned {action!r}, which is not in {space}")
    return model.decode_action(p, state, a)


def check_allocator(
    allocator: Allocator, env: gym.Env, *, episodes: int = 2, seed: int = 0
) -> None:
    """Check that ``allocator`` honours the protocol in ``env`` (an adaroll env).

    Checks: ``name`` is a str; ``allocate`` returns integer counts of shape [B] that sum to
    min(R, budget_left) and respect the caps; ``act`` returns an action in the env's space that
    decodes to valid counts; the env spends the budget exactly; ``reset(params, seed)`` followed
    by the same observations gives the same counts and actions (the memory rule); and ``predict``
    on a batch of observations returns a batch of the same actions. Raises
    ``AllocatorCheckError`` (an ``AssertionError``) on the first failure.
    """
    name = getattr(allocator, "name", None)
    if not isinstance(name, str):
        raise AllocatorCheckError(f"allocator {allocator!r} has no str attribute 'name'")
    params = getattr(env.unwrapped, "params", None)
    if not isinstance(params, model.AllocationParams):
        raise TypeError("check_allocator needs an adaroll env (env.unwrapped.params)")
    episodes_seen: list[tuple[int, list[dict], list[np.ndarray], list[Any]]] = []
    for ep in range(episodes):
        ep_seed = seed + ep
        obs, _ = env.reset(seed=ep_seed)
        allocator.reset(params, seed=ep_seed)
        seen_obs, seen_counts, seen_actions = [], [], []
        done = False
        while not done:
            counts = _check_counts(name, allocator.allocate(obs), env, obs)
            action = allocator.act(obs)
            decoded = _action_counts(name, action, env)
            _check_counts(name, decoded, env, obs)
            before = np.asarray(obs["rollouts"]).astype(np.int64)
            seen_obs.append(obs)
            seen_counts.append(counts)
            seen_actions.append(np.asarray(action))
            obs, _, terminated, truncated, info = env.step(action)
            if not np.array_equal(info["allocation"], before + decoded):
                raise _fail(name, "the env did not apply the decoded action as expected")
            done = bool(terminated or truncated)
        spent = int(np.asarray(info["allocation"]).sum())
        if spent != params.total_budget:
            raise _fail(name, f"episode spent {spent} rollouts, budget is {params.total_budget}")
        episodes_seen.append((ep_seed, seen_obs, seen_counts, seen_actions))

    for ep_seed, seen_obs, seen_counts, seen_actions in episodes_seen:
        allocator.reset(params, seed=ep_seed)
        for t, (o, c, a) in enumerate(zip(seen_obs, seen_counts, seen_actions, strict=True)):
            c2 = np.asarray(allocator.allocate(o))
            a2 = np.asarray(allocator.act(o))
            if not (np.array_equal(c, c2) and np.array_equal(a, a2)):
                raise _fail(
                    name,
                    f"not deterministic under a seed: after reset(params, seed={ep_seed}) the "
                    f"same observation at decision {t} gave counts {c2.tolist()} instead of "
                    f"{c.tolist()}; keep no memory beyond self.rng (the memory rule)",
                )

    first = [o for _, seen_obs, _, _ in episodes_seen for o in seen_obs[:2]][:3]
    allocator.reset(params, seed=seed)
    singles = [np.asarray(allocator.act(o)) for o in first]
    allocator.reset(params, seed=seed)
    batch = {k: np.stack([o[k] for o in first]) for k in first[0]}
    actions, _ = allocator.predict(batch, deterministic=True)
    actions = np.asarray(actions)
    if actions.shape[0] != len(first) or not all(
        np.array_equal(actions[i], singles[i]) for i in range(len(first))
    ):
        raise _fail(
            name,
            f"predict() on a batch of {len(first)} observations returned {actions!r}, expected "
            f"the actions of act() on each: {singles!r}",
        )
