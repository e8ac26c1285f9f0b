"""GRPO with rollouts allocated per prompt: the configuration and the math, as pure functions.

The trainer (``trainers.trainer``) orchestrates; this module holds what it computes with:
``group_advantages`` on ragged groups, per-token log-probabilities, the PPO-clip surrogate, the KL
penalty and the loss normalisations of ``loss_type``. Each is a small function with keyword-only
options and a shape comment on each tensor line.

Departures from DeepSeekMath GRPO (Shao et al. 2024, §4.1):

1. **Ragged groups.** Question ``i`` gets ``k_i`` rollouts chosen by an allocator (``Σ k_i = N``)
   instead of a fixed ``G``. Advantages are grouped by question id (the verl approach), never by
   reshaping to ``[B, G]``. A group of size 0 contributes nothing; a group of size 1 or with zero
   reward variance gets advantage exactly 0 (no mean-0/std-1 fallback).
2. **Reward scaling is a choice** (``scale_rewards``, TRL's names): ``group`` divides by the
   group's std as in the paper, ``batch`` by the std of the whole batch, ``none`` by nothing
   (Dr. GRPO). The std is the unbiased one with ``1e-4`` added, as TRL does.
3. **Loss normalisation is a choice** (``loss_type``): ``grpo`` averages tokens within a sequence
   then sequences (the paper; length-biased), ``dr_grpo`` divides the token sum by
   ``sequences × max_completion_length``, ``dapo`` (default, as in TRL) divides by the number of
   completion tokens in the batch. The normaliser is fixed over the whole batch, so gradient
   accumulation over micro-batches gives exactly the full-batch gradient.
4. **KL is off by default** (``beta = 0``, as TRL and DAPO); when on, it is the paper's k3
   estimator ``exp(r − l) − (r − l) − 1`` against a frozen copy of the starting model.
5. **Asymmetric clipping** is available (``epsilon_high``, DAPO's clip-higher).
6. **Zero-advantage rollouts are not back-propagated** when ``beta = 0``: their loss and gradient
   are exactly 0, so skipping them changes no number and saves the backward pass that the
   allocator's uninformative groups would cost. They still count in the normalisers.
7. **One generation per step feeds ``num_iterations`` updates** (μ in the paper, default 1); with
   μ = 1 the old log-probs are the detached current ones, so the ratio is 1 and the update is the
   plain policy gradient with clipping inactive, as in TRL.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import torch

LossType = Literal["grpo", "dr_grpo", "dapo"]
ScaleRewards = Literal["group", "batch", "none"]
EngineName = Literal["hf", "vllm"]
Dtype = Literal["auto", "float32", "bfloat16"]
OldLogprobs = Literal["recompute", "engine"]
BeliefPrior = Literal["fixed", "fitted"]

#: std added to the denominator of scaled advantages (TRL's value).
STD_EPS = 1e-4


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class GRPOConfig:
    """Everything one ``adaroll grpo`` run needs; the run directory keeps ``asdict`` of it."""

    # what to train
    task: str = field(
        default="arithmetic",
        metadata=_help("task: 'arithmetic', 'sample', or 'jsonl:PATH' (see trainers.tasks)"),
    )
    model: str = field(
        default="tiny",
        metadata=_help("'tiny' (the warm-started tiny model) or a local Hugging Face model dir"),
    )
    allocator: str = field(
        default="uniform",
        metadata=_help("allocator name or spec (adaroll bench --list shows them)"),
    )
    engine: EngineName = field(default="hf", metadata=_help("generation engine"))
    # the allocation of each step
    batch_size: int = field(default=16, metadata=_help("B: prompts per step"))
    group_size: int = field(
        default=8, metadata=_help("G: the uniform group size; the budget defaults to G·B")
    )
    budget: int | None = field(
        default=None, metadata=_help("N: rollouts per step, pilot included (default G·B)")
    )
    round_size: int | None = field(
        default=None,
        metadata=_help(
            "R: rollouts handed out per round (default B; the whole budget for allocators "
            "that never react to outcomes, such as uniform)"
        ),
    )
    pilot: int = field(default=0, metadata=_help("rollouts every prompt gets before allocating"))
    max_group: int | None = field(
        default=None, metadata=_help("cap on one prompt's rollouts per step (default: none)")
    )
    utility: str = field(
        default="informative", metadata=_help("training utility the allocator maximises")
    )
    prior_alpha: float = field(default=1.0, metadata=_help("Beta prior alpha of unseen prompts"))
    prior_beta: float = field(default=1.0, metadata=_help("Beta prior beta of unseen prompts"))
    belief_decay: float = field(
        default=0.95,
        metadata=_help("per-step forgetting of a prompt's past outcomes, in (0, 1]"),
    )
    belief_prior: BeliefPrior = field(
        default="fixed",
        metadata=_help("prior of unseen prompts: 'fixed' or 'fitted' to the belief store"),
    )
    # optimisation
    steps: int = field(default=200, metadata=_help("training steps (GRPO updates)"))
    max_minutes: float | None = field(
        default=None, metadata=_help("stop after this many minutes of training (default: none)")
    )
    lr: float = field(default=2e-4, metadata=_help("AdamW learning rate"))
    weight_decay: float = field(default=0.0, metadata=_help("AdamW weight decay"))
    max_grad_norm: float = field(default=1.0, metadata=_help("gradient clipping (0: off)"))
    loss_type: LossType = field(default="dapo", metadata=_help("loss normalisation"))
    scale_rewards: ScaleRewards = field(default="group", metadata=_help("advantage scaling"))
    epsilon: float = field(default=0.2, metadata=_help("PPO clip range (lower)"))
    epsilon_high: float | None = field(
        default=None, metadata=_help("PPO clip range (upper; default epsilon)")
    )
    beta: float = field(default=0.0, metadata=_help("KL coefficient to the starting model"))
    num_iterations: int = field(default=1, metadata=_help("updates per generation (mu)"))
    micro_batch_size: int = field(
        default=64, metadata=_help("sequences per forward/backward (gradient accumulation)")
    )
    old_logprobs: OldLogprobs = field(
        default="recompute",
        metadata=_help("old log-probs: recomputed by the trainer, or the engine's"),
    )
    # generation
    max_completion_length: int = field(default=8, metadata=_help("new tokens per completion"))
    temperature: float = field(default=1.0, metadata=_help("sampling temperature"))
    top_p: float = field(default=1.0, metadata=_help("nucleus sampling"))
    generation_batch_size: int = field(default=256, metadata=_help("sequences per generate call"))
    # evaluation, logging, checkpoints
    eval_every: int = field(
        default=25, metadata=_help("held-out evaluation every N steps (0: off)")
    )
    eval_size: int | None = field(
        default=200, metadata=_help("held-out prompts evaluated (default 200; none: all)")
    )
    eval_k: int = field(default=4, metadata=_help("samples per held-out prompt (pass@1, pass@k)"))
    save_every: int = field(default=50, metadata=_help("checkpoint every N steps (0: at end)"))
    out: str = field(default="runs/grpo", metadata=_help("run directory"))
    resume: bool = field(
        default=False, metadata=_help("resume from the last checkpoint in the run directory")
    )
    tensorboard: bool = field(default=True, metadata=_help("write TensorBoard events"))
    progress: bool = field(default=True, metadata=_help("show a progress bar"))
    seed: int = field(default=0, metadata=_help("master seed (data order, sampling, allocator)"))
    threads: int = field(default=0, metadata=_help("torch CPU threads (0: torch's default)"))
    device: str = field(default="auto", metadata=_help("'auto', 'cpu', 'cuda' or 'cuda:N'"))
    dtype: Dtype = field(
        default="auto", metadata=_help("'auto' is bfloat16 on a GPU that supports it, else fp32")
    )

    def __post_init__(self) -> None:
        for name, opts in (
            ("engine", EngineName),
            ("loss_type", LossType),
            ("scale_rewards", ScaleRewards),
            ("dtype", Dtype),
            ("old_logprobs", OldLogprobs),
            ("belief_prior", BeliefPrior),
        ):
            value = getattr(self, name)
            if value not in get_args(opts):
                raise ValueError(
                    f"{name} must be one of {list(get_args(opts))}, got {value!r}: pick one of them"
                )
        for name in (
            "batch_size",
            "group_size",
            "steps",
            "num_iterations",
            "micro_batch_size",
            "max_completion_length",
            "generation_batch_size",
            "eval_k",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("pilot", "eval_every", "save_every", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        for name in ("budget", "round_size", "max_group", "eval_size"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be None or an integer >= 1, got {value!r}")
        budget = self.rollout_budget
        if budget <= self.pilot * self.batch_size:
            raise ValueError(
                f"budget ({budget}) must exceed the pilot's pilot·B ({self.pilot}·"
                f"{self.batch_size} = {self.pilot * self.batch_size}) so that the allocator has "
                "rollouts to place: lower pilot or raise budget"
            )
        if self.max_group is not None and budget > self.max_group * self.batch_size:
            raise ValueError(
                f"budget ({budget}) exceeds B·max_group ({self.batch_size}·{self.max_group}): "
                "raise max_group or lower budget"
            )
        for name, lo, hi in (("belief_decay", 0.0, 1.0), ("top_p", 0.0, 1.0)):
            value = getattr(self, name)
            if not (lo < value <= hi):
                raise ValueError(f"{name} must be in ({lo:g}, {hi:g}], got {value!r}")
        for name in ("prior_alpha", "prior_beta", "lr"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("weight_decay", "max_grad_norm", "beta", "epsilon", "temperature"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.epsilon_high is not None and not self.epsilon_high >= 0:
            raise ValueError(f"epsilon_high must be >= 0 or None, got {self.epsilon_high!r}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ValueError(f"max_minutes must be > 0 or None, got {self.max_minutes!r}")

    @property
    def rollout_budget(self) -> int:
        """N: rollouts per step (``budget``, else ``group_size · batch_size``)."""
        return self.budget if self.budget is not None else self.group_size * self.batch_size

    def to_dict(self) -> dict[str, Any]:
        """The config as a plain dict (what the run directory records)."""
        return dataclasses.asdict(self)


ArrayT = TypeVar("ArrayT", "NDArray[Any]", "torch.Tensor")


def group_advantages(rewards: ArrayT, group_ids: Any, *, scale: ScaleRewards = "group") -> ArrayT:
    """Advantages of ragged groups: reward minus its group's mean, scaled by ``scale``.

    ``rewards`` is a 1-D numpy array or torch tensor; ``group_ids`` (same length, any hashable
    integer labels) says which group each reward belongs to. ``scale``: ``"group"`` divides by
    the group's unbiased std + 1e-4, ``"batch"`` by the std of all rewards + 1e-4 (TRL's
    meaning), ``"none"`` by nothing. Groups of size 1 and zero-variance groups get exactly 0.
    The result has the input's type, dtype and device.
    """
    if scale not in get_args(ScaleRewards):
        raise ValueError(f"scale must be one of {list(get_args(ScaleRewards))}, got {scale!r}")
    is_torch = type(rewards).__module__.startswith("torch")
    src: Any = rewards
    r = np.asarray(src.detach().cpu() if is_torch else src, dtype=np.float64)
    g = np.asarray(group_ids.detach().cpu() if hasattr(group_ids, "detach") else group_ids)
    if r.ndim != 1 or g.shape != r.shape:
        raise ValueError(
            f"rewards and group_ids must be 1-D of the same length, got shapes {r.shape} and "
            f"{g.shape}"
        )
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf: every reward must be a finite number")
    adv = np.zeros_like(r)
    if r.size:
        _, inv = np.unique(g, return_inverse=True)
        inv = inv.reshape(-1)
        size = np.bincount(inv).astype(np.float64)  # [groups]
        mean = np.bincount(inv, weights=r) / size  # [groups]
        centred = r - mean[inv]  # [n]
        sq = np.bincount(inv, weights=centred**2)  # [groups]
        flat = (size < 2) | (sq <= 1e-12 * np.maximum(1.0, size))  # size 1 or zero variance
        centred[flat[inv]] = 0.0
        if scale == "group":
            std = np.sqrt(sq / np.maximum(size - 1, 1))  # unbiased, [groups]
            adv = centred / (std[inv] + STD_EPS)
        elif scale == "batch":
            std_all = float(np.std(r, ddof=1)) if r.size > 1 else 0.0
            adv = centred / (std_all + STD_EPS)
        else:
            adv = centred
    if is_torch:
        import torch

        out: Any = torch.as_tensor(adv, dtype=src.dtype, device=src.device)
        return out  # type: ignore[no-any-return]
    result: Any = adv.astype(np.result_type(np.asarray(src).dtype, np.float32))
    return result  # type: ignore[no-any-return]


def expand_groups(counts: Any) -> NDArray[np.int64]:
    """Group id of each rollout when question ``i`` got ``counts[i]`` of them: ``[0,0,1,2,2,2]``
    for counts ``[2, 1, 3]``. Zero counts give no rows."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 1 or np.any(c < 0):
        raise ValueError(f"counts must be a 1-D array of integers >= 0, got {c.tolist()}")
    return np.repeat(np.arange(c.size, dtype=np.int64), c)


