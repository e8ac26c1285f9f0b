"""The report of ``adaroll bench --from-run`` (``trainers.experiments.sim_to_real_report``)."""

import math

import pytest

from trainers.experiments.sim_to_real_report import _order, entrant_rows, rankings


def test_rankings_hand_worked():
    def entrant(name, pred, live):
        fig = {k: {"mean": None, "ci95": None} for k in ("informative_prompts", "informative_frac")}
        return {
            "comparison": "c",
            "entrant": name,
            "predicted": {"gradient_rollouts": {"mean": pred, "ci95": None}, **fig},
            "live": {"gradient_rollouts": {"mean": live, "ci95": None}, **fig},
        }

    # sim orders a > b > c, live a > c > b: one pair swapped; Spearman 1 - 6·2/(3·8) = 0.5
    ranks = rankings([entrant("a", 3.0, 30.0), entrant("b", 2.0, 10.0), entrant("c", 1.0, 20.0)])
    assert len(ranks) == 1
    (r,) = ranks
    assert r["same_order"] is False and r["discordant_pairs"] == 1
    assert r["spearman"] == pytest.approx(0.5)
    assert r["order_predicted"] == "a > b > c" and r["order_live"] == "a > c > b"
    ranks = rankings([entrant("a", 2.0, 5.0), entrant("b", 1.0, 5.0)])  # a live tie agrees
    assert ranks[0]["same_order"] is True and ranks[0]["order_live"] == "a = b"


def figures(**means):
    """Predicted or live figures: the given means, every other metric absent."""
    keys = ("gradient_rollouts", "informative_prompts", "informative_frac")
    return {k: {"mean": means.get(k), "ci95": None} for k in keys}


def run_row(entrant, seed, pred, live, error=None):
    return {"comparison": "c", "entrant": entrant, "allocator": "bamdp", "seed": seed,
            "error": error, "predicted": figures(gradient_rollouts=pred),
            "live": figures(gradient_rollouts=live)}  # fmt: skip


def test_entrant_rows_average_the_runs_with_a_ci_over_seeds():
    rows = entrant_rows([run_row("a", 0, 10.0, 12.0), run_row("a", 1, 14.0, 12.0),
                         run_row("b", 0, 8.0, None, error="unknown allocator")])  # fmt: skip
    a, b = rows
    assert (a["entrant"], a["runs"], a["seeds"], a["simulated_runs"]) == ("a", 2, [0, 1], 2)
    assert a["predicted"]["gradient_rollouts"]["mean"] == pytest.approx(12.0)
    # two runs 10 and 14: sd 2·√2, se 2, t(0.975, 1) = 12.706
    assert a["predicted"]["gradient_rollouts"]["ci95"] == pytest.approx(12.706 * 2, rel=1e-4)
    assert a["live"]["gradient_rollouts"] == {"mean": 12.0, "ci95": 0.0}
    assert a["predicted"]["informative_frac"] == {"mean": None, "ci95": None}
    assert b["simulated_runs"] == 0 and b["errors"] == ["unknown allocator"]
    assert b["predicted"]["gradient_rollouts"] == {"mean": 8.0, "ci95": None}  # one run: no CI
    assert b["live"]["gradient_rollouts"] == {"mean": None, "ci95": None}


def test_order_joins_equal_values():
    assert _order([("a", 1.0), ("b", 3.0), ("c", 1.0)]) == "b > a = c"
    assert _order([("x", math.inf)]) == "x"
