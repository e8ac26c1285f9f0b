"""Blocks of the training results page: live GRPO competitions, step time, the simulator's
rounds studies, headroom, recurring prompts, the testbed and the TRL competitions."""

from __future__ import annotations

import re
import statistics
from typing import Any

from trainers.reports.data import Data, Output, block
from trainers.reports.fmt import NOT_COMMITTED, committed, find_table, num, pct, pm, table


def _pts(mean: float | None, half: float | None) -> str:
    """A paired difference in percentage points with its interval."""
    if mean is None:
        return "—"
    return pm(mean, half, "+.1f", 100.0) + " pts"


def _settings(entry: dict[str, Any]) -> str:
    """An entrant's own settings from its entrants file (everything but its name)."""
    rest = [f"{k} {v}" for k, v in entry.items() if k not in ("name", "allocator")]
    return f"`{entry['allocator']}`" + (f" ({', '.join(rest)})" if rest else "")


def _entrants(data: Data, rel: str) -> dict[str, str]:
    import yaml

    return {e["name"]: _settings(e) for e in yaml.safe_load(data.text(rel))}


@block("final_competition", "results/compete_v3_final")
def final_competition(data: Data, out: Output) -> str:
    """``results_all.csv`` (the compete tabulator's rows for the three entrants)."""
    rows = data.csv("results_all.csv")
    settings = _entrants(data, "final_all_entrants.yaml")
    base = rows[0]
    body = []
    for r in rows:
        paired = r["entrant"] != base["entrant"]
        ratio = r["rollouts_ratio"]
        body.append([
            r["entrant"],
            f"{r['rounds_per_step']:.0f}",
            f"{pm(r['final_pass@1'], r['ci95'], '.1f', 100)} %",
            _pts(r["delta_final"], r["delta_final_ci95"]) if paired else "—",
            _pts(r["delta_auc"], r["delta_auc_ci95"]) if paired else "—",
            f"{ratio:.2f}× ({r['paired_reached']}/{r['paired_seeds']})"
            if paired and ratio else "—",
            f"{r['wins']}/{r['paired_seeds']}" if paired else "—",
            num(r["trained_per_step"], ".1f"),
            num(r["informative_prompts_per_step"], ".1f"),
            pct(r["alloc_overhead"]),
        ])  # fmt: skip
    head = ["entrant", "rounds", "final pass@1 (95 % CI)", "Δ final, paired",
            "Δ AUC, paired", f"rollouts to {base['entrant']}'s final", "wins",
            "gradient rollouts / step", "informative prompts / step",
            "allocation overhead"]  # fmt: skip
    seeds = sorted({r["seeds"] for r in rows})
    starts = sorted({pct(r["start_pass@1"]) for r in rows})
    who = "; ".join(f"`{name}`: {s}" for name, s in settings.items())
    return (
        table(head, body, "lrrrrrrrrr")
        + f"\n\n{'/'.join(map(str, seeds))} seeds each, starting at held-out pass@1 "
        f"{' / '.join(starts)}; Δ in percentage points with 95 % intervals over the seeds, AUC "
        f"the mean pass@1 over the run, rollouts to {base['entrant']}'s final as a ratio to "
        f"its own (seeds that reached it), allocation overhead the median share of a step. "
        f"Entrants (`final_all_entrants.yaml`): {who}. From `results_all.csv` (the tabulator's "
        "rows; `table_all.md` is its own table); the runs' step records were not committed, so "
        "per-seed values are not regenerated here."
    )


#: how the step-time files name the policy their steps start from
_CHECKPOINT = re.compile(
    r"runs/(?P<entrant>[^/]+)/seed(?P<seed>\d+)/checkpoints/step-0*(?P<step>\d+)"
)


def _policy(model: str) -> str:
    m = _CHECKPOINT.search(model)
    if m:
        return f"`{m['entrant']}`'s model at step {int(m['step']):,} (seed {m['seed']})"
    return f"the `{model}` warm start"


