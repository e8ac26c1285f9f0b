"""Benchmark plots stay readable with many allocators (15 here, as ``--allocators all``)."""

import matplotlib

matplotlib.use("Agg")

import itertools

import matplotlib.pyplot as plt
import pytest

from agents.benchmarks.plots import (
    figure_bars,
    figure_group_sizes,
    figure_rollouts_by_mean,
    line_styles,
)

NAMES = [f"allocator_with_a_long_name_{i}" for i in range(15)]


def _rows():
    rows = []
    for g in (4, 8):
        for i, name in enumerate(NAMES):
            rows.append(
                {
                    "setting": f"rounds/rlvr/informative/G={g}",
                    "env": "rounds",
                    "difficulty": "rlvr",
                    "utility_name": "informative",
                    "group_size": g,
                    "allocator": name,
                    "reference_only": i == 3,
                    "mean_utility": 10.0 + 0.1 * i,
                    "ci95": 0.5,
                    "rollouts_by_mean": [float(i + k) for k in range(10)],
                }
            )
    return rows


def test_line_styles_are_distinct():
    styles = [tuple(sorted(s.items())) for s in line_styles(120)]
    assert len(set(styles)) == 120


@pytest.mark.parametrize("figure", [figure_rollouts_by_mean, figure_group_sizes])
def test_every_line_has_its_own_style_and_the_legend_is_outside(figure):
    fig = figure(_rows())
    fig.canvas.draw()
    ax = fig.axes[-1]
    lines = [ln for ln in ax.get_lines() if ln.get_label() in NAMES]
    lines += [c.lines[0] for c in ax.containers if c.get_label() in NAMES]  # errorbar lines
    assert len(lines) == 15
    looks = {(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in lines}
    assert len(looks) == 15
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    axes_box = ax.get_window_extent(renderer)
    assert legend.x0 >= axes_box.x1  # right of the axes, over no line
    plt.close(fig)


def test_bar_labels_do_not_overlap():
    fig = figure_bars(_rows())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        assert len(boxes) == 15
        for a, b in itertools.pairwise(boxes):
            assert not a.overlaps(b)
    plt.close(fig)
