"""trainers.models.warm_start_report: sampling, the per-level report and its table."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import ClassVar

import numpy as np

from trainers.models.tiny import build_tiny_tokenizer
from trainers.models.warm_start_report import evaluate, report_table, sample_completions
from trainers.tasks import Example


def test_sampler_greedy_matches_transformers_generate(tiny_policy):
    model, tok = tiny_policy
    prompts = ["3+4=", "57+38=", "9*9=", "512+77=", "0+0="]
    ours = sample_completions(model, tok, prompts, temperature=0.0, max_new_tokens=6)
    enc = tok(prompts, padding=True, return_tensors="pt")
    out = model.generate(
        **enc, do_sample=False, max_new_tokens=6, eos_token_id=tok.eos_token_id, pad_token_id=0
    )
    theirs = tok.batch_decode(out[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
    assert ours == theirs


# --- added with the mirrored layout ----------------------------------------------------------


class _ScriptedEngine:
    """Stands in for ``HFEngine``: prompt text -> its greedy and its sampled completions."""

    calls: ClassVar[list[tuple[float, list[int], int]]] = []
    script: ClassVar[dict[str, tuple[str, list[str]]]] = {}

    def __init__(self, model, tokenizer, *, batch_size=256):
        self.tokenizer = tokenizer

    def generate(self, prompt_ids, counts, sampling, *, seed):
        type(self).calls.append((sampling.temperature, list(counts), seed))
        texts, index = [], []
        for i, (ids, k) in enumerate(zip(prompt_ids, counts, strict=True)):
            greedy, sampled = self.script[self.tokenizer.decode(ids, skip_special_tokens=True)]
            texts += [greedy] * k if sampling.temperature == 0 else sampled[:k]
            index += [i] * k
        return SimpleNamespace(
            prompt_index=np.array(index), texts=texts, completion_ids=[[5]] * len(texts)
        )


def test_evaluate_rows_by_hand(monkeypatch):
    monkeypatch.setattr("trainers.engines.hf.HFEngine", _ScriptedEngine)
    _ScriptedEngine.calls = []
    _ScriptedEngine.script = {
        "1+0=": ("1", ["1", "1"]),  # greedy right, sampled 2 of 2
        "1+1=": ("3", ["2", "0"]),  # greedy wrong, 1 of 2
        "1+2=": ("3", ["9", "9"]),  # greedy right, 0 of 2
        "2+2=": ("4", [" 4 ", "x"]),  # greedy right, 1 of 2 (exact match strips whitespace)
    }
    examples = [
        Example(0, "1+0=", "1", level=0),
        Example(1, "1+1=", "2", level=0),
        Example(2, "1+2=", "3", level=1),
        Example(3, "2+2=", "4", level=1),
    ]
    report = evaluate(None, build_tiny_tokenizer(), examples, num_samples=2, max_new_tokens=3,
                      seed=7)  # fmt: skip
    assert _ScriptedEngine.calls == [(0.0, [1, 1, 1, 1], 0), (1.0, [2, 2, 2, 2], 7)]
    assert report == {
        "k": 2,
        "levels": [
            {"level": 0, "n": 2, "greedy": 0.5, "pass@1": 0.75, "pass@2": 1.0, "spread": 0.5},
            {"level": 1, "n": 2, "greedy": 1.0, "pass@1": 0.25, "pass@2": 0.5, "spread": 0.5},
        ],
        "overall": {
            "level": "all",
            "n": 4,
            "greedy": 0.75,
            "pass@1": 0.5,
            "pass@2": 0.75,
            "spread": 0.5,
        },
        "pass_rates": [1.0, 0.5, 0.0, 0.5],
    }


def test_report_table_has_a_row_per_level_and_an_overall_row():
    from rich.console import Console

    row = {"level": 3, "n": 40, "greedy": 0.125, "pass@1": 0.3333, "pass@4": 0.5, "spread": 0.6}
    report = {"k": 4, "levels": [row], "overall": {**row, "level": "all", "n": 40}}
    table = report_table(report, title="my title")
    assert [c.header for c in table.columns] == [
        "level", "n", "greedy", "pass@1 (T=1)", "pass@4 (T=1)", "0<rate<1"
    ]  # fmt: skip
    assert table.row_count == 2
    out = io.StringIO()
    Console(file=out, width=120).print(table)
    lines = [line for line in out.getvalue().splitlines() if "40" in line]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines]
    assert cells == [
        ["3", "40", "0.12", "0.33", "0.50", "0.60"],
        ["all", "40", "0.12", "0.33", "0.50", "0.60"],
    ]
    assert "my title" in out.getvalue()


def test_sample_completions_of_no_prompts_builds_nothing():
    assert sample_completions(None, None, []) == []


def test_sample_completions_are_prompt_major_and_seeded(tiny_policy):
    model, tok = tiny_policy
    prompts = ["1+1=", "25+5=", "7*8="]
    a = sample_completions(model, tok, prompts, num_samples=3, seed=4)
    assert len(a) == 9
    assert a == sample_completions(model, tok, prompts, num_samples=3, seed=4)
    # greedy: each prompt's samples are its one greedy completion, prompt after prompt
    one = sample_completions(model, tok, prompts, temperature=0.0)
    three = sample_completions(model, tok, prompts, num_samples=3, temperature=0.0)
    assert three == [one[0]] * 3 + [one[1]] * 3 + [one[2]] * 3
