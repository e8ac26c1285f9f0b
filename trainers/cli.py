"""The ``adaroll`` command: a thin dispatcher from subcommands to ``main(cfg)`` functions.

Each subcommand parses a dataclass config (its fields and help texts become the options) and calls
the ``main(cfg)`` of the package that owns it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, get_args, get_origin, get_type_hints

#: subcommand -> (module, config class, main function, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str, str, str]] = {
    "bench": (
        "agents.benchmark",
        "BenchConfig",
        "main",
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
        "trainers.pretrain",
        "PretrainConfig",
        "main",
        "warm-start the tiny model on arithmetic (what the model name 'tiny' loads)",
    ),
    "grpo": (
        "trainers.grpo",
        "GRPOConfig",
        "trainers.run:main",
        "train a model with GRPO, rollouts placed by an allocator (metrics, eval, checkpoints)",
    ),
    "compete": (
        "trainers.compete",
        "CompeteConfig",
        "main",
        "allocators compete in real GRPO training: same checkpoint, data, seeds and budget",
    ),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0], True
    return tp, False


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one option per dataclass field, with the field's help, default and choices."""
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, optional = _unwrap_optional(hints[f.name])
        help_text = f.metadata.get("help", "")
        default = f.default if f.default is not dataclasses.MISSING else None
        kwargs: dict[str, Any] = {"default": default, "dest": f.name}
        if tp is bool:
            parser.add_argument(
                _flag(f.name),
                action=argparse.BooleanOptionalAction,
                help=f"{help_text} (default: {default})",
                **kwargs,
            )
            continue
        if get_origin(tp) is Literal:
            choices = list(get_args(tp))
            kwargs["choices"] = choices
            kwargs["type"] = type(choices[0])
        elif tp in (int, float, str):
            kwargs["type"] = tp
        else:
            raise TypeError(f"unsupported config field type {tp!r} for {f.name}")
        if optional:
            base = kwargs["type"]

            def parse(text: str, base: Any = base) -> Any:
                return None if text.lower() in ("none", "") else base(text)

            kwargs["type"] = parse
            kwargs["metavar"] = base.__name__.upper()
        shown = "none" if default is None else default
        parser.add_argument(_flag(f.name), help=f"{help_text} (default: {shown})", **kwargs)


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``adaroll`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    parser = build_parser(command if command in SUBCOMMANDS else "")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module, cls_name, fn_name, _ = SUBCOMMANDS[args.command]
    mod = importlib.import_module(module)
    cls = getattr(mod, cls_name)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)}
    try:
        cfg = cls(**values)
        _resolve_main(module, fn_name)(cfg)
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"adaroll {args.command}: error: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
