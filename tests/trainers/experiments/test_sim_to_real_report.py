"""The report of ``adaroll bench --from-run`` (``trainers.experiments.sim_to_real_report``)."""

import math

import pytest

from trainers.experiments.sim_to_real_report import (
    _order,
    entrant_rows,
    field_rows,
    rankings,
    spearman,
)


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


def field_run(entrant, seed, pred, live, final, error=None):
    """One run's row as ``run_from_runs`` builds it, with only what ``field_rows`` reads."""
    return {"comparison": "c", "entrant": entrant, "seed": seed, "error": error,
            "predicted": figures(gradient_rollouts=pred),
            "live_all_steps": figures(gradient_rollouts=live), "final_pass@1": final}  # fmt: skip


def test_field_rows_rank_correlations_by_hand():
    rows = [
        field_run("u", 0, 10.0, 15.0, 0.30), field_run("u", 1, 10.0, 15.0, 0.30),
        field_run("a", 0, 18.0, 25.0, 0.32), field_run("a", 1, 22.0, 25.0, 0.32),
        field_run("b", 0, 30.0, 35.0, 0.29), field_run("b", 1, 30.0, 35.0, 0.29),
        field_run("c", 0, 40.0, 45.0, 0.33), field_run("c", 1, 40.0, 45.0, 0.33),
        # an entrant the simulator could not build, one seed the baseline never ran
        field_run("x", 0, None, 50.0, 0.5, error="cannot simulate"),
        field_run("d", 7, 5.0, 5.0, 0.1),
    ]  # fmt: skip
    (report,) = field_rows(rows, {"c": "u"})
    assert report["baseline"] == "u"
    e = {x["entrant"]: x for x in report["entrants"]}
    assert e["a"]["predicted"] == 20.0 and e["a"]["predicted_gain"] == pytest.approx(1.0)
    assert e["c"]["predicted_gain"] == pytest.approx(3.0) and e["u"]["predicted_gain"] == 0.0
    assert e["a"]["delta_final"] == pytest.approx(0.02) and e["a"]["paired_seeds"] == 2
    assert e["u"]["delta_final"] == 0.0
    assert e["x"]["predicted"] is None and e["x"]["predicted_gain"] is None
    assert e["d"]["delta_final"] is None and e["d"]["paired_seeds"] == 0
    rho = report["spearman"]
    # simulated order d < u < a < b < c; live gradient rollouts the same: rho = 1 over 5 entrants
    assert rho["live"] == {"rho": pytest.approx(1.0), "n": 5}
    # Δ final pass@1 of u, a, b, c: 0, +2, −1, +3 points, ranks 2, 3, 1, 4 against 1, 2, 3, 4:
    # Σd² = 1 + 1 + 4 + 0 = 6, rho = 1 − 6·6 / (4·(16 − 1)) = 0.4 (d has no paired seed)
    assert rho["delta_final"] == {"rho": pytest.approx(0.4), "n": 4}


def test_field_rows_with_too_few_entrants_or_no_baseline():
    rows = [field_run("u", 0, 10.0, 15.0, 0.3), field_run("a", 0, 20.0, 25.0, 0.4)]
    (report,) = field_rows(rows, {"c": "u"})
    assert report["spearman"]["live"] == {"rho": None, "n": 2}  # two entrants: no correlation
    (report,) = field_rows(rows, {"c": None})  # the baseline has no run here
    assert all(e["predicted_gain"] is None and e["delta_final"] is None
               for e in report["entrants"])  # fmt: skip
    assert spearman([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None  # a constant ordering
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
