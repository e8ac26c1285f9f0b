"""The results pages of the docs site (``docs/site/results``), generated from the committed files
under ``results/``.

- ``trainers.reports.pages``: templates, stamps, ``render`` and ``main``
  (``python scripts/results_pages.py [--only NAME] [--check]``);
- ``trainers.reports.data``: the committed files a page reads (``git archive`` of ``HEAD``), the
  commit of the data, the machine and warm start they record, and the registry of blocks;
- ``trainers.reports.tables_*``: the blocks, one function per table or plot, each calling the
  folder's own tabulator where it has one.

Importing this package imports nothing heavy.
"""
