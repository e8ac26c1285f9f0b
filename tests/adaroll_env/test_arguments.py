"""Command-line options generated from a config dataclass (``adaroll_env.arguments``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

import pytest

from adaroll_env.arguments import parse_config


@dataclass
class _Cfg:
    """A config of every supported field type."""

    count: int = field(default=3, metadata={"help": "how many"})
    rate: float = 0.5
    name: str = "x"
    kind: Literal["a", "b"] = "a"
    limit: int | None = None
    plots: bool = True


def test_defaults_and_every_field_type():
    assert parse_config(_Cfg, "", []) == _Cfg()
    argv = ["--count", "7", "--rate", "0.25", "--name", "y", "--kind", "b", "--limit", "4"]
    got = parse_config(_Cfg, "", [*argv, "--no-plots"])
    assert dataclasses.asdict(got) == {
        "count": 7,
        "rate": 0.25,
        "name": "y",
        "kind": "b",
        "limit": 4,
        "plots": False,
    }
    assert parse_config(_Cfg, "", ["--limit", "none"]).limit is None


def test_bad_values_exit_with_usage(capsys):
    with pytest.raises(SystemExit) as info:
        parse_config(_Cfg, "", ["--kind", "c"])
    assert info.value.code == 2
    assert "invalid choice: 'c'" in capsys.readouterr().err


@dataclass
class _Lists:
    """List fields take one or more values."""

    dirs: list[str] = field(default_factory=list, metadata={"help": "dirs", "metavar": "DIR"})
    sizes: list[int] = field(default_factory=lambda: [8])


def test_list_fields_take_one_or_more_values(capsys):
    assert parse_config(_Lists, "", []) == _Lists(dirs=[], sizes=[8])
    got = parse_config(_Lists, "", ["--dirs", "a", "b", "--sizes", "4", "16"])
    assert got == _Lists(dirs=["a", "b"], sizes=[4, 16])
    with pytest.raises(SystemExit):
        parse_config(_Lists, "", ["--help"])
    assert "--dirs DIR [DIR ...]" in capsys.readouterr().out
