"""The ``adaroll`` command: a thin dispatcher from subcommands to ``main(cfg)`` functions.

Each subcommand parses a dataclass config (its fields and help texts become the options) and calls
the ``main(cfg)`` of the package that owns it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from adaroll_env.arguments import add_dataclass_arguments, config_from_args, given_options
from adaroll_env.output import guarded_output

#: the command line being run by ``main`` (None outside it): ``invoked_command``
_running: list[str] | None = None

#: subcommand -> (module, config class, main function, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str, str, str]] = {
    "bench": (
        "agents.benchmarks",
        "BenchConfig",
        "trainers.cli:bench",
        "benchmark allocators on the simulated environments",
    ),
    "solve": (
        "agents.bamdp.solve",
        "SolveConfig",
        "main",
        "build and cache bamdp index tables, print a summary, draw the policy",
    ),
    "train-sb3": (
        "agents.sb3.train",
        "TrainConfig",
        "main",
        "train a stable-baselines3 allocator (loads as allocator sb3:<path>)",
    ),
    "pretrain-tiny": (
        "trainers.models.warm_start",
        "PretrainConfig",
        "main",
        "warm-start the tiny model on arithmetic (what the model name 'tiny' loads)",
    ),
    "warm-start": (
        "trainers.models.warm_start_task",
        "WarmStartConfig",
        "main",
        "warm-start a model of any architecture (llama, qwen3, gpt_neox, gpt2) on any task",
    ),
    "grpo": (
        "trainers.grpo",
        "GRPOConfig",
        "trainers.run.grpo_command:main",
        "train a model with GRPO, rollouts placed by an allocator (metrics, eval, checkpoints)",
    ),
    "compete": (
        "trainers.experiments.compete",
        "CompeteConfig",
        "main",
        "allocators compete in real GRPO training: same checkpoint, data, seeds and budget",
    ),
}


def bench(cfg: Any) -> Any:
    """``adaroll bench``: the simulator benchmark (``agents.benchmarks.main``), or with
    ``--from-run`` the sim-to-real check of trainer runs (``trainers.experiments.sim_to_real``)."""
    if cfg.from_run:
        from trainers.experiments.sim_to_real import main as from_run_main

        return from_run_main(cfg)
    from agents.benchmarks import main as bench_main

    return bench_main(cfg)


#: options that a ``--resume`` never takes from the run's saved config
NOT_RESUMED = frozenset({"resume", "allow_config_change", "out"})


def _saved_flags(args: argparse.Namespace, given: set[str]) -> None:
    """``adaroll grpo --out DIR --resume``: every option not given takes the value DIR's run
    saved (``config.json``), so the resumed run is the run that stopped; a given option that
    differs is still refused by the resume check (unless ``--allow-config-change``)."""
    import json
    from pathlib import Path

    path = Path(args.out) / "config.json"
    if not path.is_file():
        return  # nothing ran there yet: --resume starts from scratch
    saved = json.loads(path.read_text())
    for name, value in saved.items():
        if name in NOT_RESUMED or name in given or not hasattr(args, name):
            continue
        setattr(args, name, value)


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first argument that is not an option)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``adaroll`` parser with one subparser per subcommand.

    Only ``command``'s module is imported (its config gives the options), so ``adaroll bench``
    never imports torch; ``command=None`` imports every subcommand's module, ``""`` none.
    """
    parser = argparse.ArgumentParser(
        prog="adaroll",
        description=(
            "Rollout allocation for GRPO post-training: benchmark allocators in the simulated "
            "Gymnasium environments, and train models with GRPO where allocators place rollouts."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, cls_name, _, help_text) in SUBCOMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name, help=help_text)
            continue
        cls = getattr(importlib.import_module(module), cls_name)
        p = sub.add_parser(name, help=help_text, description=(cls.__doc__ or help_text).strip())
        add_dataclass_arguments(p, cls)
    return parser


def _resolve_main(module: str, fn_name: str) -> Any:
    """The function ``fn_name`` of ``module``, or ``"package.module:function"`` in ``fn_name``."""
    if ":" in fn_name:
        mod_name, fn = fn_name.split(":")
        return getattr(importlib.import_module(mod_name), fn)
    return getattr(importlib.import_module(module), fn_name)


def invoked_command() -> str | None:
    """The ``adaroll ...`` command line being run, shell-quoted; None when the caller is not
    ``main`` (a library call from Python). Recorded beside results (``adaroll compete``)."""
    import shlex

    return None if _running is None else shlex.join(["adaroll", *_running])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``adaroll`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    global _running
    _running = argv
    try:
        with guarded_output():  # a closed output (pipe reader gone) never stops a command
            return _main(argv)
    finally:
        _running = None


def _main(argv: list[str]) -> int:
    command = _command_of(argv)
    parser = build_parser(command if command in SUBCOMMANDS else "")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module, cls_name, fn_name, _ = SUBCOMMANDS[args.command]
    mod = importlib.import_module(module)
    cls = getattr(mod, cls_name)
    from trainers.run.stopping import RunInterrupted

    try:
        if args.command == "grpo" and args.resume:
            _saved_flags(args, given_options(build_parser(command), argv))
        cfg = config_from_args(cls, args)
        _resolve_main(module, fn_name)(cfg)
    except RunInterrupted as stop:
        return stop.exit_code  # saved; the run printed how to resume
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"adaroll {args.command}: error: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
