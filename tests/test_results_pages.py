"""The results pages (docs/site/results) are what their templates and the committed data make.

``test_every_page_is_as_the_data_makes_it`` regenerates every page into a temporary directory and
compares it with the committed one, apart from the generation date: a page edited by hand, or
data committed without regenerating, fails here with the command that fixes it. The other tests
check the pieces on tiny inputs: the commit of the data through renames, what the data records,
the README tables a tabulator refreshes, and the markers' errors.
"""

from __future__ import annotations

import difflib
import json
import struct
import subprocess
from pathlib import Path

import pytest

from trainers.reports import pages
from trainers.reports.data import Repository, _content_commits, records
from trainers.reports.tables_progress import _refresh

ROOT = Path(__file__).resolve().parents[1]
SITE_RESULTS = ROOT / pages.SITE_RESULTS


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def _checkout_with_history() -> str | None:
    """Why the pages cannot be regenerated here (no git, a shallow clone), or None."""
    try:
        if _git("rev-parse", "--is-shallow-repository").strip() == "true":
            return "a shallow clone: the commit of the data needs the whole history"
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout: the pages are made from committed files"
    return None


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pages.Page]:
    why = _checkout_with_history()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("results-pages")
    repo = Repository(ROOT)
    return {name: pages.render(name, out, repo=repo) for name in pages.PAGES}


@pytest.mark.parametrize("name", pages.PAGES)
def test_every_page_is_as_the_data_makes_it(fresh: dict[str, pages.Page], name: str) -> None:
    committed = SITE_RESULTS / f"{name}.md"
    assert committed.is_file(), (
        f"{committed} is missing: python scripts/results_pages.py --only {name}"
    )
    page = fresh[name]
    old = committed.read_text()
    if not pages.same_apart_from_date(old, page.text):
        diff = "".join(list(difflib.unified_diff(
            old.splitlines(keepends=True), page.text.splitlines(keepends=True),
            "committed", "from the data now"))[:60])  # fmt: skip
        pytest.fail(
            f"{committed.relative_to(ROOT)} is not what its template and the committed data make "
            f"(edited by hand, or data changed without regenerating): run "
            f"python scripts/results_pages.py --only {name}\n{diff}"
        )
    for image in page.images:
        mine = SITE_RESULTS / image.relative_to(image.parents[1])
        assert mine.is_file(), f"{mine} is missing: python scripts/results_pages.py --only {name}"
        assert _png_size(mine) == _png_size(image), f"{mine} differs in size from a fresh plot"


def test_no_plot_is_left_over(fresh: dict[str, pages.Page]) -> None:
    made = {p.name for page in fresh.values() for p in page.images}
    committed = {p.name for p in (SITE_RESULTS / "img").glob("*.png")}
    assert committed == made, f"plots no page makes: {sorted(committed - made)}"


def test_every_page_is_stamped(fresh: dict[str, pages.Page]) -> None:
    for name, page in fresh.items():
        assert "Generated on " in page.text and f"--only {name}`" in page.text
        if name != "index":
            assert "## Data and provenance" in page.text, name
            assert "| `results/" in page.text.split("## Data and provenance")[1], name


def test_same_apart_from_date() -> None:
    a = "# T\n\nGenerated on 2026-12-05 from x\n\n| a | 1 |\n"
    assert pages.same_apart_from_date(a, a.replace("2026-12-05", "2027-01-01"))
    assert not pages.same_apart_from_date(a, a.replace("| a | 1 |", "| a | 2 |"))


# --- the commit of the data -------------------------------------------------------------------
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


# --- the pieces of a page -----------------------------------------------------------------------
def test_a_readme_table_is_replaced_by_the_tabulators_and_drift_is_said() -> None:
    head = "| run | pass@1 |\n|---|---:|\n"
    printed = head + "| a | 30.1 |\n"
    same = _refresh(f"# R\n\n{head}| a | 30.1 |\n\nText.\n", printed, "tab.py")
    assert "| a | 30.1 |" in same and "Regenerated by `tab.py`.)" in same
    drifted = _refresh(f"# R\n\n{head}| a | 29.0 |\n\nText.\n", printed, "tab.py")
    assert "| a | 29.0 |" not in drifted and "differs from them" in drifted
    appended = _refresh("# R\n\nNo table.\n", printed, "tab.py")
    assert appended.endswith(printed.rstrip("\n"))


def test_markers_name_known_blocks_and_results_folders() -> None:
    with pytest.raises(ValueError, match="final_competition"):
        pages._folders("# T\n<!-- results:table final_competitio -->\n")
    with pytest.raises(ValueError, match="not a folder under results/"):
        pages._folders("# T\n<!-- results:data docs/v3 -->\n")
    with pytest.raises(ValueError, match="unknown results marker"):
        pages._folders("# T\n<!-- results:tabel x -->\n")
    assert pages._folders(
        "# T\n<!-- results:figure results/a/b.png | alt -->\n<!-- results:data results/c -->\n"
    ) == ["results/a", "results/c"]
    with pytest.raises(ValueError, match="results page"):
        pages.ResultsPagesConfig(only="trainig")


def test_committed_competition_evidence_is_tabulated_by_compete(tmp_path: Path) -> None:
    """A stage folder holding ``adaroll compete --evidence`` output: its README, then the
    compete tabulator's tables (no date in them, so the page changes only with the data)."""
    import importlib.util
    import shutil

    from trainers.reports.data import Data, Output
    from trainers.reports.tables_progress import _story

    where = ROOT / "tests" / "trainers" / "experiments" / "test_compete.py"
    spec = importlib.util.spec_from_file_location("_compete_tests", where)
    assert spec is not None and spec.loader is not None
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    (tmp_path / "made").mkdir()
    helpers.known_competition(tmp_path / "made")  # uniform against fast, three seeds, by hand
    stage = tmp_path / "export" / "results" / "study" / "stage"
    shutil.copytree(tmp_path / "made" / "c", stage)
    (stage / "README.md").write_text("# The stage\n\nHow it runs.\n")
    out = Output(tmp_path / "site", "study")
    text = _story(Data(tmp_path / "export", "results/study"), out, 1)
    assert text.startswith("### The stage\n\nHow it runs.")
    assert "by `adaroll compete --tabulate`" in text and "| fast | 3 |" in text
    assert "tabulated when this page was generated" in text
    assert "Files here: `config.json`." in text
    assert [p.name for p in out.written] == ["study-stage-accuracy.png"]
    nothing = _story(Data(tmp_path / "export", "results/none"), out, 1)
    assert nothing == "*Nothing is committed under `results/none/` yet.*"
