"""The split probabilities a forest sampler holds: the columns' relative weights, the
features' weights and every node's available weight that follow from them, and DART's
draws of them inside the tree step (Linero 2018; ``docs/explanation/leaf-scale-and-split-prior.md``).
Mixed into :class:`~pymc_trees.bart.samplers.sampler.ForestSampler`, whose forest and
layout it reads."""

from __future__ import annotations

import numpy as np

from pymc_trees.bart.kernels.forest import dart_gibbs_update, reweight

__all__ = ["SplitWeights", "TINY"]

# the smallest normal float: a Dirichlet draw can underflow to 0, and the masks assume every
# feature may be chosen
TINY = np.finfo(np.float64).tiny


class SplitWeights:
    """Setting and learning the split weights of a forest sampler."""

    def set_split_weights(self, weights: np.ndarray) -> None:
        """New relative split weights of the columns of X, shape (p,) (DART).  Weights below
        the smallest normal float (underflowed Dirichlet draws) are raised to it.  Every
        node's available weight is recomputed from its availability mask."""
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self._shape[1],) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"split weights must be {self._shape[1]} non-negative finite "
                             f"numbers; got {weights!r}.")
        self._apply_weights(w)

    def _apply_weights(self, w: np.ndarray) -> None:
        """:meth:`set_split_weights` for weights known to be finite and non-negative, of
        shape (p,)."""
        # a Dirichlet draw can underflow to 0; the masks assume every feature may be chosen
        w = np.maximum(w, TINY)
        if self._store_weights(w):
            f = self.forest
            reweight(f.var, f.n_nodes, f.amask, self.split_prior, f.wavail)

    def _store_weights(self, column_weights: np.ndarray) -> bool:
        """Keep the columns' split weights and the features' (``split_prior``) and the
        root's available weight; returns whether the features' weights changed (then every
        node's available weight must be recomputed)."""
        self._column_weights = column_weights
        w = self.layout.feature_weights(column_weights)
        if np.array_equal(w, self.split_prior):
            return False
        self.split_prior = w
        self._root_wavail = float(w[self._root_avail].sum())
        return True

    def dart_update(self, rng: np.random.Generator) -> None:
        """DART inside the tree step (``prior.dart``): the split probabilities of the columns
        from their conditional given the forest's splits
        (:func:`~pymc_trees.bart.kernels.forest.split_prior_gibbs`, exact with the
        availability of every node), then the log concentration ``x = log(alpha / p)`` from
        its conditional given them under Linero's prior (a slice-sampling transition,
        :func:`~pymc_trees.bart.kernels.forest.dart_concentration_draw`).  The sampler then
        splits with weights ``s / max(s)``."""
        f, lay = self.forest, self.layout
        a = np.full(self._shape[1], np.exp(self.dart_x))
        log_s, x = dart_gibbs_update(rng, f.var, f.n_nodes, f.amask, a, self.dart_log_s,
                                     lay.fmap, lay.share, self.dart_x)
        self.dart_log_s, self.dart_x = log_s, float(x)
        # exp of log s minus its maximum: finite, in (0, 1], what set_split_weights checks
        self._apply_weights(np.exp(log_s - log_s.max()))

    @property
    def dart_probs(self) -> np.ndarray:
        """The split probabilities of the columns learned inside the tree step, shape (p,)."""
        s = np.exp(self.dart_log_s - self.dart_log_s.max())
        return s / s.sum()

    @property
    def dart_alpha(self) -> float:
        """Linero's alpha, the Dirichlet concentration summed over the p columns."""
        return float(self._shape[1] * np.exp(self.dart_x))