@block("step_time_rounds", "results/step_time_rounds")
def step_time_rounds(data: Data, out: Output) -> str:
    """The ``bench_rounds_*.json`` reports: ``uniform``'s seconds a step and every other
    setting's ratio to it, one row per report."""
    settings: list[str] = []
    reports = []
    for rel in data.glob("bench_rounds_*.json"):
        report = data.json(rel)
        reports.append((rel, report))
        settings += [r["setting"] for r in report["rows"] if r["setting"] not in settings]
    others = [s for s in settings if s != "uniform"]
    body = []
    for rel, report in reports:
        rows = {r["setting"]: r for r in report["rows"]}
        body.append([
            _policy(report["config"]["grpo"]["model"]),
            ", ".join(s for s in others if s in rows),
            f"`{rel}`",
            f"{rows['uniform']['step_seconds']:.3f}",
            *(f"{rows[s]['relative_step_time']:.2f}×" if s in rows else "—" for s in others),
        ])  # fmt: skip
    body.sort(key=lambda row: (not row[0].startswith("the "), row[0], -len(row[1])))
    head = ["policy the steps start from", "timed beside `uniform`", "report", "`uniform` s/step",
            *others]  # fmt: skip
    return table(head, body, "lllr" + "r" * len(others)) + (
        "\n\nSettings as the benchmark names them (`bamdp ×2`: two equal rounds), each as a "
        "ratio to `uniform`'s seconds a step in the same report; each report's `config` holds "
        "the command's options."
    )


#: the screen's curve files and the names the tabulator gave their entrants
_SCREEN = {"uniform-r8": "uniform", "bamdp-r8": "bamdp-8rounds", "bamdp-r2": "bamdp-2rounds",
           "bamdp-384+128": "bamdp-384+128"}  # fmt: skip


@block("screen", "results/screen_v3")
def screen(data: Data, out: Output) -> str:
    """Per-seed final pass@1 from the curves; the paired and mechanism columns from the
    tabulator's ``screen_all_table.md``."""
    text = data.text("screen_all_table.md")
    paired = {r["entrant"]: r for r in find_table(text, "entrant", "Δ AUC")}
    mech = {r["entrant"]: r for r in find_table(text, "entrant", "distinct informative prompts")}
    body = []
    for stem, name in _SCREEN.items():
        seeds = [data.jsonl(f"screen_{stem}-seed{k}.eval.jsonl")[-1] for k in (0, 1)]
        finals = [100 * e["pass@1"] for e in seeds]
        p = paired.get(name, {})
        body.append([
            name,
            f"{statistics.fmean(finals):.1f} % ({', '.join(f'{f:.1f}' for f in finals)})",
            p.get("Δ final pass@1 (95 % CI)", "—"),
            p.get("Δ AUC (95 % CI)", "—"),
            p.get("rollouts to target, ratio (reached)", "—"),
            mech[name]["rollouts with gradient"],
            mech[name]["distinct informative prompts"],
        ])  # fmt: skip
    head = ["entrant", "final pass@1 (seed 0, 1)", "Δ final vs uniform (paired)",
            "Δ mean pass@1 over the run (AUC)", "rollouts to uniform's final, ratio (reached)",
            "gradient-carrying rollouts / step", "informative prompts / step"]  # fmt: skip
    return table(head, body, "lrrrrrr") + (
        "\n\nFinal pass@1 per seed: the last evaluation of each `screen_<entrant>-seed<k>"
        ".eval.jsonl`; the other columns: `screen_all_table.md` (the compete tabulator, "
        "`tabulate_screen.py`). Its seconds do not compare entrants (the load changed)."
    )


_SIM_LINE = re.compile(
    r"^(?P<utility>\S+)\s+rounds=(?P<rounds>\d+)\s+(?P<alloc>\S+)\s+util=\s*(?P<util>[\d.]+)\s+"
    r"grad_rollouts=\s*(?P<grad>[\d.]+)\s+inf_frac=(?P<frac>[\d.]+)"
)


@block("rounds_sim", "results/rounds_sim")
def rounds_sim(data: Data, out: Output) -> str:
    """``rounds_sim.txt``: gradient-carrying rollouts a step by utility, allocator and rounds."""
    cells: dict[tuple[str, str], dict[int, str]] = {}
    rounds: list[int] = []
    for line in data.text("rounds_sim.txt").splitlines():
        m = _SIM_LINE.match(line)
        if not m:
            continue
        r = int(m["rounds"])
        rounds += [r] if r not in rounds else []
        cells.setdefault((m["utility"], m["alloc"]), {})[r] = m["grad"]
    head = ["utility", "allocator: gradient-carrying rollouts / step",
            *(f"{r} round{'s' if r > 1 else ''}" for r in rounds)]  # fmt: skip
    body = [[u, a, *(row.get(r, "—") for r in rounds)] for (u, a), row in cells.items()]
    return table(head, body, "ll" + "r" * len(rounds)) + (
        "\n\nFrom `rounds_sim.txt` (its lines also give each setting's mean utility and "
        "informative fraction); `uniform` ran in one round only."
    )


