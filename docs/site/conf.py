"""Sphinx configuration of the adaroll docs: MyST Markdown pages, the Furo theme, autodoc.

Build with ``make docs`` (warnings are errors; HTML in ``build/docs``). Pages under
``_generated/`` are written from the code by the ``adaroll_docs`` extension (``_ext/``) at the
start of every build.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "adaroll"
author = "the adaroll authors"
copyright = "2026, the adaroll authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "adaroll_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "_generated/fragments", "results/_templates"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "adaroll"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
pygments_style = "sphinx"
