"""The numba kernels of the boosting learner (docs/math.md section 7, XGBoost's objective), by
concept:

* ``splits``: XGBoost's split rules (leaf weight, gain, float32 ties, categorical splits) and
  the bundles every grower takes (:class:`SplitParams`, :class:`NodeArrays`); its docstring
  writes the rules down;
* ``hist``: the histogram grower (:func:`grow_hist`, on :class:`BinnedData`);
* ``exact``: the exact greedy grower (:func:`grow_exact`, on :class:`SortedData`);
* ``gradients``: the objectives' gradients and hessians (:func:`grad_hess`);
* ``predict``: pruning (:func:`prune_gamma`) and the prediction of one grown tree.

Both growers write a tree into flat node arrays in the packed layout of
:mod:`pymc_trees.core.packed`, so boosting and BART forests share the prediction kernel.
"""

from pymc_trees.boosting.kernels.exact import SortedData, grow_exact
from pymc_trees.boosting.kernels.gradients import OBJECTIVE_CODES, grad_hess
from pymc_trees.boosting.kernels.hist import (BinnedData, HistWorkspace, binned_columns,
                                              grow_hist, hist_workspace)
from pymc_trees.boosting.kernels.predict import (leaf_index, predict_tree_binned,
                                                 predict_tree_raw, prune_gamma)
from pymc_trees.boosting.kernels.splits import (MAX_CATEGORIES, RT_EPS, NodeArrays, SplitParams,
                                                best_split_categorical, calc_weight, node_gain,
                                                tree_capacity)

__all__ = ["OBJECTIVE_CODES", "RT_EPS", "MAX_CATEGORIES", "binned_columns", "grad_hess",
           "grow_hist", "hist_workspace", "grow_exact", "predict_tree_binned",
           "predict_tree_raw", "prune_gamma", "tree_capacity", "calc_weight", "node_gain",
           "leaf_index", "best_split_categorical", "SplitParams", "NodeArrays", "BinnedData",
           "SortedData", "HistWorkspace"]
