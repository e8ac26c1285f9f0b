"""adaroll allocators inside TRL: ``AllocatingGRPOTrainer``, a subclass of ``trl.GRPOTrainer``.

One changed line turns a TRL GRPO script into an allocating one::

    from trainers.trl.trainer import AllocatingGRPOTrainer as GRPOTrainer

    trainer = GRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...),
                          train_dataset=..., allocator="prior_filter")

The recommended allocator (the README's and ``scripts/trl_example.py``'s default) is
``prior_filter`` with a pool: ``num_generations`` halved and twice the prompts a batch (the same
completions), so that it can skip the prompts its grouped prior calls hopeless or solved.
``allocator`` itself defaults to ``"uniform"``, plain TRL bit for bit.

Budget semantics. Each generation batch keeps the prompts TRL drew and exactly the completions
TRL would have generated (prompts × ``num_generations``); only how many each prompt gets changes,
decided by the allocator in rounds (``round_size`` rollouts per round, after an optional
``pilot`` per prompt), each round seeing the rewards of the ones before. TRL's batch shapes,
gradient accumulation, ``steps_per_generation`` and ``num_iterations`` are unchanged. Advantages
over the ragged groups come from :func:`trainers.grpo.group_advantages` with TRL's
``scale_rewards`` meaning (and TRL's ``multi_objective_aggregation``); everything downstream,
the loss included, is TRL's own. When the allocation is TRL's own layout (one round, every prompt
``num_generations`` completions in TRL's order, as ``uniform`` gives), TRL's advantages are kept
as they are: the same numbers (the tests check it) computed bit for bit as plain TRL does, so
``allocator="uniform"`` reproduces ``trl.GRPOTrainer`` exactly.

Beliefs. A per-prompt :class:`trainers.allocation.beliefs.BeliefStore` (prompts keyed by a hash of
their text, evidence decaying by ``belief_decay`` per optimizer step) gives each batch its Beta
priors; a completion whose reward (TRL's weighted sum over reward functions) reaches
``success_threshold`` counts as a success. The store goes into every TRL checkpoint
(``adaroll_allocation.json``) and comes back with ``train(resume_from_checkpoint=...)``.

TRL methods replaced, and why (TRL 1.14 from 1.14.2, or 1.16: ``TRL_RANGE``, checked at import; the
same in both lines, as ``TRL_LINES`` says):

- ``_generate_and_score_completions``: in training, runs the allocation rounds (each round
  generates through TRL's own ``_generate`` and scores through TRL's own ``_calculate_rewards``),
  then hands the resulting rows to TRL's method, which builds the batch, the old log-probs and
  the logs as usual; afterwards it replaces TRL's advantages, which assume groups of
  ``num_generations`` consecutive rows, by the ragged-group ones, and logs the allocation
  metrics. Evaluation is TRL's own (uniform ``num_generations_eval``).
- ``_generate`` and ``_calculate_rewards``: while TRL's method runs on the allocated rows, they
  return what the rounds already generated and scored, so nothing is generated or scored twice.
- ``_generate_single_turn``: passes TRL's vLLM server path the round's per-prompt ``n`` when every
  prompt of the round got the same count (TRL's server code takes one ``n`` per call), and
  ``n = 1`` per row otherwise; TRL's colocate and transformers paths already generate one
  completion per row, so any split works there unchanged.
- ``_save_checkpoint`` / ``_load_optimizer_and_scheduler``: write and read the belief store in the
  checkpoint directory, as TRL itself does for its adaptive-entropy state.
- ``_get_train_sampler`` / ``_init_training_state`` (``trainers.trl.data_order.KeepDataOrder``): a
  run resumed in a later epoch reads the prompts in the order the unstopped run would have
  (TRL's ``RepeatSampler`` restarts at epoch 0's permutation otherwise).

Metrics go through TRL's ``_metrics`` (so every ``report_to`` backend gets them), under
``allocation/``: rollouts per prompt (min/mean/max), informative fraction (prompts with both a
success and a failure), gradient-carrying rollouts (non-zero advantage), allocation seconds and
their share of the generate-and-score time (``overhead``), and rounds.

Multi-process (``accelerate launch``): the main process allocates for the whole generation batch
and broadcasts each round's counts. TRL's sampler places a prompt's ``num_generations`` copies
contiguously and splits the batch across processes by position, so one prompt's group can span
processes; allocating each process's own prompts would need whole groups per process and would
leave each process with a partial belief store, so checkpoints (written by the main process)
would lose the others' beliefs. With the main process allocating, every process sees the same
gathered rewards and keeps an identical belief store, the allocation does not depend on the
number of processes, and it costs one gather of the batch's rows and one broadcast of a few
integers per round. Each round's rollouts are split evenly over the processes, so
``round_size`` (and ``pilot`` × prompts) must be a multiple of the number of processes.

Not supported (a clear error at construction or on the first batch): TRL's ``tools``,
``environment_factory``, ``rollout_func`` and image prompts, whose per-row state TRL builds
before generation.

The module is over 500 lines because of this docstring (the contract with TRL, stated once) and
because TRL's hooks must be methods of one subclass; the TRL-free pieces (prompt keys, the
dataset and reward adapters, records, argument checks) live in :mod:`trainers.trl.adapters`.

>>> trainer = AllocatingGRPOTrainer(model=..., reward_funcs=..., args=...,
...                                 train_dataset=..., allocator="prior_filter")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

#: the TRL release lines this module was written against and tested with, one specifier set each
#: (the ``trl`` extra pins the same, ``TRL_REQUIREMENT``). What differs between them for the hooks
#: below (read in both releases' ``grpo_trainer.py``): nothing in the methods replaced or the
#: attributes read; ``_generate_single_turn`` takes ``num_generations`` in both (1.14.0 did not: it
#: is left out, and so is 1.14.1, untested, which differs from 1.14.2 only in its eos handling).
#: 1.14 logs decoded prompt and completion texts in ``_logs`` where 1.16 logs the prompts as
#: given, which this module never reads; 1.15 is untested and refused.
TRL_LINES = (">=1.14.2,<1.15", ">=1.16,<1.17")

#: ``TRL_LINES`` in words, for messages
TRL_RANGE = " or ".join(TRL_LINES)

#: ``TRL_LINES`` as one pip requirement (the ``trl`` extra's)
TRL_REQUIREMENT = "trl>=1.14.2,<1.17,!=1.15.*"

#: file written into each TRL checkpoint directory
STATE_FILE = "adaroll_allocation.json"

#: allocation records kept in ``AllocatingGRPOTrainer.allocations`` (oldest dropped first)
RECORDS_KEPT = 10_000


def check_trl_version(version: str) -> None:
    """Raise ``ImportError`` naming the supported lines when ``version`` is in none of them."""
    try:
        parsed = Version(version)
        ok = any(SpecifierSet(line).contains(parsed, prereleases=True) for line in TRL_LINES)
    except InvalidVersion:
        ok = False
    if not ok:
        raise ImportError(
            f"trainers.trl.trainer supports trl {TRL_RANGE}, but trl {version} is installed: "
            f'install a supported release (pip install -e ".[trl]" or pip install '
            f'"{TRL_REQUIREMENT}")'
        )


try:
    import trl
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        'trainers.trl needs TRL: pip install -e ".[trl]" (it pins the supported trl releases)'
    ) from exc

check_trl_version(trl.__version__)

import torch  # noqa: E402  (after the version check, which should fail fast)
from accelerate.utils import broadcast_object_list, gather_object  # noqa: E402

from adaroll_env import model as am  # noqa: E402
from agents.rounds import RoundLoop, StepPlan, plan_step, resolve_pilot  # noqa: E402
from trainers.allocation.beliefs import BeliefStore  # noqa: E402
from trainers.grpo.data_order import ALLOCATOR, derive_seed  # noqa: E402
from trainers.grpo.objective import ScaleRewards, group_advantages  # noqa: E402
from trainers.trl.adapters import (  # noqa: E402  (re-exported: documented as trainers.trl.trainer names)
    AllocationRecord,
    check_allocation_arguments,
    merge_generated,
    prompt_key,
    task_dataset,
    task_reward,
    unsupported,
    zero_std_fraction,
)
from trainers.trl.data_order import KeepDataOrder  # noqa: E402

__all__ = [
    "RECORDS_KEPT",
    "STATE_FILE",
    "TRL_LINES",
    "TRL_RANGE",
    "TRL_REQUIREMENT",
    "AllocatingGRPOTrainer",
    "AllocationRecord",
    "check_trl_version",
    "prompt_key",
    "task_dataset",
    "task_reward",
]


@dataclass
class _Pending:
    """What the rounds generated and scored, handed to TRL's own method."""

    generated: tuple[Any, ...]
    rewards_per_func: torch.Tensor  # [N, F], all processes, in TRL's gathered order
    group_ids: NDArray[np.int64]  # [N], prompt index of each row, same order
    trl_layout: bool  # one round, num_generations each, TRL's row order


