"""The testbed: warm starts of each task and model family, and whether uniform GRPO learns there.

What ``scripts/bench_testbed.py`` runs. For each cell (a task spec, an architecture and its
warm-start settings) it

1. warm-starts the model (``adaroll warm-start --out OUT/<cell>/warm_start``; its model card
   ``adaroll_model.json`` reports held-out pass@1 and pass@k per level on the test split),
2. samples ``train_prompts`` of the GRPO run's training prompts ``train_samples`` times each
   with the trainer's own sampler (a ``GRPOTrainer`` of the run's config:
   ``trainers.grpo.evaluation.evaluate_examples`` through its engine, prompt encoding and
   verifier) and counts the prompts whose samples are all correct or all wrong: the groups
   GRPO learns nothing from, the room allocation has (``OUT/<cell>/start_groups.json``),
3. runs ``adaroll grpo --allocator uniform`` for ``grpo_steps`` from the warm start
   (``OUT/<cell>/grpo``), evaluating ``eval_size`` held-out prompts x ``eval_k`` at the start,
   every ``eval_every`` steps and at the end,

then prints one table (and writes it as markdown, ``OUT/testbed.md``, and JSON,
``OUT/testbed.json``): parameters, warm-start seconds, held-out pass@1 and pass@k overall and per
level at the warm start, the all-correct / all-wrong shares, held-out pass@1 before and after
GRPO and GRPO's training steps per second (evaluation time left out).

Every piece is resumable, so running it again continues where it stopped: a finished warm start
(its model card) is reused and an unfinished one resumed from its checkpoint; the group shares
are kept in their file; a GRPO run with its ``DONE`` marker for at least ``grpo_steps`` steps is
skipped, any other resumed (``adaroll grpo --resume``: from its last checkpoint, or from scratch
when it has none). Nothing here reads the test split to choose anything: the cells' settings were
chosen on the validation split (``adaroll warm-start --report-split validation``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.grpo import field_help
from trainers.grpo.config import check_config_int

__all__ = ["DEFAULT_CELLS", "Cell", "TestbedConfig", "main", "markdown_tables", "run_cell"]

#: the files written into ``out``
TABLE_FILE, RESULTS_FILE = "testbed.md", "testbed.json"
#: the file of a cell's group shares at the warm start
GROUPS_FILE = "start_groups.json"
#: the per-step summary of a cell's GRPO run: means over windows of this many steps
SUMMARY_WINDOW = 50
#: the model families, in the docs' order
ARCHS = ("llama", "qwen3", "gpt_neox", "gpt2")


@dataclass
class Cell:
    """One testbed cell: a task spec, an architecture, the ``adaroll warm-start`` options beyond
    the task and architecture (``WarmStartConfig`` fields) and the ``adaroll grpo`` options
    beyond the testbed's own (``GRPOConfig`` fields)."""

    name: str
    task: str
    arch: str
    warm_start: dict[str, Any] = field(default_factory=dict)
    grpo: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(
                f"cell name {self.name!r} must be a plain directory name (no '/', not hidden)"
            )


#: the warm-start settings of the measured cells, each chosen on the validation split
#: (``adaroll warm-start --report-split validation``; results/testbed/validation): width 128, two
#: layers, batches of 64, lr 1e-3, every level equally often
SMALL = {"hidden_size": 128, "num_layers": 2}
#: the reasoning-gym specs of the measured cells: words of 3-8 letters (6 levels); two or three
#: terms of one or two digits (3 levels)
SPELL_BACKWARD = "rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000"
CHAIN_SUM = "rg:chain_sum?min_terms=2&max_terms=3&min_digits=1&max_digits=2&num_train=20000"
#: texts of 2-5 words (4 levels); the count of one letter in them (results/letter_counting)
LETTER_COUNTING = "rg:letter_counting?min_words=2&max_words=5&num_train=20000"
#: the measured cells (results/testbed, the training results page's Testbed)
DEFAULT_CELLS: tuple[Cell, ...] = (
    *(Cell(f"arith-{arch}", "arithmetic", arch, {**SMALL, "steps": 3000}) for arch in ARCHS),
    # words of 8 letters and </s>: more than GRPO's default 8 new tokens
    Cell(
        "spell-qwen3",
        SPELL_BACKWARD,
        "qwen3",
        {**SMALL, "steps": 600},
        {"max_completion_length": 10},
    ),
    Cell("chain-gpt2", CHAIN_SUM, "gpt2", {**SMALL, "steps": 1500}),
    # its prompts (about 110 characters) need a context of 160; reported on validation, as
    # built for results/letter_counting
    Cell(
        "letters-gpt2",
        LETTER_COUNTING,
        "gpt2",
        {**SMALL, "steps": 1500, "context": 160, "report_split": "validation"},
    ),
)


