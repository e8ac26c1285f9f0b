"""``GRPOTrainer``: one GRPO step as an allocation episode, driven round by round.

The step API is shared by the trainer's own loop (``train_step``) and the live environment
``AdaRoll/GRPOTraining-v0``:

* ``begin_step()`` draws the next batch of prompts, gives each its Beta prior from the belief
  store, runs the pilot and returns the observation (``adaroll_env.model.observe``);
* ``run_round(counts)`` generates ``counts[i]`` completions of prompt ``i`` — ``counts`` sums
  to the round's size, ``trainer.next_round_size`` (``min(round_size, budget_left)``, or the
  next round of ``round_schedule``) — verifies them,
  updates the allocation state and returns the round's outcomes;
* ``finish_step()`` — once the budget is spent — computes ragged-group advantages, makes one
  GRPO update, updates the belief store and returns the step's ``StepReport``.

A trainer built with ``external=True`` is driven from outside (the live env's agent, a notebook):
it builds no allocator, its rounds are ``round_size`` (default ``B``) and ``train_step`` refuses.

This file orchestrates. A step's plan (``agents.rounds.plan_step``, built once) gives each step
its ``AllocationParams`` with the belief store's priors, and its rounds run in
``agents.rounds.RoundLoop`` (allocator reset, pilot, contract check, apply), the loop the TRL
subclass and the simulator share; this trainer's "generate and score" is ``_generate`` (the
engine, then the task's verifier). Its rooms: the configuration (``trainers.grpo.config``), seeds
and data order (``trainers.grpo.data_order``), rollouts (``trainers.grpo.rollouts``), the update
(``trainers.grpo.update``, math in ``trainers.grpo.objective``), the step report
(``trainers.grpo.step_report``), held-out evaluation (``trainers.grpo.evaluation``), ranks
(``trainers.grpo.parallel``), generation (``trainers.engines``), scoring (``trainers.tasks``)
and beliefs (``trainers.allocation.beliefs``); each helper takes explicit arguments, not the
trainer. Data parallelism goes through ``accelerate``: each rank takes its shard of the batch's
prompts with its share of the budget, allocates it, keeps those prompts' beliefs, and gradients
are averaged by DDP.

About 630 lines, over the 500 of the house style, on purpose: what is left here is the step API,
its set-up, the arguments it hands each room and its checkpoint state, which share the trainer's
attributes; every computation they call lives in the rooms above.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import os
import time
import warnings
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from adaroll_env import model as am
from agents.rounds import RoundLoop, StepPlan, plan_step
from trainers.allocation.beliefs import BeliefStore
from trainers.allocation.gradient_noise import AUTO_UTILITY, AutoKappa, NoiseCollector, Projection
from trainers.engines import Engine, SamplingSpec, make_engine
from trainers.grpo import GRPOConfig
from trainers.grpo.data_order import (
    ALLOCATOR,
    EVALUATION,
    GRADIENT_NOISE,
    SAMPLING,
    DataOrder,
    derive_seed,
)
from trainers.grpo.evaluation import evaluate_examples, held_out_subset
from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import SUCCESS_THRESHOLD, Rollouts, RoundResult
from trainers.grpo.step_report import StepReport, build_report
from trainers.grpo.update import PolicyModels, grpo_update
from trainers.models.dropout import disable_dropout
from trainers.models.prompts import encode_prompt
from trainers.tasks import Example, Task, make_task

__all__ = [
    "SUCCESS_THRESHOLD",
    "GRPOTrainer",
    "RoundResult",
    "StepReport",
    "build_task",
    "derive_seed",
    "held_out_subset",
]


def build_task(cfg: GRPOConfig) -> Task:
    """The config's task, from ``task_seed`` (the run's ``seed`` orders the data, never the
    task: the held-out split stays the same); synthetic tasks generate ``task_size`` prompts."""
    if cfg.validation_size and cfg.task != "arithmetic":
        raise ValueError(
            f"validation_size={cfg.validation_size} holds out arithmetic prompts; task "
            f"{cfg.task!r} has its own validation split (an rg: task: num_validation in its "
            "spec; a jsonl file: its rows of split 'validation'): drop --validation-size"
        )
    if cfg.task == "arithmetic":
        extra: dict[str, int] = {}
        if cfg.task_size is not None:
            extra["num_train"] = cfg.task_size
        if cfg.validation_size:
            extra["num_validation"] = cfg.validation_size
        return make_task(cfg.task, seed=cfg.task_seed, **extra)
    return make_task(cfg.task, seed=cfg.task_seed)


class GRPOTrainer:
    """The shared GRPO trainer. See the module docstring for the step API.

    Build it from a ``GRPOConfig``; ``task``, ``model``/``tokenizer``, ``engine`` and
    ``accelerator`` can be passed in (tests, the live env, notebooks). The allocator is
    ``allocator`` (an allocator object or spec) if given, else ``cfg.allocator`` — any spec
    ``agents.make_allocator`` accepts, built with ``cfg.allocator_kwargs``. ``external=True``:
    the caller allocates every round through ``run_round`` (no allocator is built).

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
        external: bool = False,
    ) -> None:
        if external and allocator is not None:
            raise ValueError("external=True means the caller allocates: pass no allocator")
        self.cfg = cfg
        self.external = external
        self._allocator_spec = allocator if allocator is not None else cfg.allocator
        self.allocator: Any = None
        #: an allocator's state from a checkpoint, handed to it when it is made
        self._allocator_state: dict[str, Any] | None = None
        self._setup_parallel(accelerator)
        threads = cfg.torch_threads()
        if threads:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.device = self._pick_device()
        self.task = task if task is not None else build_task(cfg)
        if cfg.eval_split == "validation" and cfg.eval_every and not self.task.validation:
            raise ValueError(
                f"eval_split='validation' but task {self.task.name!r} has no validation split: "
                "give --validation-size N (arithmetic), num_validation in an rg: spec, or "
                "--eval-split test"
            )
        if not self.task.train:
            raise ValueError(f"task {self.task.name!r} has no training prompts: check the data")
        self._check_belief_group()
        self._setup_model(model, tokenizer)
        self.engine: Engine = engine if engine is not None else self._build_engine()
        self.sampling = SamplingSpec(
            max_new_tokens=cfg.max_completion_length, temperature=cfg.temperature, top_p=cfg.top_p
        )
        self.beliefs = BeliefStore(
            cfg.prior_alpha,
            cfg.prior_beta,
            decay=cfg.belief_decay,
            base=cfg.belief_prior,
            fit=cfg.belief_fit,
        )
        self._prompt_ids: dict[int, list[int]] = {}
        self.data = DataOrder(self.task.train, seed=cfg.seed)
        self.auto_kappa = AutoKappa() if cfg.utility == AUTO_UTILITY else None
        # counters (all saved in checkpoints)
        self.step = 0
        self.rollouts_total = 0
        self.nan_skipped = 0
        self.abandoned = 0
        # the step in progress
        self.params: am.AllocationParams | None = None
        #: the step in progress's rounds (``agents.rounds.RoundLoop``), None outside a step
        self.rounds: RoundLoop | None = None
        self.examples: list[Example] = []
        self._rollouts: Rollouts | None = None
        self.step_start = 0.0

    # --- set-up helpers -------------------------------------------------------------------
    def _setup_parallel(self, accelerator: Any) -> None:
        """Ranks, this rank's share of prompts and budget, and its round size."""
        cfg = self.cfg
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
        adaptive = self.external or _is_adaptive(self._allocator_spec)
        # a pool of candidates only for allocators that read outcomes: uniform keeps its B
        self.local_pool = self.local_batch
        if cfg.pool_size is not None and adaptive:
            if cfg.pool_size % self.world:
                raise ValueError(
                    f"pool_size ({cfg.pool_size}) must be divisible by the number of processes "
                    f"({self.world})"
                )
            self.local_pool = cfg.pool_size // self.world
        #: this rank's step without its priors (the round-size rule: ``agents.rounds.plan_step``)
        self.plan: StepPlan = plan_step(
            budget=cfg.rollout_budget,
            batch=cfg.batch_size,
            questions=self.local_pool * self.world,
            adaptive=adaptive,
            # an external agent allocates: the config's allocator (and its own pilot) is unused
            pilot=(cfg.pilot or 0) if self.external else cfg.pilot_rollouts,
            pilot_threshold=cfg.pilot_threshold,
            max_group=cfg.max_group,
            utility=cfg.utility,
            round_size=cfg.round_size,
            rounds=cfg.rounds,
            round_schedule=cfg.schedule_spec,
            world=self.world,
        ).share(self.world)
        self.local_round = self.plan.round_size  # each rank hands out its share of a round
        #: this rank's share of each round of the schedule (empty: equal rounds of local_round)
        self.local_schedule = self.plan.round_schedule

    def _setup_model(self, model: Any, tokenizer: Any) -> None:
        """Policy (dropout off), frozen reference copy when ``beta > 0``, optimizer, DDP."""
        cfg = self.cfg
        if model is None or tokenizer is None:
            from trainers.models.loading import load_policy

            # fp32 master weights (a GPU computes in bf16 under autocast); "bfloat16" keeps
            # the parameters themselves in bf16 to save memory
            dtype = torch.bfloat16 if cfg.dtype == "bfloat16" else torch.float32
            model, tokenizer = load_policy(cfg.model, dtype=dtype)
        self.tokenizer = tokenizer
        self.policy = model.to(self.device)
        self.policy.train()
        disable_dropout(self.policy)
        self.ref_model = None
        if cfg.beta > 0:
            self.ref_model = copy.deepcopy(self.policy).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
        )
        self.model = self.policy  # what forward/backward go through (DDP-wrapped when parallel)
        if self.accelerator is not None:
            self.model, self.optimizer = self.accelerator.prepare(self.policy, self.optimizer)

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
            from trainers.models.loading import resolve_model_dir

            # vLLM loads the model from its directory, then follows the policy's weights
            kwargs.update(model_path=str(resolve_model_dir(cfg.model)), seed=cfg.seed)
        return make_engine(cfg.engine, self.policy, self.tokenizer, **kwargs)

    @property
    def ranks(self) -> Ranks:
        """The run's data-parallel processes (``trainers.grpo.parallel.Ranks``)."""
        return Ranks(self.accelerator, self.rank, self.world, self.device)

    @property
    def models(self) -> PolicyModels:
        """What an update reads and trains (``trainers.grpo.update.PolicyModels``)."""
        pad = self.tokenizer.pad_token_id
        return PolicyModels(
            model=self.model,
            policy=self.policy,
            ref_model=self.ref_model,
            optimizer=self.optimizer,
            pad_id=pad if pad is not None else 0,
            ranks=self.ranks,
            autocast=self.autocast,
        )

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16 autocast on a GPU that supports it (``dtype='auto'`` or ``'bfloat16'``)."""
        want = self.cfg.dtype
        if self.device.type == "cuda" and want != "float32" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        if want == "bfloat16" and self.device.type == "cpu":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    # --- data -----------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """Epochs of the training prompts completed so far."""
        return self.data.epoch

    @property
    def cursor(self) -> int:
        """Position in the current epoch's order."""
        return self.data.cursor

    def peek_batches(self, n: int) -> list[list[Example]]:
        """The batches (this rank's shards) of the next ``n`` steps, in order, without drawing
        them: the trainer then sees exactly these."""
        size = self.local_pool * self.world
        return self.data.peek(n, batch_size=size, rank=self.rank, world=self.world)

    def prompt_ids(self, example: Example) -> list[int]:
        """Token ids of an example's prompt (cached): in the tokenizer's chat template with
        ``cfg.system_prompt`` when ``cfg.chat_template`` is ``"auto"`` and it has one, else plain
        (``trainers.models.prompts.encode_prompt``)."""
        ids = self._prompt_ids.get(example.id)
        if ids is None:
            ids = encode_prompt(
                self.tokenizer,
                example.prompt,
                chat_template=self.cfg.chat_template,
                system_prompt=self.cfg.system_prompt,
            )
            self._prompt_ids[example.id] = ids
        return ids

    def _belief_groups(self) -> list[Any] | None:
        """The belief-group key of each prompt of the step (None: no grouping)."""
        column = self.cfg.group_column
        if column == "none":
            return None
        return [e.group_key(column) for e in self.examples]

    def _check_belief_group(self) -> None:
        """Refuse a ``belief_group`` column that some training prompt lacks, naming the ones
        the task has."""
        column = self.cfg.group_column
        if column in ("none", "level"):
            return
        missing = [e for e in self.task.train if column not in e.columns]
        if missing:
            present = sorted(set().union(*(e.columns for e in self.task.train)))
            raise ValueError(
                f"belief_group {column!r}: {len(missing)} of {len(self.task.train)} training "
                f"prompts of task {self.task.name!r} have no such column (columns present: "
                f"{present or 'none'}, plus 'level'): name a column every row has"
            )

    def _make_allocator(self, params: am.AllocationParams, seed: int) -> Any:
        if self.external:
            return None
        spec = self._allocator_spec
        if isinstance(spec, str):
            from agents import make_allocator

            if self.allocator is None:
                kwargs = self.cfg.allocator_options() if spec == self.cfg.allocator else {}
                self.allocator = make_allocator(spec, params, seed=seed, **kwargs)
                self._restore_allocator()
                return self.allocator
        elif self.allocator is None:
            self.allocator = spec
        self._restore_allocator()
        self.allocator.reset(params, seed=seed)
        return self.allocator

    def _restore_allocator(self) -> None:
        """Hand the allocator the state a checkpoint saved for it (``load_state_dict``), once."""
        state, self._allocator_state = self._allocator_state, None
        if state is not None and hasattr(self.allocator, "load_state_dict"):
            self.allocator.load_state_dict(state)

    # --- the step API ---------------------------------------------------------------------
    @functools.cached_property
    def noise_projection(self) -> Projection:
        """The run's fixed random projection of output-layer gradients (gradient-noise κ)."""
        vocab, hidden = self.policy.get_output_embeddings().weight.shape
        seed = derive_seed(self.cfg.seed, GRADIENT_NOISE)
        return Projection(int(vocab), int(hidden), seed=seed)

    @property
    def utility(self) -> str:
        """The utility the allocator maximises this step: ``cfg.utility``, or for
        ``snr(auto)`` the ``snr(κ)`` of the run's measured κ
        (``trainers.allocation.gradient_noise``)."""
        return self.auto_kappa.utility if self.auto_kappa is not None else self.cfg.utility

    @property
    def round_size(self) -> int:
        """Rollouts this rank hands out per round (the last round may be smaller: the budget
        left); what ``run_round``'s counts sum to is ``min(round_size, budget_left)``. With a
        round schedule, the first round's size: the next round's is ``next_round_size``."""
        return self.local_round

    @property
    def next_round_size(self) -> int:
        """What the next ``run_round``'s counts must sum to (0 outside a step): the schedule's
        next round or min(round_size, budget_left) (``adaroll_env.model.next_round_size``)."""
        if self.params is None or self.state is None or not self.in_step:
            return 0
        return am.next_round_size(self.params, self.state)

    @property
    def state(self) -> am.AllocationState | None:
        """The allocation state of the step in progress (or of the last one)."""
        return self.rounds.state if self.rounds is not None else None

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
        self.step_start = time.perf_counter()
        size = self.local_pool * self.world
        self.examples = self.data.next_batch(size, rank=self.rank, world=self.world)
        t = time.perf_counter()  # the priors (and their refits) count as allocation time
        alpha, beta = self.beliefs.prior(
            [e.id for e in self.examples], self.step, self._belief_groups()
        )
        prior_seconds = time.perf_counter() - t
        plan = dataclasses.replace(self.plan, utility=self.utility)  # snr(auto): this step's κ
        self.params = plan.params(tuple(alpha.tolist()), tuple(beta.tolist()))
        self._rollouts = Rollouts(len(self.examples))
        seed = derive_seed(cfg.seed, ALLOCATOR, self.step, self.rank)
        t = time.perf_counter()
        allocator = self._make_allocator(self.params, seed)
        build_seconds = time.perf_counter() - t
        self.rounds = RoundLoop(self.params, self._generate, allocator=allocator, seed=seed)
        self._rollouts.alloc_seconds += self.rounds.alloc_seconds + build_seconds + prior_seconds
        self.rounds.alloc_seconds = 0.0  # counted; decisions add to it from here
        self.rounds.pilot()
        return self.rounds.observe()

    def run_round(self, counts: Any) -> RoundResult:
        """Generate ``counts[i]`` completions of prompt ``i``, verify them, update the state."""
        if not self.in_step or self.params is None or self.state is None:
            raise RuntimeError("run_round() outside a step: call begin_step() first")
        loop = self.rounds
        assert loop is not None
        t = time.perf_counter()
        before = am.utility_value(self.params, loop.state)
        successes = loop.play(counts, name=RUN_ROUND)
        c = loop.last_counts
        after = am.utility_value(self.params, loop.state)
        return RoundResult(
            counts=c,
            successes=successes,
            utility_gain=after - before,
            done=loop.done,
            observation=loop.observe(),
            seconds=time.perf_counter() - t,
        )

    def _generate(self, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        """Generate and verify one round (or the pilot) and record its rollouts: the round
        loop's "generate and score"; returns successes per prompt."""
        assert self._rollouts is not None
        ro = self._rollouts
        seed = derive_seed(self.cfg.seed, SAMPLING, self.step, ro.rounds, self.rank)
        prompts = [self.prompt_ids(e) for e in self.examples]
        with self.autocast():
            gen = self.engine.generate(prompts, counts.tolist(), self.sampling, seed=seed)
        examples = [self.examples[i] for i in gen.prompt_index]
        scores = self.task.score(examples, gen.texts, gen.completion_ids)
        rewards = np.asarray(scores.rewards, dtype=np.float64)
        return ro.add(gen, rewards, scores.errors)

    def finish_step(self) -> StepReport:
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
        assert ro is not None and self.rounds is not None
        ro.alloc_seconds += self.rounds.alloc_seconds  # the allocator's decisions
        cfg = self.cfg
        every = cfg.gradient_noise_every
        noise = (
            NoiseCollector(self.noise_projection, cfg.temperature)
            if every and self.step % every == 0
            else None
        )
        t = time.perf_counter()
        train = grpo_update(
            self.models,
            cfg,
            ro,
            [self.prompt_ids(e) for e in self.examples],
            noise=noise,
            step=self.step,
            skipped_before=self.nan_skipped,
            measure_update=bool(cfg.update_norm_every) and self.step % cfg.update_norm_every == 0,
        )
        self.nan_skipped += int(train["skipped"])
        train_seconds = time.perf_counter() - t
        self.engine.sync_weights(self.policy)
        s = np.asarray(self.state.successes, dtype=np.int64)
        f = np.asarray(self.state.failures, dtype=np.int64)
        t = time.perf_counter()
        self.beliefs.update(
            [e.id for e in self.examples], s, f, self.step, groups=self._belief_groups()
        )
        ro.alloc_seconds += time.perf_counter() - t
        report = build_report(
            ro,
            s,
            f,
            train,
            train_seconds,
            step=self.step + 1,  # numbered as the evaluation and checkpoint after it
            rollouts_total=self.rollouts_total,
            utility=self.utility,
            step_start=self.step_start,
            nan_skipped=self.nan_skipped,
            abandoned=self.abandoned,
            ranks=self.ranks,
        )
        for key in ("kappa", "within", "between", "prompts"):  # this rank's measurement
            if f"noise_{key}" in train:
                report.extra[f"gradient_noise/{key}"] = train[f"noise_{key}"]
        if self.auto_kappa is not None:
            report.extra["gradient_noise/kappa_used"] = self.auto_kappa.kappa
            if "noise_kappa" in train:  # the same on every rank: rank 0's measurement
                self.auto_kappa.update(self.ranks.from_rank0(train["noise_kappa"]))
        self.rollouts_total += report.rollouts
        report.rollouts_total = self.rollouts_total
        self.step += 1
        self._rollouts = None
        return report

    def train_step(self) -> StepReport:
        """One whole step with the trainer's own allocator: rounds until the budget is spent."""
        if self.external:
            raise RuntimeError(
                "this trainer was built with external=True: its caller allocates through "
                "begin_step()/run_round()/finish_step(), so train_step() has no allocator"
            )
        self.begin_step()
        loop = self.rounds
        assert loop is not None
        while not loop.done:
            try:
                self.run_round(loop.decide())
            except ValueError as exc:
                name = getattr(self.allocator, "name", type(self.allocator).__name__)
                raise ValueError(
                    f"allocator {name!r} returned an invalid allocation: {exc}"
                ) from exc
        return self.finish_step()

    # --- evaluation -----------------------------------------------------------------------
    def evaluate(
        self, *, size: int | None = None, k: int | None = None, split: str | None = None
    ) -> dict[str, float]:
        """Held-out pass@1 and pass@k overall and per level (``pass@1/level<L>``), and
        ``prompts``, on ``size`` prompts of ``split`` (default ``cfg.eval_split``: ``"test"`` or
        ``"validation"``; ``held_out_subset``) with ``k`` samples each
        (``trainers.grpo.evaluation.evaluate_examples``).

        ``split="train"`` evaluates ``size`` prompts of the training set instead (spread over it
        the same way, always the same ones): beside the held-out figures it shows memorisation,
        e.g. when a small ``task_size`` makes the run revisit its prompts.
        """
        cfg = self.cfg
        k = cfg.eval_k if k is None else k
        size = cfg.eval_size if size is None else size
        split = cfg.eval_split if split is None else split
        pools = {"test": self.task.test, "validation": self.task.validation,
                 "train": self.task.train}  # fmt: skip
        if split not in pools:
            raise ValueError(f"split must be one of {list(pools)}, got {split!r}")
        examples = held_out_subset(pools[split], size)
        if not examples:
            fix = (
                ": give --validation-size N (arithmetic) or a task with a validation split"
                if split == "validation"
                else ""
            )
            raise ValueError(f"task {self.task.name!r} has no {split} prompts to evaluate{fix}")
        return evaluate_examples(
            self.engine,
            examples,
            encode=self.prompt_ids,
            score=self.task.score,
            sampling=self.sampling,
            k=k,
            seed=derive_seed(cfg.seed, EVALUATION, self.rank),  # the same samples every time
            ranks=self.ranks,
            autocast=self.autocast,
        ).figures

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
            "auto_kappa": self.auto_kappa.state_dict() if self.auto_kappa is not None else None,
            "allocator": allocator_state(self.allocator),
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
        self.data.seek(int(state["epoch"]), int(state["cursor"]))
        self.optimizer.load_state_dict(state["optimizer"])
        self.beliefs.load_state_dict(state["beliefs"])
        if self.auto_kappa is not None and state.get("auto_kappa") is not None:
            self.auto_kappa.load_state_dict(state["auto_kappa"])
        self._allocator_state = state.get("allocator")  # None from checkpoints before it
        if self.allocator is not None:
            self._restore_allocator()
        torch.set_rng_state(state["torch_rng"])

    def close(self) -> None:
        """Release the engine and the accelerator's process group."""
        self.engine.close()


def allocator_state(allocator: Any) -> dict[str, Any] | None:
    """What an allocator keeps across steps for a checkpoint (its ``state_dict()``: ``bamdp``'s
    kept rounds plan), None for one without state."""
    fn = getattr(allocator, "state_dict", None)
    return fn() if callable(fn) else None


#: how ``run_round``'s caller is named when its counts break the allocation contract
RUN_ROUND = "passed to run_round()"


def _is_adaptive(spec: Any) -> bool:
    if isinstance(spec, str):
        from agents.registry import is_adaptive

        return is_adaptive(spec)
    return bool(getattr(spec, "adaptive", True))


def __getattr__(name: str) -> Any:
    if name == "TrainingUtility":
        warnings.warn(
            "TrainingUtility is renamed StepReport (trainers.grpo.step_report.StepReport); the old "
            "name "
            "will go",
            DeprecationWarning,
            stacklevel=2,
        )
        return StepReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
