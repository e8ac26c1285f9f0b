"""The committed files a results page is made from, and what they record about themselves.

A page reads its folders as committed at ``HEAD`` (``git archive`` into a scratch directory),
never the working tree, so a running experiment writing under ``results/`` changes no page until
its files are committed, and a committed change shows up as a stale page. For each folder the
page is stamped with:

- the **commit of the data**: the newest commit that changed the content of a file the folder
  holds, following renames (moving a folder does not count: ``data_commits``);
- the **machine**: every ``platform`` (and torch ``device``) the folder's JSON records name
  (``versions.json``, ``provenance.json``, configs), else ``not recorded``;
- the **warm start**: every ``weights_sha256`` its JSON records and every ``weights sha256
  `...` `` its tables name (first 12 hex digits), else nothing.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCKS",
    "Block",
    "Data",
    "Output",
    "Repository",
    "Stamp",
    "block",
]

#: a JSON file larger than this is not searched for machine and warm-start records
_RECORD_BYTES = 2_000_000
#: the warm-start hash as the compete tabulator writes it into its tables
_TABLE_HASH = re.compile(r"weights sha256 `([0-9a-f]{8,64})`")
_HEX = re.compile(r"^[0-9a-f]{12,64}$")


class Repository:
    """The git checkout at ``root``: the files of a folder at ``HEAD``, an export of folders,
    and the commit that last changed each folder's data."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self._git("rev-parse", "HEAD")
        except (OSError, subprocess.CalledProcessError) as exc:
            raise ValueError(
                f"{root} is not a git checkout with a commit (git rev-parse HEAD failed): the "
                "results pages are made from committed files; run from a clone of the repository"
            ) from exc
        self._commits: dict[str, list[tuple[str, str, int]]] | None = None

    def _git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", *args], cwd=self.root, capture_output=True, text=True, check=True
        )
        return out.stdout

    def files(self, folder: str) -> list[str]:
        """The files under ``folder`` at ``HEAD`` (repository-relative paths, sorted)."""
        out = self._git("ls-tree", "-r", "--name-only", "HEAD", "--", folder)
        return sorted(line for line in out.splitlines() if line)

    def export(self, folders: list[str], dest: Path) -> None:
        """Write the files of ``folders`` at ``HEAD`` under ``dest`` (same relative paths)."""
        present = [f for f in folders if self.files(f)]
        if not present:
            return
        tar = subprocess.run(
            ["git", "archive", "--format=tar", "HEAD", "--", *present],
            cwd=self.root,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            archive.extractall(dest, filter="data")

    def uncommitted(self, folder: str) -> list[str]:
        """Paths under ``folder`` whose working-tree state differs from ``HEAD`` (not read)."""
        out = self._git("status", "--porcelain", "--untracked-files=all", "--", folder)
        return [line[3:] for line in out.splitlines() if line]

    def data_commits(self) -> dict[str, list[tuple[str, str, int]]]:
        """``{path at HEAD: [(commit, date, age), ...]}``: the commits that changed each file's
        content, newest first (``age``: the place in the log, 0 the newest), renames followed
        and pure renames skipped. One ``git log`` over the whole history."""
        if self._commits is None:
            self._commits = _content_commits(
                self._git("ls-tree", "-r", "--name-only", "HEAD").splitlines(),
                self._git("log", "--format=%x00%H %cs", "--name-status", "-M", "HEAD"),
            )
        return self._commits

    def commits_of(self, folder: str) -> tuple[tuple[str, str], tuple[str, str]] | None:
        """The newest commit that changed a file of ``folder`` and the oldest that added one,
        each ``(commit, date)``; None when the folder holds nothing at ``HEAD``."""
        commits = self.data_commits()
        found = [c for f in self.files(folder) for c in commits.get(f, [])]
        if not found:
            return None
        newest, oldest = min(found, key=lambda c: c[2]), max(found, key=lambda c: c[2])
        return newest[:2], oldest[:2]


def _content_commits(current: list[str], log: str) -> dict[str, list[tuple[str, str, int]]]:
    """Walk ``git log --name-status -M`` output (newest first) and list, for each current path,
    the commits that added or modified its content under any of its former names."""
    alias = {p: p for p in current}
    found: dict[str, list[tuple[str, str, int]]] = {}
    for age, entry in enumerate(log.split("\x00")[1:]):
        head, *lines = entry.strip("\n").split("\n")
        commit, date = head.split(" ")
        for line in lines:
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            status = parts[0]
            if status.startswith("R") and len(parts) == 3:
                old, new = parts[1], parts[2]
                if new in alias:
                    now = alias.pop(new)
                    if status != "R100":
                        found.setdefault(now, []).append((commit[:12], date, age))
                    alias[old] = now
            elif status[0] in "AMC":
                path = parts[-1]
                if path in alias:
                    found.setdefault(alias[path], []).append((commit[:12], date, age))
                    if status[0] == "A":  # older commits of this name are another file
                        del alias[path]
    return found


@dataclass
class Stamp:
    """What a folder's files say about where they come from."""

    folder: str
    commits: tuple[tuple[str, str], tuple[str, str]] | None
    machines: list[str] = field(default_factory=list)
    warm_starts: list[str] = field(default_factory=list)

    def row(self) -> str:
        """A row of the page's stamp table."""
        if self.commits is None:
            commit = "nothing committed"
        else:
            (last, last_date), (first, first_date) = self.commits
            commit = f"`{first[:7]}` ({first_date})"
            if first != last:
                commit += f" → `{last[:7]}` ({last_date})"
        machine = "; ".join(self.machines) if self.machines else "not recorded"
        warm = ", ".join(f"`{h}`" for h in self.warm_starts) if self.warm_starts else "—"
        return f"| `{self.folder}` | {commit} | {machine} | {warm} |"


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def records(
    root: Path, folder: str, commits: tuple[tuple[str, str], tuple[str, str]] | None
) -> Stamp:
    """The stamp of ``folder`` exported under ``root``: machines and warm starts as its files
    record them."""
    platforms: list[str] = []
    devices: list[str] = []
    hashes: list[str] = []
    base = root / folder
    files = sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
    for path in files:
        if path.suffix == ".json" and path.stat().st_size <= _RECORD_BYTES:
            try:
                data = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            for key, value in _walk(data):
                if key == "platform" and isinstance(value, str) and value not in platforms:
                    platforms.append(value)
                elif key == "device" and value not in (*devices, "auto") and isinstance(value, str):
                    devices.append(value)
                elif (
                    key == "weights_sha256"
                    and isinstance(value, str)
                    and _HEX.match(value)
                    and value[:12] not in hashes
                ):
                    hashes.append(value[:12])
        elif path.suffix in (".md", ".txt"):
            for h in _TABLE_HASH.findall(path.read_text(errors="replace")):
                if h[:12] not in hashes:
                    hashes.append(h[:12])
    machines = list(platforms)
    if devices:
        machines.append("torch device " + ", ".join(devices))
    return Stamp(folder, commits, machines, hashes)


# ----------------------------------------------------------------------------------------------
# What a block of a page reads and writes
# ----------------------------------------------------------------------------------------------


class Data:
    """The committed files of one folder, exported under ``root``; paths are relative to the
    folder (``data.json("summary.json")``)."""

    def __init__(self, root: Path, folder: str) -> None:
        self.root = root
        self.folder = folder
        self.base = root / folder

    def path(self, rel: str) -> Path:
        """The exported file ``rel``; a clear error when it was never committed."""
        path = self.base / rel
        if not path.is_file():
            raise FileNotFoundError(
                f"{self.folder}/{rel} is not committed (the results pages read the files at "
                f"HEAD): commit it, or change the page's template"
            )
        return path

    def exists(self, rel: str = "") -> bool:
        """Whether ``rel`` (a file or folder; the folder itself by default) is committed."""
        return (self.base / rel).exists()

    def glob(self, pattern: str) -> list[str]:
        """Committed paths matching ``pattern``, relative to the folder, sorted."""
        return sorted(str(p.relative_to(self.base)) for p in self.base.glob(pattern))

    def text(self, rel: str) -> str:
        """The committed text file ``rel``."""
        return self.path(rel).read_text()

    def json(self, rel: str) -> Any:
        """The committed JSON file ``rel``, parsed."""
        return json.loads(self.text(rel))

    def jsonl(self, rel: str) -> list[dict[str, Any]]:
        """The records of the committed JSON-lines file ``rel``."""
        return [json.loads(line) for line in self.text(rel).splitlines() if line.strip()]

    def csv(self, rel: str) -> list[dict[str, Any]]:
        """Rows of a CSV with numbers parsed (empty cells ``None``, ``True``/``False`` bools)."""
        with self.path(rel).open(newline="") as fh:
            return [{k: _parse(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _parse(cell: str) -> Any:
    if cell == "":
        return None
    if cell in ("True", "False"):
        return cell == "True"
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


class Output:
    """Where a block writes its plots: ``image(name)`` gives the file to write and the link the
    page uses (``img/<page>-<name>.png`` beside the page)."""

    def __init__(self, directory: Path, page: str) -> None:
        self.directory = directory
        self.page = page
        self.written: list[Path] = []

    def image(self, name: str) -> tuple[Path, str]:
        """The PNG file to write for the plot ``name`` and the link to it from the page."""
        rel = f"img/{self.page}-{name}.png"
        path = self.directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self.written.append(path)
        return path, rel


@dataclass(frozen=True)
class Block:
    """A piece of a page made from one folder's files: a table, a plot, or both."""

    name: str
    folder: str
    make: Callable[[Data, Output], str]


#: every block a template can name (``<!-- results:table NAME -->``), by name
BLOCKS: dict[str, Block] = {}


def block(name: str, folder: str) -> Callable[[Callable[[Data, Output], str]], Block]:
    """Register ``make(data, out) -> markdown`` as the block ``name`` reading ``folder``."""

    def register(make: Callable[[Data, Output], str]) -> Block:
        if name in BLOCKS:
            raise ValueError(f"two results blocks are named {name!r}")
        BLOCKS[name] = Block(name, folder, make)
        return BLOCKS[name]

    return register
