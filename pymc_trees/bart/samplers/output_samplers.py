"""The forest samplers of a term with k outputs that each have their own trees
(``BARTTree(..., shape=(k, n))``, ``separate_trees=True``): k :class:`ForestSampler` s (or
linear-leaf ones) behind the interface the tree step uses of one, and their packed forests
one output after the other.  Plain Python; knows nothing of PyMC.
"""

from __future__ import annotations

import numpy as np

from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.core.packed import NODE_DTYPE, PackedForest

__all__ = ["OutputSamplers", "concat_packed"]


def concat_packed(parts: list[PackedForest]) -> PackedForest:
    """The packed forests of the k outputs of a term, one after the other: trees
    ``j*m .. (j+1)*m - 1`` are output j's (:func:`split_outputs` reads them back)."""
    starts, nodes, base = [], [], 0
    for fr in parts:
        starts.append(fr.start[:-1].astype(np.int64) + base)
        nd = fr.nodes.copy()
        nd["left"] = np.where(nd["left"] >= 0, nd["left"] + base, -1)
        nodes.append(nd)
        base += fr.nodes.size
    start = np.concatenate([*starts, [base]]).astype(np.int32)
    return PackedForest(start, np.concatenate(nodes) if nodes else np.empty(0, NODE_DTYPE),
                        parts[0].offset)


class OutputSamplers:
    """The forest samplers of a term with k outputs (shape (k, n)): k independent sums of m
    trees over the same X, with one offset and leaf scale, and one prior (or one per output:
    ``prior`` a list, whose leaf priors may differ, ``Normal(w[0], exp(w[1]))``'s output 1
    log-gamma leaves).  Offers what the tree step uses of a :class:`ForestSampler`, over all
    outputs."""

    def __init__(self, X: np.ndarray, prior: TreePrior | list[TreePrior], offset: float,
                 leaf_sd: float, k: int, categorical: np.ndarray | None = None, make=None):
        make = ForestSampler if make is None else make  # the class of each output's sampler
        priors = list(prior) if isinstance(prior, (list, tuple)) else [prior] * int(k)
        if len(priors) != int(k):
            raise ValueError(f"{len(priors)} priors for {k} outputs; pass one, or one each.")
        self.parts = [make(X, pr, offset, leaf_sd, categorical) for pr in priors]

    @property
    def n(self) -> int:
        return self.parts[0].n

    @property
    def offset(self) -> float:
        return self.parts[0].offset

    @property
    def leaf_sd(self) -> float:
        return self.parts[0].leaf_sd

    @leaf_sd.setter
    def leaf_sd(self, value: float) -> None:
        for p in self.parts:
            p.leaf_sd = value

    @property
    def forest(self) -> list:
        return [p.forest for p in self.parts]

    @forest.setter
    def forest(self, value: list) -> None:
        for p, f in zip(self.parts, value):
            p.forest = f

    def release_rows(self) -> None:
        for p in self.parts:
            p.release_rows()

    def forest_state(self) -> list:
        return [p.forest_state() for p in self.parts]

    def restore_forest(self, state: list) -> None:
        for p, s in zip(self.parts, state):
            p.restore_forest(s)

    def set_split_weights(self, weights: np.ndarray) -> None:
        for p in self.parts:
            p.set_split_weights(weights)

    def dart_update(self, rng: np.random.Generator) -> None:
        """DART inside the tree step, each output's split probabilities given its own trees."""
        for p in self.parts:
            p.dart_update(rng)

    @property
    def dart_probs(self) -> np.ndarray:
        """Shape (k, p)."""
        return np.stack([p.dart_probs for p in self.parts])

    @property
    def dart_alpha(self) -> np.ndarray:
        """Shape (k,)."""
        return np.array([p.dart_alpha for p in self.parts])

    def reset(self) -> None:
        for p in self.parts:
            p.reset()

    def draw_prior(self, rng: np.random.Generator) -> None:
        """Every output's forest from the prior (:meth:`ForestSampler.draw_prior`), output
        after output."""
        for p in self.parts:
            p.draw_prior(rng)

    def values(self) -> np.ndarray:
        """Shape (k, n)."""
        return np.stack([p.values() for p in self.parts])

    def summary(self) -> tuple[float, float]:
        s = np.array([p.summary() for p in self.parts])
        return float(s[:, 0].mean()), float(s[:, 1].mean())

    def leaf_stats(self) -> tuple[float, float]:
        s = np.array([p.leaf_stats() for p in self.parts])
        return float(s[:, 0].sum()), float(s[:, 1].sum())

    def pack(self, rng: np.random.Generator | None = None) -> PackedForest:
        rng = np.random.default_rng(0) if rng is None else rng
        return concat_packed([p.pack(rng) for p in self.parts])
