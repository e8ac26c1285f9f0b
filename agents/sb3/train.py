"""``adaroll train-sb3``: train a stable-baselines3 allocator in an adaroll env.

rl-zoo style: hyperparameters come from ``agents/sb3/hyperparams/<algo>.yml``, keyed by env id
(``default`` for the others); the command line overrides the number of steps, envs and the
seed. Training runs on SB3's ``make_vec_env`` (``DummyVecEnv`` or ``SubprocVecEnv``) with the
``QuestionFeatures`` wrapper, evaluates with ``EvalCallback`` (``MaskableEvalCallback`` for
MaskablePPO) and keeps the best model, writes checkpoints, TensorBoard logs, a progress bar and
``learning_curve.png``, and saves ``model.zip`` carrying the ``AllocationParams`` it was trained
for, so that ``make_allocator("sb3:<run>/model.zip", env)`` can check the setting it is used in.

Resume (``--resume <zip>``) loads the model with its step counter and continues it
(``reset_num_timesteps=False``): ``--total-timesteps`` then counts the *additional* steps, and the
TensorBoard curve continues where it stopped.

A stop by SIGINT (Ctrl-C) or SIGTERM ends training at the next env step, saves ``model.zip``
(resumable with ``--resume``) and ``result.json``, prints one line saying how to resume, and
exits with status 130 or 143 (128 + the signal, as shells report); a second signal of the same
kind stops at once.

SB3 zips are pickles: resume only from files you trust.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import platform
import shlex
import signal
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from adaroll_env.errors import unknown_name
from adaroll_env.model import AllocationParams
from adaroll_env.run_dirs import DONE_FILE, mark_done, set_aside
from agents.sb3 import HYPERPARAMS
from agents.sb3.allocator import (
    ALGOS,
    algo_class,
    make_meta,
    params_from_meta,
    read_meta,
    save_model,
)
from agents.sb3.features import QuestionFeatures

Algo = Literal["ppo", "maskable_ppo", "a2c", "dqn"]
#: Exit status of a run stopped by a signal: 128 + the signal number, as shells report it.
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
#: Hyperparameter keys that are not algorithm arguments.
_ZOO_KEYS = ("n_envs", "n_timesteps", "policy", "policy_kwargs", "env_kwargs")


@dataclass
class TrainConfig:
    """Configuration of ``adaroll train-sb3`` (train an SB3 allocator; zips are pickles)."""

    algo: Algo = field(default="ppo", metadata={"help": "SB3 algorithm"})
    env: str = field(
        default="AdaRoll/BetaBernoulliRounds-v0", metadata={"help": "gymnasium env id"}
    )
    env_kwargs: str = field(
        default="{}",
        metadata={"help": "env arguments as a JSON object, e.g. '{\"num_questions\": 16}'"},
    )
    policy: Literal["equivariant", "curves", "mlp"] = field(
        default="equivariant",
        metadata={
            "help": "'equivariant' (one network scores every question), 'curves' (one network "
            "predicts every question's value curve and the round is split exactly; fitted by "
            "--clone bamdp --clone-loss curves alone, no PPO steps) or 'mlp' baseline"
        },
    )
    hidden: int | None = field(
        default=None,
        metadata={"help": "width of the equivariant or curve network (none: the YAML's, 64)"},
    )
    total_timesteps: int | None = field(
        default=None,
        metadata={"help": "env steps to train (none: n_timesteps of the YAML; on resume: more)"},
    )
    n_envs: int | None = field(
        default=None, metadata={"help": "parallel envs (none: from the YAML)"}
    )
    vec_env: Literal["dummy", "subproc"] = field(
        default="dummy", metadata={"help": "SB3 VecEnv class: DummyVecEnv or SubprocVecEnv"}
    )
    seed: int = field(default=0, metadata={"help": "seed of training envs, policy and eval"})
    eval_freq: int = field(
        default=20_000, metadata={"help": "evaluate every this many env steps (0: never)"}
    )
    eval_episodes: int = field(default=200, metadata={"help": "episodes per evaluation"})
    save_freq: int = field(
        default=100_000, metadata={"help": "checkpoint every this many env steps (0: never)"}
    )
    hyperparams: str = field(
        default="", metadata={"help": "YAML file ('': the shipped agents/sb3/hyperparams)"}
    )
    out: str = field(default="runs", metadata={"help": "folder under which the run goes"})
    name: str = field(default="", metadata={"help": "run directory name ('': sb3-<algo>-<time>)"})
    resume: str = field(
        default="", metadata={"help": "model zip to continue training (keeps its step counter)"}
    )
    time_limit_s: float | None = field(
        default=None, metadata={"help": "stop training after this many seconds of wall time"}
    )
    threads: int = field(default=1, metadata={"help": "torch CPU threads"})
    tensorboard: bool = field(default=True, metadata={"help": "write TensorBoard logs"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    references: bool = field(
        default=True,
        metadata={"help": "evaluate uniform and bamdp on the eval seeds for the learning curve"},
    )
    verbose: int = field(default=0, metadata={"help": "SB3 verbosity (0, 1, 2)"})
    clone: str = field(
        default="",
        metadata={
            "help": "behaviour-clone this allocator (e.g. 'bamdp') before training: the policy "
            "starts from its decisions (rounds env only; '': start from scratch); the clone is "
            "kept as cloned.zip"
        },
    )
    clone_episodes: int = field(default=2000, metadata={"help": "expert episodes behind --clone"})
    clone_epochs: int = field(default=200, metadata={"help": "passes over the cloned decisions"})
    clone_loss: Literal["squared", "value", "curves"] = field(
        default="squared",
        metadata={
            "help": "what --clone fits: 'squared' (the expert's counts, squared error), 'value' "
            "(the value the decoded round gives up on the expert's own value curves; bamdp only) "
            "or 'curves' (bamdp's value curves themselves; --policy curves only)"
        },
    )
    clone_dagger: int = field(
        default=3,
        metadata={"help": "DAgger iterations after the first fit (the clone drives, the expert "
                  "labels; each adds half of --clone-episodes)"},
    )  # fmt: skip
    clone_sizes: str = field(
        default="",
        metadata={
            "help": "other batch sizes B whose expert episodes join the cloned data, comma-"
            "separated (same rollouts per question; the equivariant policy is used at any B)"
        },
    )

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise unknown_name("algo", self.algo, ALGOS)
        self.env_kwargs_dict()
        for name in ("total_timesteps", "n_envs"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1 (or none), got {v}")
        if self.eval_episodes < 1:
            raise ValueError(f"eval_episodes must be >= 1, got {self.eval_episodes}")
        if self.clone_loss != "squared" and not self.clone:
            raise ValueError(
                f"--clone-loss {self.clone_loss} says what a clone fits, and there is no --clone: "
                "give --clone bamdp, or drop --clone-loss"
            )
        if self.hidden is not None and (self.hidden < 1 or self.policy == "mlp"):
            raise ValueError(
                f"hidden ({self.hidden}) is the width of the equivariant or curve network: give "
                "a positive width with --policy equivariant or curves, or leave it out"
            )
        if self.policy == "curves":
            if not self.clone or self.clone_loss != "curves":
                raise ValueError(
                    "--policy curves is fitted by cloning alone (PPO cannot differentiate "
                    "through its exact split): give --clone bamdp --clone-loss curves"
                )
            if self.total_timesteps is not None:
                raise ValueError(
                    f"--total-timesteps {self.total_timesteps}: --policy curves takes no PPO "
                    "steps (its action is an exact split, with no policy gradient); leave it "
                    "out, the clone is the model"
                )
            if self.algo not in ("ppo", "a2c"):
                raise ValueError(f"--policy curves needs --algo ppo or a2c, got {self.algo!r}")
        elif self.clone_loss == "curves":
            raise ValueError(
                "--clone-loss curves fits a network of value curves: give --policy curves, or "
                "--clone-loss squared / value for the equivariant policy"
            )
        if self.clone:
            if "Rounds" not in self.env:
                raise ValueError(
                    f"--clone fits Box (rounds) actions, but {self.env} is the sequential env: "
                    "use AdaRoll/BetaBernoulliRounds-v0 or drop --clone"
                )
            if self.resume:
                raise ValueError(
                    "--clone starts a policy from an expert, --resume continues a trained one: "
                    "give one of them"
                )
            if self.clone_loss not in ("squared", "value", "curves"):
                raise ValueError(
                    f"clone_loss must be 'squared', 'value' or 'curves', got {self.clone_loss!r}"
                )
            if self.clone_dagger < 0:
                raise ValueError(f"clone_dagger must be >= 0, got {self.clone_dagger}")
            for name in ("clone_episodes", "clone_epochs"):
                if getattr(self, name) < 1:
                    raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
            self.clone_size_list()
        if self.time_limit_s is not None and self.time_limit_s <= 0:
            raise ValueError(f"time_limit_s must be > 0 (or none), got {self.time_limit_s}")
        if self.algo == "dqn" and "Rounds" in self.env:
            raise ValueError(
                f"dqn needs Discrete actions, but {self.env} has Box actions: use ppo or a2c, "
                "or the sequential env AdaRoll/BetaBernoulli-v0"
            )
        if self.algo == "maskable_ppo" and "Rounds" in self.env:
            raise ValueError(
                f"maskable_ppo masks Discrete actions, but {self.env} has Box actions (its "
                "decoding already respects caps): use ppo, or the sequential env"
            )

    def clone_size_list(self) -> tuple[int, ...]:
        """``clone_sizes`` parsed: positive integers."""
        try:
            sizes = tuple(int(x) for x in self.clone_sizes.split(",") if x.strip())
        except ValueError:
            sizes = (0,)
        if any(b < 1 for b in sizes):
            raise ValueError(
                f"clone_sizes ({self.clone_sizes!r}) must be positive integers, comma-separated, "
                "e.g. '16,64'"
            )
        return sizes

    def env_kwargs_dict(self) -> dict[str, Any]:
        """``env_kwargs`` parsed (lists become tuples, as the env's prior fields expect)."""
        try:
            kw = json.loads(self.env_kwargs or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"env_kwargs is not a JSON object ({exc}): write e.g. "
                '\'{"num_questions": 16, "difficulty": "rlvr"}\''
            ) from None
        if not isinstance(kw, dict):
            raise ValueError(f"env_kwargs must be a JSON object, got {self.env_kwargs!r}")
        return {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}


def load_hyperparams(algo: str, env_id: str, path: str | Path = "") -> dict[str, Any]:
    """The YAML entry for ``env_id`` (or ``default``) of ``<algo>.yml`` (or of ``path``).

    ``lin_<x>`` values of ``learning_rate`` and ``clip_range`` become linear schedules from x.
    """
    import yaml

    file = Path(path) if path else HYPERPARAMS / f"{algo}.yml"
    if not file.is_file():
        raise ValueError(f"no hyperparameter file {file}: give --hyperparams <file.yml>")
    table = yaml.safe_load(file.read_text()) or {}
    entry = table.get(env_id, table.get("default"))
    if entry is None:
        raise ValueError(
            f"{file} has no entry for {env_id!r} and no 'default': add one (keys as rl-zoo)"
        )
    hp = dict(entry)
    for key in ("learning_rate", "clip_range"):
        v = hp.get(key)
        if isinstance(v, str) and v.startswith("lin_"):
            from stable_baselines3.common.utils import LinearSchedule

            hp[key] = LinearSchedule(float(v[4:]), 0.0, 1.0)
    return hp


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:  # type: ignore[type-arg]
    """One env (importing adaroll_env first, so that subprocesses know the ids)."""
    import adaroll_env

    gym.register_envs(adaroll_env)
    return gym.make(env_id, **env_kwargs)


def make_vec(
    env_id: str,
    env_kwargs: dict[str, Any],
    *,
    n_envs: int,
    seed: int,
    vec_env: str = "dummy",
) -> Any:
    """SB3 ``make_vec_env`` with Monitor and ``QuestionFeatures`` on each env."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    return make_vec_env(
        functools.partial(make_env, env_id, env_kwargs),
        n_envs=n_envs,
        seed=seed,
        vec_env_cls=cls,
        wrapper_class=QuestionFeatures,
    )


def reference_values(
    env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int
) -> dict[str, float]:
    """Mean return of ``uniform`` and ``bamdp`` over ``episodes`` seeded episodes."""
    from agents.benchmarks.runner import run_episodes

    env = make_env(env_id, env_kwargs)
    try:
        return {
            spec: float(
                np.mean([r["utility"] for r in run_episodes(env, spec, range(episodes), seed)])
            )
            for spec in ("uniform", "bamdp")
        }
    finally:
        env.close()


def plot_learning_curve(
    npz: Path, out: Path, title: str, references: dict[str, float] | None = None
) -> None:
    """``learning_curve.png``: mean ± std of the evaluation return against env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.load(npz)
    steps, results = data["timesteps"], data["results"]
    mean, std = results.mean(axis=1), results.std(axis=1)
    se = std / np.sqrt(max(results.shape[1], 1))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(steps, mean, marker="o", ms=3, label="policy (deterministic)")
    ax.fill_between(steps, mean - 1.96 * se, mean + 1.96 * se, alpha=0.25, label="95% CI")
    for i, (name, value) in enumerate(sorted((references or {}).items())):
        ax.axhline(value, ls="--", color=f"C{i + 2}", label=f"{name} (same settings)")
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return (training utility)")
    ax.set_title(textwrap.fill(title, 90), fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


@dataclass
class TrainResult:
    """What ``main`` produced."""

    run_dir: Path
    model_path: Path
    best_path: Path | None
    timesteps: int
    seconds: float
    steps_per_second: float
    evaluations: list[tuple[int, float]]
    cloned_path: Path | None = None


class SignalStop:
    """While active, SIGINT and SIGTERM only record the signal (``signum``), so that training
    can stop cleanly at the next env step; a second one raises ``KeyboardInterrupt`` at once.
    The previous handlers come back on exit. Outside the main thread it does nothing."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> SignalStop:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNAL_EXIT:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _resume_line(cfg: TrainConfig, model_path: Path, signum: int, steps: int) -> str:
    args = ["adaroll", "train-sb3", "--resume", str(model_path), "--algo", cfg.algo]
    args += ["--env", cfg.env, "--env-kwargs", cfg.env_kwargs, "--out", cfg.out]
    return (
        f"stopped by {signal.Signals(signum).name} at {steps} env steps; saved {model_path}; "
        f"resume with: {shlex.join(args)} (--total-timesteps counts the steps still to train)"
    )


def _callbacks(
    cfg: TrainConfig,
    run_dir: Path,
    eval_env: Any,
    n_envs: int,
    t0: float,
    stop: SignalStop,
    earlier: dict[str, Any] | None = None,
) -> Any:
    from stable_baselines3.common.callbacks import (
        BaseCallback,
        CallbackList,
        CheckpointCallback,
        EvalCallback,
    )

    class StopAfter(BaseCallback):
        """Stop training once ``limit`` seconds of wall time have passed."""

        def __init__(self, limit: float | None) -> None:
            super().__init__()
            self.limit = limit

        def _on_step(self) -> bool:
            return self.limit is None or time.perf_counter() - t0 < self.limit

    class StopOnSignal(BaseCallback):
        """Stop training at the next env step once a SIGINT or SIGTERM arrived."""

        def _on_step(self) -> bool:
            return stop.signum is None

    cbs: list[BaseCallback] = [StopAfter(cfg.time_limit_s), StopOnSignal()]
    if cfg.eval_freq > 0:
        kw: dict[str, Any] = {
            "n_eval_episodes": cfg.eval_episodes,
            "eval_freq": max(cfg.eval_freq // n_envs, 1),
            "best_model_save_path": str(run_dir),
            "log_path": str(run_dir),
            "deterministic": True,
            "verbose": cfg.verbose,
        }
        if cfg.algo == "maskable_ppo":
            from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

            evaluate: EvalCallback = MaskableEvalCallback(eval_env, **kw)
        else:
            evaluate = EvalCallback(eval_env, **kw)
        if earlier:  # a resume: the curve and the best model continue the earlier ones
            evaluate.evaluations_timesteps = [int(t) for t in earlier["timesteps"]]
            evaluate.evaluations_results = [list(r) for r in earlier["results"]]
            evaluate.evaluations_length = [list(n) for n in earlier["ep_lengths"]]
            evaluate.best_mean_reward = max(float(np.mean(r)) for r in earlier["results"])
        cbs.append(evaluate)
    if cfg.save_freq > 0:
        cbs.append(
            CheckpointCallback(
                save_freq=max(cfg.save_freq // n_envs, 1),
                save_path=str(run_dir / "checkpoints"),
                name_prefix="model",
            )
        )
    return CallbackList(cbs)


def main(cfg: TrainConfig) -> TrainResult:
    """Train, evaluate, save ``model.zip`` (with its params) and ``learning_curve.png``.

    SIGINT and SIGTERM are caught from the start: training stops at its next env step (at once if
    the signal came while it was being set up), the model is saved and the process exits 130/143.
    """
    with SignalStop() as stop:
        return _train(cfg, stop)


def _train(cfg: TrainConfig, stop: SignalStop) -> TrainResult:
    import torch as th

    th.set_num_threads(cfg.threads)
    hp = load_hyperparams(cfg.algo, cfg.env, cfg.hyperparams)
    env_kwargs = {**hp.get("env_kwargs", {}), **cfg.env_kwargs_dict()}
    n_envs = cfg.n_envs or int(hp.get("n_envs", 1))
    total = cfg.total_timesteps or int(float(hp.get("n_timesteps", 100_000)))
    algo_kwargs = {k: v for k, v in hp.items() if k not in _ZOO_KEYS}

    name = cfg.name or time.strftime(f"sb3-{cfg.algo}-%Y%m%d-%H%M%S")
    run_dir = Path(cfg.out) / name
    if cfg.resume and not any(Path(x).is_file() for x in (cfg.resume, f"{cfg.resume}.zip")):
        raise ValueError(
            f"--resume {cfg.resume!r}: no such model zip; give the model.zip (or a checkpoint "
            "zip) of the run to continue"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    earlier = _prepare_run_dir(run_dir, resume=bool(cfg.resume))
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    (run_dir / "hyperparams.json").write_text(
        json.dumps({k: str(v) for k, v in hp.items()}, indent=2) + "\n"
    )

    venv = make_vec(cfg.env, env_kwargs, n_envs=n_envs, seed=cfg.seed, vec_env=cfg.vec_env)
    params: AllocationParams = venv.get_attr("params")[0]
    eval_env = make_vec(cfg.env, env_kwargs, n_envs=1, seed=cfg.seed + 10_000)
    meta = make_meta(
        params, algo=cfg.algo, policy=cfg.policy, env_id=cfg.env, env_kwargs=env_kwargs
    )
    tb = str(run_dir / "tb") if cfg.tensorboard else None
    Algo = algo_class(cfg.algo)
    if cfg.resume:
        old = read_meta(cfg.resume)
        if params_from_meta(old) != params or old["algo"] != cfg.algo:
            raise ValueError(
                f"cannot resume {cfg.resume}: it was trained with algo {old['algo']!r} for "
                f"{old['params']}, this run is {cfg.algo!r} for {params.to_dict()}: give the "
                "same --algo, --env and --env-kwargs"
            )
        meta["policy"] = old["policy"]
        model = Algo.load(cfg.resume, env=venv, device="cpu", tensorboard_log=tb)
    else:
        from agents.sb3.policy import policy_class

        policy_kwargs = dict(hp.get("policy_kwargs") or {})
        if cfg.policy == "mlp":
            policy_kwargs.pop("hidden", None)  # the equivariant policy's width only
        elif cfg.hidden is not None:
            policy_kwargs["hidden"] = cfg.hidden
        if cfg.policy == "curves":
            # the cap at any B follows from these (agents.sb3.curves.cap_at)
            per_question = params.total_budget / params.num_questions
            policy_kwargs["cap_rule"] = (params.max_group, per_question, params.pilot)
        model = Algo(
            policy_class(cfg.algo, cfg.policy),
            venv,
            seed=cfg.seed,
            device="cpu",
            tensorboard_log=tb,
            policy_kwargs=policy_kwargs,
            verbose=cfg.verbose,
            **algo_kwargs,
        )
    model.adaroll_meta = meta  # saved with every zip (best model and checkpoints too)
    cloned_path = None
    if cfg.clone:
        from agents.sb3.imitation import behaviour_clone

        report = behaviour_clone(
            model,
            cfg.env,
            env_kwargs,
            expert=cfg.clone,
            episodes=cfg.clone_episodes,
            epochs=cfg.clone_epochs,
            sizes=cfg.clone_size_list(),
            seed=cfg.seed,
            loss=cfg.clone_loss,
            dagger=cfg.clone_dagger,
            progress=cfg.progress,
        )
        cloned_path = save_model(model, run_dir / "cloned.zip", meta)
        (run_dir / "clone.json").write_text(json.dumps(dataclasses.asdict(report), indent=2) + "\n")
        print(
            f"cloned {cfg.clone} from {report.decisions} decisions of {report.episodes} episodes: "
            f"{'marginals' if cfg.clone_loss == 'curves' else 'action'} MSE "
            f"{report.action_mse_before:.3g} -> {report.action_mse_after:.3g}"
            + (
                f", value given up a decision {report.value_lost_before:.3g} -> "
                f"{report.value_lost_after:.3g}"
                if report.value_lost_after is not None and report.value_lost_before is not None
                else ""
            )
            + f"; {cloned_path}"
        )
    if cfg.policy == "curves":
        return _finish_clone_only(cfg, run_dir, model, meta, params, venv, eval_env)
    start_steps = int(model.num_timesteps)
    t0 = time.perf_counter()
    model.learn(
        total,
        callback=_callbacks(cfg, run_dir, eval_env, n_envs, t0, stop, earlier),
        tb_log_name=f"{cfg.algo}_{cfg.policy}",
        reset_num_timesteps=not cfg.resume,
        progress_bar=cfg.progress,
    )
    seconds = time.perf_counter() - t0
    steps = int(model.num_timesteps) - start_steps
    model_path = save_model(model, run_dir / "model.zip", meta)
    venv.close()
    eval_env.close()
    if stop.signum is not None:
        stopped: dict[str, Any] = {
            "timesteps": int(model.num_timesteps),
            "seconds": round(seconds, 2),
            "stopped_by": signal.Signals(stop.signum).name,
        }
        (run_dir / "result.json").write_text(json.dumps(stopped, indent=2) + "\n")
        print(_resume_line(cfg, model_path, stop.signum, int(model.num_timesteps)), flush=True)
        raise SystemExit(SIGNAL_EXIT[signal.Signals(stop.signum)])

    evaluations: list[tuple[int, float]] = []
    npz = run_dir / "evaluations.npz"
    if npz.is_file():
        data = np.load(npz)
        evaluations = [
            (int(t), float(r.mean()))
            for t, r in zip(data["timesteps"], data["results"], strict=True)
        ]
        refs = None
        if cfg.references and cfg.env.startswith("AdaRoll/BetaBernoulli"):
            refs = reference_values(cfg.env, env_kwargs, cfg.eval_episodes, cfg.seed + 10_000)
        title = f"{cfg.algo} ({cfg.policy}) on {cfg.env} {json.dumps(env_kwargs)}"
        plot_learning_curve(npz, run_dir / "learning_curve.png", title, refs)
    best = run_dir / "best_model.zip"
    result = TrainResult(
        run_dir=run_dir,
        model_path=model_path,
        best_path=best if best.is_file() else None,
        timesteps=int(model.num_timesteps),
        seconds=seconds,
        steps_per_second=steps / seconds if seconds > 0 else float("nan"),
        evaluations=evaluations,
        cloned_path=cloned_path,
    )
    summary = {
        "timesteps": result.timesteps,
        "seconds": round(seconds, 2),
        "steps_per_second": round(result.steps_per_second, 1),
        "n_envs": n_envs,
        "vec_env": cfg.vec_env,
        "evaluations": evaluations,
        "params": params.to_dict(),
        "python": platform.python_version(),
    }
    (run_dir / "result.json").write_text(json.dumps(summary, indent=2) + "\n")
    mark_done(run_dir, {"timesteps": result.timesteps})  # last: the run is done once this exists
    print(
        f"trained {steps} steps in {seconds:.1f} s ({result.steps_per_second:.0f} steps/s); "
        f"model: {model_path}" + (f"; best: {result.best_path}" if result.best_path else "")
    )
    return result


def _finish_clone_only(
    cfg: TrainConfig,
    run_dir: Path,
    model: Any,
    meta: dict[str, Any],
    params: AllocationParams,
    *envs: Any,
) -> TrainResult:
    """The curve policy's run: the clone is the model (no PPO steps); ``model.zip`` and
    ``result.json`` as a trained run writes them, then the run is marked done."""
    for env in envs:
        env.close()
    model_path = save_model(model, run_dir / "model.zip", meta)
    summary = {
        "timesteps": 0,
        "fitted_by": f"cloning {cfg.clone} (--policy curves takes no PPO steps)",
        "params": params.to_dict(),
        "python": platform.python_version(),
    }
    (run_dir / "result.json").write_text(json.dumps(summary, indent=2) + "\n")
    mark_done(run_dir, {"timesteps": 0})
    print(f"the curve policy is the clone (no PPO steps); model: {model_path}")
    return TrainResult(
        run_dir=run_dir,
        model_path=model_path,
        best_path=None,
        timesteps=0,
        seconds=0.0,
        steps_per_second=float("nan"),
        evaluations=[],
        cloned_path=run_dir / "cloned.zip",
    )


#: what a run of ``adaroll train-sb3`` writes: a fresh start sets these aside, never overwrites
RESULT_FILES = (
    "config.json",
    "cloned.zip",
    "clone.json",
    "hyperparams.json",
    "model.zip",
    "best_model.zip",
    "evaluations.npz",
    "learning_curve.png",
    "result.json",
    "checkpoints",
    "tb",
)


def _prepare_run_dir(run_dir: Path, *, resume: bool) -> dict[str, Any] | None:
    """Make ``run_dir`` ready for this start; the earlier evaluations a resume continues.

    A fresh start over an earlier run's files moves them into ``superseded/<time>/`` (said on
    stdout). A resume continues the run in place: its ``DONE`` marker goes (done again when this
    start finishes), the earlier config is kept as ``config-<k>.json`` and its evaluations
    (``evaluations.npz``) are returned, so that the curve and the best model continue."""
    if not resume:
        kept = set_aside(run_dir, RESULT_FILES)
        if kept is not None:
            print(
                f"adaroll train-sb3: {run_dir} held an earlier run: its files are kept in {kept} "
                "(continue a run with --resume <its model.zip>)",
                flush=True,
            )
        return None
    (run_dir / DONE_FILE).unlink(missing_ok=True)
    if (run_dir / "config.json").is_file():
        k = 1
        while (run_dir / f"config-{k}.json").exists():
            k += 1
        (run_dir / "config.json").replace(run_dir / f"config-{k}.json")
    npz = run_dir / "evaluations.npz"
    if not npz.is_file():
        return None
    data = np.load(npz)
    return {
        key: [np.asarray(x) for x in data[key]] for key in ("timesteps", "results", "ep_lengths")
    }
