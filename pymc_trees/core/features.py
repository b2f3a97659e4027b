"""How the columns of X become the features the tree kernels split on.

The kernels know binned features and two kinds of rule (:mod:`pymc_trees.bart.kernels.nodes`): a
cut
index (a row goes left when its bin is at most the cut) and a set of levels.  A column becomes:

* a numeric (or ordinal) column without missing values: one feature, its bins against the
  cutpoints (midpoints between distinct values, thinned to ``numcut``);
* a numeric column with missing values: two features, one with the missing rows in a bin below
  every value and one with them in a bin above, each holding half of the column's split weight.
  A cut of the first sends the missing rows left, a cut of the second sends them right, so
  every rule on the column also says where missing values go, and the prior puts equal mass on
  the two directions.  The lowest cut of the first and the highest of the second separate the
  missing rows from all the others: BART with missingness incorporated in attributes' "is
  missing" split (Kapelner and Bleich 2015).  Without it (``missing_split=False``) the
  missing rows share the bin of the lowest (first feature) or highest (second) values, so
  every rule sends them with one side of a cut between values;
* a categorical column: one feature whose bins are the level codes, with the missing rows (if
  any) as one more level; a rule is a set of the levels present at the node.

Prediction needs to know, for every rule, the threshold on the raw scale and where a missing
value goes (``thr_tab``, ``ml_tab``), the column of every feature (``fmap``) and the levels
of categorical ones (``nlev``, ``nan_bin``): :func:`pymc_trees.core.packed.pack_forest`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_trees.core.binning import make_cutpoints

__all__ = ["FeatureLayout", "build_layout", "MAX_LEVELS"]

# Bins of a categorical feature (levels, plus one for missing values) are bits of a 32-bit
# signed rule, so at most 31 of them.
MAX_BINS = 31
MAX_LEVELS = MAX_BINS


@dataclass
class FeatureLayout:
    """The sampler's features and how they map back to the columns of X.

    Attributes
    ----------
    Xb : ndarray of shape (n, q), dtype uint8 (uint16 when a feature has more than 255
        rules)
        Bin of every row in each of the q features.
    ncuts : ndarray of shape (q,), dtype int32
        Rules' cut indices run ``0 .. ncuts - 1`` (numeric); bins run ``0 .. ncuts``.
    iscat : ndarray of shape (q,), dtype bool
        Categorical features (rules are level sets).
    fmap : ndarray of shape (q,), dtype int32
        Column of X of every feature.
    share : ndarray of shape (q,)
        Fraction of the column's split weight the feature carries (1/2 for the two features
        of a numeric column with missing values, else 1).
    thr_tab : ndarray of shape (q, C)
        Threshold on the raw scale of numeric rule c (``-inf`` / ``+inf`` for "is missing").
    ml_tab : ndarray of shape (q, C), dtype int8
        Where a NaN goes under numeric rule c: 1 left, 0 right, -1 not identified by the
        training rows (the column had no missing values): decided by the prior's coin.
    nlev : ndarray of shape (q,), dtype int32
        Number of levels of a categorical feature (0 for numeric ones).
    nan_bin : ndarray of shape (q,), dtype int32
        Bin of the missing rows of a categorical feature (-1 when it has none).
    has_missing : ndarray of shape (p,), dtype bool
        Columns of X with missing values in the training rows.
    """

    Xb: np.ndarray
    ncuts: np.ndarray
    iscat: np.ndarray
    fmap: np.ndarray
    share: np.ndarray
    thr_tab: np.ndarray
    ml_tab: np.ndarray
    nlev: np.ndarray
    nan_bin: np.ndarray
    has_missing: np.ndarray

    @property
    def q(self) -> int:
        return self.Xb.shape[1]

    @property
    def max_cuts(self) -> int:
        return int(self.ncuts.max(initial=0))

    @property
    def virtual(self) -> bool:
        """Whether features and columns differ in number (a numeric column had missing
        values)."""
        return self.q != self.has_missing.size

    def feature_weights(self, column_weights: np.ndarray) -> np.ndarray:
        """Split weights of the features from those of the columns, shape (q,)."""
        return np.ascontiguousarray(column_weights[self.fmap] * self.share)


def _bin_matrix(cols: list, ncuts: list, n: int) -> np.ndarray:
    """The (n, q) bin indices in the narrowest unsigned type: uint8 when every bin index
    (0 .. ncuts[v]) fits, as with the default 100 cutpoints; else uint16."""
    dt = np.uint8 if not ncuts or max(ncuts) <= np.iinfo(np.uint8).max else np.uint16
    out = np.empty((n, len(cols)), dt)
    for v, b in enumerate(cols):
        out[:, v] = b
    return out


def build_layout(X: np.ndarray, categorical: np.ndarray | None, numcut: int,
                 missing_split: bool = True) -> FeatureLayout:
    """The features of training rows X.

    Parameters
    ----------
    X : ndarray of shape (n, p), dtype float64
        Training rows; NaN marks a missing value; categorical columns hold level codes
        ``0 .. L-1`` (as :class:`pymc_trees.core.tabular.TableSchema` encodes them).
    categorical : ndarray of shape (p,), dtype bool, or None
        Categorical columns (None: none).
    numcut : int
        Maximum number of cutpoints of a numeric column.
    missing_split : bool, default True
        Whether a numeric column with missing values offers the "is missing" splits.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    cat = np.zeros(p, bool) if categorical is None else np.asarray(categorical, bool)
    if cat.shape != (p,):
        raise ValueError(f"categorical must mark each of the {p} columns of X; got shape "
                         f"{cat.shape}.")
    if np.any(np.isinf(X)):
        bad = np.unique(np.nonzero(np.isinf(X))[1])
        raise ValueError(f"X has infinite values in column(s) {bad.tolist()}; replace them "
                         "(NaN marks a missing value).")
    missing = np.isnan(X).any(axis=0)
    num_cols = np.flatnonzero(~cat)
    cuts, ncut = (make_cutpoints(X[:, num_cols], numcut, allow_nan=True) if num_cols.size
                  else (np.empty((0, 1)), np.empty(0, np.int32)))
    cols, ncuts, iscat, fmap, share, thr, ml, nlev, nanb = ([] for _ in range(9))

    def add(b, nc, is_cat, j, sh, th, m, nl, nb):
        cols.append(b.astype(np.uint16))
        ncuts.append(nc)
        iscat.append(is_cat)
        fmap.append(j)
        share.append(sh)
        thr.append(th)
        ml.append(m)
        nlev.append(nl)
        nanb.append(nb)

    for j in range(p):
        x = X[:, j]
        nan = np.isnan(x)
        if cat[j]:
            codes = x[~nan]
            if codes.size and (np.any(codes < 0) or np.any(codes != np.round(codes))):
                raise ValueError(f"Categorical column {j} of X must hold level codes 0, 1, ... "
                                 "(or NaN); encode it with pymc_trees.core.tabular.TableSchema.")
            L = int(codes.max()) + 1 if codes.size else 1
            nb_ = L + int(missing[j])
            if nb_ > MAX_BINS:
                raise ValueError(
                    f"Categorical column {j} of X has {L} levels"
                    + (" plus missing values" if missing[j] else "")
                    + f"; a BARTTree splits categorical columns with at most {MAX_BINS} "
                    "(levels and missing counted together). Group rare levels, or pass the "
                    "column as ordered codes (an ordered category, split like a number).")
            b = np.where(nan, L, np.nan_to_num(x)).astype(np.int64)
            add(b, nb_ - 1, True, j, 1.0, np.zeros(0), np.zeros(0, np.int8), L,
                L if missing[j] else -1)
            continue
        c = cuts[int(np.searchsorted(num_cols, j))]
        nc = int(ncut[int(np.searchsorted(num_cols, j))])
        c = c[:nc]
        b = np.searchsorted(c, np.where(nan, 0.0, x), side="left")
        if not missing[j]:
            add(b, nc, False, j, 1.0, c, np.full(nc, -1, np.int8), 0, -1)
            continue
        if not missing_split:
            # missing rows with the lowest values (sent left) or with the highest (right)
            add(np.where(nan, 0, b), nc, False, j, 0.5, c, np.ones(nc, np.int8), 0, -1)
            add(np.where(nan, nc, b), nc, False, j, 0.5, c, np.zeros(nc, np.int8), 0, -1)
            continue
        # missing rows below every value: rule 0 is "missing left, every value right"
        add(np.where(nan, 0, b + 1), nc + 1, False, j, 0.5, np.concatenate(([-np.inf], c)),
            np.ones(nc + 1, np.int8), 0, -1)
        # missing rows above every value: rule nc is "every value left, missing right"
        add(np.where(nan, nc + 1, b), nc + 1, False, j, 0.5, np.concatenate((c, [np.inf])),
            np.zeros(nc + 1, np.int8), 0, -1)
    q = len(cols)
    C = max(1, max(len(t) for t in thr))
    thr_tab = np.full((q, C), np.inf)
    ml_tab = np.full((q, C), -1, np.int8)
    for v in range(q):
        thr_tab[v, :len(thr[v])] = thr[v]
        ml_tab[v, :len(ml[v])] = ml[v]
    return FeatureLayout(
        Xb=_bin_matrix(cols, ncuts, n),
        ncuts=np.asarray(ncuts, np.int32), iscat=np.asarray(iscat, bool),
        fmap=np.asarray(fmap, np.int32), share=np.asarray(share, float), thr_tab=thr_tab,
        ml_tab=ml_tab, nlev=np.asarray(nlev, np.int32), nan_bin=np.asarray(nanb, np.int32),
        has_missing=missing)
