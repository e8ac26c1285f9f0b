"""``GRPOTrainer``: one GRPO step as an allocation episode, driven round by round.

The step API is shared by the trainer's own loop (``train_step``) and the live environment
``AdaRoll/GRPOTraining-v0``:

* ``begin_step()`` draws the next batch of prompts, gives each its Beta prior from the belief
  store, runs the pilot and returns the observation (``adaroll_env.model.observe``);
* ``run_round(counts)`` generates ``counts[i]`` completions of prompt ``i``, verifies them,
  updates the allocation state and returns the round's outcomes;
* ``finish_step()`` — once the budget is spent — computes ragged-group advantages, makes one
  GRPO update (``trainers.grpo``), updates the belief store and returns the step's
  ``TrainingUtility`` report.

This file orchestrates; generation (``trainers.engines``), scoring (``trainers.tasks``),
advantages and losses (``trainers.grpo``) and beliefs (``trainers.beliefs``) live in their own
modules. Data parallelism goes through ``accelerate``: each rank takes its shard of the batch's
prompts with its share of the budget, allocates it, keeps those prompts' beliefs, and gradients
are averaged by DDP.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from adaroll_env import model as am
from adaroll_env.utilities import get_utility, list_utilities
from trainers.beliefs import BeliefStore
from trainers.engines import Engine, SamplingSpec, make_engine
from trainers.grpo import (
    GRPOConfig,
    clipped_surrogate,
    expand_groups,
    group_advantages,
    kl_k3,
    per_token_logps,
    token_entropy,
    token_weights,
)
from trainers.tasks import Example, Task, make_task, pass_at_k

#: a reward at or above this counts as a success for the beliefs and the allocation state.
SUCCESS_THRESHOLD = 0.5


def build_task(cfg: GRPOConfig) -> Task:
    """The config's task, from ``task_seed`` (the run's ``seed`` orders the data, never the
    task: the held-out split stays the same); synthetic tasks generate ``task_size`` prompts."""
    if cfg.task == "arithmetic" and cfg.task_size is not None:
        return make_task(cfg.task, seed=cfg.task_seed, num_train=cfg.task_size)
    return make_task(cfg.task, seed=cfg.task_seed)


def derive_seed(*parts: int) -> int:
    """A 31-bit seed from integer parts (master seed, purpose, step, round, rank)."""
    return int(np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts]).generate_state(1)[0])


@dataclass
class RoundResult:
    """What one ``run_round`` produced (arrays are per question of this rank's batch)."""

    counts: NDArray[np.int64]
    successes: NDArray[np.int64]
    utility_gain: float
    done: bool
    observation: dict[str, NDArray[np.float32]]
    seconds: float


@dataclass
class TrainingUtility:
    """The report of one training step (DESIGN §7): allocation, utilities, optimisation, speed."""

    step: int
    rollouts: int
    rollouts_total: int
    questions: int
    informative_frac: float
    all_correct_frac: float
    all_wrong_frac: float
    empty_frac: float
    utilities: dict[str, float]
    reward: float
    reward_std: float
    frac_reward_zero_std: float
    loss: float
    kl: float
    entropy: float
    clip_ratio_low: float
    clip_ratio_high: float
    grad_norm: float
    trained_rollouts: int
    mean_length: float
    clipped_ratio: float
    tokens: int
    tokens_per_s: float
    step_seconds: float
    gen_seconds: float
    train_seconds: float
    alloc_seconds: float
    alloc_overhead: float
    rounds: int
    verifier_errors: int
    skipped_update: bool
    nan_skipped_total: int
    abandoned_steps: int
    logprob_diff: float
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A flat dict of numbers (utilities as ``utility/<name>``), for JSONL and TensorBoard."""
        d = asdict(self)
        utilities = d.pop("utilities")
        extra = d.pop("extra")
        d.update({f"utility/{k}": v for k, v in utilities.items()})
        d.update(extra)
        return d


class _Rollouts:
    """The completions of the step in progress, per question of this rank's batch."""

    def __init__(self, num_questions: int) -> None:
        self.completion_ids: list[list[list[int]]] = [[] for _ in range(num_questions)]
        self.logprobs: list[list[NDArray[np.float32]]] = [[] for _ in range(num_questions)]
        self.rewards: list[list[float]] = [[] for _ in range(num_questions)]
        self.truncated: list[list[bool]] = [[] for _ in range(num_questions)]
        self.errors = 0
        self.tokens = 0
        self.gen_seconds = 0.0
        self.alloc_seconds = 0.0
        self.rounds = 0


class GRPOTrainer:
    """The shared GRPO trainer. See the module docstring for the step API.

    Build it from a ``GRPOConfig``; ``task``, ``model``/``tokenizer``, ``engine`` and
    ``accelerator`` can be passed in (tests, the live env, notebooks). The allocator is
    ``cfg.allocator``, any spec ``agents.make_allocator`` accepts, or an allocator object.

    >>> trainer = GRPOTrainer(GRPOConfig(model="tiny", allocator="bamdp"))   # doctest: +SKIP
    >>> report = trainer.train_step()                                       # doctest: +SKIP
    """

    def __init__(
        self,
        cfg: GRPOConfig,
        *,
        task: Task | None = None,
        model: Any = None,
        tokenizer: Any = None,
        engine: Engine | None = None,
        allocator: Any = None,
        accelerator: Any = None,
    ) -> None:
        self.cfg = cfg
        self.accelerator = accelerator
        if accelerator is None and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            from accelerate import Accelerator

            self.accelerator = Accelerator(cpu=cfg.device == "cpu")
        acc = self.accelerator
        self.rank = acc.process_index if acc is not None else 0
        self.world = acc.num_processes if acc is not None else 1
        if cfg.batch_size % self.world or cfg.rollout_budget % self.world:
            raise ValueError(
                f"batch_size ({cfg.batch_size}) and budget ({cfg.rollout_budget}) must be "
                f"divisible by the number of processes ({self.world}): each rank takes an equal "
                "shard of prompts and budget"
            )
        self.local_batch = cfg.batch_size // self.world
        self.local_budget = cfg.rollout_budget // self.world
        spec = allocator if allocator is not None else cfg.allocator
        if cfg.round_size is not None:
            self.local_round = max(1, cfg.round_size // self.world)
        elif not _is_adaptive(spec):
            self.local_round = self.local_budget  # outcome-blind: one round, the same split
        else:
            self.local_round = self.local_batch
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.device = self._pick_device()
        self.task = task if task is not None else build_task(cfg)
        if not self.task.train:
            raise ValueError(f"task {self.task.name!r} has no training prompts: check the data")
        if model is None or tokenizer is None:
            from trainers.models import load_policy

            # fp32 master weights (a GPU computes in bf16 under autocast); "bfloat16" keeps
            # the parameters themselves in bf16 to save memory
            dtype = torch.bfloat16 if cfg.dtype == "bfloat16" else torch.float32
            model, tokenizer = load_policy(cfg.model, dtype=dtype)
        self.tokenizer = tokenizer
        self.policy = model.to(self.device)
        self.policy.train()
        _disable_dropout(self.policy)
        self.ref_model = None
        if cfg.beta > 0:
            self.ref_model = copy.deepcopy(self.policy).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
        )
        self.model = self.policy  # what forward/backward go through (DDP-wrapped when parallel)
        if acc is not None:
            self.model, self.optimizer = acc.prepare(self.policy, self.optimizer)
        self.engine: Engine = engine if engine is not None else self._build_engine()
        self.sampling = SamplingSpec(
            max_new_tokens=cfg.max_completion_length, temperature=cfg.temperature, top_p=cfg.top_p
        )
        self.beliefs = BeliefStore(
            cfg.prior_alpha, cfg.prior_beta, decay=cfg.belief_decay, base=cfg.belief_prior
        )
        self._allocator_spec = allocator if allocator is not None else cfg.allocator
        self.allocator: Any = None
        self._prompt_ids: dict[int, list[int]] = {}
        # counters (all saved in checkpoints)
        self.step = 0
        self.rollouts_total = 0
        self.nan_skipped = 0
        self.abandoned = 0
        self.epoch = 0
        self.cursor = 0
        self._order = self._epoch_order(0)
        # the step in progress
        self.params: am.AllocationParams | None = None
        self.state: am.AllocationState | None = None
        self.examples: list[Example] = []
        self._rollouts: _Rollouts | None = None
        self._step_start = 0.0

    # --- set-up helpers -------------------------------------------------------------------
    def _pick_device(self) -> torch.device:
        if self.accelerator is not None:
            return torch.device(self.accelerator.device)
        if self.cfg.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {self.cfg.device!r} asked for, but CUDA is not available")
        return torch.device(self.cfg.device)

    def _build_engine(self) -> Engine:
        cfg = self.cfg
        kwargs: dict[str, Any] = {"batch_size": cfg.generation_batch_size}
        if cfg.engine == "vllm":
            from trainers.models import resolve_model_dir

            # vLLM loads the model from its directory, then follows the policy's weights
            kwargs.update(model_path=str(resolve_model_dir(cfg.model)), seed=cfg.seed)
        return make_engine(cfg.engine, self.policy, self.tokenizer, **kwargs)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16 autocast on a GPU that supports it (``dtype='auto'`` or ``'bfloat16'``)."""
        want = self.cfg.dtype
        if self.device.type == "cuda" and want != "float32" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        if want == "bfloat16" and self.device.type == "cpu":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _epoch_order(self, epoch: int) -> NDArray[np.int64]:
        rng = np.random.default_rng(derive_seed(self.cfg.seed, 1, epoch))
        return rng.permutation(len(self.task.train)).astype(np.int64)

    def _next_batch(self) -> list[Example]:
        """The next ``batch_size`` prompts in the seeded order; this rank keeps its shard."""
        picked: list[int] = []
        while len(picked) < self.cfg.batch_size:
            if self.cursor >= self._order.size:
                self.epoch += 1
                self.cursor = 0
                self._order = self._epoch_order(self.epoch)
            take = min(self.cfg.batch_size - len(picked), self._order.size - self.cursor)
            picked.extend(self._order[self.cursor : self.cursor + take].tolist())
            self.cursor += take
        batch = [self.task.train[i] for i in picked]
        batch.sort(key=lambda e: e.id)
        return batch[self.rank :: self.world]

    def prompt_ids(self, example: Example) -> list[int]:
        """Token ids of an example's prompt (cached)."""
        ids = self._prompt_ids.get(example.id)
        if ids is None:
            ids = list(self.tokenizer(example.prompt).input_ids)
            self._prompt_ids[example.id] = ids
        return ids

    def _make_allocator(self, params: am.AllocationParams, seed: int) -> Any:
        spec = self._allocator_spec
        if isinstance(spec, str):
            from agents import make_allocator

            if self.allocator is None:
                self.allocator = make_allocator(spec, params, seed=seed)
                return self.allocator
        elif self.allocator is None:
            self.allocator = spec
        self.allocator.reset(params, seed=seed)
        return self.allocator

    # --- the step API ---------------------------------------------------------------------
    @property
    def in_step(self) -> bool:
        """True between ``begin_step`` and ``finish_step``."""
        return self._rollouts is not None

    @property
    def budget_left(self) -> int:
        """Rollouts of this rank's step still to hand out (0 outside a step)."""
        if self.params is None or self.state is None or not self.in_step:
            return 0
        return am.budget_left(self.params, self.state)

    def begin_step(self) -> dict[str, NDArray[np.float32]]:
        """Start the next step: draw prompts, set their priors, run the pilot; the observation.

        Calling it while a step is in progress abandons that step (no update; counted).
        """
        if self.in_step:
            self.abandoned += 1
        cfg = self.cfg
        self._step_start = time.perf_counter()
        self.examples = self._next_batch()
        ids = [e.id for e in self.examples]
        alpha, beta = self.beliefs.prior(ids, self.step)
        self.params = am.AllocationParams(
            num_questions=len(self.examples),
            budget=self.local_budget,
            prior_alpha=tuple(alpha.tolist()),
            prior_beta=tuple(beta.tolist()),
            pilot=cfg.pilot,
            max_group=cfg.max_group,
            mode="rounds",
            round_size=self.local_round,
            utility=cfg.utility,
        )
        self.state = am.initial_state(self.params)
        self._rollouts = _Rollouts(len(self.examples))
        t = time.perf_counter()
        self._make_allocator(self.params, derive_seed(cfg.seed, 2, self.step, self.rank))
        self._rollouts.alloc_seconds += time.perf_counter() - t
        if cfg.pilot > 0:
            self._generate(np.full(len(self.examples), cfg.pilot, dtype=np.int64))
        return am.observe(self.params, self.state)

    def run_round(self, counts: Any) -> RoundResult:
        """Generate ``counts[i]`` completions of prompt ``i``, verify them, update the state."""
        if not self.in_step or self.params is None or self.state is None:
            raise RuntimeError("run_round() outside a step: call begin_step() first")
        p, s = self.params, self.state
        want = am.next_round_size(p, s)
        c = np.asarray(counts)
        if c.shape != (p.num_questions,) or not np.issubdtype(c.dtype, np.number):
            raise ValueError(
                f"invalid allocation: counts must be {p.num_questions} integers, got shape "
                f"{c.shape}"
            )
        if not np.all(np.isfinite(c)) or not np.all(c == np.round(c)) or np.any(c < 0):
            raise ValueError(
                f"invalid allocation {c.tolist()}: counts must be non-negative integers"
            )
        c = c.astype(np.int64)
        if int(c.sum()) != want:
            raise ValueError(
                f"invalid allocation {c.tolist()}: it hands out {int(c.sum())} rollouts but this "
                f"round is {want} (min(round size, budget left))"
            )
        over = np.flatnonzero(c > am.capacity(p, s))
        if over.size:
            raise ValueError(
                f"invalid allocation {c.tolist()}: question {int(over[0])} exceeds its cap "
                f"(max_group={p.max_group})"
            )
        t = time.perf_counter()
        before = am.utility_value(p, s)
        successes = self._generate(c)
        after = am.utility_value(p, self.state)
        return RoundResult(
            counts=c,
            successes=successes,
            utility_gain=after - before,
            done=am.is_done(p, self.state),
            observation=am.observe(p, self.state),
            seconds=time.perf_counter() - t,
        )

    def _generate(self, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        """Generate, verify and record one round (or the pilot); returns successes per prompt."""
        assert self._rollouts is not None and self.params is not None and self.state is not None
        ro = self._rollouts
        seed = derive_seed(self.cfg.seed, 3, self.step, ro.rounds, self.rank)
        prompts = [self.prompt_ids(e) for e in self.examples]
        with self.autocast():
            gen = self.engine.generate(prompts, counts.tolist(), self.sampling, seed=seed)
        examples = [self.examples[i] for i in gen.prompt_index]
        scores = self.task.score(examples, gen.texts, gen.completion_ids)
        rewards = np.asarray(scores.rewards, dtype=np.float64)
        successes = np.zeros(len(self.examples), dtype=np.int64)
        for j, q in enumerate(gen.prompt_index.tolist()):
            ro.completion_ids[q].append(gen.completion_ids[j])
            ro.logprobs[q].append(gen.logprobs[j])
            ro.rewards[q].append(float(rewards[j]))
            ro.truncated[q].append(bool(gen.truncated[j]))
            successes[q] += int(rewards[j] >= SUCCESS_THRESHOLD)
        ro.errors += scores.errors
        ro.tokens += gen.num_tokens
        ro.gen_seconds += gen.seconds
        ro.rounds += 1
        self.state = am.apply_counts(self.params, self.state, counts, successes)
        return successes

    def finish_step(self) -> TrainingUtility:
        """One GRPO update on all groups of the step; returns the step's report."""
        if not self.in_step or self.params is None or self.state is None:
            raise RuntimeError("finish_step() outside a step: call begin_step() first")
        left = am.budget_left(self.params, self.state)
        if left:
            raise RuntimeError(
                f"finish_step() with {left} rollouts of the budget left: call run_round() "
                "until the budget is spent"
            )
        ro = self._rollouts
        assert ro is not None
        t = time.perf_counter()
        train = self._update(ro)
        train_seconds = time.perf_counter() - t
        self.engine.sync_weights(self.policy)
        s = np.asarray(self.state.successes, dtype=np.int64)
        f = np.asarray(self.state.failures, dtype=np.int64)
        self.beliefs.update([e.id for e in self.examples], s, f, self.step)
        report = self._report(ro, s, f, train, train_seconds)
        self.rollouts_total += report.rollouts
        report.rollouts_total = self.rollouts_total
        self.step += 1
        self._rollouts = None
        return report

    def train_step(self) -> TrainingUtility:
        """One whole step with the trainer's own allocator: rounds until the budget is spent."""
        obs = self.begin_step()
        ro = self._rollouts
        assert ro is not None
        while self.budget_left > 0:
            t = time.perf_counter()
            counts = self.allocator.allocate(obs)
            ro.alloc_seconds += time.perf_counter() - t
            try:
                obs = self.run_round(counts).observation
            except ValueError as exc:
                name = getattr(self.allocator, "name", type(self.allocator).__name__)
                raise ValueError(
                    f"allocator {name!r} returned an invalid allocation: {exc}"
                ) from exc
        return self.finish_step()

    # --- the update -----------------------------------------------------------------------
    def _update(self, ro: _Rollouts) -> dict[str, float]:
        """Advantages, then ``num_iterations`` optimizer steps over micro-batches."""
        cfg = self.cfg
        group = expand_groups([len(r) for r in ro.rewards])  # [M] question of each rollout
        rewards = np.concatenate([np.asarray(r, dtype=np.float64) for r in ro.rewards])  # [M]
        completions = [c for per_q in ro.completion_ids for c in per_q]
        engine_lps = [lp for per_q in ro.logprobs for lp in per_q]
        adv = group_advantages(rewards, group, scale=cfg.scale_rewards)  # [M]
        prompts = [self.prompt_ids(self.examples[q]) for q in group.tolist()]
        # the normaliser covers the whole batch, so accumulation equals one big batch
        lengths = torch.tensor([len(c) for c in completions], dtype=torch.float32)  # [M]
        width = int(lengths.max().item()) if len(completions) else 1
        full_mask = (torch.arange(width)[None, :] < lengths[:, None]).float()  # [M, T]
        weights = token_weights(
            full_mask, loss_type=cfg.loss_type, max_completion_length=cfg.max_completion_length
        )  # [M, T]
        rows = np.arange(len(completions)) if cfg.beta > 0 else np.flatnonzero(adv != 0)
        stats = {"loss": 0.0, "kl": 0.0, "entropy": 0.0, "low": 0.0, "high": 0.0, "tokens": 0.0}
        stats.update(grad_norm=0.0, skipped=0.0, trained=float(rows.size), lp_diff=float("nan"))
        mb = cfg.micro_batch_size
        chunks = [rows[i : i + mb] for i in range(0, rows.size, mb)]
        if self.world > 1:
            chunks = self._equalise_chunks(chunks)
        elif not chunks:
            return stats  # nothing carries gradient: no update, exactly as a zero gradient
        old: dict[int, torch.Tensor] = {}
        if cfg.num_iterations > 1 and cfg.old_logprobs == "recompute":
            with torch.no_grad():
                for idx in chunks:
                    if idx.size:
                        lp, _, _ = self._forward(
                            prompts, completions, idx, width, need_entropy=False
                        )
                        for k, r in enumerate(idx.tolist()):
                            old[r] = lp[k].detach()
        for it in range(cfg.num_iterations):
            self.optimizer.zero_grad(set_to_none=True)
            diffs: list[float] = []
            for ci, idx in enumerate(chunks):
                dummy = idx.size == 0
                use = idx if not dummy else np.array([0])
                sync = ci == len(chunks) - 1
                ctx = (
                    self.accelerator.no_sync(self.model)
                    if self.accelerator is not None and not sync
                    else contextlib.nullcontext()
                )
                with ctx:
                    lp, ent, mask = self._forward(
                        prompts, completions, use, width, need_entropy=it == 0
                    )
                    a = torch.as_tensor(adv[use], dtype=torch.float32, device=lp.device)  # [b]
                    w = weights[use, : lp.shape[1]].to(lp.device)  # [b, T]
                    if dummy:
                        w = w * 0.0
                    if cfg.old_logprobs == "engine":
                        old_lp = _pad_rows(
                            [engine_lps[r] for r in use.tolist()], lp.shape[1], lp.device
                        )
                    elif cfg.num_iterations > 1:
                        old_lp = torch.stack([_fit(old[r], lp.shape[1]) for r in use.tolist()])
                    else:
                        old_lp = lp.detach()  # [b, T]
                    per_tok, low, high = clipped_surrogate(
                        lp, old_lp, a, epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high
                    )  # [b, T]
                    if self.ref_model is not None:
                        with torch.no_grad():
                            ref_lp, _, _ = self._forward(
                                prompts, completions, use, width, need_entropy=False, ref=True
                            )
                        kl = kl_k3(lp, ref_lp)  # [b, T]
                        per_tok = per_tok + cfg.beta * kl
                        stats["kl"] += float((kl.detach() * mask).sum())
                    loss = (per_tok * w).sum()
                    if self.accelerator is not None:
                        self.accelerator.backward(loss)
                    else:
                        loss.backward()
                if it == 0 and not dummy:
                    stats["loss"] += float(loss.detach())
                    n_tok = float(mask.sum())
                    stats["tokens"] += n_tok
                    stats["low"] += float((low.float() * mask).sum())
                    stats["high"] += float((high.float() * mask).sum())
                    if ent is not None:
                        stats["entropy"] += float((ent * mask).sum())
                    eng = _pad_rows([engine_lps[r] for r in use.tolist()], lp.shape[1], lp.device)
                    diffs.append(float(((lp.detach() - eng).abs() * mask).sum()))
            params = [p for p in self.policy.parameters() if p.grad is not None]
            total = (
                torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                if cfg.max_grad_norm > 0
                else torch.norm(torch.stack([p.grad.detach().norm() for p in params]))
            )
            if not math.isfinite(float(total)):
                self.optimizer.zero_grad(set_to_none=True)
                self.nan_skipped += 1
                stats["skipped"] = 1.0
                warnings.warn(
                    f"step {self.step}: non-finite loss or gradient ({float(total)}); the update "
                    f"is skipped ({self.nan_skipped} skipped so far)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                break
            self.optimizer.step()
            if it == 0:
                stats["grad_norm"] = float(total)
                if diffs and stats["tokens"]:
                    stats["lp_diff"] = sum(diffs) / stats["tokens"]
        self.optimizer.zero_grad(set_to_none=True)
        tokens = max(stats["tokens"], 1.0)
        for key in ("kl", "entropy", "low", "high"):
            stats[key] /= tokens
        return stats

    def _equalise_chunks(self, chunks: list[NDArray[np.int64]]) -> list[NDArray[np.int64]]:
        """Pad with empty micro-batches so every rank runs as many backward passes (DDP)."""
        assert self.accelerator is not None
        n = torch.tensor([len(chunks)], device=self.device)
        most = int(self.accelerator.gather(n).max().item())
        most = max(most, 1)
        return chunks + [np.zeros(0, dtype=np.int64)] * (most - len(chunks))

    def _forward(
        self,
        prompts: list[list[int]],
        completions: list[list[int]],
        idx: NDArray[np.int64],
        width: int,
        *,
        need_entropy: bool,
        ref: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Log-probs ``[b, T]`` of the completion tokens of rows ``idx`` (and entropies, mask)."""
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        rows = idx.tolist()
        P = max(len(prompts[r]) for r in rows)
        L = P + width
        ids = torch.full((len(rows), L), pad, dtype=torch.long)  # [b, L]
        att = torch.zeros((len(rows), L), dtype=torch.long)  # [b, L]
        mask = torch.zeros((len(rows), width), dtype=torch.float32)  # [b, T]
        targets = torch.full((len(rows), width), pad, dtype=torch.long)  # [b, T]
        for k, r in enumerate(rows):
            p, c = prompts[r], completions[r]
            start = P - len(p)  # left-pad the prompt so completions start at column P
            ids[k, start:P] = torch.tensor(p)
            ids[k, P : P + len(c)] = torch.tensor(c, dtype=torch.long)
            att[k, start : P + len(c)] = 1
            targets[k, : len(c)] = torch.tensor(c, dtype=torch.long)
            mask[k, : len(c)] = 1.0
        pos = (att.cumsum(-1) - 1).clamp(min=0)  # [b, L]
        net: Any = self.ref_model if ref else self.model
        with self.autocast():
            out = net(
                input_ids=ids.to(self.device),
                attention_mask=att.to(self.device),
                position_ids=pos.to(self.device),
                use_cache=False,
            )
        logits = out.logits[:, P - 1 : P - 1 + width]  # [b, T, V]
        t = self.cfg.temperature
        lp = per_token_logps(logits, targets.to(self.device), temperature=t)  # [b, T]
        mask = mask.to(self.device)
        ent = None
        if need_entropy:
            with torch.no_grad():
                ent = token_entropy(logits.detach(), temperature=t)  # [b, T]
        return lp * mask, ent, mask

    # --- reports --------------------------------------------------------------------------
    def _report(
        self,
        ro: _Rollouts,
        s: NDArray[np.int64],
        f: NDArray[np.int64],
        train: dict[str, float],
        train_seconds: float,
    ) -> TrainingUtility:
        n = s + f
        sums: dict[str, float] = {
            "questions": float(n.size),
            "rollouts": float(n.sum()),
            "informative": float(np.sum((s > 0) & (f > 0))),
            "all_correct": float(np.sum((n > 0) & (f == 0))),
            "all_wrong": float(np.sum((n > 0) & (s == 0))),
            "empty": float(np.sum(n == 0)),
            "groups": float(np.sum(n > 0)),
            "zero_std": float(
                sum(1 for r in ro.rewards if len(r) > 0 and (len(r) < 2 or np.ptp(r) == 0))
            ),
            "reward_sum": float(sum(sum(r) for r in ro.rewards)),
            "reward_sq": float(sum(sum(x * x for x in r) for r in ro.rewards)),
            "length_sum": float(sum(len(c) for q in ro.completion_ids for c in q)),
            "truncated": float(sum(sum(t) for t in ro.truncated)),
            "errors": float(ro.errors),
            "tokens": float(ro.tokens),
        }
        for name in list_utilities():
            sums[f"u/{name}"] = float(np.sum(get_utility(name)(s, f)))
        for k, v in train.items():
            sums[f"t/{k}"] = v
        if self.world > 1:
            sums = self._all_reduce(sums)
            for k in train:
                sums[f"t/{k}"] /= self.world
        step_seconds = time.perf_counter() - self._step_start
        if self.world > 1:
            step_seconds = self._all_reduce({"x": step_seconds})["x"] / self.world
        q = max(sums["questions"], 1.0)
        m = max(sums["rollouts"], 1.0)
        mean = sums["reward_sum"] / m
        var = max(sums["reward_sq"] / m - mean * mean, 0.0)
        return TrainingUtility(
            step=self.step,
            rollouts=int(sums["rollouts"]),
            rollouts_total=self.rollouts_total,
            questions=int(sums["questions"]),
            informative_frac=sums["informative"] / q,
            all_correct_frac=sums["all_correct"] / q,
            all_wrong_frac=sums["all_wrong"] / q,
            empty_frac=sums["empty"] / q,
            utilities={name: sums[f"u/{name}"] for name in list_utilities()},
            reward=mean,
            reward_std=math.sqrt(var),
            frac_reward_zero_std=sums["zero_std"] / max(sums["groups"], 1.0),
            loss=sums["t/loss"],
            kl=sums["t/kl"],
            entropy=sums["t/entropy"],
            clip_ratio_low=sums["t/low"],
            clip_ratio_high=sums["t/high"],
            grad_norm=sums["t/grad_norm"],
            trained_rollouts=round(sums["t/trained"] * self.world),
            mean_length=sums["length_sum"] / m,
            clipped_ratio=sums["truncated"] / m,
            tokens=int(sums["tokens"]),
            tokens_per_s=sums["tokens"] / max(step_seconds, 1e-9),
            step_seconds=step_seconds,
            gen_seconds=ro.gen_seconds,
            train_seconds=train_seconds,
            alloc_seconds=ro.alloc_seconds,
            alloc_overhead=ro.alloc_seconds / max(step_seconds, 1e-9),
            rounds=ro.rounds,
            verifier_errors=int(sums["errors"]),
            skipped_update=bool(sums["t/skipped"] > 0),
            nan_skipped_total=self.nan_skipped,
            abandoned_steps=self.abandoned,
            logprob_diff=sums["t/lp_diff"],
        )

    def _all_reduce(self, values: dict[str, float]) -> dict[str, float]:
        assert self.accelerator is not None
        keys = sorted(values)
        t = torch.tensor([values[k] for k in keys], dtype=torch.float64, device=self.device)
        total = self.accelerator.reduce(t, reduction="sum")
        return dict(zip(keys, total.cpu().tolist(), strict=True))

    # --- evaluation -----------------------------------------------------------------------
    def evaluate(self, *, size: int | None = None, k: int | None = None) -> dict[str, float]:
        """Held-out pass@1 and pass@k (k samples per prompt at the training temperature), overall
        and per level; ranks split the prompts and the counts are summed."""
        cfg = self.cfg
        k = cfg.eval_k if k is None else k
        size = cfg.eval_size if size is None else size
        test = held_out_subset(self.task.test, size)
        if not test:
            raise ValueError(f"task {self.task.name!r} has no held-out prompts to evaluate")
        mine = test[self.rank :: self.world]
        prompts = [self.prompt_ids(e) for e in mine]
        seed = derive_seed(cfg.seed, 4, self.rank)  # the same samples' seeds at every evaluation
        with self.autocast():
            gen = self.engine.generate(prompts, [k] * len(mine), self.sampling, seed=seed)
        scores = self.task.score([mine[i] for i in gen.prompt_index], gen.texts, gen.completion_ids)
        correct = np.bincount(
            gen.prompt_index,
            weights=(np.asarray(scores.rewards) >= SUCCESS_THRESHOLD).astype(float),
            minlength=len(mine),
        )
        levels = sorted({e.level for e in test})
        sums: dict[str, float] = {"n": float(len(mine)), "c": float(correct.sum())}
        sums["pk"] = float(sum(pass_at_k(k, int(c), k) for c in correct))
        for lv in levels:
            sel = [i for i, e in enumerate(mine) if e.level == lv]
            sums[f"n{lv}"] = float(len(sel))
            sums[f"c{lv}"] = float(correct[sel].sum()) if sel else 0.0
        if self.world > 1:
            sums = self._all_reduce(sums)
        out = {
            "pass@1": sums["c"] / (sums["n"] * k),
            f"pass@{k}": sums["pk"] / sums["n"],
            "prompts": sums["n"],
        }
        for lv in levels:
            if sums[f"n{lv}"]:
                out[f"pass@1/level{lv}"] = sums[f"c{lv}"] / (sums[f"n{lv}"] * k)
        return out

    # --- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Counters, data order, optimizer and belief store (the weights are saved apart)."""
        if self.in_step:
            raise RuntimeError("cannot checkpoint in the middle of a step: finish_step() first")
        return {
            "step": self.step,
            "rollouts_total": self.rollouts_total,
            "nan_skipped": self.nan_skipped,
            "abandoned": self.abandoned,
            "epoch": self.epoch,
            "cursor": self.cursor,
            "optimizer": self.optimizer.state_dict(),
            "beliefs": self.beliefs.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "world": self.world,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (weights are loaded by the caller)."""
        if int(state.get("world", 1)) != self.world:
            raise ValueError(
                f"checkpoint was written by {state['world']} processes, this run has "
                f"{self.world}: resume with the same number of processes"
            )
        self.step = int(state["step"])
        self.rollouts_total = int(state["rollouts_total"])
        self.nan_skipped = int(state["nan_skipped"])
        self.abandoned = int(state["abandoned"])
        self.epoch = int(state["epoch"])
        self.cursor = int(state["cursor"])
        self._order = self._epoch_order(self.epoch)
        self.optimizer.load_state_dict(state["optimizer"])
        self.beliefs.load_state_dict(state["beliefs"])
        torch.set_rng_state(state["torch_rng"])

    def close(self) -> None:
        """Release the engine and the accelerator's process group."""
        self.engine.close()


def _is_adaptive(spec: Any) -> bool:
    if isinstance(spec, str):
        from agents.registry import is_adaptive

        return is_adaptive(spec)
    return bool(getattr(spec, "adaptive", True))


def held_out_subset(test: list[Example], size: int | None) -> list[Example]:
    """``size`` held-out examples spread evenly over the split (all levels), always the same."""
    if size is None or size >= len(test):
        return list(test)
    pick = np.linspace(0, len(test) - 1, size).round().astype(int)
    return [test[i] for i in np.unique(pick)]


def _disable_dropout(model: Any) -> None:
    """Dropout off everywhere: with it on, the importance ratio is noise."""
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    cfg = getattr(model, "config", None)
    for name in ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "embd_pdrop"):
        if cfg is not None and hasattr(cfg, name):
            setattr(cfg, name, 0.0)


def _pad_rows(rows: list[NDArray[np.float32]], width: int, device: Any) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)  # [b, T]
    for k, r in enumerate(rows):
        n = min(len(r), width)
        out[k, :n] = torch.from_numpy(np.asarray(r[:n], dtype=np.float32))
    return out.to(device)


def _fit(row: torch.Tensor, width: int) -> torch.Tensor:
    if row.shape[0] >= width:
        return row[:width]
    return torch.nn.functional.pad(row, (0, width - row.shape[0]))
