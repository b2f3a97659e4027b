"""Orchestration of a term whose k outputs share their trees (``BARTTree(..., shape=(k, n),
separate_trees=False)``): one forest of m trees whose every leaf holds a vector of k values.

This is the multi-output form of pymc-bart (its default for ``shape=(k, n)``).  The prior is
the tree prior of one forest, with the k values of each leaf independent
``Normal(0, leaf_sd**2)``; output j of the term is ``offset + sum_t`` of the j-th values of
the leaves the row falls in.  The trees are sampled by the general tree step (docs/math.md
section 9) over the joint likelihood of the k outputs at each row
(:func:`pymc_trees.bart.kernels.general.general_sweep` with J = k): a structural move proposes
the new leaves' k values from the product of each output's Newton proposal and is accepted
with the exact joint log-likelihood, so the step is exact for any likelihood.  Where the
likelihood is Gaussian in every output given latent variables, the same moves run on the
pseudo-data (:meth:`SharedOutputSampler.conjugate_sweep`), where the proposals are exact
conditionals: the leaf vectors are then integrated out jointly.

The forest's ``value`` array is output 0's row of :attr:`SharedOutputSampler.leaf_values`
(shape (k, m, K)), so that everything that reads one forest (its structure, DART, summaries)
reads this one.  A stored draw is k packed forests with the same trees and routing coins,
output after output (:func:`~pymc_trees.bart.samplers.output_samplers.concat_packed`), the layout of a term
with separate trees, so prediction, saving and interpretation read it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_trees.bart.kernels.forest import LEAF, Forest, forest_values
from pymc_trees.bart.kernels.row_calls import gaussian_pre, gaussian_rows
from pymc_trees.bart.samplers.output_samplers import concat_packed
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.core.packed import PackedForest

__all__ = ["SharedOutputSampler", "SharedForestState"]


@dataclass
class SharedForestState:
    """A step's saved state of a :class:`SharedOutputSampler`: the trees without the rows'
    leaves and every output's leaf values, shape (k, m, K)."""

    forest: Forest
    values: np.ndarray


