"""Every code block of README.md and of the docs site (docs/site) runs as printed.

- A ```` ```python ```` block runs in a fresh interpreter.
- A ```` ```pycon ```` block (the ``>>>`` examples of the docstrings the generated pages show)
  runs under doctest, its printed output compared.
- A ```` ```bash ```` block runs when the line just above its fence is ``<!-- runnable -->``
  (an HTML comment: invisible on GitHub and on the site), under ``bash -e -o pipefail`` with this
  interpreter's ``bin`` first on ``PATH`` (so ``adaroll`` is this checkout's). Unmarked bash blocks
  show installs (``make``, ``pip``) and long runs, and are not run.

Each block runs in its own temporary directory, so nothing it writes lands in the checkout, with
the suite's ``ADAROLL_CACHE_DIR`` (``tests/conftest.py``), so nothing lands in
``~/.cache/adaroll`` either. A block that breaks fails its test with the page and the line.

The pages under ``docs/site/_generated`` are written from the code by
``docs/site/_ext/adaroll_docs.py``; ``test_generated_pages_blocks_run`` writes them afresh and
runs their blocks.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "site"
GENERATOR = SITE / "_ext" / "adaroll_docs.py"
RUNNABLE = "<!-- runnable -->"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)

#: doctest of one ```pycon block, run in a fresh interpreter (argv[1]: the block)
DOCTEST = r"""
import doctest, sys
test = doctest.DocTestParser().get_doctest(sys.argv[1], {}, "block", None, 0)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
runner.run(test)
sys.exit(1 if runner.failures or not test.examples else 0)
"""


@dataclasses.dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str  # python, pycon or bash
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(text: str, page: str) -> list[Block]:
    """The runnable blocks of one Markdown page: python, pycon, and marked bash."""
    out = []
    for m in FENCE.finditer(text):
        lang, code = m.group(1), m.group(2)
        line = text[: m.start()].count("\n") + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if lang in ("python", "pycon") or (lang == "bash" and before == RUNNABLE):
            out.append(Block(page, line, lang, code))
    return out


def written_pages() -> list[Path]:
    """README.md and the hand-written pages of the site (not the generated ones)."""
    pages = [ROOT / "README.md"]
    pages += sorted(p for p in SITE.rglob("*.md") if "_generated" not in p.relative_to(SITE).parts)
    return pages


def written_blocks() -> list[Block]:
    return [b for p in written_pages() for b in blocks_of(p.read_text(), str(p.relative_to(ROOT)))]


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("COLUMNS", "120")
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.code]
    elif block.lang == "pycon":
        cmd = [sys.executable, "-c", DOCTEST, block.code]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def check(block: Block, cwd: Path) -> None:
    done = run_block(block, cwd)
    assert done.returncode == 0, (
        f"{block.id} ({block.lang}) failed:\n{block.code}\n--- stdout ---\n{done.stdout[-3000:]}"
        f"\n--- stderr ---\n{done.stderr[-3000:]}"
    )


def test_the_pages_have_blocks_to_run() -> None:
    blocks = written_blocks()
    readme = [b for b in blocks if b.page == "README.md"]
    assert len(readme) >= 3 and any(b.lang == "bash" for b in readme)
    assert len(blocks) >= 20


@pytest.mark.parametrize("block", written_blocks(), ids=lambda b: b.id)
def test_block_runs(block: Block, tiny_model_dir: Path, tmp_path: Path) -> None:
    check(block, tmp_path)


def test_generated_pages_blocks_run(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated"
    subprocess.run([sys.executable, str(GENERATOR), str(out)], check=True, timeout=600)
    pages = sorted(out.rglob("*.md"))
    names = {str(p.relative_to(out)) for p in pages}
    assert {"allocators.md", "fragments/cli.md", "fragments/allocator_table.md"} <= names
    assert len([n for n in names if n.startswith("environments/")]) == 3
    blocks = []
    for page in pages:
        found = blocks_of(page.read_text(), str(page.relative_to(out)))
        blocks += [b for b in found if b.lang != "pycon"]
        examples = [b for b in found if b.lang == "pycon"]
        if examples:  # one docstring's examples share a namespace, as doctest runs them
            code = "\n".join(b.code for b in examples)
            blocks.append(Block(examples[0].page, examples[0].line, "pycon", code))
    assert len([b for b in blocks if b.lang == "pycon"]) >= 3  # every env docstring's example
    for k, block in enumerate(blocks):
        cwd = tmp_path / f"block{k}"
        cwd.mkdir()
        check(block, cwd)


def test_the_generated_pages_cover_the_registries(tmp_path: Path) -> None:
    import gymnasium as gym

    import adaroll_env
    import agents

    subprocess.run([sys.executable, str(GENERATOR), str(tmp_path)], check=True, timeout=600)
    gym.register_envs(adaroll_env)
    ids = [k for k in gym.registry if k.startswith("AdaRoll/")]
    for env_id in ids:
        slug = re.sub(r"[^a-z0-9]+", "_", env_id.split("/")[-1].lower()).strip("_")
        assert f"# `{env_id}`" in (tmp_path / "environments" / f"{slug}.md").read_text()
    listed = (tmp_path / "allocators.md").read_text()
    for name in agents.list_allocators():
        assert f"## `{name}`" in listed, name
    cli = (tmp_path / "fragments" / "cli.md").read_text()
    from trainers.cli import SUBCOMMANDS

    for name in SUBCOMMANDS:
        assert f"## `adaroll {name}`" in cli and f"usage: adaroll {name}" in cli


def test_the_beliefs_table_lists_every_field() -> None:
    """The allocators page writes out every field and property of ``agents.Beliefs``."""
    from agents import Beliefs

    text = (SITE / "allocators.md").read_text()
    table = text[text.index("### What `self.beliefs(obs)` holds") :]
    table = table[: table.index("\n\n`allocate` must")]
    shown = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    fields = [f.name for f in dataclasses.fields(Beliefs)]
    props = [n for n, v in vars(Beliefs).items() if isinstance(v, property)]
    assert shown == fields + props


def test_nothing_points_outside_the_repository() -> None:
    """Code, tests and docs cite the design page in the repository, never a file beside it."""
    pattern = re.compile(r"DESIGN §|\.\./shared|reference/allocation-literature|DESIGN\.md")
    hits = []
    for top in ("adaroll_env", "agents", "trainers", "scripts", "tests", "docs/site"):
        for path in (ROOT / top).rglob("*"):
            if path.suffix in (".py", ".md") and "_generated" not in path.parts:
                for k, line in enumerate(path.read_text().splitlines(), 1):
                    if pattern.search(line) and path != Path(__file__):
                        hits.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    readme = (ROOT / "README.md").read_text()
    hits += [f"README.md: {m.group(0)}" for m in pattern.finditer(readme)]
    assert hits == []


def test_design_sections_cited_in_code_exist() -> None:
    """Every "docs: design §N" in the code names a numbered section of docs/site/design.md."""
    design = (SITE / "design.md").read_text()
    sections = set(re.findall(r"^## (\d+)\. ", design, flags=re.M))
    cited = set()
    for top in ("adaroll_env", "agents", "trainers", "tests"):
        for path in (ROOT / top).rglob("*.py"):
            cited |= set(re.findall(r"design §(\d+)", path.read_text()))
    assert cited and cited <= sections, cited - sections
