"""Pages of the adaroll docs written from the code at build time, so they cannot drift from it.

- ``environments/<id>.md``: one page per registered ``AdaRoll/*`` id, from the env class
  docstring (Gymnasium's layout: Description, Action Space, Observation Space, Rewards, Starting
  State, Episode End, Arguments, Version History), with a table of the id's registration;
- ``allocators.md`` and ``fragments/allocator_table.md``: every built-in allocator of the
  registry, its class, constructor keywords and docstring (each names its source paper and
  formula);
- ``fragments/cli.md``: the help of ``adaroll`` and of every subcommand, from ``trainers.cli``'s
  parsers.

Sphinx runs ``setup`` (``extensions = ["adaroll_docs"]`` in ``conf.py``), which writes the pages
into ``docs/site/_generated/`` (ignored by git) before reading the sources; a page whose text
did not change is not rewritten, so incremental builds stay incremental. The docs test runs this
file as a script, ``python docs/site/_ext/adaroll_docs.py OUTDIR``, to check the code blocks of
the generated pages too.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: where the pages go, relative to the Sphinx source directory
GENERATED = "_generated"
#: pieces other pages include (``{include}``), under ``GENERATED``: not pages of their own
FRAGMENTS = "fragments"

#: the ``>>>`` prompt that opens a doctest example in a docstring
_PROMPT = re.compile(r"^\s*>>>")


def docstring_to_myst(doc: str) -> str:
    """A docstring (Markdown with double-backtick literals) as MyST: each run of ``>>>`` lines
    and their expected output becomes a ```` ```pycon ```` block (the docs test runs them with
    doctest), an RST ``::`` literal block becomes a ```` ```text ```` block."""
    lines = doc.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _PROMPT.match(line):
            indent = len(line) - len(line.lstrip())
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][indent:])
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            out.append(line.rstrip()[:-1])  # "points::" reads "points:"
            i += 2
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```text", *block, "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip() + "\n"


def env_slug(env_id: str) -> str:
    """The page name of an env id: ``AdaRoll/BetaBernoulli-v0`` -> ``betabernoulli_v0``."""
    return re.sub(r"[^a-z0-9]+", "_", env_id.split("/")[-1].lower()).strip("_")


def _import(path: str) -> Any:
    module, _, attr = path.partition(":")
    obj: Any = __import__(module, fromlist=["_"])
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def env_ids() -> list[str]:
    """The registered ``AdaRoll/*`` ids, in registration order."""
    import gymnasium as gym

    import adaroll_env

    gym.register_envs(adaroll_env)
    return [k for k in gym.registry if k.startswith("AdaRoll/")]


def env_page(env_id: str) -> str:
    """The MyST page of one env id, from its class docstring and its registration."""
    import gymnasium as gym

    spec = gym.registry[env_id]
    entry = str(spec.entry_point)
    cls = _import(entry)
    doc = inspect.getdoc(cls) or ""
    summary, _, body = doc.partition("\n")
    rows = [
        ("Entry point", f"`{entry}`"),
        ("Make", f'`gymnasium.make("{env_id}")`'),
        ("Nondeterministic", f"`{spec.nondeterministic}`"),
    ]
    if entry.startswith("adaroll_env."):  # simulated: cheap to build, show the default spaces
        env = gym.make(env_id)
        keys = ", ".join(f"`{k}`" for k in env.observation_space.spaces)  # type: ignore[attr-defined]
        rows[2:2] = [
            ("Action Space (defaults)", f"`{env.action_space}`"),
            ("Observation Space", f"`Dict` of float32 `Box` spaces: {keys}"),
        ]
        env.close()
    table = ["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]]
    return "\n".join(
        [
            f"# `{env_id}`",
            "",
            summary.strip(),
            "",
            *table,
            "",
            docstring_to_myst(body),
        ]
    )


def builtin_allocators() -> list[tuple[str, str]]:
    """``(name, "module:Class")`` of every allocator ``import agents`` registers, in order."""
    from agents import registry

    out = []
    for name, found in registry._REGISTRY.items():
        if isinstance(found, str):
            out.append((name, found))
        else:
            out.append((name, f"{found.__module__}:{found.__qualname__}"))
    return out


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.split("\n\n")[0].split())


def _keywords(cls: type) -> str:
    params = [
        p
        for p in inspect.signature(cls).parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if not params:
        return "none"
    return ", ".join(f"`{p.name}={p.default!r}`" for p in params)


def allocator_table() -> str:
    """A Markdown table of the built-in allocators (name, class, first paragraph)."""
    rows = ["| name | class | rule (the docstring's first paragraph) |", "|---|---|---|"]
    for name, path in builtin_allocators():
        cls = _import(path)
        summary = _first_paragraph(inspect.getdoc(cls) or "").replace("|", "\\|")
        rows.append(f"| [`{name}`](_generated/allocators.md#{name}) | `{path}` | {summary} |")
    return "\n".join(rows) + "\n"


def allocators_page() -> str:
    """The page of every built-in allocator: its class, flags, keywords and full docstring."""
    parts = [
        "# Built-in allocators",
        "",
        "Every allocator `import agents` registers, in registration order, with its class "
        "docstring (the source it follows and the formula it uses). `agents.list_allocators()` "
        "gives the same names, plus plug-ins. This page is written from the code when the docs "
        "are built.",
        "",
    ]
    for name, path in builtin_allocators():
        cls = _import(path)
        flags = (
            f"adaptive: `{getattr(cls, 'adaptive', True)}` (reacts to outcomes within a step), "
            f"stochastic: `{getattr(cls, 'stochastic', False)}` (draws from its seeded generator)"
        )
        parts += [
            f"## `{name}`",
            "",
            f"`{path.replace(':', '.')}` — {flags}. Keywords: {_keywords(cls)}.",
            "",
            docstring_to_myst(inspect.getdoc(cls) or ""),
        ]
    return "\n".join(parts)


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def cli_page() -> str:
    """``adaroll --help`` and each subcommand's ``--help``, as the parsers print them."""
    from trainers.cli import SUBCOMMANDS, build_parser

    with _columns(100):
        parser = build_parser(None)
        sub = next(
            a for a in parser._actions if a.dest == "command" and hasattr(a, "choices")
        ).choices
        parts = [
            "| command | what it does |",
            "|---|---|",
            *[f"| [`adaroll {n}`](#adaroll-{n}) | {h[3]} |" for n, h in SUBCOMMANDS.items()],
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
            "",
        ]
        for name in SUBCOMMANDS:
            parts += [
                f"## `adaroll {name}`",
                "",
                "```text",
                sub[name].format_help().rstrip(),
                "```",
                "",
            ]
    return "\n".join(parts)


def pages() -> dict[str, str]:
    """Every generated page: ``{path relative to _generated/: MyST text}``."""
    out = {f"environments/{env_slug(i)}.md": env_page(i) for i in env_ids()}
    out["allocators.md"] = allocators_page()
    out[f"{FRAGMENTS}/allocator_table.md"] = allocator_table()
    out[f"{FRAGMENTS}/cli.md"] = cli_page()
    return out


def write_pages(root: Path) -> list[Path]:
    """Write ``pages()`` under ``root`` (only those whose text changed); the paths written."""
    written = []
    for rel, text in pages().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^\s*\|[\s:|-]+\|\s*$")
_LITERAL = re.compile(r"(``.+?``)")
_BARS = re.compile(r"(?<![\\|])\|(?=\S)([^|`]+?)(?<=\S)\|")


def _escape_inline(text: str) -> str:
    """``|x|`` (an absolute value) outside literals escaped, so RST reads no substitution; a
    literal followed by letters (a plural of a name in double backticks) given the escaped
    space RST needs after it."""
    parts = _LITERAL.split(text)
    out = []
    for k, part in enumerate(parts):
        if part.startswith("``"):
            glued = k + 1 < len(parts) and re.match(r"\w", parts[k + 1]) is not None
            out.append(part + ("\\ " if glued else ""))
        else:
            out.append(_BARS.sub(r"\\|\1\\|", part))
    return "".join(out)


def rst_safe(lines: list[str]) -> list[str]:
    """A docstring's lines, with its Markdown read as RST for autodoc: a Markdown table becomes
    a ``list-table``, a ``## Heading`` a ``rubric``, and ``|x|`` is escaped."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_ROW.match(line) and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            indent = line[: len(line) - len(line.lstrip())]
            rows = []
            while i < len(lines) and _TABLE_ROW.match(lines[i]):
                if not _RULE.match(lines[i]):
                    cells = [c.strip() for c in lines[i].strip()[1:-1].split("|")]
                    rows.append(cells)
                i += 1
            out += [f"{indent}.. list-table::", f"{indent}   :header-rows: 1", ""]
            for row in rows:
                for k, cell in enumerate(row):
                    out.append(f"{indent}   {'* -' if k == 0 else '  -'} {cell or ' '}")
            out.append("")
            continue
        heading = re.match(r"^(\s*)#{2,}\s+(.*)$", line)
        if heading:
            out += [f"{heading.group(1)}.. rubric:: {heading.group(2)}", ""]
        else:
            out.append(_escape_inline(line))
        i += 1
    return out


def _on_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = rst_safe(lines)


def _on_builder_inited(app: Any) -> None:
    write_pages(Path(app.srcdir) / GENERATED)


def setup(app: Any) -> dict[str, Any]:
    """The Sphinx extension: write the generated pages before the sources are read, and read
    docstrings' Markdown tables and headings as RST for autodoc."""
    app.connect("builder-inited", _on_builder_inited)
    app.connect("autodoc-process-docstring", _on_docstring)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    write_pages(Path(sys.argv[1]))
