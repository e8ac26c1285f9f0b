"""Look at the built docs site as a reader would: screenshots of a few pages in headless Chromium.

    python scripts/site_screenshots.py [--build build/docs] [--out build/screenshots]
        [--pages index.html,trl.html,...] [--width 1280] [--height 2400]

Saves one PNG per page (by default the index, an env page, the TRL page and the training results
page) and prints, for each page, its images and whether Chromium loaded them. Needs a Chromium
binary on PATH (Debian/Ubuntu: apt-get install chromium) and a built site (make docs). The code
is trainers.reports.site; this script parses its config and calls main.
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.reports.site import SiteScreenshotsConfig, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, SiteScreenshotsConfig)
    main(config_from_args(SiteScreenshotsConfig, parser.parse_args()))
