"""The results pages (docs/site/results) are what their templates and the committed data make
(``trainers.reports.pages``).

``test_every_page_is_as_the_data_makes_it`` regenerates every page into a temporary directory and
compares it with the committed one, apart from the generation date: a page edited by hand, or
data committed without regenerating, fails here with the command that fixes it. The other tests
check the pieces on tiny inputs: the date a comparison ignores, and the markers' errors. The
commit of the data and what the data records: ``test_data.py``; the README tables a tabulator
refreshes: ``test_tables_progress.py``.
"""

from __future__ import annotations

import difflib
import struct
import subprocess
from pathlib import Path

import pytest

from trainers.reports import pages
from trainers.reports.data import Repository

ROOT = Path(__file__).resolve().parents[3]
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
