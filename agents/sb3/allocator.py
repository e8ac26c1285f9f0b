"""A saved stable-baselines3 model acting as an allocator: the ``sb3:<path>`` spec.

**SB3 zips are pickles** (cloudpickle): loading one runs code from the file. Load only models
you trained yourself or otherwise trust.

A model saved by ``adaroll train-sb3`` (or ``save_model``) carries, in its zip, the
``AllocationParams`` it was trained for, the algorithm, the policy kind and the feature
configuration, as the model attribute ``adaroll_meta`` (a plain JSON entry of the zip's
``data`` file, readable without torch: ``read_meta``). At ``reset(params)`` the allocator checks
that ``params`` is a setting the model can act in — same mode, utility, pilot, cap, group size
G = N/B and round rule — and raises ``ValueError`` naming every field that differs and the fix.
The number of questions B may differ only for the equivariant policy: the model is then loaded
again with the spaces of the new B (its weights do not depend on B). Belief priors are not
checked: they reach the policy through the observation, episode by episode.

Decisions are deterministic (the policy's mode): in the sequential env the feasible question
with the highest score (logit or Q-value); in the rounds env the action means clipped to
[-1, 1], decoded by the env's own ``adaroll_env.model.decode_action``; for the curve policy
(``agents.sb3.curves``) the exact split of its predicted value curves.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env import model as m
from adaroll_env.model import AllocationParams
from agents.base import BaseAllocator, Obs
from agents.sb3 import PRETRAINED
from agents.sb3.features import feature_config, feature_space, flat_features

META_KEY = "adaroll_meta"
ALGOS = ("ppo", "maskable_ppo", "a2c", "dqn")


def algo_class(algo: str) -> Any:
    """The SB3 / sb3-contrib class of ``algo``."""
    try:
        if algo == "maskable_ppo":
            from sb3_contrib import MaskablePPO

            return MaskablePPO
        import stable_baselines3 as sb3
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            f"learned allocators need stable-baselines3 ({exc}): pip install -e '.[sb3]'"
        ) from exc
    classes = {"ppo": sb3.PPO, "a2c": sb3.A2C, "dqn": sb3.DQN}
    if algo not in classes:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    return classes[algo]


def resolve_path(path: str | Path) -> Path:
    """The zip behind ``path`` (``"pretrained"`` is the shipped model; ``.zip`` may be left off)."""
    if str(path) == "pretrained":
        p = PRETRAINED
    else:
        p = Path(path).expanduser()
        if not p.exists() and p.suffix != ".zip":
            p = p.with_name(p.name + ".zip")
    if not p.is_file():
        raise ValueError(
            f"allocator spec 'sb3:{path}': no SB3 model at {str(path)!r} (looked for {p}): give "
            "the path of a zip saved by 'adaroll train-sb3', or 'sb3:pretrained'"
        )
    return p


def make_meta(
    params: AllocationParams, *, algo: str, policy: str, env_id: str, env_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """What a saved model records about itself (plain JSON)."""
    return {
        "params": params.to_dict(),
        "algo": algo,
        "policy": policy,
        "env_id": env_id,
        "env_kwargs": json.loads(json.dumps(env_kwargs, default=str)),
        "features": feature_config(),
    }


def save_model(model: Any, path: str | Path, meta: dict[str, Any]) -> Path:
    """Save an SB3 model with its ``adaroll_meta`` (read back by ``read_meta``)."""
    setattr(model, META_KEY, meta)
    model.save(str(path))
    out = Path(path)
    return out if out.suffix == ".zip" else out.with_name(out.name + ".zip")


def read_meta(path: str | Path) -> dict[str, Any]:
    """The ``adaroll_meta`` of a saved model, read from the zip without unpickling anything."""
    p = resolve_path(path)
    with zipfile.ZipFile(p) as zf:
        data = json.loads(zf.read("data").decode("utf-8"))
    meta = data.get(META_KEY)
    if not isinstance(meta, dict) or "params" not in meta:
        raise ValueError(
            f"{p} is an SB3 zip without adaroll metadata (the AllocationParams it was trained "
            "for): train it with 'adaroll train-sb3' or save it with "
            "agents.sb3.allocator.save_model"
        )
    return meta


def params_from_meta(meta: dict[str, Any]) -> AllocationParams:
    """The ``AllocationParams`` a model was trained for."""
    d = dict(meta["params"])
    for key in ("prior_alpha", "prior_beta", "round_schedule"):
        if isinstance(d.get(key), list):
            d[key] = tuple(d[key])
    return AllocationParams(**d)


def incompatibilities(
    trained: AllocationParams, target: AllocationParams, *, equivariant: bool
) -> list[str]:
    """Human-readable differences that stop a model trained at ``trained`` acting at ``target``."""
    out = []
    for name in ("mode", "utility", "pilot", "max_group"):
        a, b = getattr(trained, name), getattr(target, name)
        if a != b:
            out.append(f"{name}: trained {a!r}, here {b!r}")
    if trained.group_size != target.group_size:
        out.append(
            f"group size G = N/B: trained {trained.group_size:g} "
            f"(N={trained.total_budget}, B={trained.num_questions}), here {target.group_size:g} "
            f"(N={target.total_budget}, B={target.num_questions})"
        )
    full_t = trained.round_size == trained.num_questions
    full_h = target.round_size == target.num_questions
    if trained.mode == "rounds" and not (
        trained.round_size == target.round_size or (full_t and full_h)
    ):
        out.append(f"round_size: trained {trained.round_size}, here {target.round_size}")
    if trained.round_schedule != target.round_schedule:
        out.append(
            f"round_schedule: trained {trained.round_schedule or 'equal rounds'}, here "
            f"{target.round_schedule or 'equal rounds'}"
        )
    if trained.num_questions != target.num_questions and not equivariant:
        out.append(
            f"num_questions: trained {trained.num_questions}, here {target.num_questions} "
            "(only the equivariant policy acts at another B)"
        )
    return out


class SB3Allocator(BaseAllocator):
    """A saved SB3 policy as an allocator (spec ``sb3:<path>``; ``sb3:pretrained`` ships).

    SB3 zips are pickles: load only trusted files.

    Args:
        path: the model zip (``"pretrained"``: the shipped rounds model for rlvr, B=16, G=8).
        device: torch device for the forward passes (``"cpu"``).
        threads: torch CPU threads (process-wide, set at load): 1, the fastest for this small
            network, also keeps process pools that fork after loading (the parallel
            benchmark) from deadlocking in torch's thread pool; None leaves torch's setting.
    """

    stochastic = False

    def __init__(
        self, path: str | Path = "pretrained", device: str = "cpu", threads: int | None = 1
    ) -> None:
        super().__init__()
        if threads is not None:
            import torch as th

            th.set_num_threads(threads)
        self.path = resolve_path(path)
        self.name = f"sb3:{path}"
        self.device = device
        self.meta = read_meta(self.path)
        if self.meta.get("features") != feature_config():
            raise ValueError(
                f"{self.path} was trained with features {self.meta.get('features')}, this "
                f"version computes {feature_config()}: retrain it with 'adaroll train-sb3'"
            )
        self.algo: str = self.meta["algo"]
        self.trained_params = params_from_meta(self.meta)
        #: a policy whose weights do not depend on B (the curve policy is equivariant too)
        self.equivariant = self.meta["policy"] in ("equivariant", "curves")
        self.curves = self.meta["policy"] == "curves"
        self._models: dict[int, Any] = {}
        self.model = self._load(self.trained_params.num_questions)

    def _load(self, num_questions: int) -> Any:
        if num_questions in self._models:
            return self._models[num_questions]
        from gymnasium import spaces

        custom: dict[str, Any] = {
            # Schedules are pickled closures: replace them (they only matter for training).
            "learning_rate": 0.0,
            "lr_schedule": lambda _: 0.0,
            "exploration_schedule": lambda _: 0.0,
            "clip_range": lambda _: 0.0,
        }
        if self.algo == "dqn":
            custom["buffer_size"] = 1
        if num_questions != self.trained_params.num_questions:
            B = num_questions
            custom["observation_space"] = feature_space(B)
            custom["action_space"] = (
                spaces.Discrete(B)
                if self.trained_params.mode == "sequential"
                else spaces.Box(-1.0, 1.0, (B,), dtype=np.float32)
            )
            custom["n_envs"] = 1
        model = algo_class(self.algo).load(
            str(self.path), device=self.device, custom_objects=custom
        )
        model.policy.set_training_mode(False)
        self._models[num_questions] = model
        return model

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Check that the model can act under ``params`` (see the module doc), then reset."""
        super().reset(params, seed=seed)
        diff = incompatibilities(self.trained_params, params, equivariant=self.equivariant)
        if diff:
            raise ValueError(
                f"SB3 model {self.path} was trained for a different setting: "
                + "; ".join(diff)
                + ". Make the env with the model's settings (agents.sb3.allocator.read_meta gives "
                "them) or train a model for this one with 'adaroll train-sb3'"
            )
        self.model = self._load(params.num_questions)

    def scores(self, obs: Obs) -> NDArray[np.float64]:
        """The policy's per-question scores: logits, Q-values or action means ``[B]`` (the curve
        policy: each question's predicted value of its first rollout of the round)."""
        import torch as th

        x = th.as_tensor(flat_features(self.params, obs)[None], device=self.model.device)
        policy = self.model.policy
        with th.no_grad():
            if self.curves:
                out = policy.marginals(x)[..., 0]
            elif self.algo == "dqn":
                out = policy.q_net(x)
            else:
                dist = policy.get_distribution(x).distribution
                out = dist.logits if self.params.mode == "sequential" else dist.mean
        return np.asarray(out[0].cpu().numpy(), dtype=np.float64)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Counts for the next decision (argmax over feasible questions, decoded weights, or the
        curve policy's exact split)."""
        if self.curves:
            counts: NDArray[np.int64] = self.model.policy.decide(flat_features(self.params, obs))
            return counts
        b = self.beliefs(obs)
        scores = self.scores(obs)
        if self.params.mode == "sequential":
            counts = np.zeros(self.params.num_questions, dtype=np.int64)
            if b.round_size > 0:
                counts[int(np.argmax(np.where(b.capacity > 0, scores, -np.inf)))] = 1
            return counts
        action = np.clip(scores, -1.0, 1.0).astype(np.float32)
        state = m.make_state(self.params, b.successes, b.failures)
        return m.decode_action(self.params, state, action)


def load_sb3_allocator(
    path: str | Path, params: AllocationParams | None = None, *, device: str = "cpu"
) -> SB3Allocator:
    """Load the model at ``path`` as an allocator (reset for ``params`` when given).

    SB3 zips are pickles: load only trusted files.
    """
    allocator = SB3Allocator(path, device=device)
    if params is not None:
        allocator.reset(params)
    return allocator
