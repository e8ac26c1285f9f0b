"""The built docs site, as a reader meets it.

- Always: every built HTML page's internal links and images resolve (``broken_links``), on the
  ``make docs`` output when it is newer than every source of the site, else on a fresh Sphinx
  build in a temporary directory.
- With a ``chromium`` binary on ``PATH`` (Debian: ``apt-get install chromium``): the index, an
  env page, the TRL page and the training results page render headless (a screenshot is
  written) and every ``<img>`` of theirs loads (``naturalWidth`` > 0 in the browser).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainers.reports.site import PAGES, _Refs, broken_links, chromium, image_report, screenshot

ROOT = Path(__file__).resolve().parents[3]
SITE = ROOT / "docs" / "site"
BUILT = ROOT / "build" / "docs"


def _newest_source() -> float:
    """The newest modification time among the site's sources (pages, templates, conf, ext,
    static files) and the committed plots its pages show."""
    files = [p for p in SITE.rglob("*") if p.is_file() and "_generated" not in p.parts]
    files += [p for p in (ROOT / "results").rglob("*.png")]
    files.append(ROOT / "README.md")
    return max(p.stat().st_mtime for p in files)


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stamp = BUILT / ".buildinfo"
    if (
        stamp.is_file()
        and (BUILT / "index.html").is_file()
        and stamp.stat().st_mtime > _newest_source()
    ):
        return BUILT
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(SITE), str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, f"sphinx failed:\n{done.stderr[-3000:]}"
    return out


def test_every_internal_link_and_image_resolves(build: Path) -> None:
    problems = broken_links(build)
    assert not problems, f"{len(problems)} broken:\n" + "\n".join(problems[:40])


def test_broken_links_are_found(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "img.png").write_bytes(b"")
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a><a href="sub/page.html#nowhere">bad id</a>'
        '<a href="missing.html">missing</a><img src="img.png"><img src="gone.png">'
        '<a href="https://example.org/x">external</a><a href="#top" id="top">self</a>'
    )
    (tmp_path / "sub" / "page.html").write_text(
        '<h1 id="here">x</h1><a href="../index.html">up</a>'
    )
    found = broken_links(tmp_path)
    assert len(found) == 3, found
    assert any("missing.html" in p for p in found) and any("gone.png" in p for p in found)
    assert any("no id 'nowhere'" in p for p in found)


def _images(page: Path) -> list[str]:
    refs = _Refs()
    refs.feed(page.read_text())
    return [url for tag, url in refs.refs if tag == "img"]


@pytest.mark.skipif(chromium() is None, reason="no chromium on PATH: apt-get install chromium")
def test_the_pages_render_with_their_images_in_chromium(build: Path, tmp_path: Path) -> None:
    binary = chromium()
    assert binary is not None
    for page in PAGES:
        png = tmp_path / f"{page.replace('/', '-')}.png"
        screenshot(binary, (build / page).as_uri(), png, height=900)
        assert png.stat().st_size > 10_000, f"{page}: the screenshot is nearly empty"
    report = image_report(binary, build, PAGES)
    assert set(report) == set(PAGES)
    for page, images in report.items():
        assert [src for src, _, _ in images] == _images(build / page), page
        not_loaded = [src for src, complete, width in images if not (complete and width > 0)]
        assert not not_loaded, f"{page}: images that did not load in chromium: {not_loaded}"
    assert report["results/training.html"], "the training results page shows no image"
