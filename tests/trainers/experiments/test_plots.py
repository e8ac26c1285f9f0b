"""The plots of ``adaroll compete`` (``trainers.experiments.plots``): what each one draws."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from trainers.experiments import plots

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures the plots close (kept to read what they drew)."""
    figures: list[Any] = []
    plt = plots._pyplot()
    close = plt.close

    def keep(fig: Any) -> None:
        figures.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    return figures


def test_accuracy_is_the_mean_over_seeds_in_percent(tmp_path: Path, drawn: list[Any]) -> None:
    cfg = SimpleNamespace(grpo=SimpleNamespace(task="arith", model="tiny"), seeds=2)
    curves = {
        "uniform": [[(0.0, 0.1), (10.0, 0.3), (20.0, 0.9)], [(0.0, 0.3), (10.0, 0.5)]],
        "bamdp": [[(0.0, 0.2), (10.0, 0.6)]],
    }
    plots.plot_accuracy(tmp_path, curves, cfg)
    assert (tmp_path / "accuracy.png").read_bytes()[:8] == PNG
    (ax,) = drawn[0].axes
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"uniform", "bamdp"}
    # the shorter seed cuts uniform's curve to two evaluations
    assert np.allclose(lines["uniform"].get_xdata(), [0.0, 10.0])
    assert np.allclose(lines["uniform"].get_ydata(), [20.0, 40.0])
    assert np.allclose(lines["bamdp"].get_ydata(), [20.0, 60.0])
    assert len(ax.collections) == 1  # a band only where there are two seeds
    assert "mean of 2 seeds" in ax.get_title()


def test_informative_fraction_is_smoothed_per_step(tmp_path: Path, drawn: list[Any]) -> None:
    frac = [0.0, 1.0] * 20  # 40 steps: a window of 2 steps averages to 0.5
    runs = {"uniform": [{"metrics": [{"informative_frac": f} for f in frac]}]}
    plots.plot_informative(tmp_path, runs)
    assert (tmp_path / "informative.png").read_bytes()[:8] == PNG
    (line,) = drawn[0].axes[0].get_lines()
    assert np.allclose(line.get_ydata(), 0.5) and line.get_ydata().size == 39


def test_calibration_summarises_the_observed_rates(tmp_path: Path, drawn: list[Any]) -> None:
    assert plots.plot_calibration(tmp_path, {"uniform": [{"beliefs": None}]}) is None
    assert not (tmp_path / "calibration.png").exists()
    beliefs = {"rates": [0.0, 1.0, 0.5, 0.5, 0.25], "rollouts": [8, 8, 4, 2, 4]}
    out = plots.plot_calibration(tmp_path, {"a": [{"beliefs": beliefs}], "b": []})
    assert out is not None and (tmp_path / "calibration.png").read_bytes()[:8] == PNG
    assert out["prompts"] == 5 and out["observed_mean"] == pytest.approx(0.45)
    assert out["observed_frac_zero"] == 0.2 and out["observed_frac_one"] == 0.2
    assert 0 <= out["rlvr_frac_zero"] <= 1 and len(out["fitted_beta"]) == 2
    again = plots.plot_calibration(tmp_path, {"a": [{"beliefs": beliefs}]})
    assert again == out  # the simulated side is seeded: the same numbers every time
