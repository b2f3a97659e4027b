"""Variable importance of a tree term or a boosting model per posterior draw: the share of
internal nodes that split on each column (``kind="inclusion"``), or the drop in explained
variance when a column is permuted (``kind="permutation"``).  Formulas: ``docs/interpret.md``."""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from pymc_trees.interpret.sources import (blocks_per_call, interpretation_source,
                                          predict_blocks, require_rows, split_forests)

__all__ = ["variable_importance"]


def variable_importance(source, X=None, var_name: str = "f", kind: str = "inclusion",
                        n_repeats: int = 5, rng: np.random.Generator | int | None = None,
                        max_draws: int | None = 200) -> xr.DataArray:
    """Importance of every column of X, per posterior draw.

    Parameters
    ----------
    source : DataTree or fitted boosting estimator
        The result of ``pm.sample`` for a model with a ``BARTTree`` term, or a fitted
        :class:`~pymc_trees.boosting.BoostedTreesRegressor` /
        :class:`~pymc_trees.boosting.BoostedTreesClassifier`.
    X : array_like or DataFrame of shape (n, p), optional
        Rows at which the permutation measure is computed (the training rows, or a sample of
        them), with the training columns (a DataFrame is matched by name; when the
        training X had no names, as with ``pm.Data("X", df)``, its columns are read in the
        training order and its names label the result).  Needed for
        ``kind="permutation"``; ``kind="inclusion"`` reads only its column names.
    var_name : str, default "f"
        The ``BARTTree`` variable (ignored for a boosting estimator).
    kind : {"inclusion", "permutation"}, default "inclusion"
        ``"inclusion"``: per draw, the number of internal nodes splitting on column j over
        the number of internal nodes of the draw's forest (NaN for a forest of stumps), so
        that the shares of a draw sum to 1.  ``"permutation"``: per draw, with ``f`` the
        draw's values at the rows of X and ``f_j`` its values with column j permuted among
        the rows, ``mean((f - f_j) ** 2) / var(f)`` (the drop of the explained variance
        ``R^2`` of ``f_j`` as a prediction of ``f`` from 1), averaged over ``n_repeats``
        permutations; 0 when ``f_j == f`` exactly, NaN when ``var(f) = 0`` and permuting
        changes ``f``.
    n_repeats : int, default 5
        Permutations per column (``kind="permutation"``).
    rng : numpy.random.Generator, int or None
        Source of the permutations: a generator (advanced) or a seed.  The permutations are
        drawn repeat by repeat, column by column (``rng.permutation(n)`` each) and shared by
        all draws.  None takes fresh entropy from the operating system (not reproducible).
    max_draws : int or None, default 200
        At most this many posterior draws are used: ``max_draws // chains`` per chain, evenly
        spaced (None: every draw).  Ignored for a boosting estimator.

    Returns
    -------
    xarray.DataArray
        Dims ``(chain, draw, column)`` for a BART term, ``(chain, draw, output, column)`` for a
        term of shape (k, n); ``(column,)`` or ``(output, column)`` for a boosting estimator
        (a multi-class classifier: one output per class; quantile regression with several
        quantiles: one per quantile).  Coordinate ``column``: the column names of the
        training X (``"0", "1", ...`` when it had none).  Attributes ``kind``, ``var_name``,
        ``source`` ("bart" or "boosting") and, for permutations, ``n_repeats``.

    Raises
    ------
    ValueError
        For an unknown ``kind``, ``kind="permutation"`` without X, ``n_repeats < 1``, an X
        without the training columns, or a bad ``max_draws``.
    TypeError
        When ``source`` is neither a DataTree nor a fitted boosting estimator.

    Examples
    --------
    >>> import arviz as az
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(200, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> imp = pmt.variable_importance(idata, X, kind="permutation", rng=1)
    >>> bands = az.hdi(imp, dim=["chain", "draw"])       # an interval per column
    """
    if kind not in ("inclusion", "permutation"):
        raise ValueError(f"kind must be 'inclusion' or 'permutation'; got {kind!r}.")
    src = interpretation_source(source, var_name, max_draws)
    attrs = {"kind": kind, "var_name": src.var_name, "source": src.kind}
    if X is not None:
        require_rows(X)
        A = src.encode(X)  # checks X; a DataFrame names positional training columns
    if kind == "inclusion":
        p = src.schema().p
        counts = src.trees.counts(p).reshape(src.n_samples, src.n_outputs, p).astype(float)
        total = counts.sum(axis=-1, keepdims=True)
        share = np.divide(counts, total, out=np.full_like(counts, np.nan), where=total > 0)
        names = np.asarray(src.schema().names)
        return src.wrap(share, ("column",), {"column": names}, "inclusion", attrs)
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, numbers.Integral) \
            or n_repeats < 1:
        raise ValueError(f"n_repeats must be a positive integer; got {n_repeats!r}.")
    require_rows(X)  # X is needed here (encoded above)
    gen = np.random.default_rng(rng)
    n, p = A.shape
    f = src.evaluate(A)  # (S, K, n)
    S, K = f.shape[:2]
    num = np.zeros((S, K, p))
    # permutations drawn repeat by repeat, column by column, shared by all draws
    perms = [[gen.permutation(n) for _ in range(p)] for _ in range(n_repeats)]
    for j in range(p):
        reads, const = split_forests(src, A, [j])
        if not reads.any():  # no split reads column j: f_j == f exactly
            continue
        base = predict_blocks(src, reads, const, A, 1)[:, :, 0]  # f, summed as f_j is
        per = blocks_per_call(n_repeats, n, src.trees.starts.shape[0] + p)
        for b in range(0, n_repeats, per):
            g = min(per, n_repeats - b)
            big = np.tile(A, (g, 1))
            big[:, j] = np.concatenate([A[perms[r][j], j] for r in range(b, b + g)])
            fj = predict_blocks(src, reads, const, big, g)  # (S, K, g, n)
            num[:, :, j] += np.mean((fj - base[:, :, None, :]) ** 2, axis=-1).sum(axis=-1)
    num /= n_repeats
    var = f.var(axis=-1)[..., None]  # (S, K, 1)
    imp = np.divide(num, var, out=np.where(num == 0, 0.0, np.nan), where=var > 0)
    attrs["n_repeats"] = int(n_repeats)
    names = np.asarray(src.schema().names)
    return src.wrap(imp, ("column",), {"column": names}, "permutation", attrs)
