"""The leaf-value proposals of the general tree moves (docs/math.md section 9): one Newton
(Laplace) step on log-likelihood plus log-prior from the rows' current values, mixed with the
leaf prior (the defensive mixture), their densities and draws, and the per-leaf sums they
are built from.  :mod:`pymc_trees.bart.kernels.general` explains both ("The proposal of a
leaf's value", "A defensive mixture")."""

from __future__ import annotations

import math

import numba

__all__ = ["DEFENSIVE", "leaf_gh", "log_prior", "log_mixture", "log_q", "draw_q", "prior_at",
           "q_at", "draw_at", "group_sums", "group_log_q"]


@numba.njit(cache=True)
def leaf_gh(t, leaf_of_row, n_nodes, g, h, G, H):
    """Per-leaf sums ``G[j, k]``, ``H[j, k]`` of ``g[j]`` and ``h[j]`` over the rows of every
    leaf k of tree t, for every output j (``g``, ``h`` of shape (J, n))."""
    J = g.shape[0]
    for k in range(n_nodes[t]):
        for j in range(J):
            G[j, k] = 0.0
            H[j, k] = 0.0
    for i in range(leaf_of_row.shape[1]):
        k = leaf_of_row[t, i]
        for j in range(J):
            G[j, k] += g[j, i]
            H[j, k] += h[j, i]


@numba.njit(cache=True, inline="always")
def log_prior(mu, prec0):
    """``log Normal(mu; 0, 1/prec0)``."""
    return 0.5 * math.log(prec0 / (2.0 * math.pi)) - 0.5 * prec0 * mu * mu


# The prior's weight ``w`` in every leaf proposal of the general step (module doc, "A
# defensive mixture"); 0 where the Newton step is exact (Gaussian rows).
DEFENSIVE = 0.01


@numba.njit(cache=True, inline="always")
def log_mixture(log_newton, log_prior_density, w):
    """``log((1 - w) exp(log_newton) + w exp(log_prior_density))``."""
    if w == 0.0:
        return log_newton
    a = math.log1p(-w) + log_newton
    b = math.log(w) + log_prior_density
    if a < b:
        a, b = b, a
    if b == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@numba.njit(cache=True, inline="always")
def log_q(mu, G, H, prec0, w):
    """``log q(mu)``: the defensive mixture of ``Normal(G/P, 1/P)`` (``P = H + prec0``, the
    Newton step) and the leaf prior ``Normal(0, 1/prec0)``, weight ``w`` (module doc)."""
    P = H + prec0
    d = mu - G / P
    return log_mixture(0.5 * math.log(P / (2.0 * math.pi)) - 0.5 * P * d * d,
                       log_prior(mu, prec0), w)


@numba.njit(cache=True, inline="always")
def draw_q(rng, G, H, prec0, w):
    """A draw from :func:`log_q`'s mixture: the leaf prior with probability ``w``."""
    if w > 0.0 and rng.random() < w:
        return rng.standard_normal() / math.sqrt(prec0)
    P = H + prec0
    return G / P + rng.standard_normal() / math.sqrt(P)


@numba.njit(cache=True, inline="always")
def prior_at(A, k, prec0):
    """The log prior of the leaf vector ``A[:, k]`` (J independent leaf values)."""
    s = 0.0
    for j in range(A.shape[0]):
        s += log_prior(A[j, k], prec0)
    return s


@numba.njit(cache=True, inline="always")
def q_at(A, k, G, H, kq, prec0, w):
    """``log q(A[:, k])`` for the proposal with sums ``G[:, kq]``, ``H[:, kq]``: the product of
    the J outputs' Newton proposals (a leaf vector's proposal is diagonal)."""
    s = 0.0
    for j in range(A.shape[0]):
        s += log_q(A[j, k], G[j, kq], H[j, kq], prec0, w)
    return s


@numba.njit(cache=True, inline="always")
def draw_at(rng, G, H, kq, prec0, w, A, k):
    """``A[:, k]`` drawn from q with sums ``G[:, kq]``, ``H[:, kq]``, output by output."""
    for j in range(A.shape[0]):
        A[j, k] = draw_q(rng, G[j, kq], H[j, kq], prec0, w)


@numba.njit(cache=True)
def group_sums(idx, start, end, gc, h, S, col):
    """``S[0, j, col]``, ``S[1, j, col]`` = sums of ``gc[j]``, ``h[j]`` over the rows
    ``idx[start:end]``."""
    for j in range(gc.shape[0]):
        gcj, hj = gc[j], h[j]
        G = 0.0
        H = 0.0
        for q in range(start, end):
            i = idx[q]
            G += gcj[i]
            H += hj[i]
        S[0, j, col] = G
        S[1, j, col] = H


@numba.njit(cache=True)
def group_log_q(idx, start, end, gc, h, A, k, prec0, w, S):
    """``log q(A[:, k])`` for the proposal built from the rows ``idx[start:end]``."""
    group_sums(idx, start, end, gc, h, S, 0)
    return q_at(A, k, S[0], S[1], 0, prec0, w)
