"""What a results page reads (``trainers.reports.data``): the commit of the data through renames,
the files of a folder at ``HEAD``, and the machine and warm start the data records."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from trainers.reports.data import BLOCKS, Data, Output, Repository, _content_commits, block, records


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def test_content_commits_follow_renames_and_skip_pure_ones() -> None:
    # newest first: a pure move, an edit under the old name, the file's first commit
    log = (
        "\x00c3 2026-12-05\n\nR100\tdocs/v3/a.json\tresults/x/a.json\nA\tresults/x/README.md\n"
        "\x00c2 2026-12-04\n\nM\tdocs/v3/a.json\n"
        "\x00c1 2026-12-03\n\nA\tdocs/v3/a.json\nA\tdocs/v3/gone.json\n"
    )
    found = _content_commits(["results/x/a.json", "results/x/README.md"], log)
    assert [c[0] for c in found["results/x/a.json"]] == ["c2", "c1"]  # the move does not count
    assert [c[0] for c in found["results/x/README.md"]] == ["c3"]
    # an edited move counts as a change
    log2 = (
        "\x00c9 2026-12-06\n\nR087\tdocs/b.md\tresults/y/b.md\n\x00c1 2026-12-01\n\nA\tdocs/b.md\n"
    )
    assert [c[0] for c in _content_commits(["results/y/b.md"], log2)["results/y/b.md"]] == [
        "c9",
        "c1",
    ]


def test_repository_reads_committed_files_only(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    (repo_dir / "docs" / "old").mkdir(parents=True)
    _git("init", "-q", cwd=repo_dir)
    _git("config", "user.email", "t@example.com", cwd=repo_dir)
    _git("config", "user.name", "t", cwd=repo_dir)
    (repo_dir / "docs" / "old" / "a.json").write_text(json.dumps({"platform": "Linux-x86_64"}))
    _git("add", "-A", cwd=repo_dir)
    _git("commit", "-q", "-m", "data", cwd=repo_dir)
    first = _git("rev-parse", "HEAD", cwd=repo_dir).strip()[:12]
    (repo_dir / "results").mkdir()
    _git("mv", "docs/old", "results/study", cwd=repo_dir)
    _git("commit", "-q", "-m", "move", cwd=repo_dir)
    (repo_dir / "results" / "study" / "uncommitted.json").write_text("{}")
    repo = Repository(repo_dir)
    assert repo.files("results/study") == ["results/study/a.json"]
    assert repo.uncommitted("results/study") == ["results/study/uncommitted.json"]
    (newest, oldest) = repo.commits_of("results/study")  # type: ignore[misc]
    assert newest[0] == oldest[0] == first  # the move changed no content
    out = tmp_path / "export"
    repo.export(["results/study", "results/none"], out)
    assert sorted(p.name for p in (out / "results" / "study").iterdir()) == ["a.json"]
    assert repo.commits_of("results/none") is None
    with pytest.raises(ValueError, match="not a git checkout"):
        Repository(tmp_path)


def test_records_name_the_machine_and_warm_start(tmp_path: Path) -> None:
    d = tmp_path / "results" / "s"
    (d / "run").mkdir(parents=True)
    (d / "run" / "provenance.json").write_text(json.dumps({"starts": [{
        "versions": {"platform": "Linux-6.1-x86_64"}, "weights_sha256": "ab" * 32}]}))  # fmt: skip
    (d / "config.json").write_text(json.dumps({"grpo": {"device": "cpu"}}))
    (d / "table.md").write_text("Warm start `tiny`, weights sha256 `1a53db04d911`; tabulated\n")
    stamp = records(tmp_path, "results/s", (("c2", "2026-12-05"), ("c1", "2026-12-03")))
    assert stamp.machines == ["Linux-6.1-x86_64", "torch device cpu"]
    assert stamp.warm_starts == ["ab" * 6, "1a53db04d911"]  # in the order of the files
    assert "`c1` (2026-12-03) → `c2` (2026-12-05)" in stamp.row()
    empty = records(tmp_path, "results/none", None)
    assert "not recorded" in empty.row() and "nothing committed" in empty.row()


def test_data_reads_committed_files_and_parses_csv_cells(tmp_path: Path) -> None:
    base = tmp_path / "results" / "s"
    (base / "sub").mkdir(parents=True)
    (base / "t.csv").write_text("a,b,c,d\n1,2.5,True,x\n,False,-3,1e-3\n")
    (base / "r.jsonl").write_text('{"k": 1}\n\n{"k": 2}\n')
    (base / "sub" / "x.json").write_text('{"v": [1, 2]}')
    data = Data(tmp_path, "results/s")
    assert data.csv("t.csv") == [
        {"a": 1, "b": 2.5, "c": True, "d": "x"},
        {"a": None, "b": False, "c": -3, "d": 0.001},
    ]
    assert data.jsonl("r.jsonl") == [{"k": 1}, {"k": 2}]
    assert data.json("sub/x.json") == {"v": [1, 2]}
    assert data.glob("**/*.json*") == ["r.jsonl", "sub/x.json"]
    assert data.exists() and data.exists("sub") and not data.exists("nope.txt")
    with pytest.raises(FileNotFoundError, match=r"results/s/nope.txt is not committed"):
        data.text("nope.txt")


def test_output_names_plots_after_the_page(tmp_path: Path) -> None:
    out = Output(tmp_path / "site", "training")
    path, link = out.image("headroom")
    assert link == "img/training-headroom.png"
    assert path == tmp_path / "site" / "img" / "training-headroom.png" and path.parent.is_dir()
    assert out.written == [path]


def test_block_registers_once_by_name() -> None:
    name = "_test_block_registered_once"
    try:
        made = block(name, "results/x")(lambda data, out: "text")
        assert BLOCKS[name] is made and made.folder == "results/x"
        assert made.make(Data(Path("."), "results/x"), Output(Path("."), "p")) == "text"
        with pytest.raises(ValueError, match="two results blocks are named"):
            block(name, "results/y")(lambda data, out: "")
    finally:
        BLOCKS.pop(name, None)