@dataclass
class TestbedConfig:
    """Configuration of the testbed (warm starts, the groups at the start, uniform GRPO)."""

    __test__ = False  # not a pytest test class, whatever its name

    out: str = field(default="runs/testbed", metadata=field_help("where every cell's runs go"))
    cells_file: str = field(
        default="",
        metadata=field_help(
            "JSON list of cells ({name, task, arch, warm_start: {...}, grpo: {...}}); empty: "
            "the measured cells of trainers.benchmarks.testbed.DEFAULT_CELLS"
        ),
    )
    only: str = field(
        default="", metadata=field_help("comma-separated cell names to run (empty: all)")
    )
    grpo_steps: int = field(default=1000, metadata=field_help("uniform GRPO steps per cell"))
    eval_every: int = field(default=250, metadata=field_help("held-out evaluation every N steps"))
    eval_size: int = field(default=200, metadata=field_help("held-out prompts per evaluation"))
    eval_k: int = field(default=8, metadata=field_help("samples per held-out prompt"))
    train_prompts: int = field(
        default=200,
        metadata=field_help("training prompts sampled at the warm start for the group shares"),
    )
    train_samples: int = field(
        default=8, metadata=field_help("samples per training prompt for the group shares")
    )
    threads: int = field(default=1, metadata=field_help("torch CPU threads (0: torch's own)"))
    table_only: bool = field(
        default=False,
        metadata=field_help("print the table of what is already in out; run nothing"),
    )
    progress: bool = field(default=False, metadata=field_help("progress bars of the runs"))
    export: str = field(
        default="",
        metadata=field_help(
            "also copy the tables and each cell's results (model card, group shares, GRPO "
            "config, provenance, evaluations, summaries; no weights or checkpoints) into this "
            "directory"
        ),
    )

    def __post_init__(self) -> None:
        for name, minimum in (
            ("grpo_steps", 1),
            ("eval_every", 1),
            ("eval_size", 1),
            ("eval_k", 1),
            ("train_prompts", 1),
            ("train_samples", 2),
            ("threads", 0),
        ):
            check_config_int(name, getattr(self, name), minimum)

    def cells(self) -> list[Cell]:
        """The cells to run: ``cells_file``'s (or ``DEFAULT_CELLS``), filtered by ``only``."""
        if self.cells_file:
            rows = json.loads(Path(self.cells_file).read_text())
            cells = [Cell(**row) for row in rows]
        else:
            cells = list(DEFAULT_CELLS)
        names = [c.name for c in cells]
        if len(set(names)) != len(names):
            raise ValueError(f"cell names {names} repeat: give every cell its own name")
        wanted = [x.strip() for x in self.only.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in names]
        if unknown:
            raise ValueError(f"--only names unknown cells {unknown}: choose among {names}")
        return [c for c in cells if not wanted or c.name in wanted]


# ----------------------------------------------------------------------------------------------
# The pieces of one cell
# ----------------------------------------------------------------------------------------------


def warm_start_config(cfg: TestbedConfig, cell: Cell, directory: Path) -> Any:
    """The ``WarmStartConfig`` of ``cell``'s warm start into ``directory``."""
    from trainers.models.supervised import latest_checkpoint
    from trainers.models.warm_start_task import WarmStartConfig, is_complete

    resume = not is_complete(directory) and latest_checkpoint(directory) is not None
    return WarmStartConfig(
        task=cell.task,
        arch=cell.arch,
        out=str(directory),
        threads=cfg.threads,
        progress=cfg.progress,
        resume=resume,
        **cell.warm_start,
    )


def grpo_config(cfg: TestbedConfig, cell: Cell, model: Path, directory: Path) -> Any:
    """The ``GRPOConfig`` of ``cell``'s uniform GRPO run from ``model`` into ``directory``
    (always ``resume``: a run with no checkpoint starts from scratch)."""
    from trainers.grpo import GRPOConfig

    options: dict[str, Any] = {
        "gradient_noise_every": 0,  # uniform needs no kappa: time goes to training
        "tensorboard": False,
        **cell.grpo,
    }
    return GRPOConfig(
        task=cell.task,
        model=str(model),
        allocator="uniform",
        steps=cfg.grpo_steps,
        eval_every=cfg.eval_every,
        eval_size=cfg.eval_size,
        eval_k=cfg.eval_k,
        threads=cfg.threads,
        progress=cfg.progress,
        out=str(directory),
        resume=True,
        **options,
    )


