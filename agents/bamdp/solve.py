"""``adaroll solve``: build and cache index tables, print a summary, draw the policy."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.model import AllocationParams
from adaroll_env.priors import fit_beta
from adaroll_env.utilities import get_utility
from agents.bamdp.bound import dual_minimum
from agents.bamdp.cache import cache_dir, get_table, table_path
from agents.bamdp.index import GRID_SIZE, MAX_HORIZON, IndexTable, TableSpec


@dataclass
class SolveConfig:
    """Configuration of ``adaroll solve`` (one prior, utility and cap per table)."""

    prior: str = field(
        default="matched",
        metadata={"help": "'a,b' for Beta(a, b), or 'matched': the Beta fitted to --difficulty"},
    )
    difficulty: str = field(
        default="rlvr", metadata={"help": "difficulty profile that 'matched' fits"}
    )
    utility: str = field(default="snr(8)", metadata={"help": "utility name or module:function"})
    max_group: int = field(default=256, metadata={"help": "cap on rollouts of one question"})
    num_questions: int = field(
        default=64, metadata={"help": "B, to compute the price λ̂ of a batch and its bound"}
    )
    group_size: int = field(default=8, metadata={"help": "G, the batch's budget N = G·B"})
    max_horizon: int = field(default=MAX_HORIZON, metadata={"help": "largest n a table covers"})
    grid_size: int = field(default=GRID_SIZE, metadata={"help": "prices on the solver's grid"})
    cache_dir: str = field(
        default="", metadata={"help": "table cache ('': $ADAROLL_CACHE_DIR or ~/.cache/adaroll)"}
    )
    out: str = field(default="runs/solve.png", metadata={"help": "PNG of the policy ('': none)"})
    round_schedule: str = field(
        default="",
        metadata={
            "help": "rounds of the batch's budget, as --round-schedule ('256,256', '0.75,0.25'):"
            " also solve the rounds-aware relaxation, print its per-round prices and bound, and "
            "draw the rollouts a question takes in each round (<out>-rounds.png)"
        },
    )

    def __post_init__(self) -> None:
        get_utility(self.utility)
        self.prior_pair()
        if self.max_group < 1:
            raise ValueError(f"max_group must be >= 1, got {self.max_group}")
        if self.round_schedule:
            from adaroll_env.schedules import parse_round_schedule

            parse_round_schedule(self.round_schedule, self.num_questions * self.group_size)
        if self.num_questions * self.group_size > self.num_questions * self.max_group:
            raise ValueError(
                f"group_size ({self.group_size}) exceeds max_group ({self.max_group}): "
                "raise max_group or lower group_size"
            )

    def prior_pair(self) -> tuple[float, float]:
        """The Beta prior the table is built for."""
        if self.prior.strip() == "matched":
            return fit_beta(self.difficulty)
        try:
            a, b = (float(x) for x in self.prior.split(","))
        except ValueError:
            raise ValueError(
                f"prior {self.prior!r} must be 'matched' or 'a,b' (e.g. 0.3,0.3)"
            ) from None
        if not (a > 0 and b > 0):
            raise ValueError(f"prior ({a}, {b}) must have positive parameters")
        return a, b


def plot_policy(table: IndexTable, lam: float | None, path: Path, title: str) -> None:
    """Heat map of λ*(s, f) over the triangle, with the continue region at price ``lam``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import SymLogNorm

    full = table.index
    H = table.spec.horizon
    if lam is not None:
        s_i, f_i = np.nonzero(np.isfinite(full) & (full > lam))
        reach = int((s_i + f_i).max()) if s_i.size else 0
        H = min(H, max(10, int(1.5 * reach) + 2))
    H = min(H, 64)
    idx = full[: H + 1, : H + 1].copy()
    finite = np.isfinite(idx)
    shown = np.where(finite, idx, np.nan)
    span = float(np.nanmax(np.abs(shown))) if finite.any() else 1.0
    fig, axes = plt.subplots(
        1, 2 if lam is not None else 1, figsize=(12 if lam is not None else 6.5, 5.2), squeeze=False
    )
    ax = axes[0, 0]
    norm = SymLogNorm(linthresh=max(span * 1e-4, 1e-12), vmin=-span, vmax=span)
    im = ax.imshow(shown.T, origin="lower", cmap="coolwarm", norm=norm, aspect="equal")
    ax.set_xlabel("successes s")
    ax.set_ylabel("failures f")
    ax.set_title("index λ*(s, f) (symmetric log scale)")
    fig.colorbar(im, ax=ax, fraction=0.046)
    if lam is not None:
        region = np.where(finite, (idx > lam).astype(float), np.nan)
        ax2 = axes[0, 1]
        ax2.imshow(region.T, origin="lower", cmap="RdYlGn", vmin=0, vmax=1, aspect="equal")
        ax2.set_xlabel("successes s")
        ax2.set_ylabel("failures f")
        ax2.set_title(f"continue (green) / stop (red) at the batch price λ̂ = {lam:.4g}")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(cfg: SolveConfig) -> dict[str, Any]:
    """Build (or load) the table, print the summary, write the PNG."""
    from rich.console import Console
    from rich.table import Table

    a, b = cfg.prior_pair()
    directory = cfg.cache_dir or None
    spec = TableSpec.make(
        a, b, cfg.utility, cfg.max_group, max_horizon=cfg.max_horizon, grid_size=cfg.grid_size
    )
    cached = table_path(spec, directory).is_file()
    t0 = time.perf_counter()
    table = get_table(spec, directory=directory)
    seconds = time.perf_counter() - t0
    params = AllocationParams(
        num_questions=cfg.num_questions,
        budget=cfg.group_size * cfg.num_questions,
        prior_alpha=a,
        prior_beta=b,
        max_group=cfg.max_group,
        utility=cfg.utility,
    )
    lam, bound = dual_minimum(params, max_horizon=cfg.max_horizon)
    finite = table.index[np.isfinite(table.index)]
    summary = {
        "prior": (a, b),
        "utility": cfg.utility,
        "cap": spec.cap,
        "horizon": spec.horizon,
        "states": int(finite.size),
        "seconds": seconds,
        "from_cache": cached,
        "cache_file": str(table_path(spec, directory)),
        "index_at_start": float(table.index[0, 0]),
        "batch_price": lam,
        "bound": bound,
        "bound_per_question": bound / cfg.num_questions,
    }
    rows = Table(title="adaroll solve", show_header=False)
    rows.add_column("what")
    rows.add_column("value")
    rows.add_row("prior", f"Beta({a:.4g}, {b:.4g})")
    rows.add_row("utility / cap / horizon", f"{cfg.utility} / {spec.cap} / {spec.horizon}")
    rows.add_row(
        "table", f"{finite.size} states, {'loaded' if cached else 'built'} in {seconds:.3f} s"
    )
    rows.add_row("cache file", str(summary["cache_file"]))
    rows.add_row("index at (0, 0)", f"{summary['index_at_start']:.6g}")
    rows.add_row(
        f"batch B={cfg.num_questions}, G={cfg.group_size}",
        f"price λ̂ = {lam:.6g}; certified bound {bound:.4f} "
        f"({bound / cfg.num_questions:.4f} per question)",
    )
    console = Console() if Console().is_terminal else Console(width=120)
    console.print(rows)
    if cfg.out:
        out = Path(cfg.out)
        plot_policy(
            table,
            lam,
            out,
            f"Beta({a:.3g}, {b:.3g}), {cfg.utility}, cap {spec.cap}; "
            f"batch B={cfg.num_questions}, G={cfg.group_size}",
        )
        console.print(f"policy plot: {out}")
    if cfg.round_schedule:
        title = f"Beta({a:.3g}, {b:.3g}), {cfg.utility}"
        summary.update(_rounds(cfg, params, console, title=title))
    summary["cache_dir"] = str(cache_dir(directory))
    return summary


