"""``python -m pymc_trees compare DATA --target COL ...``: see :mod:`pymc_trees.comparison.cli`."""

import sys

from pymc_trees.comparison.cli import main

if __name__ == "__main__":
    sys.exit(main())