def group_shares(correct: Any, levels: Any, k: int) -> dict[str, Any]:
    """The shares of prompts whose ``k`` samples are all correct / all wrong (``correct[i]``:
    prompt i's successes), overall and per level."""
    import numpy as np

    correct = np.asarray(correct)
    levels = np.asarray(levels)

    def row(sel: Any) -> dict[str, Any]:
        c = correct[sel]
        return {
            "n": int(sel.sum()),
            "all_correct": float((c == k).mean()),
            "all_wrong": float((c == 0).mean()),
        }

    return {
        "k": k,
        "overall": row(np.ones(len(correct), dtype=bool)),
        "levels": {str(int(lv)): row(levels == lv) for lv in np.unique(levels)},
    }


def measure_start_groups(cfg: TestbedConfig, grpo: Any) -> dict[str, Any]:
    """Sample ``cfg.train_prompts`` of the GRPO run's training prompts (``held_out_subset`` of
    its training split: spread over it, always the same) ``cfg.train_samples`` times each with
    the trainer's engine, prompt encoding, sampling and verifier, at the warm start."""
    from trainers.grpo.evaluation import evaluate_examples, held_out_subset
    from trainers.grpo.trainer import GRPOTrainer
    from trainers.models.supervised import torch_threads

    with torch_threads(cfg.threads):
        trainer = GRPOTrainer(dataclasses.replace(grpo, resume=False))
        try:
            examples = held_out_subset(trainer.task.train, cfg.train_prompts)
            evaluation = evaluate_examples(
                trainer.engine,
                examples,
                encode=trainer.prompt_ids,
                score=trainer.task.score,
                sampling=trainer.sampling,
                k=cfg.train_samples,
                seed=grpo.seed,
            )
        finally:
            trainer.close()
    shares = group_shares(
        evaluation.correct, [e.level for e in evaluation.examples], cfg.train_samples
    )
    return {**shares, "pass@1": evaluation.figures["pass@1"], "prompts": len(examples)}


def steps_summary(metrics: list[dict[str, Any]], window: int = SUMMARY_WINDOW) -> list[dict]:
    """Means of a GRPO run's per-step records over windows of ``window`` steps: reward, the
    all-correct / all-wrong / informative fractions and seconds per step."""
    keys = ("reward", "informative_frac", "all_correct_frac", "all_wrong_frac", "step_seconds")
    rows = []
    for start in range(0, len(metrics), window):
        chunk = metrics[start : start + window]
        row: dict[str, Any] = {"steps": f"{start + 1}-{start + len(chunk)}"}
        for key in keys:
            values = [float(m[key]) for m in chunk if key in m]
            if values:
                row[key] = sum(values) / len(values)
        rows.append(row)
    return rows


def run_cell(cfg: TestbedConfig, cell: Cell) -> dict[str, Any]:
    """Run (or reuse) each piece of ``cell`` under ``cfg.out/<name>`` and return its row."""
    from trainers.models.warm_start_task import is_complete
    from trainers.models.warm_start_task import main as warm_start_main
    from trainers.run.grpo_command import main as grpo_main
    from trainers.run.grpo_command import read_done

    base = Path(cfg.out) / cell.name
    ws_dir = base / "warm_start"
    if not is_complete(ws_dir):
        print(f"testbed {cell.name}: warm start into {ws_dir}", flush=True)
        warm_start_main(warm_start_config(cfg, cell, ws_dir))
    grpo = grpo_config(cfg, cell, ws_dir, base / "grpo")
    groups_path = base / GROUPS_FILE
    settings = {"train_prompts": cfg.train_prompts, "train_samples": cfg.train_samples}
    groups = json.loads(groups_path.read_text()) if groups_path.is_file() else None
    if groups is None or groups.get("settings") != settings:
        print(f"testbed {cell.name}: groups of the warm start on training prompts", flush=True)
        start = time.perf_counter()
        groups = {**measure_start_groups(cfg, grpo), "settings": settings}
        groups["seconds"] = time.perf_counter() - start
        groups_path.write_text(json.dumps(groups, indent=2) + "\n")
    done = read_done(grpo.out)
    if done is None or done["steps"] < cfg.grpo_steps:
        print(f"testbed {cell.name}: uniform GRPO for {cfg.grpo_steps} steps", flush=True)
        grpo_main(grpo)
    return cell_row(cell, base)


