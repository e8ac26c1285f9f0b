"""Regenerate the results pages of the docs site from the committed files under results/.

    python scripts/results_pages.py [--only training,speed] [--check]

Each page (docs/site/results/<name>.md) is its template (docs/site/results/_templates/<name>.md)
with the tables and plots made from the data as committed at HEAD, stamped with the date, the
commit of the data, the machine and the warm start the data records. --check writes nothing and
exits 1 when a committed page is stale. The code is trainers.reports.pages; this script parses
its config and calls main.
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.reports.pages import ResultsPagesConfig, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, ResultsPagesConfig)
    main(config_from_args(ResultsPagesConfig, parser.parse_args()))