def per_token_logps(
    logits: torch.Tensor, tokens: torch.Tensor, *, temperature: float = 1.0
) -> torch.Tensor:
    """Log-probabilities of ``tokens`` under ``logits / temperature``.

    ``logits``: ``[N, T, V]`` predicting ``tokens``: ``[N, T]`` (already shifted). A temperature of
    0 (greedy) is read as 1.
    """
    import torch

    t = temperature if temperature > 0 else 1.0
    scaled = logits.float() / t  # [N, T, V]
    logz = torch.logsumexp(scaled, dim=-1)  # [N, T]
    picked = torch.gather(scaled, -1, tokens.unsqueeze(-1)).squeeze(-1)  # [N, T]
    return picked - logz  # [N, T]


def token_entropy(logits: torch.Tensor, *, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of the sampling distribution at each position: ``[N, T, V] -> [N, T]``."""
    import torch

    t = temperature if temperature > 0 else 1.0
    logp = torch.log_softmax(logits.float() / t, dim=-1)  # [N, T, V]
    return -(logp.exp() * logp).sum(-1)  # [N, T]


def clipped_surrogate(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    *,
    epsilon: float,
    epsilon_high: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO-clip per-token loss ``-min(ρA, clip(ρ, 1−ε, 1+ε_high)A)`` with ``ρ = exp(l − l_old)``.

    ``logps``, ``old_logps``: ``[N, T]``; ``advantages``: ``[N]``. Returns the loss ``[N, T]`` and
    two ``[N, T]`` booleans: where the lower and where the upper clip was active.
    """
    import torch

    hi = epsilon if epsilon_high is None else epsilon_high
    ratio = torch.exp(logps - old_logps)  # [N, T]
    adv = advantages.unsqueeze(-1)  # [N, 1]
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + hi)  # [N, T]
    loss = -torch.min(ratio * adv, clipped * adv)  # [N, T]
    low = (ratio < 1.0 - epsilon) & (adv < 0)  # [N, T]
    high = (ratio > 1.0 + hi) & (adv > 0)  # [N, T]
    return loss, low, high


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """The k3 estimator of KL(π‖π_ref) per token: ``exp(r − l) − (r − l) − 1`` (``[N, T]``)."""
    import torch

    d = ref_logps - logps  # [N, T]
    return torch.exp(d) - d - 1.0  # [N, T]


def token_weights(
    mask: torch.Tensor, *, loss_type: LossType, max_completion_length: int
) -> torch.Tensor:
    """Per-token weights whose weighted sum of per-token losses is the batch loss.

    ``mask``: ``[N, T]`` (1 on completion tokens) for the **whole** batch, so micro-batches
    summed give the full-batch loss. ``grpo``: ``1 / (N · len_i)``; ``dr_grpo``:
    ``1 / (N · max_completion_length)``; ``dapo``: ``1 / Σ mask``.
    """
    m = mask.float()  # [N, T]
    n = max(int(m.shape[0]), 1)
    if loss_type == "grpo":
        lengths = m.sum(-1, keepdim=True).clamp(min=1.0)  # [N, 1]
        return m / (lengths * n)  # [N, T]
    if loss_type == "dr_grpo":
        return m / float(n * max_completion_length)  # [N, T]
    if loss_type == "dapo":
        return m / m.sum().clamp(min=1.0)  # [N, T]
    raise ValueError(f"loss_type must be one of {list(get_args(LossType))}, got {loss_type!r}")
