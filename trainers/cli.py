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
    """Add one option per dataclass field, with the field's help, default and choices.

    A field holding a dataclass (a ``GRPOConfig`` inside ``CompeteConfig``) adds the options of
    its own fields, without prefix: those named in the outer class's ``NESTED_FLAGS[field]``
    (all when it names none), with the defaults of the field's default instance. Read the parsed
    arguments back with ``config_from_args``.
    """
    hints = get_type_hints(cls)
    nested_flags: dict[str, tuple[str, ...]] = getattr(cls, "NESTED_FLAGS", {})
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            inner = _default_of(f)
            inner_hints = get_type_hints(tp)
            keep = nested_flags.get(f.name)
            for g in dataclasses.fields(tp):
                if keep is None or g.name in keep:
                    _add_field(parser, g, inner_hints[g.name], getattr(inner, g.name),
                               dest=f"{f.name}.{g.name}")  # fmt: skip
            continue
        _add_field(parser, f, tp, _default_of(f), dest=f.name)


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _add_field(
    parser: argparse.ArgumentParser, f: dataclasses.Field[Any], hint: Any, default: Any, dest: str
) -> None:
    tp, optional = _unwrap_optional(hint)
    help_text = f.metadata.get("help", "")
    kwargs: dict[str, Any] = {"default": default, "dest": dest}
    if tp is bool:
        parser.add_argument(
            _flag(f.name),
            action=argparse.BooleanOptionalAction,
            help=_with_default(help_text, default),
            **kwargs,
        )
        return
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
    if "choices" not in kwargs:
        kwargs.setdefault("metavar", f.name.upper())  # never the nested dest "GRPO.X"
    parser.add_argument(_flag(f.name), help=_with_default(help_text, default), **kwargs)


def config_from_args(cls: type, args: argparse.Namespace) -> Any:
    """The ``cls`` instance the parsed ``args`` describe (nested dataclass fields included)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = get_type_hints(cls)[f.name]
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            given = {
                g.name: getattr(args, f"{f.name}.{g.name}")
                for g in dataclasses.fields(tp)
                if hasattr(args, f"{f.name}.{g.name}")
            }
            values[f.name] = dataclasses.replace(_default_of(f), **given)
        else:
            values[f.name] = getattr(args, f.name)
    return cls(**values)


def _with_default(help_text: str, default: Any) -> str:
    """The help text with ``(default: X)`` once: not added where the text already says it."""
    if "(default" in help_text.lower():
        return help_text
    shown = "none" if default is None else default
    return f"{help_text} (default: {shown})"


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
    from trainers.stopping import RunInterrupted

    try:
        cfg = config_from_args(cls, args)
        _resolve_main(module, fn_name)(cfg)
    except RunInterrupted as stop:
        return stop.exit_code  # saved; the run printed how to resume
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"adaroll {args.command}: error: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
