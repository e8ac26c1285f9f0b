"""This cell's final read beside the competition's tables: ``../cell_reading.py cell_spell_qwen3``
(evaluation curves, per-level differences, Spearman of the differences with the mechanism,
allocation time; the results pages run every ``tabulate*.py`` as is).

    python results/attributed/cell_spell_qwen3/tabulate_reading.py
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.argv = [str(HERE.parent / "cell_reading.py"), HERE.name]
    runpy.run_path(sys.argv[0], run_name="__main__")