def cell_row(cell: Cell, base: Path) -> dict[str, Any]:
    """A cell's row from its files: the model card, the group shares and the GRPO run (its
    evaluations, per-step metrics; ``steps_summary`` written beside them)."""
    from trainers.models.warm_start_task import MODEL_CARD
    from trainers.run.callbacks import read_jsonl

    card = json.loads((base / "warm_start" / MODEL_CARD).read_text())
    groups = json.loads((base / GROUPS_FILE).read_text())
    run = base / "grpo"
    evals = read_jsonl(run / "eval.jsonl")
    metrics = read_jsonl(run / "metrics.jsonl")
    (run / "steps_summary.json").write_text(json.dumps(steps_summary(metrics), indent=2) + "\n")
    seconds = sum(float(m["step_seconds"]) for m in metrics)
    held = card["held_out"]
    k = held["k"]
    return {
        "cell": cell.name,
        "task": cell.task,
        "arch": cell.arch,
        "parameters": card["parameters"],
        "warm_start": {**cell.warm_start},
        "warm_start_seconds": card["train_seconds"],
        "warm_start_total_seconds": card["total_seconds"],
        "held_out_split": held.get("split", "test"),
        "k": k,
        "pass@1": held["overall"]["pass@1"],
        f"pass@{k}": held["overall"][f"pass@{k}"],
        "levels": [
            {"level": r["level"], "n": r["n"], "pass@1": r["pass@1"], f"pass@{k}": r[f"pass@{k}"]}
            for r in held["levels"]
        ],
        "groups": {key: groups[key] for key in ("k", "overall", "levels", "prompts")},
        "grpo_steps": len(metrics),
        "grpo_first_eval": evals[0] if evals else None,
        "grpo_last_eval": evals[-1] if evals else None,
        "grpo_evals": [(e["step"], e["pass@1"]) for e in evals],
        "grpo_steps_per_s": len(metrics) / seconds if seconds > 0 else float("nan"),
    }


# ----------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def markdown_tables(rows: list[dict[str, Any]]) -> str:
    """The testbed's tables in markdown: one row per cell, then one per cell and level."""
    lines = [
        "| cell | task | arch | parameters | warm start s | pass@1 % | pass@k % "
        "| train groups all-correct % | all-wrong % | GRPO steps | held-out pass@1 % "
        "before → after | GRPO steps/s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        first, last = r["grpo_first_eval"], r["grpo_last_eval"]
        before = _pct(first["pass@1"] if first else None)
        after = _pct(last["pass@1"] if last else None)
        lines.append(
            f"| {r['cell']} | `{r['task']}` | {r['arch']} | {r['parameters']:,} "
            f"| {r['warm_start_seconds']:.0f} | {_pct(r['pass@1'])} "
            f"| {_pct(r['pass@' + str(r['k'])])} (k={r['k']}) "
            f"| {_pct(r['groups']['overall']['all_correct'])} "
            f"| {_pct(r['groups']['overall']['all_wrong'])} | {r['grpo_steps']} "
            f"| {before} → {after} | {r['grpo_steps_per_s']:.2f} |"
        )
    lines += [
        "",
        "| cell | level | n | pass@1 % | pass@k % | train groups all-correct % | all-wrong % "
        "| GRPO pass@1 % before → after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        k = r["k"]
        first, last = r["grpo_first_eval"] or {}, r["grpo_last_eval"] or {}
        for lv in r["levels"]:
            g = r["groups"]["levels"].get(str(lv["level"]))
            key = f"pass@1/level{lv['level']}"
            lines.append(
                f"| {r['cell']} | {lv['level']} | {lv['n']} | {_pct(lv['pass@1'])} "
                f"| {_pct(lv[f'pass@{k}'])} | {_pct(g['all_correct'] if g else None)} "
                f"| {_pct(g['all_wrong'] if g else None)} "
                f"| {_pct(first.get(key))} → {_pct(last.get(key))} |"
            )
    return "\n".join(lines) + "\n"


#: the files of a cell that ``export`` copies (relative to the cell's directory)
EXPORTED = (
    "warm_start/adaroll_model.json",
    GROUPS_FILE,
    "grpo/config.json",
    "grpo/provenance.json",
    "grpo/eval.jsonl",
    "grpo/summary.json",
    "grpo/steps_summary.json",
)


def export_results(out: Path, target: Path, cells: list[str]) -> None:
    """Copy the tables and ``EXPORTED`` of each of ``cells`` from ``out`` into ``target``
    (``target/<cell>/...``), leaving out files a cell does not have yet."""
    import shutil

    target.mkdir(parents=True, exist_ok=True)
    for name in (TABLE_FILE, RESULTS_FILE):
        shutil.copyfile(out / name, target / name)
    for cell in cells:
        for rel in EXPORTED:
            src = out / cell / rel
            if src.is_file():
                dst = target / cell / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def main(cfg: TestbedConfig) -> list[dict[str, Any]]:
    """Run (or reuse) every cell in turn, then print and write the tables; the rows."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for cell in cfg.cells():
        if cfg.table_only:
            if (out / cell.name / "grpo" / "eval.jsonl").is_file():
                rows.append(cell_row(cell, out / cell.name))
            continue
        rows.append(run_cell(cfg, cell))
    table = markdown_tables(rows)
    (out / TABLE_FILE).write_text(table)
    (out / RESULTS_FILE).write_text(json.dumps(rows, indent=2) + "\n")
    if cfg.export:
        export_results(out, Path(cfg.export), [r["cell"] for r in rows])
    print(table, flush=True)
    return rows
