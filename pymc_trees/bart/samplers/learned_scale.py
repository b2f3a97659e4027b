"""The leaf scale learned inside a tree step (``BARTTree(..., leaf_sd="learned")``, the default
with ``Y``): its InverseGamma prior on the leaf variance, centred on the calibrated sd, and
the conjugate draws from that prior and from the conditional given the leaves
(``docs/math.md``, section 12).  Plain numpy; the part of the tree step that holds the scale
is :class:`pymc_trees.bart.steps.leaf_scale.LearnedLeafScale`."""

from __future__ import annotations

import numpy as np

__all__ = ["LEARNED_SCALE_ALPHA", "learned_scale_prior", "learned_scale_draw",
           "learned_scale_prior_draw"]

LEARNED_SCALE_ALPHA = 3.0


def learned_scale_prior(sd0: float) -> tuple[float, float]:
    """``(alpha, beta)`` of the InverseGamma prior of the leaf variance learned inside the tree
    step (``BARTTree(..., leaf_sd="learned")``): prior mean ``sd0**2`` (the calibrated leaf
    variance), shape 3 (finite variance; about 90% of its mass between 0.3 and 2.3 times
    ``sd0**2``).  The same prior as ``v ~ pm.InverseGamma(3, 2 * sd0**2)`` with
    ``leaf_sd=pt.sqrt(v)`` (``docs/explanation/leaf-scale-and-split-prior.md``, "A learned leaf
    scale")."""
    return LEARNED_SCALE_ALPHA, (LEARNED_SCALE_ALPHA - 1.0) * float(sd0) ** 2


def learned_scale_draw(rng: np.random.Generator, sd0: float, n_leaves: float,
                       sum_sq: float) -> float:
    """A draw of the leaf sd from its full conditional given the forest's leaves: with
    ``v = leaf_sd**2 ~ InverseGamma(alpha, beta)`` (:func:`learned_scale_prior`) and ``L``
    leaf values ``mu ~ Normal(0, v)`` with sum of squares ``S``, ``v | leaves ~
    InverseGamma(alpha + L / 2, beta + S / 2)`` (conjugate; nothing else in the model depends
    on v).  Returns ``sqrt(v)``."""
    a, b = learned_scale_prior(sd0)
    v = (b + 0.5 * sum_sq) / rng.gamma(a + 0.5 * n_leaves)
    return float(np.sqrt(v))


def learned_scale_prior_draw(rng: np.random.Generator, sd0: float) -> float:
    """A draw of the leaf sd learned inside the tree step from its prior, centred on the
    calibrated sd ``sd0``: ``sqrt(v)`` with ``v ~ InverseGamma(learned_scale_prior(sd0))``,
    the conditional of :func:`learned_scale_draw` given a forest of no leaves.  Prior draws
    of the term (``pm.sample_prior_predictive``) and a tree step whose term nothing
    observes draw the scale this way before the trees."""
    return learned_scale_draw(rng, sd0, 0.0, 0.0)
