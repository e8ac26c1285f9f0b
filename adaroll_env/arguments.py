"""Command-line options from a config dataclass: one option per field, with its help and default.

The one generator of options for every adaroll command line (the ``adaroll`` CLI and the
benchmark scripts), kept in the bottom layer so that a script of ``adaroll_env`` or ``agents``
needs no import of the trainer's CLI.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints

__all__ = ["add_dataclass_arguments", "parse_config"]


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


def parse_config(cls: type, description: str, argv: list[str] | None = None) -> Any:
    """Parse ``argv`` (default: ``sys.argv[1:]``) into an instance of the config dataclass."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, cls)
    return cls(**vars(parser.parse_args(argv)))
