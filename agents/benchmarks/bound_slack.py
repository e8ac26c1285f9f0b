"""How a gap to the rounds-aware bound splits: the bound's own slack against the policy's
shortfall, measured exactly where the Bayes-optimal value can be computed.

What ``scripts/bench_bound_slack.py`` runs. At B = 64 the gap of ``bamdp`` to the rounds-aware
certified bound (``agents.bamdp.rounds.rounds_bound``) is a Monte Carlo estimate, and the exact
optimum V* is out of reach, so a gap above 1 % cannot say whether the bound is loose or the
policy short. On small instances of the same setting (the same prior, utility, schedule and
G = N / B) all three are exact: V* by backward induction (``agents.bamdp.exact.solve_exact``),
the rounds-relaxation policy's value over the whole outcome tree
(``agents.policy_value.exact_value`` of ``bamdp`` with ``exact=False``, the policy B = 64 plays)
and the bound. ``slack = (bound − V*) / bound`` is the bound's looseness, ``shortfall =
(V* − policy) / V*`` the policy's, both with no sampling noise.

>>> row = measure(2, "snr(4)", "2", prior=(0.3, 0.3))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from adaroll_env.model import AllocationParams, step_round_size
from adaroll_env.schedules import parse_round_schedule

#: the JSON file written into ``out``
RESULTS_FILE = "bench_bound_slack.json"


@dataclass
class BoundSlackConfig:
    """Configuration of ``scripts/bench_bound_slack.py``."""

    bs: str = field(default="2,3", metadata={"help": "B values (N = G·B), comma-separated"})
    group_size: int = field(default=8, metadata={"help": "G: rollouts per question on average"})
    utilities: str = field(
        default="snr(4),snr(16)", metadata={"help": "utilities, comma-separated"}
    )
    schedules: str = field(
        default="2,0.75+0.25",
        metadata={
            "help": "schedules: a number of equal rounds, or fractions of the budget joined by "
            "'+' (0.75+0.25 is 384+128 at B = 64)"
        },
    )
    prior: str = field(default="0.3,0.3", metadata={"help": "the Beta prior 'alpha,beta'"})
    max_states: int = field(
        default=2_000_000, metadata={"help": "give up on an instance past this many states"}
    )
    out: str = field(default="runs/bench_bound_slack", metadata={"help": "folder for the JSON"})


def instance(
    B: int, utility: str, schedule: str, *, prior: tuple[float, float], group_size: int = 8
) -> AllocationParams:
    """The rounds-mode instance: B questions, N = G·B, ``schedule`` (``"2"`` or ``"0.75+0.25"``)."""
    N = group_size * B
    kw: dict[str, Any] = {
        "num_questions": B,
        "budget": N,
        "prior_alpha": prior[0],
        "prior_beta": prior[1],
        "mode": "rounds",
        "utility": utility,
    }
    if "+" in schedule:
        kw["round_schedule"] = parse_round_schedule(schedule, N)
    else:  # equal rounds by the rule the benchmark and the trainers share
        kw["round_size"] = step_round_size(N, 1, adaptive=True, rounds=int(schedule))
    return AllocationParams(**kw)


def measure(
    B: int,
    utility: str,
    schedule: str,
    *,
    prior: tuple[float, float],
    group_size: int = 8,
    max_states: int = 2_000_000,
) -> dict[str, Any]:
    """V*, the rounds-aware bound, the relaxed policy's exact value, the slack and shortfall."""
    from agents import make_allocator
    from agents.bamdp.exact import solve_exact
    from agents.bamdp.rounds import rounds_bound
    from agents.policy_value import exact_value

    params = instance(B, utility, schedule, prior=prior, group_size=group_size)
    start = time.perf_counter()
    exact = solve_exact(params, max_states=max_states)
    _, bound = rounds_bound(params)
    policy = make_allocator("bamdp", params, exact=False)
    value = exact_value(policy, params, prior, max_states=max_states)
    if value is None:
        raise ValueError(f"B={B} {utility} {schedule}: the policy's outcome tree is too large")
    return {
        "B": B,
        "utility": utility,
        "schedule": schedule,
        "optimum": exact.value,
        "bound": float(bound),
        "policy": float(value),
        "slack": (float(bound) - exact.value) / float(bound),
        "shortfall": (exact.value - float(value)) / exact.value,
        "states": exact.num_states,
        "seconds": time.perf_counter() - start,
    }


def main(cfg: BoundSlackConfig) -> dict[str, Any]:
    """Measure every (utility, schedule, B), print the table, write ``bench_bound_slack.json``."""
    from rich.console import Console
    from rich.table import Table

    a, b = (float(x) for x in cfg.prior.split(","))
    rows = []
    table = Table(
        title=f"The rounds-aware bound's slack and the policy's shortfall, Beta({a:g}, {b:g})"
    )
    for col in ("B", "utility", "schedule", "V*", "bound", "slack", "policy", "shortfall", "s"):
        table.add_column(col, justify="right")
    for utility in (u.strip() for u in cfg.utilities.split(",") if u.strip()):
        for schedule in (s.strip() for s in cfg.schedules.split(",") if s.strip()):
            for B in (int(x) for x in cfg.bs.split(",") if x.strip()):
                r = measure(B, utility, schedule, prior=(a, b), group_size=cfg.group_size,
                            max_states=cfg.max_states)  # fmt: skip
                rows.append(r)
                table.add_row(
                    str(B), utility, schedule, f"{r['optimum']:.4f}", f"{r['bound']:.4f}",
                    f"{r['slack']:.2%}", f"{r['policy']:.4f}", f"{r['shortfall']:.2%}",
                    f"{r['seconds']:.0f}",
                )  # fmt: skip
    Console(width=120).print(table)
    report = {"config": asdict(cfg), "rows": rows}
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS_FILE).write_text(json.dumps(report, indent=2) + "\n")
    print(f"results: {out / RESULTS_FILE}")
    return report
