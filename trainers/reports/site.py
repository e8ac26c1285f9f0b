"""The built docs site (``make docs`` → ``build/docs``) checked as a reader meets it.

- ``broken_links``: every internal ``href`` and ``src`` of every built HTML page resolves to a
  file of the build (and every ``#fragment`` to an ``id`` of its page): no broken link, no missing
  image;
- ``chromium``: the Chromium binary on ``PATH`` (Debian's ``chromium`` package:
  ``apt-get install chromium``), or None;
- ``screenshot``: one page rendered headless into a PNG;
- ``image_report``: the pages loaded headless from a local HTTP server, each ``<img>``'s
  ``naturalWidth`` as the browser decoded it (0: the image did not load).

``main(cfg)`` (``python scripts/site_screenshots.py``) saves screenshots of the index, an env
page, the TRL page and a results page and prints every image's report.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "PAGES",
    "SiteScreenshotsConfig",
    "broken_links",
    "chromium",
    "image_report",
    "main",
    "screenshot",
]

#: what a reader opens first: the index, an env page, the TRL page, a results page
PAGES = (
    "index.html",
    "_generated/environments/betabernoullirounds_v0.html",
    "trl.html",
    "results/training.html",
)
#: the binaries Debian and others install Chromium as
_BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: flags every headless run takes (no sandbox: the container runs as root; no GPU)
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
          "--disable-dev-shm-usage", "--no-first-run", "--mute-audio")  # fmt: skip


class _Refs(HTMLParser):
    """The ``href``/``src`` references and the ``id``s of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []  # (tag, url)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(str(a[key]))
        for key in ("href", "src"):
            value = a.get(key)
            if value and not (tag == "a" and key == "src"):
                self.refs.append((tag, value))


def _internal(url: str) -> bool:
    parts = urlsplit(url)
    return not (parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:", "data:")))


def broken_links(build: Path) -> list[str]:
    """Every internal link or image of the HTML pages under ``build`` that does not resolve:
    ``"page: <tag> url (why)"``; empty when all do."""
    pages = sorted(build.rglob("*.html"))
    if not pages:
        raise FileNotFoundError(f"no HTML pages under {build}: build the site first (make docs)")
    parsed: dict[Path, _Refs] = {}
    for page in pages:
        refs = _Refs()
        refs.feed(page.read_text(errors="replace"))
        parsed[page.resolve()] = refs
    problems = []
    for page, refs in parsed.items():
        rel = page.relative_to(build.resolve())
        for tag, url in refs.refs:
            if not _internal(url):
                continue
            parts = urlsplit(url)
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{rel}: <{tag}> {url} (no file {target})")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = parsed.get(target)
                if ids is not None and unquote(parts.fragment) not in ids.ids:
                    problems.append(f"{rel}: <{tag}> {url} (no id {parts.fragment!r} there)")
    return problems


def chromium() -> str | None:
    """The path of a Chromium binary on ``PATH``, or None."""
    for name in _BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(binary: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="adaroll-chromium-") as profile:
        return subprocess.run(
            [binary, *_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "HOME": profile},
        )  # fmt: skip


def screenshot(binary: str, url: str, png: Path, *, width: int = 1280, height: int = 1600) -> Path:
    """``url`` rendered headless at ``width`` × ``height`` into ``png``."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    done = _run(binary, f"--window-size={width},{height}", "--virtual-time-budget=5000",
                f"--screenshot={png}", url)  # fmt: skip
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {url}:\n{done.stderr[-1500:]}")
    return png


#: a page on the site's own origin that loads the pages in frames and writes, for each, every
#: image's src, whether it completed and its naturalWidth (0: not loaded)
_PROBE = """<!doctype html><html><body><pre id="out">pending</pre><script>
const pages = %s, found = {};
let left = pages.length;
for (const p of pages) {
  const f = document.createElement("iframe");
  f.style.width = "1280px"; f.style.height = "20000px";
  f.onload = () => {
    found[p] = Array.from(f.contentDocument.images).map(
      (i) => [i.getAttribute("src"), i.complete, i.naturalWidth]);
    if (--left === 0)
      document.getElementById("out").textContent = "REPORT " + JSON.stringify(found);
  };
  f.src = p;
  document.body.appendChild(f);
}
</script></body></html>"""
_PROBE_PATH = "/__adaroll_image_probe.html"


@contextlib.contextmanager
def serve(directory: Path, probe: str = "") -> Iterator[str]:
    """``directory`` over HTTP on a free local port (and ``probe`` at ``_PROBE_PATH``); the base
    URL."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == _PROBE_PATH:
                body = probe.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Handler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def image_report(binary: str, build: Path, pages: tuple[str, ...] = PAGES) -> dict[str, list]:
    """``{page: [[src, complete, naturalWidth], ...]}`` as headless Chromium loads each page
    of ``build`` (served over HTTP, so the probe may read the frames)."""
    with serve(build, _PROBE % json.dumps(list(pages))) as base:
        done = _run(binary, "--virtual-time-budget=20000", "--dump-dom",
                    base + _PROBE_PATH.lstrip("/"))  # fmt: skip
    m = re.search(r"REPORT (\{.*\})", done.stdout)
    if not m:
        raise RuntimeError(
            "chromium's DOM holds no image report (a page did not load?):\n"
            f"{done.stdout[-800:]}\n{done.stderr[-800:]}"
        )
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@dataclass
class SiteScreenshotsConfig:
    """What ``scripts/site_screenshots.py`` renders."""

    build: str = field(default="build/docs", metadata={"help": "the built site (make docs)"})
    out: str = field(default="build/screenshots", metadata={"help": "where the PNGs go"})
    pages: str = field(
        default=",".join(PAGES),
        metadata={"help": "comma-separated pages of the build to render"},
    )
    width: int = field(default=1280, metadata={"help": "window width, pixels"})
    height: int = field(default=2400, metadata={"help": "window height, pixels"})


def main(cfg: SiteScreenshotsConfig) -> dict[str, list]:
    """Screenshot every page, print each image's report; the report."""
    binary = chromium()
    if binary is None:
        raise RuntimeError(
            "no Chromium on PATH: install it (Debian/Ubuntu: apt-get install chromium), then rerun"
        )
    build = Path(cfg.build).resolve()
    pages = tuple(p.strip() for p in cfg.pages.split(",") if p.strip())
    missing = [p for p in pages if not (build / p).is_file()]
    if missing:
        raise FileNotFoundError(f"not in {build}: {', '.join(missing)} (build the site: make docs)")
    out = Path(cfg.out)
    with serve(build) as base:
        for page in pages:
            png = out / (page.removesuffix(".html").replace("/", "-") + ".png")
            screenshot(binary, base + page, png, width=cfg.width, height=cfg.height)
            print(f"{png}  ({page})")
    report = image_report(binary, build, pages)
    for page, images in report.items():
        bad = [src for src, complete, w in images if not (complete and w > 0)]
        print(
            f"{page}: {len(images)} image(s)" + (f", NOT LOADED: {', '.join(bad)}" if bad else "")
        )
    return report
