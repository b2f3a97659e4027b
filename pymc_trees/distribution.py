"""``BARTTree``: a PyMC random variable whose value is a sum of m regression trees at the rows
of X."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution
from pytensor.tensor.random.op import RandomVariable

from .calibration import leaf_calibration
from .sampler import ForestSampler, TreePrior

__all__ = ["BARTTree", "BARTTreeRV", "DEFAULT_SAMPLER", "SAMPLERS"]

SAMPLERS = ("cgm", "pg")
# The sampler pm.sample() assigns when BARTTree(sampler=None): the one with more ESS per second
# of f on Friedman #1 at n = 1,000 and 10,000 (benchmarks/mixing.py; figures in
# docs/mixing.md).
DEFAULT_SAMPLER = "cgm"


class BARTTreeRV(RandomVariable):
    """RandomVariable Op of a sum-of-trees term.

    Inputs are ``X`` (n, p), the constant ``offset`` and the leaf prior sd ``leaf_sd``; the tree
    hyperparameters are the Op's ``prior`` property.  A draw is a whole forest from the prior
    evaluated at the rows of X.
    """

    name = "BARTTree"
    signature = "(n,p),(),()->(n)"
    dtype = "floatX"
    _print_name = ("BARTTree", "\\operatorname{BARTTree}")
    __props__ = ("name", "signature", "dtype", "inplace", "prior", "sampler")

    def __init__(self, *args, prior: TreePrior = TreePrior(), sampler: str = DEFAULT_SAMPLER,
                 **kwargs):
        self.prior = prior
        self.sampler = sampler
        super().__init__(*args, **kwargs)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        shape = param_shapes[0] if param_shapes is not None else dist_params[0].shape
        return (shape[0],)

    def rng_fn(self, rng, X, offset, leaf_sd, size):
        if size is not None and tuple(np.atleast_1d(size)) not in ((), (np.shape(X)[0],)):
            raise NotImplementedError("BARTTree does not support batched draws (size).")
        fs = ForestSampler(np.asarray(X), self.prior, float(offset), float(leaf_sd))
        forest = fs.sample_prior(rng)
        out = np.empty(fs.n)
        from .core.forest import forest_values

        forest_values(forest.value, forest.leaf_of_row, float(offset), out)
        return out


class BARTTree(Distribution):
    r"""Sum of m regression trees evaluated at the rows of X.

    .. math::

        f(x_i) = \text{offset} + \sum_{j=1}^m g(x_i; T_j, M_j)

    with the tree prior of Chipman, George and McCulloch (2010): a node at depth ``d`` splits
    with probability ``alpha * (1 + d) ** -beta``, the split feature is drawn in proportion to
    ``split_prior`` among the features with an available cutpoint, the cutpoint uniformly among
    the available ones, and leaf values are independent ``Normal(0, leaf_sd**2)``.

    Parameters
    ----------
    name : str
        Name of the variable in the model.
    X : array_like or pm.Data of shape (n, p)
        Covariates; the value of the variable has shape (n,).
    m : int, default 200
        Number of trees.
    alpha, beta : float, default 0.95, 2.0
        Tree-depth prior.
    k : float, default 2.0
        With ``Y``, the prior of f(x) has sd ``(max Y - min Y) / (2 k)``.
    Y : array_like of shape (n,), optional
        Only calibrates the prior: ``offset = (max Y + min Y) / 2`` and
        ``leaf_sd = (max Y - min Y) / (2 k sqrt(m))``.  It is not the likelihood.
    leaf_sd : float, optional
        Prior sd of every leaf value; overrides the calibration from ``Y``.  With ``leaf_sd``
        and no ``Y`` the offset is 0 and every leaf is ``Normal(0, leaf_sd**2)``.
    numcut : int, default 100
        Maximum number of cutpoints per feature (midpoints between distinct values, thinned
        to evenly spaced empirical quantiles when there are more).
    min_leaf : int, default 5
        A cutpoint is available at a node when it leaves at least ``min_leaf`` training rows
        on each side; the same rule governs every sampler and prior draws.
    split_prior : array_like of shape (p,), optional
        Relative weights of the features as split variables (default: equal).
    sampler : {"cgm", "pg"}, optional
        The tree step ``pm.sample()`` assigns: :class:`~pymc_trees.CGMTreeStep` or
        :class:`~pymc_trees.PGTreeStep` (default: ``DEFAULT_SAMPLER``, chosen by the mixing
        benchmark).  Either can also be passed explicitly with ``pm.sample(step=...)``.
    **kwargs
        Passed to :class:`pymc.Distribution` (for example ``dims``).

    Notes
    -----
    ``pm.sample()`` assigns the tree step chosen by ``sampler`` to this variable.  The forests
    of every draw are kept in ``idata.sample_stats`` (``<name>_forest``) and
    :func:`pymc_trees.predict` evaluates them at new rows.
    """

    rv_type = BARTTreeRV

    def __new__(cls, name: str, X, m: int = 200, alpha: float = 0.95, beta: float = 2.0,
                k: float = 2.0, Y=None, leaf_sd: float | None = None, numcut: int = 100,
                min_leaf: int = 5, split_prior=None, sampler: str | None = None, **kwargs):
        return super().__new__(cls, name, X, m=m, alpha=alpha, beta=beta, k=k, Y=Y,
                               leaf_sd=leaf_sd, numcut=numcut, min_leaf=min_leaf,
                               split_prior=split_prior, sampler=sampler, **kwargs)

    @classmethod
    def dist(cls, X, m: int = 200, alpha: float = 0.95, beta: float = 2.0, k: float = 2.0,
             Y=None, leaf_sd: float | None = None, numcut: int = 100, min_leaf: int = 5,
             split_prior=None, sampler: str | None = None, **kwargs):
        X = pt.as_tensor_variable(X)
        if X.ndim != 2:
            raise ValueError(f"X must be a matrix of shape (n, p); got {X.ndim} dimension(s). "
                             "Reshape a single feature with X[:, None].")
        offset, sd = leaf_calibration(Y, leaf_sd=leaf_sd, k=k, m=m)
        sp = None if split_prior is None else tuple(float(w) for w in np.ravel(split_prior))
        prior = TreePrior(m=int(m), alpha=float(alpha), beta=float(beta), numcut=int(numcut),
                          min_leaf=int(min_leaf), split_prior=sp)
        sampler = DEFAULT_SAMPLER if sampler is None else sampler
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS} (or None for the default "
                             f"{DEFAULT_SAMPLER!r}); got {sampler!r}.")
        return super().dist([X, offset, sd, prior, sampler], **kwargs)

    @classmethod
    def rv_op(cls, X, offset, leaf_sd, prior, sampler=DEFAULT_SAMPLER, *, size=None, rng=None):
        op = BARTTreeRV(prior=prior, sampler=sampler)
        if rng is None:
            rng = pt.random.shared_rng(seed=None)
        return op(X, float(offset), float(leaf_sd), size=size, rng=rng,
                  return_next_rng=True)[1]

    @staticmethod
    def support_point(rv, *args):
        # called as (rv, size, *params) or (rv, *params)
        X, offset, _ = args[-3:]
        return pt.zeros((X.shape[0],)) + offset

    @staticmethod
    def logp(value, X, offset, leaf_sd):
        # The tree prior is a distribution over forests, not a density on f; the tree steps
        # sample it exactly and every other step sees f as fixed.  Contributing 0 keeps the
        # model log density of all other variables correct.
        return pt.zeros_like(value)
