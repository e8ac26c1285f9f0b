"""One GRPO update on a step's ragged groups: advantages, micro-batches, clipping, KL, the step.

``grpo_update(models, cfg, rollouts, prompt_of)`` is what ``GRPOTrainer.finish_step`` calls. It
takes what an update uses and nothing else: ``PolicyModels`` (the network forward/backward go
through, its parameters, the frozen reference, the optimizer, the pad id, the ranks and the
autocast), the ``GRPOConfig``, the step's rollouts and each question's prompt ids. It changes
only the weights and the optimizer; a skipped update is reported in the statistics
(``skipped``), and the caller counts it. The math is ``trainers.grpo.objective``'s; this module
lays the batch out and drives forward/backward:

* ``prepare_batch``: rollouts flattened in question order, advantages over the ragged groups,
  per-token loss weights normalised over the **whole** batch (so gradient accumulation over
  micro-batches equals one big batch), and the rows that carry gradient;
* ``forward_logps``: log-probs ``[b, T]`` of completion tokens (and entropies) of some rows;
* ``micro_step``: one micro-batch's surrogate (+ KL) loss, backward, and its statistics;
* ``optimizer_step``: clipping, the non-finite check (the update is skipped with a warning),
  the optimizer's step;
* every ``gradient_noise_every`` steps, the first iteration's forward passes also measure the
  within- and between-prompt gradient noise and their ratio κ
  (``trainers.allocation.gradient_noise``), returned as ``noise_within``, ``noise_between``,
  ``noise_kappa``, ``noise_prompts``.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from trainers.allocation.gradient_noise import NoiseCollector
from trainers.grpo.objective import (
    clipped_surrogate,
    expand_groups,
    group_advantages,
    kl_k3,
    per_token_logps,
    token_entropy,
    token_weights,
)
from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import Rollouts
from trainers.models.collate import collate_prompt_completions, pad_rows


@dataclass(frozen=True)
class PolicyModels:
    """What an update reads and trains."""

    model: Any  # what forward/backward go through (DDP-wrapped under data parallelism)
    policy: Any  # the parameters themselves (unwrapped), clipped and stepped
    ref_model: Any  # the frozen reference of the KL penalty, or None (beta = 0)
    optimizer: Any  # torch.optim.Optimizer over ``policy``'s parameters
    pad_id: int  # the tokenizer's pad token (0 when it has none)
    ranks: Ranks  # the data-parallel processes (one by default)
    autocast: Callable[[], contextlib.AbstractContextManager[Any]]  # bf16 on a GPU, or nothing


@dataclass
class UpdateBatch:
    """A step's rollouts laid out for the update (``M`` rollouts, ``T`` = longest completion)."""

    prompts: list[list[int]]  # [M] prompt ids of each rollout
    completions: list[list[int]]  # [M]
    engine_logprobs: list[NDArray[np.float32]]  # [M] the engine's per-token log-probs
    advantages: NDArray[np.float64]  # [M]
    weights: torch.Tensor  # [M, T] per-token loss weights
    width: int  # T
    rows: NDArray[np.int64]  # rollouts that carry gradient
    groups: NDArray[np.int64]  # [M] question of each rollout


def informative_rows(rewards: NDArray[np.float64], group: NDArray[np.int64]) -> NDArray[np.bool_]:
    """``[M]``: whether each rollout's group has rewards that are not all equal."""
    if rewards.size == 0:
        return np.zeros(0, dtype=bool)
    g = np.asarray(group, dtype=np.int64)
    size = int(g.max()) + 1
    lo = np.full(size, np.inf)
    hi = np.full(size, -np.inf)
    np.minimum.at(lo, g, rewards)
    np.maximum.at(hi, g, rewards)
    return np.asarray((hi > lo)[g], dtype=bool)


