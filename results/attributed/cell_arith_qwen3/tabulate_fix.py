"""This cell's fixed ``prior_filter`` (``prior_filter_fix/``) paired with its final's entrants:
``../fixed_prior_filter.py cell_arith_qwen3`` (the results pages run every ``tabulate*.py`` as is).

    python results/attributed/cell_arith_qwen3/tabulate_fix.py
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.argv = [str(HERE.parent / "fixed_prior_filter.py"), HERE.name]
    runpy.run_path(sys.argv[0], run_name="__main__")
