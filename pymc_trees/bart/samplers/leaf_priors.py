"""The leaves' priors and their scale: the leaf priors a term takes, log-gamma leaves' Gamma
prior set by a leaf sd, and the leaf scale learned inside a tree step (``BARTTree(...,
leaf_sd="learned")``, the default with ``Y``): its InverseGamma prior on the leaf variance,
centred on the calibrated sd, the conjugate draws from that prior and from the conditional
given normal leaves, and its density given log-gamma leaves (``docs/math.md``, sections 11
and 12).  Plain numpy and scipy; the part of the tree step that holds the scale is
:class:`pymc_trees.bart.steps.leaf_scale.LearnedLeafScale`."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["LEARNED_SCALE_ALPHA", "learned_scale_prior", "learned_scale_draw",
           "learned_scale_prior_draw", "LEAF_PRIORS", "leaf_prior_kappa", "log_gamma_prior",
           "learned_gamma_scale_logpdf"]

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


# the leaf priors a term takes: BARTTree(leaf_prior=...)
LEAF_PRIORS = ("normal", "log-gamma", "log-inverse-gamma")


def leaf_prior_kappa(leaf_prior: str) -> float:
    """The exponent kappa of ``exp(kappa mu) ~ Gamma(c, d)``: 1 for ``"log-gamma"`` (each
    tree multiplies ``exp(f)`` by a Gamma factor), -1 for ``"log-inverse-gamma"`` (by an
    inverse-gamma one); 0 for the normal prior."""
    return {"normal": 0.0, "log-gamma": 1.0, "log-inverse-gamma": -1.0}[leaf_prior]


def log_gamma_prior(leaf_sd: float, kappa: float = 1.0) -> tuple[float, float]:
    """``(c, d)`` with ``exp(kappa mu) ~ Gamma(c, rate d)`` giving the leaf ``mu`` mean 0 and
    standard deviation ``leaf_sd``: ``trigamma(c) = (kappa leaf_sd)^2`` (solved by Newton's
    method on ``log c``) and ``d = exp(digamma(c))``."""
    v = float((kappa * leaf_sd) ** 2)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"leaf_sd must be positive and finite; got {leaf_sd!r}.")
    # trigamma(c) ~ 1/c + 1/(2 c^2): start from that, then Newton in x = log c
    x = np.log(0.5 / v * (1.0 + np.sqrt(1.0 + 2.0 * v)))
    for _ in range(100):
        c = np.exp(x)
        g = special.polygamma(1, c) - v
        dg = special.polygamma(2, c) * c
        step = g / dg
        x -= step
        if abs(step) < 1e-14:
            break
    c = float(np.exp(x))
    return c, float(np.exp(special.digamma(c)))


def learned_gamma_scale_logpdf(u: float, n_leaves: float, s1: float, s2: float, alpha: float,
                               beta: float, kappa2: float = 1.0) -> float:
    """The log density, up to a constant, of ``u = log c`` for a learned leaf scale of
    log-gamma leaves: the leaf variance ``v = trigamma(c) / kappa^2 ~ InverseGamma(alpha,
    beta)`` (``BARTTree(..., leaf_sd="learned")``'s prior, with the Jacobian ``|dv/du| =
    -polygamma(2, c) c / kappa^2``; ``kappa2`` is ``kappa^2``) times the density of the
    forest's L leaves, each ``exp(kappa mu) ~ Gamma(c, rate d = exp(digamma(c)))``:
    ``L (c log d - lgamma(c)) + c s1 - d s2`` with ``s1 = sum kappa mu`` and
    ``s2 = sum exp(kappa mu)``."""
    if not -30.0 < u < 27.0:  # c from 1e-13 to 5e11: beyond, the prior's mass is nil
        return -np.inf
    c = math.exp(u)
    # trigamma(c) = zeta(2, c), polygamma(2, c) = -2 zeta(3, c): scipy's polygamma is
    # Python around zeta, ten times slower per call on this path (once per sweep)
    v = float(special.zeta(2.0, c)) / kappa2
    dig = float(special.digamma(c))
    return (-(alpha + 1.0) * math.log(v) - beta / v
            + math.log(2.0 * special.zeta(3.0, c) / kappa2) + u
            + n_leaves * (c * dig - math.lgamma(c)) + c * s1 - math.exp(dig) * s2)
