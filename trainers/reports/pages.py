"""The results pages of the docs site, each made from its template and the committed data.

A template (``docs/site/results/_templates/<page>.md``) is the page's prose with marker lines
where the data goes, each an HTML comment on a line of its own:

- ``<!-- results:table NAME -->``: the block ``NAME`` (``trainers.reports.data.BLOCKS``): a table
  (or plot) made from one folder's committed files, by that folder's own tabulator where it has
  one;
- ``<!-- results:figure results/FOLDER/FILE.png | alt text -->``: a committed plot, shown where
  it lies;
- ``<!-- results:data results/FOLDER -->``: a folder the prose quotes, stamped but not shown;
- ``<!-- results:folders -->``: the table of every folder under ``results/`` (the index).

The page is the template with every marker replaced and, under its title, a stamp: the date it
was generated, and for each folder it read the commit of the data, the machine and the warm
start as the data records them (``trainers.reports.data.records``). ``main`` writes the pages
(``python scripts/results_pages.py [--only NAME] [--check]``); ``render`` makes one in memory,
so the test can compare a fresh page with the committed one.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from trainers.reports import tables_progress, tables_simulator, tables_speed, tables_training
from trainers.reports.data import BLOCKS, Block, Data, Output, Repository, Stamp, records

__all__ = ["PAGES", "ResultsPagesConfig", "main", "render", "same_apart_from_date"]

#: the modules whose blocks the templates name (imported for their registrations)
_TABLE_MODULES = (tables_training, tables_simulator, tables_speed, tables_progress)

ROOT = Path(__file__).resolve().parents[2]
#: where the pages go, and their templates, relative to the repository root
SITE_RESULTS = "docs/site/results"
TEMPLATES = f"{SITE_RESULTS}/_templates"
#: every results page, in the order the index lists them
PAGES = (
    "index",
    "training",
    "simulator",
    "speed",
    "per_prompt",
    "attributed",
    "trl_recipe",
    "trl_final",
)

_MARKER = re.compile(r"^<!-- results:(\w+)\s*(.*?)\s*-->$")
#: the one line of a page that changes when nothing else does
_DATE = re.compile(r"Generated on \d{4}-\d{2}-\d{2}")


@dataclass
class ResultsPagesConfig:
    """What ``scripts/results_pages.py`` generates."""

    only: str | None = field(
        default=None,
        metadata={
            "help": f"comma-separated pages to generate (of {', '.join(PAGES)}); all by default"
        },
    )
    out: str = field(
        default=SITE_RESULTS,
        metadata={"help": "directory the pages (and their img/) are written to"},
    )
    check: bool = field(
        default=False,
        metadata={
            "help": "write nothing: exit 1 if a committed page differs (apart from its "
            "generation date) from the one the data makes now"
        },
    )

    def __post_init__(self) -> None:
        for name in self.pages():
            if name not in PAGES:
                from adaroll_env.errors import unknown_name

                raise ValueError(unknown_name("results page", name, PAGES))

    def pages(self) -> list[str]:
        """The pages to make, in order."""
        if self.only is None:
            return list(PAGES)
        return [p.strip() for p in self.only.split(",") if p.strip()]


@dataclass
class Page:
    """A rendered page: its text and the plots it wrote (under ``out``)."""

    name: str
    text: str
    images: list[Path]


def _folders(template: str) -> list[str]:
    """The data folders a template reads, in the order it names them."""
    found: list[str] = []
    for line in template.splitlines():
        m = _MARKER.match(line.strip())
        if not m:
            continue
        kind, arg = m.groups()
        if kind == "table":
            folder = _block(arg).folder
        elif kind == "figure":
            folder = "/".join(arg.split("|")[0].strip().split("/")[:2])
        elif kind == "data":
            folder = arg
        elif kind == "folders":
            continue
        else:
            raise ValueError(
                f"unknown results marker {kind!r} in {line.strip()!r}: use table, figure, data "
                "or folders"
            )
        if not folder.startswith("results/"):
            raise ValueError(f"{line.strip()!r} names {folder!r}, not a folder under results/")
        if folder not in found:
            found.append(folder)
    return found


def _block(name: str) -> Block:
    if name not in BLOCKS:
        from adaroll_env.errors import unknown_name

        raise ValueError(unknown_name("results block", name, list(BLOCKS)))
    return BLOCKS[name]


def _stamp(name: str, stamps: list[Stamp], date: str) -> tuple[str, str]:
    """The note under the page's title (the date and how to regenerate it) and, for the end of
    the page, the section on the data it read: commits, machine and warm start per folder."""
    where = (
        "its folders' commits, machine and warm start are listed [at the end of this page]"
        "(#data-and-provenance)"
        if stamps
        else "each folder's commits are in the table below"
    )
    note = "\n".join([
        ":::{note}",
        f"Generated on {date} from the data committed under `results/` ({where}). To change "
        f"this page, edit its template `{TEMPLATES}/{name}.md` or the data, then run "
        f"`python scripts/results_pages.py --only {name}`.",
        ":::",
    ])  # fmt: skip
    if not stamps:
        return note, ""
    tail = "\n".join([
        "## Data and provenance",
        "",
        "The files each part of this page was made from, as committed: the commit that first "
        "added one of them and the last that changed one, and the machine and warm start the "
        "files themselves record (\"not recorded\" where they record none).",
        "",
        "| data | commits: first → last change | machine (as recorded) | warm start (weights "
        "sha256) |",
        "|---|---|---|---|",
        *(s.row() for s in stamps),
    ])  # fmt: skip
    return note, tail


def _folders_table(repo: Repository, root: Path) -> str:
    """Every folder under ``results/`` at ``HEAD``: its README's title, the commit of its data
    and the pages that show it."""
    folders = sorted({"/".join(f.split("/")[:2]) for f in repo.files("results") if "/" in f})
    readers: dict[str, list[str]] = {}
    for page in PAGES:
        for folder in _folders((repo.root / TEMPLATES / f"{page}.md").read_text()):
            readers.setdefault(folder, []).append(page)
    lines = ["| folder | what it holds | commit of the data | page |", "|---|---|---|---|"]
    for folder in folders:
        about = "—"
        docs = sorted(
            (p for name in ("README.md", "COMMAND.md") for p in (root / folder).rglob(name)),
            key=lambda p: (len(p.parts), p.name != "README.md", str(p)),
        )
        if docs:
            title = docs[0].read_text().splitlines()[0]
            about = f"{title.lstrip('# ').strip()} (`{docs[0].relative_to(root / folder)}`)"
        stamp = records(root, folder, repo.commits_of(folder))
        commit = stamp.row().split(" | ")[1]
        pages = ", ".join(f"[]({p}.md)" for p in readers.get(folder, [])) or "—"
        lines.append(f"| `{folder}/` | {about} | {commit} | {pages} |")
    return "\n".join(lines)


def render(
    name: str, out: Path, *, repo: Repository | None = None, date: str | None = None
) -> Page:
    """The page ``name`` from its template and the committed data; its plots go under ``out``."""
    repo = repo or Repository(ROOT)
    template_path = repo.root / TEMPLATES / f"{name}.md"
    if not template_path.is_file():
        raise FileNotFoundError(f"no template {template_path} for the results page {name!r}")
    template = template_path.read_text()
    folders = _folders(template)
    date = date or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    output = Output(out, name)
    with tempfile.TemporaryDirectory(prefix="adaroll-results-") as scratch:
        root = Path(scratch)
        wants_all = any(
            _MARKER.match(x.strip()) and "results:folders" in x for x in template.splitlines()
        )
        repo.export(["results"] if wants_all else folders, root)
        stamps = [records(root, f, repo.commits_of(f)) for f in folders]
        body: list[str] = []
        for line in template.splitlines():
            m = _MARKER.match(line.strip())
            if not m:
                body.append(line)
                continue
            kind, arg = m.groups()
            if kind == "table":
                blk = BLOCKS[arg]
                body.append(blk.make(Data(root, blk.folder), output).rstrip("\n"))
            elif kind == "figure":
                path, _, alt = arg.partition("|")
                path = path.strip()
                if not (root / path).is_file():
                    raise FileNotFoundError(
                        f"{template_path.name}: the figure {path} is not committed"
                    )
                rel = "../" * (len(Path(SITE_RESULTS).parts)) + path
                body.append(f"![{alt.strip()}]({rel})")
            elif kind == "folders":
                body.append(_folders_table(repo, root))
            # "data" markers only stamp their folder
    lines = body
    title = next((i for i, x in enumerate(lines) if x.startswith("# ")), None)
    if title is None:
        raise ValueError(f"{template_path}: a results template starts with a '# Title' line")
    header = [
        f"<!-- Generated by scripts/results_pages.py from {TEMPLATES}/{name}.md and the committed "
        "data: edit those, not this file. -->",
    ]
    note, tail = _stamp(name, stamps, date)
    text = "\n".join([*header, *lines[: title + 1], "", note, *lines[title + 1 :], "", tail])
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"
    return Page(name, text, output.written)


def same_apart_from_date(a: str, b: str) -> bool:
    """Whether two versions of a page differ at most in their generation date."""
    return _DATE.sub("Generated on DATE", a) == _DATE.sub("Generated on DATE", b)


def main(cfg: ResultsPagesConfig) -> list[str]:
    """Write (or, with ``check``, compare) the pages; the names of the pages written or stale."""
    repo = Repository(ROOT)
    out = Path(cfg.out)
    if not out.is_absolute():
        out = ROOT / out
    changed: list[str] = []
    for name in cfg.pages():
        for folder in _folders((ROOT / TEMPLATES / f"{name}.md").read_text()):
            if repo.uncommitted(folder):
                print(
                    f"results_pages: {folder} has uncommitted changes, not read (the pages show "
                    "committed data): commit them and rerun to include them",
                    file=sys.stderr,
                )
        target = out / f"{name}.md"
        if cfg.check:
            with tempfile.TemporaryDirectory() as scratch:
                page = render(name, Path(scratch), repo=repo)
            old = target.read_text() if target.is_file() else ""
            if not same_apart_from_date(old, page.text):
                changed.append(name)
                print(
                    f"stale: {target} (regenerate: python scripts/results_pages.py --only {name})"
                )
            continue
        page = render(name, out, repo=repo)
        target.write_text(page.text)
        changed.append(name)
        print(f"wrote {target}" + (f" and {len(page.images)} plot(s)" if page.images else ""))
    if cfg.check and changed:
        raise SystemExit(1)
    return changed