def prepare_batch(ro: Rollouts, prompt_of: list[list[int]], cfg: Any) -> UpdateBatch:
    """Flatten ``ro`` (``prompt_of[q]``: prompt ids of question ``q``) and compute advantages."""
    group = expand_groups([len(r) for r in ro.rewards])  # [M] question of each rollout
    rewards = np.concatenate([np.asarray(r, dtype=np.float64) for r in ro.rewards])  # [M]
    completions = [c for per_q in ro.completion_ids for c in per_q]
    adv = group_advantages(rewards, group, scale=cfg.scale_rewards)  # [M]
    lengths = torch.tensor([len(c) for c in completions], dtype=torch.float32)  # [M]
    width = int(lengths.max().item()) if len(completions) else 1
    full_mask = (torch.arange(width)[None, :] < lengths[:, None]).float()  # [M, T]
    if getattr(cfg, "dynamic_sampling", False):
        # DAPO's dynamic sampling: groups with equal rewards leave the batch before the loss,
        # so the normaliser counts only the groups that stay
        kept = informative_rows(rewards, group)  # [M] bool
        weights = torch.zeros_like(full_mask)  # [M, T]
        if kept.any():
            keep = torch.from_numpy(kept)
            weights[keep] = token_weights(
                full_mask[keep],
                loss_type=cfg.loss_type,
                max_completion_length=cfg.max_completion_length,
            )
        rows = np.flatnonzero(kept)
    else:
        weights = token_weights(
            full_mask, loss_type=cfg.loss_type, max_completion_length=cfg.max_completion_length
        )  # [M, T]
        # zero-advantage rollouts have exactly zero loss and gradient without KL (grpo.py, 6.)
        rows = np.arange(len(completions)) if cfg.beta > 0 else np.flatnonzero(adv != 0)
    return UpdateBatch(
        prompts=[prompt_of[q] for q in group.tolist()],
        completions=completions,
        engine_logprobs=[lp for per_q in ro.logprobs for lp in per_q],
        advantages=adv,
        weights=weights,
        width=width,
        rows=rows.astype(np.int64),
        groups=np.asarray(group, dtype=np.int64),
    )


