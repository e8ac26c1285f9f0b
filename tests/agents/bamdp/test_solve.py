"""Tests of agents.bamdp.solve (``adaroll solve``): its config checks, the summary of a small
table, and the policy plot."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pytest

from adaroll_env import AllocationParams
from adaroll_env.priors import fit_beta
from agents.bamdp import cache as bamdp_cache
from agents.bamdp.bound import upper_bound
from agents.bamdp.index import TableSpec, build_table
from agents.bamdp.solve import SolveConfig, main, plot_policy


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "cache"))
    bamdp_cache.clear_memory()
    yield
    bamdp_cache.clear_memory()


def test_prior_pair():
    assert SolveConfig(prior="0.3, 0.7").prior_pair() == (0.3, 0.7)
    assert SolveConfig(prior="matched", difficulty="rlvr").prior_pair() == fit_beta("rlvr")


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"prior": "abc"}, "prior 'abc' must be 'matched' or 'a,b' (e.g. 0.3,0.3)"),
        ({"prior": "1,2,3"}, "prior '1,2,3' must be 'matched' or 'a,b' (e.g. 0.3,0.3)"),
        ({"prior": "0,1"}, "prior (0.0, 1.0) must have positive parameters"),
        ({"max_group": 0}, "max_group must be >= 1, got 0"),
        (
            {"group_size": 9, "max_group": 8},
            "group_size (9) exceeds max_group (8): raise max_group or lower group_size",
        ),
    ],
)
def test_config_errors(kw, message):
    with pytest.raises(ValueError) as info:
        SolveConfig(**kw)
    assert str(info.value) == message


def test_config_unknown_utility_suggests_the_closest():
    with pytest.raises(ValueError, match="Did you mean 'informative'"):
        SolveConfig(utility="informativ")


def test_main_summary_of_a_small_table(tmp_path):
    cfg = SolveConfig(
        prior="1,1",
        utility="informative",
        max_group=4,
        num_questions=2,
        group_size=3,
        cache_dir=str(tmp_path / "tables"),
        out="",
    )
    first = main(cfg)
    spec = TableSpec.make(1.0, 1.0, "informative", 4)
    params = AllocationParams(num_questions=2, budget=6, max_group=4, utility="informative")
    assert first["prior"] == (1.0, 1.0) and first["cap"] == 4 and first["horizon"] == 4
    assert first["states"] == 10  # the finite indices: n = 0..3 (at the cap the index is -inf)
    assert first["index_at_start"] == build_table(spec).index[0, 0]
    assert first["bound"] == pytest.approx(upper_bound(params), abs=1e-12)
    assert first["bound_per_question"] == pytest.approx(first["bound"] / 2)
    assert first["from_cache"] is False
    assert first["cache_file"] == str(tmp_path / "tables" / "tables" / f"{spec.digest()}.npz")
    assert first["cache_dir"] == str(tmp_path / "tables")
    second = main(cfg)
    assert second["from_cache"] is True and second["bound"] == first["bound"]


def test_plot_policy_draws_one_or_two_panels(tmp_path):
    table = build_table(TableSpec.make(0.5, 0.5, "informative", 12))
    plot_policy(table, 0.01, tmp_path / "two.png", "with the batch price")
    plot_policy(table, None, tmp_path / "one.png", "the index only")
    # figure sizes 12 x 5.2 and 6.5 x 5.2 inches at 110 dpi
    assert matplotlib.image.imread(tmp_path / "two.png").shape[:2] == (572, 1320)
    assert matplotlib.image.imread(tmp_path / "one.png").shape[:2] == (572, 715)


def test_main_writes_the_plot(tmp_path):
    out = tmp_path / "plots" / "solve.png"
    cfg = SolveConfig(prior="1,1", max_group=6, num_questions=2, group_size=3, out=str(out))
    main(cfg)
    img = matplotlib.image.imread(out)
    assert img.shape[:2] == (572, 1320) and np.ptp(img[..., :3]) > 0


def test_main_solves_and_draws_the_rounds_policy(tmp_path, capsys):
    out = tmp_path / "solve.png"
    cfg = SolveConfig(prior="0.3,0.3", max_group=32, num_questions=16, group_size=8,
                      out=str(out), round_schedule="64,64",
                      cache_dir=str(tmp_path / "c"))  # fmt: skip
    summary = main(cfg)
    assert summary["rounds"] == [64, 64] and len(summary["round_prices"]) == 2
    assert summary["rounds_bound"] <= summary["bound"] + 1e-9  # never looser than one price
    printed = capsys.readouterr().out
    assert "rounds 64+64: prices" in printed and "rounds-aware" in printed
    img = matplotlib.image.imread(tmp_path / "solve-rounds.png")
    assert img.shape[1] > img.shape[0] and np.ptp(img[..., :3]) > 0  # two panels side by side
    with pytest.raises(ValueError, match="round schedule"):
        SolveConfig(num_questions=4, group_size=8, round_schedule="20,20")
