"""The row-callback protocol of the general sweep: the C type every likelihood's row function
has (:data:`ROW_SIGNATURE`), the sweep's per-row state and buffers (:class:`RowState`,
:class:`RowBuffers`), the cleaning of a row's log-likelihood and derivatives
(:func:`clean_ll`, :func:`clean_gh`), calls of a row function from Python
(:func:`call_rows`, :func:`call_all`) and the Gaussian rows (:func:`gaussian_rows`,
:func:`gaussian_pre`); the Metropolis-Hastings decision :func:`decide`."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

__all__ = ["ROW_SIGNATURE", "RowLikelihood", "RowState", "RowBuffers", "new_row_buffers", "clean_ll", "clean_gh",
           "clean_rows", "decide", "call_rows", "call_all", "gaussian_rows", "gaussian_pre"]


# The C type of a row callback (see general_sweep): ``(f, rows, r, pre, n_pre, out)``, ``f`` of
# shape (J, r) and ``out`` of shape (1 + 2 J, r), both row-major.  Every likelihood's row
# functions have this one type, so the sweep kernel is compiled once and cached on disk.
ROW_SIGNATURE = numba.types.void(
    numba.types.CPointer(numba.types.float64), numba.types.CPointer(numba.types.int64),
    numba.types.int64, numba.types.CPointer(numba.types.float64), numba.types.int64,
    numba.types.CPointer(numba.types.float64))


class RowLikelihood(NamedTuple):
    """A likelihood as the general sweep kernel calls it: the row callback ``rows_fn`` (of
    :data:`ROW_SIGNATURE`), the inputs ``pre`` (float64, shape (n_pre,)) it reads besides
    the term, computed once per sweep, and ``defensive``, the leaf prior's weight in every
    leaf proposal (``DEFENSIVE``, or 0 where the callback's Newton step is the exact
    conditional, as for Gaussian pseudo-data)."""

    rows_fn: object
    pre: np.ndarray
    defensive: float


class RowState(NamedTuple):
    """The general sweep's per-row state for a term of J outputs that share their trees (J = 1
    for one output): the term ``f`` at the training rows (offset included), shape (J, n), the
    row log-likelihoods ``ll``, shape (n,), and the first derivatives ``g`` and curvatures
    ``h`` in each output there, shape (J, n) (see :func:`clean_rows`).  Updated in place by
    the sweep."""

    f: np.ndarray
    ll: np.ndarray
    g: np.ndarray
    h: np.ndarray


class RowBuffers(NamedTuple):
    """Buffers of :func:`general_sweep` for J outputs: per output and row ``f_prop``,
    ``f_minus``, ``gc``, ``g_p``, ``h_p``, ``gc_p`` (J, n); per row ``rows``, ``ll_p``; ``fs``
    (J n,), the proposal at the changed rows, and ``out`` ((1 + 2 J) n,), the row function's
    output; per output and node slot ``G``, ``H``, ``nV``, ``Ga``, ``Ha`` (J, K); per node
    slot ``dll``, ``spare``, ``keep``; ``S`` (2, J, 2) and ``mu`` (J, 2) for the proposals'
    sums and values; ``out_i`` (8,) and ``out_f`` (5,); ``all_rows`` = 0 .. n-1."""

    f_prop: np.ndarray
    f_minus: np.ndarray
    gc: np.ndarray
    rows: np.ndarray
    fs: np.ndarray
    out: np.ndarray
    ll_p: np.ndarray
    g_p: np.ndarray
    h_p: np.ndarray
    gc_p: np.ndarray
    G: np.ndarray
    H: np.ndarray
    nV: np.ndarray
    Ga: np.ndarray
    Ha: np.ndarray
    dll: np.ndarray
    spare: np.ndarray
    keep: np.ndarray
    leaves: np.ndarray
    S: np.ndarray
    mu: np.ndarray
    out_i: np.ndarray
    out_f: np.ndarray
    all_rows: np.ndarray


def new_row_buffers(n: int, capacity: int, outputs: int = 1) -> RowBuffers:
    """Buffers for :func:`general_sweep` (the node-sized ones follow the forest's capacity)."""
    J, K = int(outputs), int(capacity)
    return RowBuffers(np.zeros((J, n)), np.zeros((J, n)), np.zeros((J, n)),
                      np.zeros(n, np.int64), np.zeros(J * n), np.zeros((1 + 2 * J) * n),
                      np.zeros(n), np.zeros((J, n)), np.zeros((J, n)), np.zeros((J, n)),
                      np.zeros((J, K)), np.zeros((J, K)), np.zeros((J, K)), np.zeros((J, K)),
                      np.zeros((J, K)), np.zeros(K), np.zeros(K), np.zeros(K, np.int64),
                      np.zeros(K, np.int64), np.zeros((2, J, 2)), np.zeros((J, 2)),
                      np.zeros(8, np.int64),
                      np.zeros(5), np.arange(n, dtype=np.int64))


@numba.njit(cache=True, inline="always")
def clean_ll(ll):
    """A NaN log-likelihood is -inf (zero density, the move is rejected)."""
    return -math.inf if ll != ll else ll


@numba.njit(cache=True, inline="always")
def clean_gh(g, h):
    """One row's ``(g, h)`` in one output as the moves use them: a non-finite first
    derivative is 0; a curvature that is not finite and positive is ``g ** 2``, the row's
    outer-product estimate of the Fisher information (a piecewise-linear log density such as
    the asymmetric Laplace has none).  These only shape the proposals; any fixed function of
    the state keeps the moves exact."""
    if not math.isfinite(g):
        g = 0.0
    if not (math.isfinite(h) and h > 0.0):
        h = g * g
    return g, h


@numba.njit(cache=True)
def clean_rows(ll, g, h):
    """:func:`clean_ll` and :func:`clean_gh` on arrays (``ll`` (n,), ``g``, ``h`` (J, n)), in
    place."""
    for i in range(ll.shape[0]):
        ll[i] = clean_ll(ll[i])
        for j in range(g.shape[0]):
            g[j, i], h[j, i] = clean_gh(g[j, i], h[j, i])


@numba.njit(cache=True)
def decide(rng, logr):
    """The Metropolis-Hastings decision on a log ratio (a NaN ratio rejects)."""
    u = rng.random()
    return logr == logr and (logr >= 0.0 or u < math.exp(logr))


@numba.njit(cache=True)
def _call(rows_fn, F, rows, pre):
    J, r = F.shape
    out = np.empty((1 + 2 * J, r))
    rows_fn(F.ctypes, rows.ctypes, r, pre.ctypes, pre.shape[0], out.ctypes)
    return out[0].copy(), out[1:1 + J].copy(), out[1 + J:].copy()


def call_rows(rows_fn, f_sub, rows, pre):
    """``(ll, g, h)`` from a row callback (:func:`general_sweep`) at the rows ``rows``, the
    term's values there ``f_sub`` of shape (r,) (one output: ``g``, ``h`` of shape (r,)) or
    (J, r) (``g``, ``h`` of shape (J, r))."""
    F = np.ascontiguousarray(np.atleast_2d(f_sub), dtype=np.float64)
    ll, g, h = _call(rows_fn, F, np.ascontiguousarray(rows, dtype=np.int64), pre)
    return (ll, g[0], h[0]) if np.ndim(f_sub) == 1 else (ll, g, h)


def call_all(rows_fn, f, pre):
    """``(ll, g, h)`` from a row callback at every row (rows 0 .. n-1), as :func:`call_rows`."""
    return call_rows(rows_fn, f, np.arange(np.shape(f)[-1], dtype=np.int64), pre)


@numba.cfunc(ROW_SIGNATURE, cache=True)
def gaussian_rows(fp, rp, r, pp, npre, outp):
    """The row callback of Gaussian pseudo-data (:func:`gaussian_pre`): J outputs, row i of
    output j observed as ``Normal(z[j, i], 1 / w[j, i])`` given ``f[j, i]``.  Writes
    ``ll_i = -sum_j w (z - f)^2 / 2`` (the constant ``log w`` terms are left out: they cancel
    in every ratio), ``g = w (z - f)`` and ``h = w``.  The log density is quadratic in every
    leaf value, so the Newton proposals of the moves are the leaves' exact conditionals."""
    pre = numba.carray(pp, (npre,))
    J = int(pre[0])
    n = (npre - 1) // (2 * J)
    F = numba.carray(fp, (J, r))
    rows = numba.carray(rp, (r,))
    out = numba.carray(outp, (1 + 2 * J, r))
    for q in range(r):
        out[0, q] = 0.0
    for j in range(J):
        zo, wo = 1 + j * n, 1 + (J + j) * n
        for q in range(r):
            i = rows[q]
            w = pre[wo + i]
            d = pre[zo + i] - F[j, q]
            out[0, q] -= 0.5 * w * d * d
            out[1 + j, q] = w * d
            out[1 + J + j, q] = w


def gaussian_pre(z: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """The ``pre`` array of :func:`gaussian_rows` for pseudo-data ``z`` (the term's values
    they observe, offset included) with row precisions ``omega``, both of shape (J, n):
    ``[J, z.ravel(), omega.ravel()]``."""
    z = np.asarray(z, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    if z.ndim != 2 or omega.shape != z.shape:
        raise ValueError(f"z and omega must have the same shape (J, n); got {z.shape} and "
                         f"{omega.shape}.")
    return np.concatenate([[float(z.shape[0])], z.ravel(), omega.ravel()])

