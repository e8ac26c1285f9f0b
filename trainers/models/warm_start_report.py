"""The held-out report of a warm start: greedy accuracy and sampled pass rates, per level.

``evaluate(model, tokenizer, examples, ...)`` is the trainer's one evaluation function
(``trainers.grpo.evaluation.evaluate_examples``) through ``HFEngine``, scored by exact match or
the task's verifier; ``report_table`` renders it. ``adaroll pretrain-tiny`` and ``adaroll
warm-start`` print it and store it in the model directory's metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def sample_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    num_samples: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 6,
    seed: int = 0,
    batch_size: int = 1024,
) -> list[str]:
    """``num_samples`` completions per prompt (prompt-major), decoded without special tokens.

    Sampled by ``HFEngine`` (the trainer's engine): temperature 0 is greedy, otherwise pure
    ancestral sampling (no top-k/top-p), reproducible given ``seed``; stops at ``</s>``.
    """
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine
    from trainers.models.prompts import encode_prompts

    if not prompts:
        return []
    ids = encode_prompts(tokenizer, prompts, chat_template="none")  # trained on plain text
    engine = HFEngine(model, tokenizer, batch_size=batch_size)
    spec = SamplingSpec(max_new_tokens=max_new_tokens, temperature=temperature)
    return engine.generate(ids, [num_samples] * len(ids), spec, seed=seed).texts


def evaluate(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Any],
    *,
    num_samples: int,
    max_new_tokens: int,
    seed: int,
    score: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Greedy accuracy and sampled pass rates on ``examples``, overall and per level.

    Both are ``trainers.grpo.evaluation.evaluate_examples`` through ``HFEngine`` on the plain
    prompts (what the warm start trained on), scored by ``score(examples, texts, ids)`` (a
    task's ``score``; default: exact match, the tiny model's report): one greedy completion, then
    ``num_samples`` at temperature 1 with ``seed``. Returns ``{"levels": [row, ...], "overall":
    row, "pass_rates": [...]}``, a row holding ``level, n, greedy, pass@1, pass@k, spread``
    (``spread``: fraction of prompts with a sampled pass rate strictly between 0 and 1);
    ``pass_rates`` is the per-prompt sampled pass rate in the order of ``examples``.
    """
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine
    from trainers.grpo.evaluation import evaluate_examples
    from trainers.models.prompts import encode_prompt
    from trainers.tasks import exact_match

    engine = HFEngine(model, tokenizer, batch_size=1024)

    def exact(exs: list[Any], texts: list[str], _ids: Any) -> list[float]:
        return [float(exact_match(c, ex)) for c, ex in zip(texts, exs, strict=True)]

    def run(k: int, temperature: float, sample_seed: int) -> NDArray[np.int64]:
        return evaluate_examples(
            engine,
            examples,
            encode=lambda ex: encode_prompt(tokenizer, ex.prompt, chat_template="none"),
            score=score if score is not None else exact,
            sampling=SamplingSpec(max_new_tokens=max_new_tokens, temperature=temperature),
            k=k,
            seed=sample_seed,
        ).correct

    greedy_ok = run(1, 0.0, 0) > 0  # [n]
    rates = run(num_samples, 1.0, seed) / num_samples  # [n]
    levels = np.array([ex.level for ex in examples])

    def row(select: NDArray[np.bool_], level: int | str) -> dict[str, Any]:
        r = rates[select]
        return {
            "level": level,
            "n": int(select.sum()),
            "greedy": float(greedy_ok[select].mean()),
            "pass@1": float(r.mean()),
            f"pass@{num_samples}": float((r > 0).mean()),
            "spread": float(((r > 0) & (r < 1)).mean()),
        }

    return {
        "k": num_samples,
        "levels": [row(levels == lv, int(lv)) for lv in np.unique(levels)],
        "overall": row(np.ones(len(examples), dtype=bool), "all"),
        "pass_rates": [float(x) for x in rates],
    }


def report_table(report: dict[str, Any], title: str = "tiny warm start, held-out") -> Any:
    """A rich Table of an ``evaluate`` report, one row per level and an overall row."""
    from rich.table import Table

    k = report["k"]
    table = Table(title=title)
    for name in ("level", "n", "greedy", "pass@1 (T=1)", f"pass@{k} (T=1)", "0<rate<1"):
        table.add_column(name, justify="right")
    for row in [*report["levels"], report["overall"]]:
        table.add_row(
            str(row["level"]),
            str(row["n"]),
            f"{row['greedy']:.2f}",
            f"{row['pass@1']:.2f}",
            f"{row[f'pass@{k}']:.2f}",
            f"{row['spread']:.2f}",
        )
    return table
