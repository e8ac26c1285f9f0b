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

__all__ = ["add_dataclass_arguments", "config_from_args", "parse_config"]


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

    Fields of type ``int``, ``float``, ``str``, ``bool`` (``--x``/``--no-x``), a ``Literal``, one
    of those or None, and ``list[str]`` (or of ints, floats: one or more values, ``--x A B``;
    the field's metadata may name the ``metavar``).

    A field holding a dataclass (a ``GRPOConfig`` inside ``CompeteConfig``) adds the options of
    its own fields, without prefix: those named in the outer class's ``NESTED_FLAGS[field]``
    (all when it names none), with the defaults of the field's default instance. Fields with
    ``init=False`` (derived in ``__post_init__``) get no option. Read the parsed arguments back
    with ``config_from_args``.
    """
    hints = get_type_hints(cls)
    nested_flags: dict[str, tuple[str, ...]] = getattr(cls, "NESTED_FLAGS", {})
    for f in dataclasses.fields(cls):
        if not f.init:  # derived in __post_init__, never given
            continue
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
    if get_origin(tp) is list and get_args(tp) in ((str,), (int,), (float,)):
        # a list field takes one or more values: --from-run DIR [DIR ...]
        kwargs.update(nargs="+", type=get_args(tp)[0], metavar=f.metadata.get("metavar", "VALUE"))
        parser.add_argument(_flag(f.name), help=_with_default(help_text, default), **kwargs)
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
        if not f.init:
            continue
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
    shown = "none" if default is None or default == [] else default
    return f"{help_text} (default: {shown})"


def parse_config(cls: type, description: str, argv: list[str] | None = None) -> Any:
    """Parse ``argv`` (default: ``sys.argv[1:]``) into an instance of the config dataclass."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, cls)
    return config_from_args(cls, parser.parse_args(argv))


def given_options(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The destinations of the options ``argv`` gives explicitly (not left at their default):
    ``argv`` parsed again with every default replaced by a marker. ``parser`` is changed: pass
    one built for this purpose."""
    marker = object()

    def unset(p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    unset(child)
            elif action.dest != "help":
                action.default = marker
        p._defaults = dict.fromkeys(p._defaults, marker)

    unset(parser)
    parsed = vars(parser.parse_args(argv))
    return {dest for dest, value in parsed.items() if value is not marker}
