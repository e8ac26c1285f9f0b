"""The entrants of `adaroll compete` (trainers.experiments.entrants): files and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.experiments.entrants import (
    ENTRANT_KEYS,
    Entrant,
    check_unique,
    entrants_from_allocators,
    load_entrants,
)
from trainers.models.paths import MissingPathError


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_yaml_file_gives_each_entrant_its_settings(tmp_path: Path) -> None:
    f = write(tmp_path / "e.yaml", """
- name: uniform
  allocator: uniform
- name: " bamdp-snr "
  allocator: bamdp
  utility: snr(8)
  prior_alpha: 1
  belief_decay: 0.9
  round_schedule: [384, 128]
  allocator_kwargs: {horizon: 4}
""")  # fmt: skip
    a, b = load_entrants(f)
    assert a == Entrant("uniform", "uniform", {}, {})
    assert b.name == "bamdp-snr" and b.allocator == "bamdp"
    assert b.allocator_kwargs == {"horizon": 4}
    assert b.settings == {"utility": "snr(8)", "prior_alpha": 1.0, "belief_decay": 0.9,
                          "round_schedule": "384,128"}  # fmt: skip
    assert isinstance(b.settings["prior_alpha"], float)  # an integer is widened


def test_a_json_file_reads_the_same(tmp_path: Path) -> None:
    f = write(tmp_path / "e.json", json.dumps([{"name": "v", "allocator": "vip",
                                                "round_schedule": "0.75,0.25"}]))  # fmt: skip
    (e,) = load_entrants(f)
    assert e == Entrant("v", "vip", {}, {"round_schedule": "0.75,0.25"})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{}", "non-empty list of entrants"),
        ("[]", "non-empty list of entrants"),
        ("[3]", "entrant 1 must be a mapping"),
        ('[{"allocator": "uniform"}]', "entrant 1 needs a 'name'"),
        ('[{"name": "a"}]', r"entrant 1 \('a'\) needs an 'allocator'"),
        ('[{"name": "a", "allocator": "x", "utilty": "snr"}]', "Did you mean 'utility'"),
        ('[{"name": "..", "allocator": "x"}]', "cannot name a directory"),
        ('[{"name": "a", "allocator": "x", "allocator_kwargs": [1]}]', "must be a mapping"),
        ('[{"name": "a", "allocator": "x", "round_schedule": 3}]', "round_schedule must be"),
        ('[{"name": "a", "allocator": "x"}, {"name": "a", "allocator": "y"}]', "two entrants"),
        ("[{", "not valid JSON"),
    ],
)
def test_file_errors_name_the_entrant_and_the_fix(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_entrants(write(tmp_path / "e.json", text))


def test_missing_wrong_suffix_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(MissingPathError, match=r"docs/compete/entrants.yaml is an example"):
        load_entrants(tmp_path / "none.yaml")
    with pytest.raises(ValueError, match=r"must end in .yaml, .yml or .json, got '.txt'"):
        load_entrants(write(tmp_path / "e.txt", "[]"))
    with pytest.raises(ValueError, match="not valid YAML"):
        load_entrants(write(tmp_path / "e.yml", "- name: [unclosed"))


def test_names_that_share_a_directory_are_refused() -> None:
    assert Entrant("sb3:a/b", "x").directory_name == "sb3_a_b"
    check_unique([Entrant("a", "x"), Entrant("b", "x")])
    with pytest.raises(ValueError, match=r"'sb3:a' and 'sb3_a' share the run directory runs/sb3_a"):
        check_unique([Entrant("sb3:a", "x"), Entrant("sb3_a", "x")])


def test_allocators_become_entrants_named_by_their_spec() -> None:
    kw = {"bamdp": {"horizon": 2}}
    a, b = entrants_from_allocators(["uniform", "bamdp"], kw)
    assert a == Entrant("uniform", "uniform") and b == Entrant("bamdp", "bamdp", {"horizon": 2})
    b.allocator_kwargs["horizon"] = 3  # the entrant holds its own copy
    assert kw == {"bamdp": {"horizon": 2}}
    assert set(ENTRANT_KEYS) >= {"name", "allocator", "round_schedule", "utility"}


def test_an_entrant_sets_its_learning_rate_and_step_size_control(tmp_path: Path) -> None:
    f = write(tmp_path / "e.yaml", """
- name: uniform-lr1e-4
  allocator: uniform
  lr: 1e-4
- name: dapo
  allocator: uniform
  dynamic_sampling: true
  loss_type: dr_grpo
""")  # fmt: skip
    a, b = load_entrants(f)
    assert a.settings == {"lr": 1e-4}  # YAML reads 1e-4 as a string: made a number
    assert b.settings == {"dynamic_sampling": True, "loss_type": "dr_grpo"}
    bad = write(tmp_path / "bad.yaml", "- {name: a, allocator: uniform, lr: fast}\n")
    with pytest.raises(ValueError, match="lr must be a number"):
        load_entrants(bad)
