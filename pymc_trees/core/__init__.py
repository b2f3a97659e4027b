"""What both learners share, numpy and numba only (importing it loads no PyMC):

* ``binning``: cutpoints at weighted empirical quantiles and binned data;
* ``packed``: the packed-forest format (``NODE_DTYPE``, :class:`PackedForest`) that BART's
  draws and the boosting learner's trees are stored in, and its prediction kernels;
* ``tabular``: :class:`TableSchema`, column kinds, category levels and missing values of a
  table, and their encoding;
* ``features``: the sampler's view of the columns (cutpoint tables, level codes).
"""

from pymc_trees.core.packed import NODE_DTYPE, PackedForest
from pymc_trees.core.tabular import TableSchema

__all__ = ["NODE_DTYPE", "PackedForest", "TableSchema"]
