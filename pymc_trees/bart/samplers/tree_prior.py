"""The sum-of-trees prior's hyperparameters (:class:`TreePrior`) and the move probabilities of
the general step (:func:`move_cumulative_probs`): what a :class:`~pymc_trees.bart.samplers.sampler.
ForestSampler` samples from, kept apart from how it samples (``docs/explanation/prior.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_trees.bart.samplers.general_loop import MOVES

__all__ = ["TreePrior", "move_cumulative_probs", "MOVES"]


@dataclass(frozen=True)
class TreePrior:
    """Hyperparameters of the sum-of-trees prior (hashable, so it can sit on a PyTensor Op).

    Parameters
    ----------
    m : int
        Number of trees.
    alpha, beta : float
        A node at depth d splits with probability ``alpha * (1 + d) ** -beta``.
    numcut : int
        Maximum number of cutpoints per feature.
    min_leaf : int
        A cutpoint is available at a node when it leaves at least ``min_leaf`` training rows
        on each side.
    split_prior : tuple of float or None
        Relative weights of the features (None: all equal).
    missing_split : bool
        Whether a numeric column with missing values also offers the "is missing" splits
        (missing rows against all others; :mod:`pymc_trees.core.features`).
    dart : bool
        Whether the split probabilities of the columns are learned inside the tree step
        (``BARTTree(..., split_prior="dart")``, Linero 2018): ``s ~ Dirichlet(alpha / p, ...,
        alpha / p)`` with ``alpha / (alpha + p) ~ Beta(0.5, 1)``, both drawn from their
        conditionals after every sweep (:meth:`ForestSampler.dart_update`).  Needs
        ``split_prior`` None.
    learned_scale : bool
        Whether the leaf variance is learned inside the tree step (``BARTTree(...,
        leaf_sd="learned")``): ``leaf_sd**2 ~ InverseGamma(LEARNED_SCALE_ALPHA,
        (LEARNED_SCALE_ALPHA - 1) * sd0**2)``, prior mean ``sd0**2`` where ``sd0`` is the
        term's calibrated leaf sd (its ``leaf_sd`` input), drawn from its conjugate
        conditional after every sweep (:func:`pymc_trees.bart.samplers.leaf_priors.learned_scale_draw`).
    response : {"constant", "linear", "mix"}
        What a leaf holds: a constant, or a straight line in the column of the split above
        it (:mod:`pymc_trees.bart.kernels.linear`;
        :class:`~pymc_trees.bart.samplers.linear_sampler.LinearForestSampler`); ``"mix"``: each tree
        is one or the other, with prior 1/2.
    separate_trees : bool
        For a term of k outputs: k independent forests (True), or one forest whose leaves
        hold k values (False; :class:`~pymc_trees.bart.samplers.shared_sampler.SharedOutputSampler`).
    response_auto : bool
        Whether ``response="linear"`` is the default's choice rather than the user's
        (``BARTTree(response=None)``): the tree step then samples constant leaves where linear
        ones are not the measured default (:meth:`pymc_trees.bart.term.plan.TermPlan.resolve`).
    leaf_prior : {"normal", "log-gamma", "log-inverse-gamma", "auto"}
        The leaf values' prior (:mod:`pymc_trees.bart.samplers.gamma_sampler`; checked by the plan).
    leaf_kappa : float
        The exponent of log-gamma leaves, ``exp(kappa mu) ~ Gamma``, when the likelihood
        set it (+-1 or +-2, ``"auto"`` settled); 0: +-1 by ``leaf_prior``.

    Raises
    ------
    ValueError
        A hyperparameter outside its range (``m`` not a positive integer, ``alpha`` outside
        (0, 1), ``beta`` below 0, ``min_leaf`` below 1, an unknown ``response``), or
        ``split_prior`` weights that are negative, not finite, all zero or given with
        ``dart``.  :meth:`split_weights` raises when their number is not X's columns.

    Examples
    --------
    :class:`~pymc_trees.BARTTree` builds one from its arguments; the samplers take it
    directly.

    >>> from pymc_trees import TreePrior
    >>> prior = TreePrior(m=50, alpha=0.95, beta=2.0, split_prior=(1.0, 1.0, 0.5))
    >>> [round(prior.alpha * (1 + d) ** -prior.beta, 3) for d in range(3)]
    [0.95, 0.237, 0.106]
    >>> prior.split_weights(3)
    array([1. , 1. , 0.5])
    >>> TreePrior(alpha=1.5)
    Traceback (most recent call last):
    ...
    ValueError: alpha must lie in (0, 1); got 1.5.
    """

    m: int = 200
    alpha: float = 0.95
    beta: float = 2.0
    numcut: int = 100
    min_leaf: int = 5
    split_prior: tuple[float, ...] | None = None
    missing_split: bool = True
    learned_scale: bool = False
    dart: bool = False
    response: str = "constant"
    separate_trees: bool = True
    response_auto: bool = False
    leaf_prior: str = "normal"
    leaf_kappa: float = 0.0

    def __post_init__(self):
        if self.response not in ("constant", "linear", "mix"):
            raise ValueError(f"response must be 'constant', 'linear' or 'mix'; got "
                             f"{self.response!r}.")
        if self.response_auto and self.response != "linear":
            raise ValueError(f"response_auto marks the default's linear leaves; got "
                             f"response={self.response!r}.")
        if int(self.m) != self.m or self.m < 1:
            raise ValueError(f"m must be a positive integer number of trees; got {self.m!r}.")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1); got {self.alpha!r}.")
        if not self.beta >= 0.0:
            raise ValueError(f"beta must be >= 0; got {self.beta!r}.")
        if int(self.min_leaf) != self.min_leaf or self.min_leaf < 1:
            raise ValueError(f"min_leaf must be an integer >= 1; got {self.min_leaf!r}.")
        if self.split_prior is not None:
            sp = np.asarray(self.split_prior, dtype=float)
            if sp.ndim != 1 or np.any(sp < 0) or not np.any(sp > 0) or not np.all(np.isfinite(sp)):
                raise ValueError("split_prior must be a 1-D sequence of non-negative finite "
                                 "weights, one per column of X, with at least one positive.")
            if self.dart:
                raise ValueError("dart=True learns the split probabilities from a symmetric "
                                 "prior; it takes no split_prior weights.")

    def split_weights(self, p: int) -> np.ndarray:
        """The relative weights of X's ``p`` columns, shape (p,) (all 1 without
        ``split_prior``)."""
        if self.split_prior is None:
            return np.ones(p)
        sp = np.asarray(self.split_prior, dtype=float)
        if sp.shape != (p,):
            raise ValueError(f"split_prior has {sp.size} weights but X has {p} columns.")
        return sp


def move_cumulative_probs(move_probs: dict[str, float]) -> np.ndarray:
    """The cumulative probabilities of the general step's moves in the order of ``MOVES``
    (grow, prune, change, swap), shape (4,), from a dict of some of them (the others 0);
    refuses unknown moves, a sum other than 1 and a zero grow or prune probability."""
    unknown = set(move_probs) - set(MOVES)
    if unknown:
        raise ValueError(f"move_probs has unknown moves {sorted(unknown)}; use {MOVES}.")
    probs = np.array([float(move_probs.get(k, 0.0)) for k in MOVES])
    if np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
        raise ValueError(f"move_probs must be non-negative and sum to 1; got {move_probs}.")
    if probs[0] <= 0 or probs[1] <= 0:
        raise ValueError("move_probs needs positive 'grow' and 'prune' probabilities; without "
                         "them the tree sizes cannot change.")
    cp = np.cumsum(probs)
    cp[-1] = 1.0
    return cp