def forward_logps(
    m: PolicyModels,
    cfg: Any,
    batch: UpdateBatch,
    idx: NDArray[np.int64],
    *,
    need_entropy: bool,
    ref: bool = False,
    noise: NoiseCollector | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Log-probs ``[b, T]`` of the completion tokens of rows ``idx`` (entropies, mask); with
    ``noise``, the rows' projected output-layer gradients go into it (same forward pass)."""
    rows = idx.tolist()
    c = collate_prompt_completions(
        [batch.prompts[r] for r in rows],
        [batch.completions[r] for r in rows],
        pad_id=m.pad_id,
        width=batch.width,
        device=m.ranks.device,
    )
    net: Any = m.ref_model if ref else m.model
    with m.autocast():
        out = net(**c.model_inputs(), use_cache=False, output_hidden_states=noise is not None)
    logits = c.completion_logits(out.logits)  # [b, T, V]
    temp = cfg.temperature
    lp = per_token_logps(logits, c.targets, temperature=temp)  # [b, T]
    mask = c.completion_mask  # [b, T]
    if noise is not None:
        hidden = c.completion_logits(out.hidden_states[-1]).detach()  # [b, T, d]
        adv = torch.as_tensor(batch.advantages[idx], dtype=torch.float32)  # [b]
        noise.add(idx, hidden, logits.detach(), c.targets, mask, adv)
    ent = None
    if need_entropy:
        with torch.no_grad():
            ent = token_entropy(logits.detach(), temperature=temp)  # [b, T]
    return lp * mask, ent, mask


def micro_batches(
    ranks: Ranks, rows: NDArray[np.int64], micro_batch_size: int
) -> list[NDArray[np.int64]]:
    """``rows`` in chunks of ``micro_batch_size``; under DDP, padded with empty chunks so that
    every rank runs as many backward passes."""
    mb = micro_batch_size
    chunks = [rows[i : i + mb] for i in range(0, rows.size, mb)]
    if ranks.world > 1:
        most = max(ranks.most(len(chunks)), 1)
        chunks += [np.zeros(0, dtype=np.int64)] * (most - len(chunks))
    return chunks


def old_logprobs(
    m: PolicyModels, cfg: Any, batch: UpdateBatch, chunks: list[NDArray[np.int64]]
) -> dict[int, torch.Tensor]:
    """The log-probs before the first of ``num_iterations`` updates (recomputed), per row."""
    old: dict[int, torch.Tensor] = {}
    if cfg.num_iterations > 1 and cfg.old_logprobs == "recompute":
        with torch.no_grad():
            for idx in chunks:
                if idx.size:
                    lp, _, _ = forward_logps(m, cfg, batch, idx, need_entropy=False)
                    for k, r in enumerate(idx.tolist()):
                        old[r] = lp[k].detach()
    return old


def micro_step(
    m: PolicyModels,
    cfg: Any,
    batch: UpdateBatch,
    idx: NDArray[np.int64],
    old: dict[int, torch.Tensor],
    *,
    first: bool,
    sync: bool,
    stats: dict[str, float],
    diffs: list[float],
    noise: NoiseCollector | None = None,
) -> None:
    """Forward, loss and backward of one micro-batch (an empty ``idx`` runs a zero-weight row, so
    DDP ranks stay in step); the first iteration's statistics go into ``stats`` and ``diffs``,
    and its projected gradients into ``noise`` when given."""
    acc = m.ranks.accelerator
    dummy = idx.size == 0
    use = idx if not dummy else np.array([0])
    ctx = acc.no_sync(m.model) if acc is not None and not sync else contextlib.nullcontext()
    with ctx:
        lp, ent, mask = forward_logps(
            m, cfg, batch, use, need_entropy=first, noise=noise if first and not dummy else None
        )
        a = torch.as_tensor(batch.advantages[use], dtype=torch.float32, device=lp.device)  # [b]
        w = batch.weights[use, : lp.shape[1]].to(lp.device)  # [b, T]
        if dummy:
            w = w * 0.0
        if cfg.old_logprobs == "engine":
            rows = [batch.engine_logprobs[r] for r in use.tolist()]
            old_lp = _float_rows(rows, lp)  # [b, T]
        elif cfg.num_iterations > 1:
            old_lp = _float_rows([old[r] for r in use.tolist()], lp)  # [b, T]
        else:
            old_lp = lp.detach()  # [b, T]
        per_tok, low, high = clipped_surrogate(
            lp, old_lp, a, epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high
        )  # [b, T]
        if m.ref_model is not None:
            with torch.no_grad():
                ref_lp, _, _ = forward_logps(m, cfg, batch, use, need_entropy=False, ref=True)
            kl = kl_k3(lp, ref_lp)  # [b, T]
            per_tok = per_tok + cfg.beta * kl
            stats["kl"] += float((kl.detach() * mask).sum())
        loss = (per_tok * w).sum()
        if acc is not None:
            acc.backward(loss)
        else:
            loss.backward()
    if first and not dummy:
        stats["loss"] += float(loss.detach())
        stats["tokens"] += float(mask.sum())
        stats["low"] += float((low.float() * mask).sum())
        stats["high"] += float((high.float() * mask).sum())
        if ent is not None:
            stats["entropy"] += float((ent * mask).sum())
        eng = _float_rows([batch.engine_logprobs[r] for r in use.tolist()], lp)  # [b, T]
        diffs.append(float(((lp.detach() - eng).abs() * mask).sum()))


def _float_rows(rows: list[Any], like: torch.Tensor) -> torch.Tensor:
    """Ragged per-token rows as float32 ``[b, T]`` with ``like``'s width and device."""
    return pad_rows(rows, width=like.shape[1], value=0.0, dtype=torch.float32, device=like.device)


def optimizer_step(
    m: PolicyModels,
    cfg: Any,
    stats: dict[str, float],
    *,
    first: bool,
    diffs: list[float],
    step: int = 0,
    skipped_before: int = 0,
) -> bool:
    """Clip, check and apply the accumulated gradient; False (update skipped, ``stats["skipped"]``
    set, a warning naming ``step``) if it is non-finite."""
    params = [p for p in m.policy.parameters() if p.grad is not None]
    max_norm = cfg.max_grad_norm
    total = (
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        if max_norm > 0
        else torch.norm(torch.stack([p.grad.detach().norm() for p in params]))
    )
    if not math.isfinite(float(total)):
        m.optimizer.zero_grad(set_to_none=True)
        stats["skipped"] = 1.0
        warnings.warn(
            f"step {step}: non-finite loss or gradient ({float(total)}); the update "
            f"is skipped ({skipped_before + 1} skipped so far)",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    m.optimizer.step()
    if first:
        stats["grad_norm"] = float(total)
        if diffs and stats["tokens"]:
            stats["lp_diff"] = sum(diffs) / stats["tokens"]
    return True


def grpo_update(
    m: PolicyModels,
    cfg: Any,
    ro: Rollouts,
    prompt_of: list[list[int]],
    *,
    noise: NoiseCollector | None = None,
    step: int = 0,
    skipped_before: int = 0,
    measure_update: bool = False,
) -> dict[str, float]:
    """Advantages, then ``num_iterations`` optimizer steps over micro-batches (``prompt_of[q]``:
    question ``q``'s prompt ids); the statistics (``loss``, ``kl``, ``entropy``, clip fractions
    ``low``/``high``, ``grad_norm``, ``trained`` rollouts, ``skipped``, ``lp_diff``: mean
    |engine − trainer| log-prob per token). With ``noise``, the first iteration's forward passes
    also measure the gradient noise (``noise_*`` statistics). With ``measure_update``,
    ``update_norm`` is ``||theta_after - theta_before||`` over the trainable weights (0 when
    nothing carries gradient; NaN when not measured). ``step`` and ``skipped_before`` only word
    the warning of a skipped update."""
    batch = prepare_batch(ro, prompt_of, cfg)
    stats = {"loss": 0.0, "kl": 0.0, "entropy": 0.0, "low": 0.0, "high": 0.0, "tokens": 0.0}
    stats.update(grad_norm=0.0, skipped=0.0, trained=float(batch.rows.size), lp_diff=math.nan)
    stats["update_norm"] = 0.0 if measure_update else math.nan
    chunks = micro_batches(m.ranks, batch.rows, cfg.micro_batch_size)
    if not chunks:
        return stats  # nothing carries gradient: no update, exactly as a zero gradient
    params = [p for p in m.policy.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params] if measure_update else None
    old = old_logprobs(m, cfg, batch, chunks)
    for it in range(cfg.num_iterations):
        m.optimizer.zero_grad(set_to_none=True)
        diffs: list[float] = []
        for ci, idx in enumerate(chunks):
            sync = ci == len(chunks) - 1
            micro_step(
                m, cfg, batch, idx, old, first=it == 0, sync=sync, stats=stats, diffs=diffs,
                noise=noise,
            )  # fmt: skip
        first = it == 0
        if not optimizer_step(
            m, cfg, stats, first=first, diffs=diffs, step=step, skipped_before=skipped_before
        ):
            break
    if before is not None:  # the step the optimizer took, all iterations together
        with torch.no_grad():
            moved = zip(params, before, strict=True)
            sq = sum(float((p.detach() - b).float().pow(2).sum()) for p, b in moved)
        stats["update_norm"] = math.sqrt(sq)
    if noise is not None:
        measured = noise.result(batch.groups)
        stats.update({f"noise_{k}": v for k, v in measured.items()})
    m.optimizer.zero_grad(set_to_none=True)
    tokens = max(stats["tokens"], 1.0)
    for key in ("kl", "entropy", "low", "high"):
        stats[key] /= tokens
    return stats
