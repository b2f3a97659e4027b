"""Checks of a ``BARTTree``'s data when the term is built: the shape of ``Y``, the scales of
the outputs of a term of shape (k, n), and the training rows of X (the refusals of
``docs/explanation/checked-inputs.md``).  Each error names the input and the fix."""

from __future__ import annotations

import numpy as np

from pymc_trees.bart.likelihood.calibration import leaf_calibration
from pymc_trees.core.features import MAX_LEVELS
from pymc_trees.core.tabular import TableSchema, warn_user

__all__ = ["check_Y", "check_output_scales", "check_training_rows", "OUTPUT_SCALE_RATIO"]


def check_Y(Y, n: int, link: str | None, outputs: int | None = None) -> None:
    """Y calibrates the prior: one response value per row of X, on the data scale (or, for a
    term of shape (k, n), one row of k responses per output)."""
    if Y is None:
        return
    shape = np.shape(Y)
    if shape == (n,) or (outputs is not None and shape == (outputs, n)):
        return
    also = (f" or one row per output, shape (k, n) = ({outputs}, {n})"
            if outputs is not None else "")
    raise ValueError(
        f"Y must hold one response value per row of X, shape (n,) = ({n},){also}; got shape "
        f"{shape}. Y only calibrates the prior of the term (its offset and leaf scale) and "
        "stays on the data scale (the observed y, not log(y)) whatever the link; for a "
        "term of shape (k, n) pass the one response all outputs are calibrated on, or each "
        "output's own response as the rows of a (k, n) array.")


# how far apart the outputs' own calibrations may be for one offset and leaf scale to serve
# them all (a ratio of leaf scales)
OUTPUT_SCALE_RATIO = 10.0


def check_output_scales(Y, k: float, m: int, link: str) -> None:
    """A term of shape (k, n) has one offset and one leaf scale for all its outputs: with
    ``Y`` of shape (k, n) they are calibrated on all of Y's values, which serves every output
    only when each output's own calibration is close to the others'.  Outputs whose own
    leaf scales differ by more than ``OUTPUT_SCALE_RATIO`` (or whose centres lie further
    apart than the pooled prior of the term reaches) are refused with the fix."""
    Y = np.asarray(Y, dtype=np.float64)
    own = [leaf_calibration(row, k=k, m=m, link=link) for row in Y]
    pooled_offset, pooled_sd = leaf_calibration(Y, k=k, m=m, link=link)
    sds = np.array([sd for _, sd in own])
    offsets = np.array([o for o, _ in own])
    reach = 2.0 * pooled_sd * np.sqrt(m)  # two prior sds of the pooled term's value
    far = np.abs(offsets - pooled_offset) > reach
    if sds.max() <= OUTPUT_SCALE_RATIO * sds.min() and not far.any():
        return
    desc = ", ".join(f"output {j}: centre {o:.4g}, leaf scale {s:.4g}"
                     for j, (o, s) in enumerate(own))
    raise ValueError(
        f"The outputs of Y are on different scales ({desc}): a term of shape (k, n) has one "
        f"offset and one leaf scale for all its outputs (here {pooled_offset:.4g} and "
        f"{pooled_sd:.4g} from all of Y), which cannot serve outputs whose own leaf scales "
        f"differ by more than {OUTPUT_SCALE_RATIO:g} times or whose centres lie outside "
        "the term's prior, so some would not be fitted. Put each output's centre and scale "
        "in the model instead, e.g. mu_j = c_j + s_j * f[j] with c_j, s_j the mean and sd "
        "of y_j, and Y[j] = (y_j - c_j) / s_j; or use one BARTTree term per output.")


def check_training_rows(X: np.ndarray, min_leaf: int, schema: TableSchema) -> None:
    """The training rows of X can grow trees: at least one row and column, a ``min_leaf``
    that allows a split, categorical columns within ``MAX_LEVELS``; warns when no column (or
    some column) can ever be split."""
    n, p = X.shape
    if n == 0 or p == 0:
        raise ValueError(f"X has shape {X.shape}: a BARTTree needs at least one row and one "
                         "column.")
    if min_leaf < 1 or 2 * min_leaf > n:
        raise ValueError(f"min_leaf = {min_leaf} leaves no possible split of the n = {n} "
                         f"training rows (a split needs min_leaf rows on each side, so "
                         f"1 <= min_leaf <= n / 2 = {n // 2}). Lower min_leaf.")
    for j in np.flatnonzero(schema.categorical):
        L = int(np.nanmax(X[:, j], initial=-1)) + 1 + int(np.isnan(X[:, j]).any())
        if L > MAX_LEVELS:
            raise ValueError(f"Categorical column {schema.names[j]!r} of X has {L} levels "
                             f"(missing values counted as one); a BARTTree splits categorical "
                             f"columns with at most {MAX_LEVELS}. Group rare levels, or make "
                             "it an ordered category (split like a number).")
    # a column with some missing values or categories can be split (missing against not,
    # one level against another) when there are rows enough; numbers need distinct values;
    # a column missing in every row never can
    gaps = np.isnan(X)
    empty = gaps.all(axis=0)
    plain = ~schema.categorical & ~gaps.any(axis=0)
    Xs = np.sort(X[:, plain], axis=0)
    splittable = ~empty
    splittable[plain] = Xs[min_leaf - 1] < Xs[n - min_leaf]
    many = empty.sum() > 1
    if empty.any():
        cols = ", ".join(f"{schema.names[j]!r} (index {j})" if schema.named else str(j)
                         for j in np.flatnonzero(empty))
        what = (f"Column{'s' if many else ''} {cols} of X {'are' if many else 'is'} missing "
                "(NaN, or the missing= value) in every row, so no tree can split on "
                f"{'them' if many else 'it'}")
    if not splittable.any():
        warn_user(f"No column of X can be split with at least min_leaf = {min_leaf} rows on "
                  "each side, so every tree stays a single leaf and the term is a constant "
                  "plus Gaussian noise in its leaves." + (f" {what}." if empty.any() else "")
                  + " Check X (constant or empty columns?) or lower min_leaf.")
    elif empty.any():
        warn_user(f"{what}. Drop {'them' if many else 'it'} from X.")
