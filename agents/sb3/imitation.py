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

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

import adaroll_env
from agents.sb3.features import flat_features

__all__ = ["CloneReport", "behaviour_clone", "collect", "count_actions", "expert_dataset"]

#: A question the expert leaves out is fitted below -1 by this margin (its clipped action is -1).
ZERO_MARGIN = 0.25

#: what the clone's action means are fitted to: the expert's counts or the value it gives up;
#: or, for the curve policy, the expert's value curves themselves
CloneLoss = Literal["squared", "value", "curves"]
CLONE_LOSSES = ("squared", "value", "curves")


def _padded(curves: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """Value curves ``[B, M_k + 1]`` of several decisions stacked to ``[n, B, M + 1]``, −inf
    past each one's own width (the largest count it allows)."""
    width = max(int(c.shape[-1]) for c in curves)
    out = np.full((len(curves), *curves[0].shape[:-1], width), -np.inf)
    for k, c in enumerate(curves):
        out[k, ..., : c.shape[-1]] = c
    return out


def _flat_past_top(curves: NDArray[np.float64]) -> NDArray[np.float64]:
    """Curves continued flat past the largest count a question may take (−inf there): a soft
    round's count past it gains nothing (the env's split never hands it out)."""
    finite = np.isfinite(curves)
    last = np.where(finite, curves, -np.inf).max(axis=-1, keepdims=True)
    return np.where(finite, curves, last)


def curve_marginals(
    curves: NDArray[np.float64], max_take: int
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Value curves ``[n, B, M + 1]`` → marginals ``[n, B, max_take]`` (v[m] − v[m − 1], m =
    1..max_take) and where both ends are finite (the targets of the curve policy)."""
    v = np.full((*curves.shape[:-1], max_take + 1), -np.inf)
    k = min(curves.shape[-1], max_take + 1)
    v[..., :k] = curves[..., :k]
    ok = np.isfinite(v[..., 1:]) & np.isfinite(v[..., :-1])
    with np.errstate(invalid="ignore"):  # −inf − (−inf) where the curve has ended: masked
        d = np.where(ok, np.nan_to_num(v[..., 1:] - v[..., :-1], neginf=0.0, posinf=0.0), 0.0)
    return d.astype(np.float32), ok


def _value_lost(mean: Any, counts: Any, curves: Any) -> Any:
    """Mean value a decision's round gives up against the expert's counts: the action means
    clipped to [−1, 1] decode softly to R·w/Σw with w = (a + 1)/2 (the env's proportional split
    before rounding), read on each question's value curve linearly between integer counts."""
    import torch as th

    w = (th.clamp(mean, -1.0, 1.0) + 1.0) / 2.0 + 1e-6
    soft = counts.sum(-1, keepdim=True).to(w.dtype) * w / w.sum(-1, keepdim=True)
    top = curves.shape[-1] - 1
    lo = th.clamp(soft.detach().floor(), 0, max(top - 1, 0)).long()
    frac = (soft - lo).clamp(0.0, 1.0)
    v0 = th.gather(curves, -1, lo.unsqueeze(-1)).squeeze(-1)
    v1 = th.gather(curves, -1, (lo + 1).clamp(max=top).unsqueeze(-1)).squeeze(-1)
    got = (v0 + frac * (v1 - v0)).sum(-1)
    best = th.gather(curves, -1, counts.clamp(max=top).unsqueeze(-1)).squeeze(-1).sum(-1)
    return (best - got.to(best.dtype)).mean()


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
    #: the action loss fitted ("squared" or "value")
    loss: str = "squared"
    #: mean value a decision's soft round gives up against the expert's (``loss="value"``)
    value_lost_before: float | None = None
    value_lost_after: float | None = None


def collect(
    env_id: str,
    env_kwargs: dict[str, Any],
    expert: str,
    episodes: int,
    seed: int,
    act: Callable[[NDArray[np.float32]], NDArray[np.float32]] | None = None,
    curves: list[NDArray[np.float64]] | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.float32]]:
    """``(features [n, D], expert counts [n, B], returns-to-go [n])`` over ``episodes`` episodes
    (seeds ``seed``, ``seed + 1``, ...) of a fresh ``env_id`` env, driven by the expert or, when
    ``act`` is given, by ``act(features) -> action`` (the expert still labels every state: the
    data of a DAgger iteration). The returns are the driving policy's. With ``curves`` given, the
    expert's value curve of every decision (``round_value_curves``: ``[B, M + 1]``, −inf past
    what a question may take) is appended to it, for the value-lost loss; an expert without
    them is refused."""
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
    if curves is not None and not hasattr(alloc, "round_value_curves"):
        raise ValueError(
            f"clone_loss='value' fits the value the expert's round gives up, read from its value "
            f"curves; {expert!r} has none: clone 'bamdp', or use clone_loss='squared'"
        )
    xs: list[NDArray[np.float32]] = []
    cs: list[NDArray[np.int64]] = []
    gs: list[float] = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        rewards: list[float] = []
        done = False
        while not done:
            if curves is not None:
                curve = alloc.round_value_curves(obs)  # type: ignore[attr-defined]
                if curve is None:
                    raise ValueError(
                        f"clone_loss='value' needs {expert}'s value curve at every decision, and "
                        "it decides this one otherwise (rollouts one at a time, the index round "
                        "policy or too many distinct priors): use clone_loss='squared'"
                    )
                curves.append(curve)
            counts = alloc.allocate(obs)
            x = flat_features(params, obs)
            xs.append(x)
            cs.append(np.asarray(counts, dtype=np.int64))
            action = adaroll_env.encode_counts(counts) if act is None else act(x)
            obs, reward, terminated, truncated, _ = env.step(action)
            rewards.append(float(reward))
            done = bool(terminated or truncated)
        gs.extend(np.cumsum(rewards[::-1])[::-1].tolist())
    env.close()
    return np.stack(xs).astype(np.float32), np.stack(cs), np.asarray(gs, dtype=np.float32)


def count_actions(counts: NDArray[np.int64], scale: int) -> NDArray[np.float32]:
    """The targets a = 2·c/K − 1 of counts ``c`` on one scale K (decoding is proportional, so
    any common K gives back the same counts, and a question's target depends on its own count
    only); counts above K are clipped to 1."""
    return np.minimum(2.0 * counts / max(scale, 1) - 1.0, 1.0).astype(np.float32)


def expert_dataset(
    env_id: str, env_kwargs: dict[str, Any], expert: str, episodes: int, seed: int
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
    """``(features [n, D], actions [n, B], returns-to-go [n])`` of ``episodes`` expert episodes
    (seeds ``seed``, ``seed + 1``, ...) in a fresh ``env_id`` env, the actions on the scale of
    the largest count the expert gave."""
    x, c, g = collect(env_id, env_kwargs, expert, episodes, seed)
    return x, count_actions(c, int(c.max())), g


@contextlib.contextmanager
def _at_size(policy: Any, num_questions: int) -> Iterator[None]:
    """The equivariant policy read at another B: its weights do not depend on B, only the
    reshape of the features and the value's scale do (as ``sb3:`` zips load at any B)."""
    scorer, value = policy.mlp_extractor, policy.value_net
    before = scorer.num_questions, value.num_questions
    scorer.num_questions = value.num_questions = num_questions
    try:
        yield
    finally:
        scorer.num_questions, value.num_questions = before


def behaviour_clone(
    model: Any,
    env_id: str,
    env_kwargs: dict[str, Any],
    *,
    expert: str = "bamdp",
    episodes: int = 1000,
    epochs: int = 200,
    dagger: int = 3,
    sizes: tuple[int, ...] = (),
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
    loss: CloneLoss = "squared",
    progress: bool = False,
) -> CloneReport:
    """Fit ``model.policy`` (an SB3 actor-critic with Box actions) to ``expert``'s decisions in
    place: action mean by squared error to the expert's encoded counts, value by squared error
    to the return-to-go. First on ``episodes`` expert episodes, then ``dagger`` DAgger
    iterations: the clone drives ``episodes // 2`` more episodes, the expert labels the states it
    reaches (a clone's small errors lead it to states the expert never visits), and the fit
    continues on all data. ``sizes``: other batch sizes B (same rollouts per question) whose
    episodes join the data in the same proportions, for the equivariant policy, which is used
    at any B (``episodes`` is then per size). Seeds from ``seed + 20_000`` (disjoint from
    training's and the evaluation's); the policy's log-std is left as built.

    ``loss``: ``"squared"`` fits the action means to the encoded counts (``_action_loss``);
    ``"value"`` fits them to what the expert values: the round they decode to (softly, R·w/Σw
    as the env splits it) is scored on the expert's own value curves (``round_value_curves``,
    ``bamdp`` only), and the loss is the value it gives up against the expert's counts
    (``_value_lost``), so a misplaced rollout costs what it costs the utility, not one unit.
    From the expert's states alone it kept 92.8 % of ``bamdp``'s gain at B = 64 where squared
    error kept 34.4 % (no DAgger; ``results/bamdp_rounds/clone_by_value.py``); with DAgger, as
    ``scripts/train_pretrained.py`` clones, both end near 93-95 % (the simulator results page).
    ``"curves"`` (the curve policy, ``agents.sb3.curves``, only) fits the policy's predicted
    marginal values to the expert's value curves' (squared error where both ends are finite,
    over their standard deviation in the first data), and the clone's DAgger episodes are
    decided by the policy's exact split; the report's ``value_lost_*`` is then the value the
    decided rounds give up on the expert's curves, per decision. ``progress``: a progress bar
    over the fit's epochs (DAgger's included), naming the phase."""
    import torch as th
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if loss not in CLONE_LOSSES:
        raise ValueError(f"loss must be one of {CLONE_LOSSES}, got {loss!r}")

    from agents.sb3.curves import counts_action, is_curve_policy

    policy = model.policy
    if (loss == "curves") != is_curve_policy(policy):
        raise ValueError(
            "loss='curves' fits the curve policy ('--policy curves') and only it: give both or "
            f"neither (loss {loss!r}, policy {type(policy).__name__})"
        )
    device = policy.device
    B0 = int(env_kwargs.get("num_questions", 16))
    per_question = float(env_kwargs.get("budget", 8 * B0)) / B0
    kwargs_of = {B0: env_kwargs}
    for B in sizes:
        if B != B0:
            kwargs_of[B] = {**env_kwargs, "num_questions": B, "budget": round(per_question * B)}
    base = seed + 20_000
    with_curves = loss in ("value", "curves")

    def gather(
        B: int, n: int, start: int, act: Callable[[NDArray[np.float32]], NDArray[np.float32]] | None
    ) -> tuple[Any, ...]:
        found: list[NDArray[np.float64]] | None = [] if with_curves else None
        x, c, g = collect(env_id, kwargs_of[B], expert, n, start, act, curves=found)
        return (x, c, g) if found is None else (x, c, g, c, _padded(found))

    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), disable=not progress,
                   transient=True)  # fmt: skip
    task = bar.add_task(f"cloning {expert}: expert episodes",
                        total=epochs + dagger * max(1, epochs // 2))  # fmt: skip

    def tick() -> None:
        bar.advance(task)

    with bar:
        raw = {B: gather(B, episodes, base, None) for B in kwargs_of}
        K = max(int(r[1].max()) for r in raw.values())
        data: dict[int, list[tuple[Any, ...]]] = {
            B: [(r[0], count_actions(r[1], K), *r[2:])] for B, r in raw.items()
        }
        take = int(getattr(policy, "max_take", 0))
        scale = 1.0
        if loss == "curves":
            pooled = [d[ok] for d, ok in (curve_marginals(r[4], take) for r in raw.values())]
            scale = float(np.concatenate(pooled).std()) or 1.0

        def act_at(B: int) -> Callable[[NDArray[np.float32]], NDArray[np.float32]]:
            def act(features: NDArray[np.float32]) -> NDArray[np.float32]:
                with th.no_grad(), _at_size(policy, B):
                    if loss == "curves":
                        counts = policy.decide(features)
                        return counts_action(counts, int(counts.sum()))
                    dist = policy.get_distribution(th.as_tensor(features[None], device=device))
                    out = dist.distribution.mean[0].cpu().numpy()
                return np.clip(out, -1.0, 1.0).astype(np.float32)

            return act

        def tensors() -> dict[int, tuple[Any, ...]]:
            out = {}
            for B, ds in data.items():
                if loss == "curves":
                    d, ok = curve_marginals(_padded([c for e in ds for c in e[4]]), take)
                    x, g = (np.concatenate([e[k] for e in ds]) for k in (0, 2))
                    cols = [x, d / scale, g, ok]
                else:
                    cols = [
                        np.concatenate([e[k] for e in ds]) for k in range(4 if with_curves else 3)
                    ]
                    if with_curves:
                        cols.append(_flat_past_top(_padded([c for e in ds for c in e[4]])))
                out[B] = tuple(th.as_tensor(col, device=device) for col in cols)
            return out

        def curves_lost() -> float | None:
            """Value the policy's decided rounds give up on the expert's curves, per decision."""
            if loss != "curves":
                return None
            lost: list[float] = []
            for B, ds in data.items():
                with _at_size(policy, B):
                    for e in ds:
                        v = _flat_past_top(e[4])
                        got = np.minimum(policy.decide_many(e[0]), v.shape[-1] - 1)
                        best = np.take_along_axis(v, e[3][..., None], -1).sum(axis=(1, 2))
                        mine = np.take_along_axis(v, got[..., None], -1).sum(axis=(1, 2))
                        lost.extend((best - mine).tolist())
            return float(np.mean(lost))

        sets = tensors()
        before = _losses(policy, sets, loss)
        lost_before = curves_lost()
        bar.update(task, description=f"cloning {expert}: fit")
        _fit(policy, sets, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, loss=loss,
             on_epoch=tick)  # fmt: skip
        for it in range(dagger):
            more = max(1, episodes // 2)
            bar.update(task, description=f"cloning {expert}: DAgger {it + 1}/{dagger}, episodes")
            for B in kwargs_of:
                r = gather(B, more, base + episodes + it * more, act_at(B))
                data[B].append((r[0], count_actions(r[1], K), *r[2:]))
            sets = tensors()
            bar.update(task, description=f"cloning {expert}: DAgger {it + 1}/{dagger}, fit")
            _fit(policy, sets, epochs=max(1, epochs // 2), batch_size=batch_size, lr=lr,
                 seed=seed + it + 1, loss=loss, on_epoch=tick)  # fmt: skip
        after = _losses(policy, sets, loss)
        return CloneReport(
            expert=expert,
            episodes=episodes,
            decisions=sum(int(t[0].shape[0]) for t in sets.values()),
            epochs=epochs,
            action_mse_before=before[0],
            action_mse_after=after[0],
            value_mse_before=before[1],
            value_mse_after=after[1],
            loss=loss,
            value_lost_before=before[2] if loss != "curves" else lost_before,
            value_lost_after=after[2] if loss != "curves" else curves_lost(),
        )


def _action_loss(mean: Any, target: Any) -> Any:
    """Squared error to the target, except that a question the expert left out (target −1) is
    only pushed below −1 − margin: the allocator clips means to [−1, 1], so it decodes to 0."""
    import torch as th

    hinge = th.clamp(mean - (-1.0 - ZERO_MARGIN), min=0.0)
    return th.where(target <= -1.0, hinge, mean - target).pow(2).mean()


def _curves_loss(policy: Any, X: Any, D: Any, ok: Any) -> Any:
    """Mean squared error of the curve policy's marginals where the expert's are finite."""
    err = (policy.marginals(X) - D) ** 2
    return (err * ok).sum() / ok.sum().clamp(min=1)


def _losses(
    policy: Any, sets: dict[int, tuple[Any, ...]], loss: CloneLoss = "squared"
) -> tuple[float, float, float | None]:
    """Action and value losses over every size's data, weighted by decisions, and the value
    the soft rounds give up where the sets carry the expert's counts and curves (``loss`` is
    ``"value"``; for ``"curves"`` the action loss is the marginals' squared error)."""
    import torch as th

    total_a = total_v = total_l = 0.0
    n = 0
    with th.no_grad():
        for B, (X, Y, G, *vc) in sets.items():
            with _at_size(policy, B):
                value = policy.predict_values(X).squeeze(-1)
                if loss == "curves":
                    action = _curves_loss(policy, X, Y, vc[0])
                else:
                    mean = policy.get_distribution(X).distribution.mean
                    action = _action_loss(mean, Y)
            k = int(X.shape[0])
            total_a += k * float(action)
            total_v += k * float(((value - G) ** 2).mean())
            if loss == "value":
                total_l += k * float(_value_lost(mean, *vc))
            n += k
    has_curves = loss == "value"
    return total_a / n, total_v / n, (total_l / n if has_curves else None)


def _fit(
    policy: Any,
    sets: dict[int, tuple[Any, ...]],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    loss: CloneLoss = "squared",
    on_epoch: Callable[[], None] | None = None,
) -> None:
    """Adam with a cosine decay to 0 (a fit that ends at a constant rate stops anywhere in its
    noise, and a round's split is sensitive to small errors in the means); each batch from one
    size's data, the batches of all sizes shuffled together."""
    import torch as th

    trainable = [p for name, p in policy.named_parameters() if name != "log_std"]
    opt = th.optim.Adam(trainable, lr=lr)
    per_epoch = sum(-(-int(t[0].shape[0]) // batch_size) for t in sets.values())
    steps = epochs * per_epoch
    sched = th.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 0.5 * (1.0 + math.cos(math.pi * min(k, steps) / steps))
    )
    gen = th.Generator().manual_seed(seed)
    scale = {B: float(t[2].abs().mean().clamp(min=1e-6)) for B, t in sets.items()}
    for _ in range(epochs):
        batches = []
        for B, t in sets.items():
            order = th.randperm(int(t[0].shape[0]), generator=gen)
            batches += [(B, order[i : i + batch_size]) for i in range(0, len(order), batch_size)]
        for j in th.randperm(len(batches), generator=gen).tolist():
            B, idx = batches[j]
            X, Y, G, *vc = sets[B]
            with _at_size(policy, B):
                value = policy.predict_values(X[idx]).squeeze(-1)
                if loss == "curves":
                    action = _curves_loss(policy, X[idx], Y[idx], vc[0][idx])
                else:
                    mean = policy.get_distribution(X[idx]).distribution.mean
                    action = (
                        _value_lost(mean, *(v[idx] for v in vc))
                        if loss == "value"
                        else _action_loss(mean, Y[idx])
                    )
            value_loss = (((value - G[idx]) / scale[B]) ** 2).mean()
            total = action + value_loss
            opt.zero_grad()
            total.backward()
            opt.step()
            sched.step()
        if on_epoch is not None:
            on_epoch()