@block("rounds_schedule", "results/rounds_sim")
def rounds_schedule(data: Data, out: Output) -> str:
    """The table of ``rounds_schedule_sim.txt`` (``adaroll bench``'s rounds table) as written."""
    text = data.text("rounds_schedule_sim.txt")
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("| rounds |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    after = next((x for x in lines[end:] if x.startswith("uniform (")), "")
    return (
        "\n".join(lines[start:end])
        + (f"\n\n{after}" if after else "")
        + (
            "\n\nFrom `rounds_schedule_sim.txt` (which holds the command, the setting and the "
            "reading)."
        )
    )


@block("headroom", "results/headroom")
def headroom(data: Data, out: Output) -> str:
    """Held-out pass@1 of the three ``uniform`` runs at their evaluations, and a plot."""
    runs = {}
    for rel in data.glob("headroom_g*.eval.jsonl"):
        g = int(re.search(r"_g(\d+)\.", rel)[1])  # type: ignore[index]
        runs[g] = data.jsonl(rel)
    runs = dict(sorted(runs.items()))
    steps = [e["step"] for e in next(iter(runs.values()))]
    shown = [s for s in steps if s in (0, steps[len(steps) // 2], steps[-1])]
    body = []
    for g, evals in runs.items():
        at = {e["step"]: e for e in evals}
        body.append([
            g,
            " → ".join(pct(at[s]["pass@1"]) for s in shown),
            " → ".join(pct(at[s]["pass@8"]) for s in shown),
            f"{evals[-1]['rollouts_total']:,}",
        ])  # fmt: skip
    head = ["G", "pass@1 at steps " + " → ".join(f"{s:,}" for s in shown),
            "pass@8 at the same steps", "rollouts at the end"]  # fmt: skip
    path, rel = out.image("headroom")
    _curves(path, {f"G = {g}": [(e["rollouts_total"], e["pass@1"]) for e in ev]
                   for g, ev in runs.items()}, "rollouts")  # fmt: skip
    return (
        table(head, body, "rlll")
        + "\n\n"
        + NOT_COMMITTED.format(
            what="the runs' step metrics (gradient-carrying rollouts and informative fraction "
            "per step); the text below quotes them from the README"
        )
        + f"\n\n![held-out pass@1 against rollouts, G = {', '.join(map(str, runs))}]({rel})"
    )


def _curves(path: Any, curves: dict[str, list[tuple[float, float]]], xlabel: str) -> None:
    """One line per curve (pass@1 in %), written to ``path`` without timestamps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for label, points in curves.items():
        ax.plot([x for x, _ in points], [100 * y for _, y in points], marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("held-out pass@1 (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


#: a recurring-prompts curve file: its training-set size, entrant and seed
_RECUR = re.compile(r"^recur_task(?P<size>\d+)_(?P<entrant>.+)_seed(?P<seed>\d+)\.eval\.jsonl$")


@block("recurring", "results/recurring_prompts")
def recurring(data: Data, out: Output) -> str:
    """Held-out and training-prompt pass@1 from the curves; gradient-carrying rollouts from the
    tabulator's ``recur_task<N>.md``."""
    body = []
    runs: dict[int, set[str]] = {}  # training prompts -> entrants
    for rel in data.glob("recur_task*_seed*.eval.jsonl"):
        m = _RECUR.match(rel)
        if m:
            runs.setdefault(int(m["size"]), set()).add(m["entrant"])
    steps = 0
    for size, entrants in sorted(runs.items()):
        tabulated = find_table(data.text(f"recur_task{size}.md"), "entrant", "informative prompts")
        mech = {r["entrant"]: r for r in tabulated}
        for name in sorted(entrants, key=lambda n: (n != "uniform", n)):
            held, train = [], []
            for rel in data.glob(f"recur_task{size}_{name}_seed*.eval.jsonl"):
                ev = data.jsonl(rel)
                held.append(f"{pct(ev[0]['pass@1'])} → {pct(ev[-1]['pass@1'])}")
                train.append(pct(ev[-1]["train/pass@1"]))
            steps = data.jsonl(f"recur_task{size}_{name}_seed0.eval.jsonl")[-1]["step"]
            body.append([f"{size:,}", name, ", ".join(held), ", ".join(train),
                         mech[name]["rollouts with gradient"]])  # fmt: skip
    head = [
        "training prompts", "entrant", f"held-out pass@1, start → {steps:,} steps (seed 0, 1)",
        f"training prompts' pass@1 at {steps:,}", "gradient-carrying rollouts / step",
    ]  # fmt: skip
    return table(head, body, "rlllr") + (
        "\n\nPass@1: each run's `recur_task<N>_<entrant>_seed<k>.eval.jsonl` (`train/pass@1`: "
        "400 of its training prompts); gradient-carrying rollouts: `recur_task<N>.md` (the "
        "compete tabulator)."
    )


@block("first_competition", "results/compete_first")
def first_competition(data: Data, out: Output) -> str:
    """The first competition's ``table.md`` as committed (its runs were not)."""
    return committed(data.text("table.md"), "results/compete_first/table.md") + (
        "\n\nThe runs' directories were not committed, so this table is shown as written then, "
        "not regenerated."
    )


@block("testbed", "results/testbed")
def testbed(data: Data, out: Output) -> str:
    """The testbed's own tabulator (``trainers.benchmarks.testbed.markdown_tables``) over
    ``testbed.json``, and the GRPO curves of every cell."""
    from trainers.benchmarks.testbed import markdown_tables

    rows = data.json("testbed.json")
    cells, _, _levels = markdown_tables(rows).partition("\n\n")
    path, rel = out.image("testbed")
    curves = {r["cell"]: [(s, p) for s, p in r["grpo_evals"]] for r in rows}
    _curves(path, curves, "GRPO step")
    return (
        cells + "\n\nFrom `testbed.json` by the testbed's tabulator "
        "(`trainers.benchmarks.testbed.markdown_tables`, the same that wrote `testbed.md`, "
        "whose second table gives every level)."
        f"\n\n![held-out pass@1 of uniform GRPO against steps, one line per cell]({rel})"
    )


def _trl_table(report: dict[str, Any]) -> str:
    runs = report["runs"]
    body = []
    for name, s in report["summary"].items():
        after = [r["pass@1_after"] for r in sorted(runs, key=lambda r: r["seed"])
                 if r["allocator"] == name]  # fmt: skip
        body.append([
            "uniform (= TRL)" if name == "uniform" else name,
            pct(s["pass@1_before"]),
            f"{pct(s['pass@1_after'])} ({', '.join(num(100 * a, '.1f') for a in after)})",
            f"{s['train_reward_first_quarter']:.3f} → {s['train_reward_last_quarter']:.3f}",
            f"{s['informative_frac']:.3f}",
            f"{s['gradient_rollouts']:.1f}",
            pct(s["alloc_overhead"]),
        ])  # fmt: skip
    cfg = report["config"]
    rollouts = cfg["batch_size"] * cfg["group_size"]
    head = ["allocator", "held-out pass@1 before", "after (per seed)",
            "training reward, first → last quarter", "informative fraction",
            f"gradient rollouts per step (of {rollouts})", "allocation overhead"]  # fmt: skip
    return table(head, body, "lrrrrrr")


@block("trl_compete", "results/trl_compete_v3")
def trl_compete(data: Data, out: Output) -> str:
    """``trl_compete.json`` (superseded by ``trl_compete_best.json``)."""
    return _trl_table(data.json("trl_compete.json")) + (
        "\n\nFrom `trl_compete.json` (means over seeds per allocator; its `runs` hold each run)."
    )


@block("trl_compete_best", "results/trl_compete_v3")
def trl_compete_best(data: Data, out: Output) -> str:
    """``trl_compete_best.json``: the same runs with today's ``bamdp`` settings."""
    return _trl_table(data.json("trl_compete_best.json")) + (
        "\n\nFrom `trl_compete_best.json` (means over seeds per allocator)."
    )
