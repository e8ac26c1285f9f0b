"""Which live figure of a step goes with a screen entrant's accuracy? Spearman correlation of the
live Δ final validation pass@1 against uniform (the field table of ``from_run.json``) with the
live gradient-carrying rollouts and the live distinct informative prompts per step (the
entrants table: means over each run's last steps), over all 16 entrants and over the 12 that
ran at the screen's shared learning rate (2e-4).

    python results/attributed/screen/sim_to_real/mechanism.py
"""

from __future__ import annotations

import json
from pathlib import Path

from scipy.stats import spearmanr

HERE = Path(__file__).parent
OTHER_LR = ("uniform-lr1e-4", "uniform-lr4e-4", "bamdp-lr1e-4", "bamdp-lr4e-4")


def main() -> None:
    """Print the table."""
    report = json.loads((HERE / "from_run.json").read_text())
    live = {e["entrant"]: e["live"] for e in report["entrants"]}
    delta = {e["entrant"]: e["delta_final"] for e in report["field"][0]["entrants"]}
    print(
        "| entrants | n | ρ(Δ final pass@1, gradient rollouts) "
        "| ρ(Δ final pass@1, informative prompts) |"
    )
    print("|---|---:|---:|---:|")
    for label, names in (
        ("all", sorted(delta)),
        ("at lr 2e-4", sorted(n for n in delta if n not in OTHER_LR)),
    ):
        d = [delta[n] for n in names]
        rho = [
            spearmanr(d, [live[n][metric]["mean"] for n in names]).statistic
            for metric in ("gradient_rollouts", "informative_prompts")
        ]
        print(f"| {label} | {len(names)} | {rho[0]:+.2f} | {rho[1]:+.2f} |")


if __name__ == "__main__":
    main()
