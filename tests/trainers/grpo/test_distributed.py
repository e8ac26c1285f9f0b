"""Data parallelism through accelerate: two CPU processes under torchrun (gloo) stay identical."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainers.models.architectures import ARCHITECTURES

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.parametrize("model_case", ["tiny", *ARCHITECTURES], indirect=True)
def test_two_processes_share_prompts_and_stay_identical(model_case, tmp_path: Path) -> None:
    # every model family under DDP (the families train on a parity reward: see dp_worker)
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false"
    )
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        str(Path(__file__).with_name("dp_worker.py")), str(model_case.directory), str(tmp_path),
        "exact" if model_case.task is None else "parity",
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    assert r0["world"] == r1["world"] == 2
    assert r0["changed"] and r1["changed"]  # learning happened
    assert r0["digest"] == r1["digest"]  # and the replicas agree to the bit
    for a, b in zip(r0["prompt_ids"], r1["prompt_ids"], strict=True):
        assert len(a) == len(b) == 4 and not set(a) & set(b)  # disjoint shards of the batch
    # reports and evaluation are reduced over ranks, so both ranks print the same numbers
    assert [r["rollouts"] for r in r0["reports"]] == [32, 32, 32]
    assert r0["reports"][-1]["informative_frac"] == r1["reports"][-1]["informative_frac"]
    assert r0["eval"]["prompts"] == 16 and r0["eval"]["pass@1"] == r1["eval"]["pass@1"]
    ckpt = next((tmp_path / "checkpoints").iterdir())
    assert (ckpt / "trainer-rank0.pt").exists() and (ckpt / "trainer-rank1.pt").exists()
