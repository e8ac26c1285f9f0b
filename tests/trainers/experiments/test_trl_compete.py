"""trainers.experiments.trl_compete: the former script's options map onto ``adaroll compete
--trainer trl``, which ``main`` names and runs (the competition itself is tested in
test_compete_trl.py)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from trainers.experiments.trl_compete import TrlCompeteConfig, main, parse_args


def test_the_options_map_onto_the_trl_competition() -> None:
    cfg = parse_args(["--allocators", "uniform,bamdp", "--seeds", "3", "--steps", "40",
                      "--batch-size", "8", "--group-size", "4", "--lr", "1e-4", "--eval-size",
                      "32", "--eval-k", "8", "--utility", "informative", "--belief-prior",
                      "fixed", "--belief-group", "none", "--round-schedule", "none",
                      "--calibration-size", "50", "--workers", "2", "--out", "/tmp/x"])  # fmt: skip
    c = cfg.compete_config()
    assert (c.trainer, c.allocators, c.seeds, c.workers, c.out) == (
        "trl",
        "uniform,bamdp",
        3,
        2,
        "/tmp/x",
    )
    g = c.grpo
    assert (g.steps, g.batch_size, g.group_size, g.lr, g.eval_size, g.eval_k) == (
        40,
        8,
        4,
        1e-4,
        32,
        8,
    )
    # the script evaluated before and after training: every run length steps
    assert g.eval_every == 40 and g.round_schedule is None and c.calibration_size == 50
    assert (g.utility, g.belief_prior, g.belief_group) == ("informative", "fixed", "none")
    run = c.run_config("bamdp", 1)
    assert type(run).__name__ == "TrlRunConfig" and run.seed == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": 0}, "seeds must be an integer >= 1, got 0"),
        ({"group_size": 1}, "group_size 1 (TRL's groups need two: --group-size 2 or more)"),
        ({"allocators": " , "}, "allocators is empty"),
        ({"utility": "informativ"}, "Did you mean 'informative'"),
        ({"belief_group": "level", "belief_prior": "fixed"}, "needs --belief-prior fitted"),
        ({"batch_size": 2, "group_size": 2, "round_schedule": "3,2"},
         "round schedule '3,2' hands out 5 rollouts, but the rounds hand out 4"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_by_the_competitions_checks(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as exc:
        TrlCompeteConfig(**kwargs)
    assert message in str(exc.value)


def test_main_names_what_replaced_it_and_runs_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[Any] = []
    monkeypatch.setattr("trainers.experiments.compete.main", lambda c: ran.append(c) or {"ok": 1})
    assert main(TrlCompeteConfig(steps=5, seeds=1, out="/tmp/y")) == {"ok": 1}
    assert ran[0].trainer == "trl" and ran[0].grpo.steps == 5
    out = capsys.readouterr().out
    assert "scripts/trl_compete.py is replaced by adaroll compete --trainer trl" in out
    command = out.splitlines()[-1].split()
    assert command[:2] == ["adaroll", "compete"] and "--trainer" in command
    assert " --seeds 1 " in out and " --steps 5 " in out and " --eval-every 5" in out


def test_cgrpo_without_its_extra_is_refused_before_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trl_cgrpo", None)  # as if trl-cgrpo were not installed
    with pytest.raises(ImportError, match=r'needs the TRL 1.14 line .*pip install -e ".\[cgrpo\]"'):
        TrlCompeteConfig(allocators="uniform, cgrpo")
    TrlCompeteConfig(allocators="uniform,bamdp")  # the others need no trl-cgrpo