@dataclass
class SharedOutputSampler(ForestSampler):
    """A :class:`ForestSampler` of ``outputs`` = k outputs that share one forest: every leaf
    holds k values.  Sampled by :meth:`general_sweep` and, against Gaussian pseudo-data, by
    :meth:`conjugate_sweep`; the one-output conjugate, Particle Gibbs and warm-start sweeps
    and the level shift of :class:`ForestSampler` update one value per leaf, and the term's
    plan (:mod:`pymc_trees.bart.term.plan`) never picks them for it (a Particle Gibbs step is
    refused when it is built).

    Parameters
    ----------
    outputs : int
        The number k >= 2 of outputs; the other parameters are :class:`ForestSampler`'s.
    """

    outputs: int = 2

    def __post_init__(self):
        if int(self.outputs) != self.outputs or self.outputs < 2:
            raise ValueError(f"outputs must be an integer >= 2; got {self.outputs!r}.")
        self.outputs = int(self.outputs)
        super().__post_init__()

    def reset(self) -> None:
        super().reset()
        f = self.forest
        self._V = np.zeros((self.outputs, f.m, f.capacity))
        f.value = self._V[0]

    def leaf_values(self) -> np.ndarray:
        """Every output's leaf values, shape (k, m, K); row 0 is ``forest.value``."""
        f = self.forest
        if self._V.shape[2] != f.capacity or f.value.base is not self._V:
            # the forest's arrays grew (Forest.ensure_capacity copied output 0's values)
            V = np.zeros((self.outputs, f.m, f.capacity))
            K = min(self._V.shape[2], f.capacity)
            V[:, :, :K] = self._V[:, :, :K]
            V[0] = f.value
            self._V = V
            f.value = V[0]
        return self._V

    def values(self) -> np.ndarray:
        """The term at the training rows, shape (k, n), each output summed tree by tree from
        the offset."""
        f = self.ensure_rows()
        V = self.leaf_values()
        out = np.empty((self.outputs, self.n))
        for j in range(self.outputs):
            forest_values(V[j], f.leaf_of_row, float(self.offset), out[j])
        return out

    def _forest_key(self) -> tuple:
        return (*super()._forest_key(), self.leaf_values().tobytes())

    def forest_state(self) -> SharedForestState:
        return SharedForestState(self.forest.compact(), self.leaf_values().copy())

    def restore_forest(self, state) -> None:
        """Take the trees and leaf values of a saved state (:meth:`forest_state`)."""
        if not isinstance(state, SharedForestState):
            raise TypeError(f"A term whose outputs share their trees restores a "
                            f"SharedForestState; got {type(state).__name__}.")
        super().restore_forest(state.forest)
        self._V = state.values.copy()
        self.forest.value = self._V[0]

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.forest.value = self._V[0]  # the pickle holds a copy of row 0: a view again

    def pack(self, rng: np.random.Generator | None = None) -> PackedForest:
        """The k outputs' packed forests, one after the other (trees ``j*m .. (j+1)*m - 1``
        are output j's): the same trees and the same routing coins for every output, each
        with its own leaf values."""
        V = self.leaf_values()
        first, slot_pos = self._pack_slots(rng)
        leaves = self.forest.var == LEAF
        parts = [first]
        for j in range(1, self.outputs):
            nodes = first.nodes.copy()
            nodes["value"][slot_pos[leaves]] = V[j][leaves]
            parts.append(PackedForest(first.start, nodes, first.offset))
        return concat_packed(parts)

    def leaf_stats(self) -> tuple[float, float]:
        """(number of leaf values, their sum of squares) over all outputs."""
        V = self.leaf_values()
        leaves = self.forest.var == LEAF
        return float(self.outputs * leaves.sum()), float(np.sum(V[:, leaves] ** 2))

    def draw_prior(self, rng: np.random.Generator) -> None:
        """One forest's trees from the prior (:meth:`ForestSampler.draw_prior`, which draws
        output 0's leaf values), then the other outputs' values at each leaf, independent
        ``Normal(0, leaf_sd**2)``."""
        super().draw_prior(rng)
        forest = self.forest
        V = np.empty((self.outputs, *forest.value.shape))
        V[0] = forest.value
        for j in range(1, self.outputs):
            V[j] = rng.normal(0.0, self.leaf_sd, forest.value.shape)
        self._V = V
        forest.value = V[0]

    def conjugate_sweep(self, rng: np.random.Generator, z: np.ndarray, omega: np.ndarray,
                        move_cumprobs: np.ndarray, sweeps: int = 1) -> dict[str, float]:
        """One sweep (or ``sweeps`` in one kernel call) against Gaussian pseudo-data: output
        j's row i observed as ``Normal(z[j, i], 1 / omega[j, i])`` given the term (offset
        removed), the form of a
        Normal likelihood and of the augmented ones given their latent variables (docs/math.md
        sections 1 and 8).

        The moves are the general tree step's (:meth:`general_sweep`) on this quadratic log
        density, for which every Newton proposal is the exact conditional of the new leaves'
        k values given the trees: a structural move's ratio is then the ratio of the
        marginal likelihoods with the leaf vectors integrated out, jointly over the k
        outputs, and every leaf update is a Gibbs draw (accepted with probability 1).

        Parameters
        ----------
        z, omega : ndarray of shape (k, n)
            Pseudo-data (offset removed) and row precisions (0 where a row carries no
            information).
        move_cumprobs : ndarray of shape (4,)
            Cumulative probabilities of grow, prune, change, swap.

        Returns
        -------
        dict
            Acceptance rates per move type and of the leaf updates (``accept_leaf``).
        """
        shape = (self.outputs, self.n)
        z = np.asarray(z, dtype=np.float64)
        omega = np.asarray(omega, dtype=np.float64)
        if z.shape != shape or omega.shape != shape:
            raise ValueError(f"z and omega must have shape {shape} (outputs, rows); got "
                             f"{z.shape} and {omega.shape}.")
        pre = gaussian_pre(z + float(self.offset), omega)
        # Gaussian rows: the Newton proposal is the leaf's exact conditional, no defensive
        # mixture (every leaf update a Gibbs draw)
        return self.general_sweep(rng, None, move_cumprobs, (gaussian_rows, pre),
                                  defensive=0.0, sweeps=sweeps)