class AllocatingGRPOTrainer(KeepDataOrder, trl.GRPOTrainer):  # type: ignore[misc]
    """``trl.GRPOTrainer`` whose completions per prompt are set by an adaroll allocator.

    Takes every argument of ``trl.GRPOTrainer`` plus (keyword only):

    - ``allocator``: any spec ``agents.make_allocator`` takes (``"uniform"``, ``"bamdp"``,
      ``"sb3:pretrained"``, ``"package.module:Class"``) or an allocator instance.
    - ``allocator_kwargs``: keyword arguments for building it from a spec.
    - ``utility``: the training utility the allocator maximises (default ``"snr(8)"``).
    - ``round_size``: rollouts handed out per round, all processes together (default: one per
      prompt of the generation batch for allocators that react to outcomes, rounded up to a
      multiple of the processes; the whole budget in one round for those that do not).
    - ``round_schedule``: unequal rounds instead of ``round_size`` (a spec such as ``"384,128"``
      or ``"0.75,0.25"`` for the completions after the pilot, all processes together:
      ``adaroll_env.parse_round_schedule``); each round a multiple of the processes;
      outcome-blind allocators keep one round. Default ``"auto"``: ``"0.5,0.5"`` (the
      trainer's default, ``adaroll_env.schedules.DEFAULT_ROUND_SCHEDULE``) unless
      ``round_size`` is given, one round for an allocator whose class sets ``one_round``
      (``prior_filter``); ``None``: equal rounds of ``round_size``.
    - ``pilot``: rollouts every prompt gets before the allocator's first decision (default: the
      allocator's own ``default_pilot`` with the default rounds, 2 for ``bamdp`` and 0 for the
      others, at most a quarter of the budget and lowered until its rollouts divide among the
      processes; 0 where ``round_size`` or a ``round_schedule`` is given:
      ``agents.rounds.resolve_pilot``).
    - ``pilot_threshold``: a prompt whose prior gives its pilot rollouts less than this chance of
      a success, or of a failure (a never-solved group's point mass at 0), skips the pilot; the
      first round after it hands out what was skipped (default 0: every prompt gets the pilot;
      ``adaroll_env.model.pilot_counts``). One process only: with several, the pilot round's
      size would change with the priors and need not divide among them.
    - ``max_group``: cap on one prompt's rollouts per generation batch (default: none).
    - ``belief_decay``: per-optimizer-step forgetting of a prompt's past outcomes, in (0, 1].
    - ``belief_prior``: prior of unseen prompts, ``"fitted"`` (default: the Beta-binomial
      maximum-likelihood Beta of the store's counts) or ``"fixed"`` (Beta(1, 1)).
    - ``belief_fit``: how old evidence enters a fitted prior, ``"weighted"`` (default: each
      prompt's counts as observed, the prompt weighted by ``belief_decay ** age``) or
      ``"discounted"`` (the rule before 2026-12-06: counts discounted by ``belief_decay`` read as
      observations; ``trainers.allocation.beliefs``); not used with ``belief_prior="fixed"``.
    - ``belief_group``: a dataset column (e.g. ``"level"``) whose value groups prompts for
      fitted priors, one Beta per group (needs ``belief_prior="fitted"``; default: none, as a
      dataset need not have such a column).
    - ``success_threshold``: a completion whose reward reaches it counts as a success.

    The budget is prompts per generation batch × ``num_generations``. A *pool*, as the trainer's
    ``pool_size``: more prompts and fewer ``num_generations`` at the same budget (128 × 4 for
    64 × 8), from which an allocator that reads beliefs (``prior_filter``) gives whole groups
    to some prompts and none to the others.

    ``allocations`` keeps an :class:`AllocationRecord` per generation batch (the last
    ``RECORDS_KEPT``); ``batches_generated`` and ``rollouts_generated`` count every training
    generation batch and every completion generated for one since this trainer was built (not
    restored from checkpoints); ``belief_store`` is the
    :class:`~trainers.allocation.beliefs.BeliefStore`.
    """

    def __init__(
        self,
        *args: Any,
        allocator: Any = "uniform",
        allocator_kwargs: dict[str, Any] | None = None,
        utility: str = "snr(8)",
        round_size: int | None = None,
        round_schedule: str | None = "auto",
        pilot: int | None = None,
        pilot_threshold: float = 0.0,
        max_group: int | None = None,
        belief_decay: float = 0.95,
        belief_prior: str = "fitted",
        belief_fit: str = "weighted",
        belief_group: str | None = None,
        success_threshold: float = 0.5,
        **kwargs: Any,
    ) -> None:
        self._pending: _Pending | None = None
        self._round_n: int | None = None
        if round_schedule not in (None, "auto") and round_size is not None:
            raise ValueError(
                f"round_schedule ({round_schedule!r}) and round_size ({round_size}) are both "
                "set: give one (the schedule sets every round's size)"
            )
        round_size, pilot, max_group = check_allocation_arguments(
            allocator, allocator_kwargs, round_size, pilot, max_group, kwargs
        )
        if belief_group is not None and belief_prior != "fitted":
            raise ValueError(
                f"belief_group {belief_group!r} fits one prior per group, which needs "
                "belief_prior='fitted' (with 'fixed' every prompt starts from the same prior)"
            )
        self.belief_group = belief_group
        self.belief_store = BeliefStore(
            decay=belief_decay,
            base=belief_prior,  # type: ignore[arg-type]
            fit=belief_fit,  # type: ignore[arg-type]
        )
        self.success_threshold = float(success_threshold)
        self.allocations: deque[AllocationRecord] = deque(maxlen=RECORDS_KEPT)
        self.batches_generated = 0
        self.rollouts_generated = 0
        super().__init__(*args, **kwargs)
        pilot_given = pilot is not None
        pilot = self._check_trl_settings(pilot, round_size, round_schedule, allocator)
        self.allocator_spec = allocator
        self.utility = utility
        self.pilot = pilot
        self.max_group = max_group
        self.round_size = round_size
        self._build_allocator(allocator, allocator_kwargs)
        world = int(self.accelerator.num_processes)
        if pilot_threshold and world > 1:
            raise ValueError(
                f"AllocatingGRPOTrainer: pilot_threshold {pilot_threshold} skips the pilot for "
                f"some prompts, so the pilot round's size changes with the priors and need not "
                f"divide among {world} processes: run one process, or give pilot_threshold=0"
            )
        U = self.num_prompts
        # an allocator's own pilot is lowered until every round divides among the processes
        tries = [self.pilot] if pilot_given or world == 1 else list(range(self.pilot, -1, -1))
        for tried in tries:
            try:
                #: the whole generation batch's step without its priors (the main process
                #: allocates)
                self.plan: StepPlan = plan_step(
                    budget=U * self.group_budget,
                    batch=-(-U // world) * world,  # rounds of B, whole multiples of processes
                    questions=U,
                    adaptive=bool(getattr(self.allocator, "adaptive", True)),
                    pilot=tried,
                    pilot_threshold=pilot_threshold,
                    max_group=self.max_group,
                    utility=self.utility,
                    round_size=round_size,
                    round_schedule=round_schedule,
                    allocator=allocator,
                    world=world,
                )
            except ValueError as exc:
                if tried == tries[-1]:
                    raise self._budget_error(exc) from exc
                continue
            if tried == tries[-1] or not self._rounds_do_not_divide(world):
                break
        self.pilot = self.plan.pilot
        if self._rounds_do_not_divide(world):
            raise ValueError(
                f"AllocatingGRPOTrainer: the pilot ({self.pilot} × {U} prompts) and rounds of "
                f"{self.plan.round_size} (of {U * self.group_budget} completions) do not divide "
                f"among {world} processes: give pilot, round_size or round_schedule so that "
                f"every round is a multiple of {world} (each process generates its share)"
            )
        self.rounds_size = self.plan.round_size  # global rollouts of the first round
        self._params()  # validated now, not mid-run

    def _rounds_do_not_divide(self, world: int) -> bool:
        """Whether a round of ``self.plan`` (the pilot, each round after) does not divide among
        ``world`` processes."""
        if world == 1:
            return False
        from agents.bamdp.rounds import round_sizes

        plan = self.plan
        sizes = (plan.pilot * plan.num_questions, *round_sizes(plan.params()))
        return any(n % world for n in sizes)

    def _check_trl_settings(
        self, pilot: int | None, round_size: int | None, round_schedule: Any, allocator: Any
    ) -> int:
        """After TRL's constructor: refuse its per-row features, set the budget and return the
        pilot (unset: the allocator's own, ``agents.rounds.resolve_pilot``)."""
        for name, value in (
            ("tools", self.tools),
            ("environment_factory", self.environment_factories),
            ("rollout_func", self.rollout_func),
        ):
            if value:
                raise ValueError(unsupported(name))
        G = int(self.num_generations or 0)
        if G < 2:
            raise ValueError(
                f"num_generations must be >= 2, got {G}: it sets the budget (prompts × "
                "num_generations completions per generation batch) and TRL's groups need two"
            )
        world = int(self.accelerator.num_processes)
        batch = int(cast(Any, self.args).generation_batch_size)
        self.group_budget = G  # completions per prompt on average (TRL's num_generations)
        self.num_prompts = batch // G  # prompts per generation batch, all processes
        if round_size is not None and world > 1 and round_size % world:
            raise ValueError(
                f"round_size ({round_size}) must be a multiple of the number of processes "
                f"({world}): each round's rollouts are split evenly over them"
            )
        pilot = resolve_pilot(
            pilot,
            allocator,
            budget=self.num_prompts * G,
            questions=self.num_prompts,
            round_size=round_size,
            round_schedule=round_schedule,
        )
        return pilot

    def _build_allocator(self, allocator: Any, allocator_kwargs: dict[str, Any] | None) -> None:
        """Build (and so validate) the allocator now, not mid-run."""
        try:
            params = am.AllocationParams(
                num_questions=self.num_prompts,
                budget=self.num_prompts * self.group_budget,
                pilot=self.pilot,
                max_group=self.max_group,
                mode="rounds",
                round_size=self.num_prompts,
                utility=self.utility,
            )
        except ValueError as exc:
            raise self._budget_error(exc) from exc
        if isinstance(allocator, str):
            from agents import make_allocator

            self.allocator = make_allocator(
                allocator, params, seed=self.args.seed, **(allocator_kwargs or {})
            )
        else:
            self.allocator = allocator
            self.allocator.reset(params, seed=self.args.seed)
        self.allocator_name = str(getattr(self.allocator, "name", type(self.allocator).__name__))

    # --- the allocation -----------------------------------------------------------------------
    def _params(self, prior: tuple[Any, Any] = (1.0, 1.0)) -> am.AllocationParams:
        """A generation batch's ``AllocationParams``: the plan with these priors."""
        try:
            return self.plan.params(prior[0], prior[1])
        except ValueError as exc:
            raise self._budget_error(exc) from exc

    def _budget_error(self, exc: Exception) -> ValueError:
        return ValueError(
            f"AllocatingGRPOTrainer: {exc} (the budget is prompts per generation batch "
            f"({self.num_prompts}) × num_generations ({self.group_budget}))"
        )

    def _batch_prompts(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One row per prompt of the generation batch (all processes), checking TRL's layout."""
        world = int(self.accelerator.num_processes)
        G = self.group_budget
        rows = gather_object(list(inputs)) if world > 1 else list(inputs)
        if any(("image" in r or "images" in r) for r in rows[:1]):
            raise ValueError(
                "AllocatingGRPOTrainer does not support image prompts (TRL prepares them before "
                "generation, per row): drop the image columns or use trl.GRPOTrainer"
            )
        U = len(rows) // G
        firsts = [rows[j * G] for j in range(U)]
        for j in range(U):
            if any(rows[j * G + k]["prompt"] != firsts[j]["prompt"] for k in range(G)):
                raise RuntimeError(
                    "TRL's generation batch is not made of num_generations consecutive copies of "
                    "each prompt (RepeatSampler's layout), which this trainer relies on"
                )
        return firsts

    def _groups(self, firsts: list[dict[str, Any]]) -> list[Any] | None:
        """Each prompt's ``belief_group`` column value (None without grouping)."""
        column = self.belief_group
        if column is None:
            return None
        missing = [i for i, r in enumerate(firsts) if column not in r]
        if missing:
            raise ValueError(
                f"belief_group {column!r} is not a column of the training dataset (row columns: "
                f"{sorted(firsts[missing[0]])}): name one, e.g. 'level'"
            )
        return [r[column] for r in firsts]

    def _decide(self, loop: RoundLoop) -> NDArray[np.int64]:
        """This round's counts: the main process's allocation (checked against the contract),
        broadcast to every process; an error there is raised on every process."""
        message: list[Any] = [None, None]
        if self.accelerator.is_main_process:
            try:
                message = [loop.decide(), None]
            except Exception as exc:  # sent to every process, then raised everywhere
                message = [None, exc]
        if int(self.accelerator.num_processes) > 1:
            broadcast_object_list(message, from_process=0)
        if message[1] is not None:
            raise message[1]
        return np.asarray(message[0], dtype=np.int64)

    def _run_round(
        self, firsts: list[dict[str, Any]], counts: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], list[dict[str, Any]], tuple[Any, ...], torch.Tensor]:
        """Generate and score one round on this process's share of it; returns the round's
        prompt index per rollout (all processes), this process's rows, TRL's generate output
        and the gathered rewards [n_round, F]."""
        world, rank = int(self.accelerator.num_processes), int(self.accelerator.process_index)
        order = np.repeat(np.arange(len(firsts), dtype=np.int64), counts)  # [n_round]
        share = order.size // world
        assert share * world == order.size, "round sizes are multiples of the processes"
        mine = order[rank * share : (rank + 1) * share]
        round_rows = [dict(firsts[q]) for q in mine]
        round_prompts = [r["prompt"] for r in round_rows]
        nonzero = counts[counts > 0]
        self._round_n = int(nonzero[0]) if np.all(nonzero == nonzero[0]) else 1
        try:
            out = super()._generate(round_prompts)
        finally:
            self._round_n = None
        rewards = self._calculate_rewards(round_rows, round_prompts, out[3], out[1])
        return order, round_rows, out, rewards

    def _generate_rounds(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run the allocation rounds of one generation batch (``agents.rounds.RoundLoop``);
        returns this process's rows and leaves what was generated and scored in
        ``self._pending``."""
        start = time.perf_counter()
        firsts = self._batch_prompts(inputs)
        U = len(firsts)
        prompts = [r["prompt"] for r in firsts]
        ids = [prompt_key(p) for p in prompts]
        groups = self._groups(firsts)
        step = int(self.state.global_step)
        t = time.perf_counter()  # the priors (and their refits) count as allocation time
        alpha, beta = self.belief_store.prior(ids, step, groups)
        prior_seconds = time.perf_counter() - t
        params = self._params((tuple(alpha.tolist()), tuple(beta.tolist())))
        gen_parts: list[tuple[Any, ...]] = []
        reward_parts: list[torch.Tensor] = []  # per round: [n_round, F], gathered (rank order)
        order_parts: list[NDArray[np.int64]] = []
        local_rows: list[dict[str, Any]] = []
        trl_seconds = [0.0]  # inside TRL's generate and reward calls

        def generate(counts: NDArray[np.int64]) -> NDArray[np.int64]:
            t = time.perf_counter()
            order, round_rows, out, rewards = self._run_round(firsts, counts)
            trl_seconds[0] += time.perf_counter() - t
            total = (rewards * self.reward_weights.to(rewards.device).unsqueeze(0)).nansum(dim=1)
            total[torch.isnan(rewards).all(dim=1)] = torch.nan
            good = (total >= self.success_threshold).cpu().numpy()  # NaN counts as a failure
            gen_parts.append(out)
            reward_parts.append(rewards)
            order_parts.append(order)
            local_rows.extend(round_rows)
            return np.bincount(order, weights=good, minlength=U).astype(np.int64)

        main = self.accelerator.is_main_process
        loop = RoundLoop(
            params,
            generate,
            allocator=self.allocator if main else None,
            seed=derive_seed(self.args.seed, ALLOCATOR, step),
            name=repr(self.allocator_name),
        )
        loop.pilot()
        while not loop.done:
            loop.play(self._decide(loop))
        state = loop.state
        t = time.perf_counter()
        self.belief_store.update(ids, state.successes, state.failures, step, groups=groups)
        alloc_seconds = prior_seconds + loop.alloc_seconds + time.perf_counter() - t
        self._pending = self._pending_batch(gen_parts, reward_parts, order_parts, state)
        record = AllocationRecord(
            step=step,
            counts=np.asarray(state.rollouts, dtype=np.int64).tolist(),
            successes=np.asarray(state.successes).astype(int).tolist(),
            rounds=len(gen_parts),
            alloc_seconds=alloc_seconds,
            seconds=time.perf_counter() - start,  # updated when the batch is complete
            own_seconds=time.perf_counter() - start - trl_seconds[0],
            prompts=prompts,
        )
        self._log_allocation(record, state)
        return local_rows

    def _pending_batch(
        self,
        gen_parts: list[tuple[Any, ...]],
        reward_parts: list[torch.Tensor],
        order_parts: list[NDArray[np.int64]],
        state: am.AllocationState,
    ) -> _Pending:
        """The rounds' outputs in TRL's gathered order: process 0's rows (its share of each
        round), then process 1's, ..."""
        world = int(self.accelerator.num_processes)

        def by_rank(parts: list[Any], cat: Any) -> Any:
            pieces = []
            for p in range(world):
                for part in parts:
                    share = len(part) // world
                    pieces.append(part[p * share : (p + 1) * share])
            return cat(pieces)

        counts_total = np.asarray(state.rollouts, dtype=np.int64)
        return _Pending(
            generated=merge_generated(gen_parts),
            rewards_per_func=by_rank(reward_parts, lambda xs: torch.cat(xs, dim=0)),
            group_ids=by_rank(order_parts, np.concatenate),
            trl_layout=len(gen_parts) == 1 and bool(np.all(counts_total == self.group_budget)),
        )

    def _log_allocation(self, record: AllocationRecord, state: am.AllocationState) -> None:
        """Keep the batch's record and log its allocation metrics under ``allocation/``."""
        counts_total = np.asarray(record.counts)
        s = np.asarray(state.successes)
        f = np.asarray(state.failures)
        metrics = self._metrics["train"]
        metrics["allocation/rollouts_per_prompt_min"].append(float(counts_total.min()))
        metrics["allocation/rollouts_per_prompt_mean"].append(float(counts_total.mean()))
        metrics["allocation/rollouts_per_prompt_max"].append(float(counts_total.max()))
        metrics["allocation/informative_frac"].append(float(np.mean((s > 0) & (f > 0))))
        metrics["allocation/rounds"].append(float(record.rounds))
        metrics["allocation/seconds"].append(record.alloc_seconds)
        self.allocations.append(record)
        self.batches_generated += 1
        self.rollouts_generated += int(counts_total.sum())

    def _ragged_advantages(self, rewards_per_func: torch.Tensor, group_ids: Any) -> torch.Tensor:
        """TRL's advantages with its ``scale_rewards`` and ``multi_objective_aggregation``, over
        the ragged groups ``group_ids``; completions no reward function scored get 0."""
        weights = self.reward_weights.to(rewards_per_func.device)  # [F]
        unscorable = torch.isnan(rewards_per_func).all(dim=1)  # [N]
        g = np.asarray(group_ids)
        if self.multi_objective_aggregation == "normalize_then_sum":
            normed = torch.zeros_like(rewards_per_func)  # [N, F]
            for k in range(rewards_per_func.shape[1]):
                col = rewards_per_func[:, k]
                ok = ~torch.isnan(col)
                if ok.any():
                    sel = ok.cpu().numpy()
                    normed[ok, k] = group_advantages(col[ok], g[sel], scale="group")
            rewards = (normed * weights.unsqueeze(0)).sum(dim=1)  # [N]
            groups = np.zeros_like(g)  # one batch-wide normalisation afterwards
            scale: ScaleRewards = "batch"
        else:
            rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)  # [N]
            groups = g
            scale = cast(ScaleRewards, self.scale_rewards)
        adv = torch.zeros_like(rewards)  # [N]
        ok = ~unscorable
        if ok.any():
            sel = ok.cpu().numpy()
            adv[ok] = group_advantages(rewards[ok], groups[sel], scale=scale)
        return adv

    # --- TRL hooks ----------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        model: Any = self.model
        if not model.training:
            return super()._generate_and_score_completions(inputs)  # type: ignore[no-any-return]
        start = time.perf_counter()
        rows = self._generate_rounds(inputs)
        pending = self._pending
        assert pending is not None
        t = time.perf_counter()
        try:
            output = super()._generate_and_score_completions(rows)
        finally:
            self._pending = None
        trl_seconds = time.perf_counter() - t
        metrics = self._metrics["train"]
        if pending.trl_layout:
            adv_all = torch.as_tensor(list(self._logs["advantages"])[-len(pending.group_ids) :])
        else:
            adv_all = self._ragged_advantages(pending.rewards_per_func, pending.group_ids)
            n_local = len(rows)
            rank = int(self.accelerator.process_index)
            local = adv_all[rank * n_local : (rank + 1) * n_local]
            output["advantages"] = local.to(output["advantages"].device, torch.float32)
            logged: Any = self._logs["advantages"]
            for _ in range(min(len(adv_all), len(logged))):
                logged.pop()
            logged.extend(adv_all.tolist())
            metrics["frac_reward_zero_std"][-1] = zero_std_fraction(
                pending.rewards_per_func, self.reward_weights, pending.group_ids
            )
        seconds = time.perf_counter() - start
        record = self.allocations[-1]
        record.seconds = seconds
        record.own_seconds += seconds - (t - start) - trl_seconds  # after TRL's method too
        metrics["allocation/gradient_rollouts"].append(float((adv_all != 0).sum().item()))
        metrics["allocation/overhead"].append(record.alloc_seconds / max(seconds, 1e-12))
        return output  # type: ignore[no-any-return]

    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        pending = self._pending
        if pending is None:
            return super()._generate(prompts)  # type: ignore[no-any-return]
        assert len(pending.generated[1]) == len(prompts)
        return pending.generated

    def _calculate_rewards(
        self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any
    ) -> torch.Tensor:
        pending = self._pending
        if pending is None:
            return super()._calculate_rewards(  # type: ignore[no-any-return]
                inputs, prompts, completions, completion_ids_list
            )
        return pending.rewards_per_func

    def _generate_single_turn(
        self,
        prompt_ids: Any,
        images: Any,
        multimodal_fields: Any,
        num_generations: int,
        has_tool_images: bool = False,
    ) -> tuple[Any, Any]:
        if self._round_n is not None:
            num_generations = self._round_n  # the rows repeat each prompt this many times
        return super()._generate_single_turn(  # type: ignore[no-any-return]
            prompt_ids, images, multimodal_fields, num_generations, has_tool_images
        )

    # --- checkpoints --------------------------------------------------------------------------
    def allocation_state(self) -> dict[str, Any]:
        """What goes into checkpoints: the belief store, the allocator's name and what the
        allocator keeps across steps (its ``state_dict``: ``bamdp``'s kept rounds plan)."""
        from trainers.grpo.trainer import allocator_state

        return {
            "allocator": self.allocator_name,
            "beliefs": self.belief_store.state_dict(),
            "allocator_state": allocator_state(self.allocator),
        }

    def load_allocation_state(self, state: dict[str, Any]) -> None:
        """Restore what ``allocation_state`` returned (a checkpoint written before allocators
        kept state has no ``allocator_state``)."""
        self.belief_store.load_state_dict(state["beliefs"])
        kept = state.get("allocator_state")
        if kept is not None and hasattr(self.allocator, "load_state_dict"):
            self.allocator.load_state_dict(kept)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            folder = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            path = os.path.join(self._get_output_dir(trial=trial), folder, STATE_FILE)
            with open(path, "w") as fh:
                json.dump(self.allocation_state(), fh)

    def _load_optimizer_and_scheduler(self, checkpoint: Any) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            path = os.path.join(checkpoint, STATE_FILE)
            if os.path.exists(path):
                with open(path) as fh:
                    self.load_allocation_state(json.load(fh))