def _rounds(cfg: SolveConfig, params: AllocationParams, console: Any, title: str) -> dict[str, Any]:
    """The rounds-aware relaxation of the batch: prices, bound, and the per-round choice plot."""
    from adaroll_env.schedules import parse_round_schedule
    from agents.bamdp.rounds import backward, plan_rounds

    schedule = parse_round_schedule(cfg.round_schedule, params.total_budget)
    rp = params.replace(mode="rounds", round_size=schedule[0], round_schedule=schedule)
    t0 = time.perf_counter()
    plan = plan_rounds(rp)
    seconds = time.perf_counter() - t0
    prices = ", ".join(f"{x:.5g}" for x in plan.prices)
    console.print(
        f"rounds {'+'.join(map(str, plan.rounds))}: prices λ = ({prices}); rounds-aware "
        f"certified bound {plan.bound:.4f} ({plan.bound / cfg.num_questions:.4f} per question; "
        f"solved in {seconds:.2f} s)"
    )
    out: dict[str, Any] = {"rounds": list(plan.rounds), "round_prices": plan.prices.tolist(),
                           "rounds_bound": plan.bound}  # fmt: skip
    if cfg.out:
        _, choice = backward(plan.specs[0], plan.rounds, plan.prices)
        path = Path(cfg.out).with_name(Path(cfg.out).stem + "-rounds.png")
        plot_rounds(choice, plan.rounds, path, f"{title}; B={cfg.num_questions}, rounds "
                    f"{'+'.join(map(str, plan.rounds))}")  # fmt: skip
        console.print(f"round policy plot: {path}")
        out["rounds_plot"] = str(path)
    return out


def plot_rounds(
    choice: np.ndarray, rounds: tuple[int, ...], path: Path, title: str, top: int = 32
) -> None:
    """One panel per round (the first four): the rollouts the relaxed problem gives a question
    at each (s, f) at the start of that round."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T = min(len(rounds), 4)
    H = min(choice.shape[1] - 1, top)
    fig, axes = plt.subplots(1, T, figsize=(4.2 * T, 4.2), squeeze=False)
    for t in range(T):
        grid = np.full((H + 1, H + 1), np.nan)  # [s, f]
        for n in range(H + 1):
            for s in range(n + 1):
                grid[s, n - s] = choice[t, n, s]
        ax = axes[0, t]
        im = ax.imshow(grid.T, origin="lower", cmap="viridis", aspect="equal")
        ax.set_xlabel("successes s")
        ax.set_ylabel("failures f")
        ax.set_title(f"round {t + 1} ({rounds[t]} rollouts): rollouts taken")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
