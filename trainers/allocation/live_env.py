"""``AdaRoll/GRPOTraining-v0``: the allocation env where a real GRPO trainer makes the rollouts."""

from __future__ import annotations

import dataclasses
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from adaroll_env import model as am
from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer


class GRPOTrainingEnv(gym.Env[dict[str, NDArray[np.float32]], NDArray[np.float32]]):
    """Allocate the rollouts of real GRPO training steps.

    ## Description

    The live counterpart of ``AdaRoll/BetaBernoulliRounds-v0`` (docs: design §7). One episode is one
    GRPO step of a persistent ``trainers.GRPOTrainer``: ``reset`` calls ``begin_step`` (the next
    batch of prompts, their Beta priors from the trainer's belief store, the pilot), each
    ``step`` is one generation round (``run_round``: generate, verify, update beliefs), and the
    step that spends the budget runs ``finish_step`` — one GRPO update on all the groups — whose
    report lands in ``info["report"]``. The trainer, its model and its belief store persist
    across episodes, so the policy being trained changes under the agent's feet; that is the
    point. ``close()`` releases the trainer.

    ## Action Space

    ``Box(-1, 1, (B,), float32)``, read exactly as the simulated rounds env reads it
    (``adaroll_env.decode_action``): the round of R rollouts is split in proportion to
    ``(a + 1) / 2`` by largest remainder under the caps. ``adaroll_env.encode_counts(counts)``
    gives the action for exact counts.

    ## Observation Space

    The simulated envs' flat ``Dict``: ``alpha``, ``beta``, ``successes``, ``rollouts``,
    ``budget_left``, ``mean``, ``std`` (float32), with the priors taken from the belief store.

    ## Rewards

    The increase of training utility (``utility``, default ``snr(8)``) the round caused; the
    first step also carries the pilot's utility, so the return is the step's final utility, as in
    simulation.

    ## Starting State

    The next batch of the trainer's seeded data order, after the pilot.

    ## Episode End

    Terminated when the budget is spent (then the GRPO update runs). Never truncated. A
    ``reset`` before that abandons the step: no update; ``info["abandoned_steps"]`` counts it.

    ## Arguments

    ``trainer`` (an existing ``GRPOTrainer``), or ``config`` (a ``GRPOConfig``), or keyword
    fields of ``GRPOConfig`` (``model``, ``task``, ``batch_size``, ``group_size``, ``budget``,
    ``round_size``, ...). The trainer is built with ``external=True``: its ``allocator`` field is
    ignored, the agent allocates (a trainer passed in should be built so too).
    ``render_mode="ansi"`` renders the batch as text.

    >>> import gymnasium as gym, adaroll_env
    >>> env = gym.make("AdaRoll/GRPOTraining-v0", model="tiny", batch_size=8, task_size=2000)
    >>> obs, info = env.reset(seed=0)
    >>> obs["budget_left"]
    array([64.], dtype=float32)

    ## Version History

    * v0: initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        *,
        trainer: GRPOTrainer | None = None,
        config: GRPOConfig | None = None,
        render_mode: str | None = None,
        **config_fields: Any,
    ) -> None:
        if trainer is not None and (config is not None or config_fields):
            raise ValueError("give either trainer= or config fields, not both")
        if config is not None and config_fields:
            raise ValueError("give either config= or config fields, not both")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported: use 'ansi' or None")
        if trainer is None:
            cfg = config if config is not None else GRPOConfig(**config_fields)
            # the agent allocates: the trainer builds no allocator of its own
            trainer = GRPOTrainer(cfg, external=True)
        self.trainer = trainer
        self.render_mode = render_mode
        t = trainer
        # the step's setting with flat priors: each episode's come from the belief store
        template = dataclasses.replace(t.plan, utility=t.utility).params()
        self.params = template
        self.observation_space = am.observation_space(template)  # type: ignore[assignment]
        self.action_space = spaces.Box(-1.0, 1.0, (template.num_questions,), dtype=np.float32)
        self._pending = 0.0
        self._utility = 0.0
        self._started = False

    @property
    def episode_params(self) -> am.AllocationParams:
        """The params of the step in progress (priors from the belief store)."""
        p = self.trainer.params
        if p is None:
            raise RuntimeError("call reset() first")
        return p

    def step(
        self, action: Any
    ) -> tuple[dict[str, NDArray[np.float32]], SupportsFloat, bool, bool, dict[str, Any]]:
        """Hand out one round split by ``action``; the last round also runs the GRPO update."""
        t = self.trainer
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if not t.in_step:
            raise RuntimeError("the episode is over (budget spent): call reset() before step()")
        p, state = self.episode_params, t.state
        assert state is not None
        counts = am.decode_action(p, state, action)
        result = t.run_round(counts)
        self._utility += result.utility_gain
        reward = result.utility_gain + self._pending
        self._pending = 0.0
        info: dict[str, Any] = {
            "allocation": np.asarray(t.state.rollouts if t.state is not None else counts),
            "utility": self._utility,
            "round": counts,
        }
        if result.done:
            report = t.finish_step()
            info["report"] = report.as_dict()
            info["abandoned_steps"] = report.abandoned_steps
        return result.observation, float(reward), bool(result.done), False, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, NDArray[np.float32]], dict[str, Any]]:
        """Begin the trainer's next step (abandoning an unfinished one)."""
        super().reset(seed=seed)
        t = self.trainer
        obs = t.begin_step()
        p = self.episode_params
        assert t.state is not None
        self._utility = am.utility_value(p, t.state)
        self._pending = self._utility
        self._started = True
        info = {
            "step": t.step,
            "prompt_ids": [e.id for e in t.examples],
            "abandoned_steps": t.abandoned,
            "utility": self._utility,
        }
        return obs, info

    def render(self) -> str | None:
        """The batch as text: prompt, counts and posterior mean."""
        if self.render_mode != "ansi" or self.trainer.state is None:
            return None
        t = self.trainer
        obs = am.observe(self.episode_params, t.state)  # type: ignore[arg-type]
        lines = [f"step {t.step}, budget left {int(obs['budget_left'][0])}"]
        for i, e in enumerate(t.examples):
            lines.append(
                f"{e.prompt!r:>14} s={int(obs['successes'][i])} n={int(obs['rollouts'][i])} "
                f"mean={obs['mean'][i]:.2f}"
            )
        return "\n".join(lines)

    def close(self) -> None:
        """Release the trainer (engine and model)."""
        self.trainer.close()
