"""Default prior calibration of Chipman, George and McCulloch (2010), docs/math.md section 3."""

from __future__ import annotations

import numpy as np
# scipy.special, not scipy.stats (a slow import that nothing else here needs): the same
# functions scipy.stats calls for these quantiles
from scipy.special import gammaincinv, ndtri

__all__ = ["leaf_calibration", "noise_prior", "LINKS"]


LINKS = ("identity", "probit", "logit", "log")
# Phi(x) is within 0.01 of sigmoid(1.702 x) for every x: a logit-scale prior sd 1.702 times the
# probit one puts nearly the same prior on the probability.
LOGIT_PER_PROBIT = 1.702


def leaf_calibration(Y=None, *, leaf_sd: float | None = None, k: float = 2.0,
                     m: int = 200, link: str = "identity") -> tuple[float, float]:
    """Offset and leaf prior sd of a sum-of-trees term, for the link through which it enters
    its likelihood.  An explicit ``leaf_sd`` overrides the scale.

    ``"identity"`` (Chipman, George and McCulloch 2010): the prior of f(x) is centred at
    ``(max Y + min Y) / 2`` with sd ``(max Y - min Y) / (2 k)``, i.e.
    ``leaf_sd = (max Y - min Y) / (2 k sqrt(m))``; without ``Y`` the offset is 0 and
    ``leaf_sd`` is required.

    ``"probit"`` (Y in [0, 1]: 0/1 outcomes or proportions): offset ``Phi^-1(mean Y)``,
    ``leaf_sd = 3 / (k sqrt(m))`` (CGM 2010), so f(x) has prior sd 3/k and, with k = 2, the
    probability ``Phi(f(x))`` lies in ``Phi(offset -/+ 2.47)`` with prior probability 0.9.

    ``"logit"``: offset ``logit(mean Y)``, ``leaf_sd = 1.702 * 3 / (k sqrt(m))``: since
    ``Phi(x)`` is within 0.01 of ``sigmoid(1.702 x)``, the prior on the probability is nearly
    the probit one.

    ``"log"`` (counts, Y >= 0 with a positive mean): offset ``log(mean Y)``,
    ``leaf_sd = log((max Y + h) / (min Y + h)) / (2 k sqrt(m))`` with ``h = 0.5`` for counts
    (whole numbers: half a count keeps zero counts finite) and half the smallest positive
    value otherwise (so that the scale of a continuous Y does not depend on its units): the
    identity rule on the log scale: log f(x) has prior sd ``1 / (2k)`` of the log range of Y, so
    with k = 2 the central 95% prior interval of the rate ``exp(f(x))`` spans
    about the range of Y (centred at its mean on the log scale).  Without ``Y``, ``leaf_sd``
    is required.  Y is on the data scale: negative values are refused, and a Y whose every
    value is the log of a whole number (``np.log1p(counts)``) gets a ``UserWarning``.

    Without ``Y`` the offset is 0 for every link.

    Returns
    -------
    (offset, leaf_sd) : tuple of float

    Raises
    ------
    ValueError
        For an unknown link, a missing ``Y`` and ``leaf_sd``, a ``Y`` that does not fit the
        link, and a ``leaf_sd`` that is not one positive finite number (a list of one scale
        per output, for example: a term of shape (k, n) has one scale for all outputs).

    Examples
    --------
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> offset, leaf_sd = pmt.leaf_calibration(y, m=200)     # the prior of BARTTree(..., Y=y)
    """
    if link not in LINKS:
        raise ValueError(f"link must be one of {LINKS}; got {link!r}.")
    if Y is None and leaf_sd is None and link in ("identity", "log"):
        raise ValueError(f"BARTTree with link={link!r} needs Y (to calibrate the prior of f "
                         "from the response) or leaf_sd (the prior sd of every leaf value); "
                         "give one.")
    if not k > 0:
        raise ValueError(f"k must be positive; got {k!r}.")
    offset = 0.0
    sd = None
    if Y is not None:
        y = np.asarray(Y, dtype=float).ravel()
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise ValueError("Y must be a non-empty array of finite numbers.")
        if link == "identity":
            offset = 0.5 * (y.max() + y.min())
            spread = y.max() - y.min()
        elif link in ("probit", "logit"):
            mean = y.mean()
            if y.min() < 0 or y.max() > 1 or not 0 < mean < 1:
                raise ValueError(f"With link={link!r}, Y must be 0/1 outcomes or proportions in "
                                 f"[0, 1] that are not all 0 or all 1 (mean {mean:.3g}); for a "
                                 "Binomial pass the proportions y / n.")
            offset = float(ndtri(mean)) if link == "probit" else np.log(mean / (1 - mean))
        else:
            if y.min() < 0 or not y.mean() > 0:
                raise ValueError("With link='log', Y must be non-negative counts (or rates) "
                                 "with a positive mean, on the data scale: give Y=y (e.g. "
                                 "the counts), not np.log(y) or np.log1p(y).")
            _warn_if_log_scale(y)
            offset = np.log(y.mean())
            # counts: half a count keeps zeros finite; other values: half the smallest
            # positive one, so that the spread does not depend on Y's units
            half = 0.5 if np.all(y == np.round(y)) else 0.5 * y[y > 0].min()
            spread = np.log((y.max() + half) / (y.min() + half))
        if leaf_sd is None and link in ("identity", "log"):
            if spread <= 0:
                raise ValueError("Y is constant, so it cannot calibrate the leaf scale; "
                                 "pass leaf_sd explicitly.")
            sd = spread / (2.0 * k * np.sqrt(m))
    if leaf_sd is None and link == "probit":
        sd = 3.0 / (k * np.sqrt(m))
    elif leaf_sd is None and link == "logit":
        sd = LOGIT_PER_PROBIT * 3.0 / (k * np.sqrt(m))
    if leaf_sd is not None:
        sd = _leaf_sd_value(leaf_sd)
    return float(offset), float(sd)


# Y above this is not checked for a log transform: exp(Y) would be a count above a million,
# where float64 no longer tells a whole number from its neighbours within the tolerance
_LOG_CHECK_MAX = np.log(1e6)
_WHOLE_ATOL = 1e-6  # how close exp(Y) - 1 must be to a whole number


def _looks_log_of_counts(y: np.ndarray) -> bool:
    """Whether every value of ``y`` is the log of a whole number (``np.log1p(counts)`` or
    ``np.log(counts)``) while some value is not itself whole (whole values are counts on
    the data scale).

    ``exp(y) - 1`` must be within ``1e-6`` of a whole number, computed in float64: counts
    put on the log scale in float64 pass, a data-scale rate passes with probability about
    ``2e-6`` per value.  Not run when some value exceeds ``log(1e6)``; log values of
    non-whole data (rates), of large counts rounded to float32, and other transforms
    (``sqrt``) are missed.

    Parameters
    ----------
    y : ndarray of shape (n,), dtype float64
        Finite, non-negative values (the ``Y`` of a ``link="log"`` term).

    Returns
    -------
    bool
    """
    if y.max() > _LOG_CHECK_MAX or np.all(y == np.round(y)):
        return False
    back = np.expm1(y)
    # values within the tolerance of 0 alone (a Y of small rates) are not counts
    return bool(np.all(np.abs(back - np.round(back)) <= _WHOLE_ATOL)
                and np.any(np.round(back) >= 1))


def _warn_if_log_scale(y: np.ndarray) -> None:
    """Warn when the Y of a ``link="log"`` term looks like log-transformed counts."""
    if _looks_log_of_counts(y):
        from pymc_trees.core.tabular import warn_user

        warn_user("Y of a term with link=\"log\" looks already log-transformed: every value "
                  "is the log of a whole number (as np.log1p(counts) or np.log(counts) "
                  "give), and the log link takes Y on the data scale (the term is the log "
                  "of Y's mean), so the prior would be calibrated on the wrong scale. Give Y "
                  "on the data scale (e.g. the counts), not log1p(y). If Y really is a "
                  "data-scale rate, ignore this warning.")


def _leaf_sd_value(leaf_sd) -> float:
    """``leaf_sd`` as a float, or the error that says what it may be."""
    what = ("leaf_sd must be one positive finite number, the prior sd of every leaf value "
            "(of every output, for a term of shape (k, n); BARTTree also takes a scalar PyMC "
            "variable, \"learned\" or \"fixed\")")
    if isinstance(leaf_sd, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{what}; got {leaf_sd!r}.")
    if np.ndim(leaf_sd) != 0:
        raise ValueError(f"{what}; got {leaf_sd!r}. One scale per output is not supported: "
                         "give each output a BARTTree term of its own, or put the outputs "
                         "on one scale.")
    try:
        sd = float(leaf_sd)
    except (TypeError, ValueError):
        raise ValueError(f"{what}; got {leaf_sd!r}.") from None
    if not (np.isfinite(sd) and sd > 0):
        raise ValueError(f"{what}; got {leaf_sd!r}.")
    return sd


def noise_prior(X, y, nu: float = 3.0, q: float = 0.9) -> tuple[float, float]:
    """InverseGamma ``(alpha, beta)`` for the noise variance sigma^2.

    ``sigma^2 ~ InverseGamma(nu/2, nu*lambda/2)`` with lambda chosen so that
    ``P(sigma < sigma_hat) = q``, where ``sigma_hat`` is the residual sd of a least-squares fit
    of y on X with an intercept (the sd of y when p + 1 >= n).

    Parameters
    ----------
    X : array_like or DataFrame of shape (n, p)
        Covariates as :class:`~pymc_trees.BARTTree` takes them: NaN marks a missing value,
        and a DataFrame may have category and string columns.  For the least-squares fit a
        categorical column becomes one indicator per level but the first (and one for
        missing), and a numeric column with gaps its values with the gaps at the column mean
        plus an indicator of the gaps.
    y : array_like of shape (n,)
        The response, finite and not constant.
    nu : float, default 3
    q : float, default 0.9

    Returns
    -------
    (alpha, beta) : tuple of float
        Use as ``pm.InverseGamma("sigma2", *noise_prior(X, y))``.

    Raises
    ------
    ValueError
        For a y that is not 1-D and finite, an X of another number of rows, bad ``nu`` or
        ``q``, and a y that leaves no noise to calibrate from: a constant y, or one that the
        least-squares fit reproduces exactly (residual sd below ``1e-10`` of the sd of y).
        A prior whose scale is 0 would put sigma at 0 (before this check the result was
        ``beta`` of about 1e-30, without a word); give such a model a noise prior of your
        own (for example ``pm.HalfNormal("sigma", s)`` with a scale s you expect).

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> alpha, beta = pmt.noise_prior(X, y)          # nu = 3, q = 0.9
    >>> with pm.Model():
    ...     sigma2 = pm.InverseGamma("sigma2", alpha, beta)
    """
    from pymc_trees.core.tabular import TableSchema

    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a 1-D array of finite numbers (the response); got shape "
                         f"{y.shape}" + ("" if y.ndim != 1 else " with NaN or inf") + ".")
    schema, A = TableSchema.from_training(X)
    if A.shape[0] != y.size:
        raise ValueError(f"X must have shape (n, p) with n = len(y) = {y.size}; got "
                         f"{A.shape}.")
    if not (nu > 0 and 0 < q < 1):
        raise ValueError(f"need nu > 0 and 0 < q < 1; got nu={nu!r}, q={q!r}.")
    if np.all(y == y[0]):
        raise ValueError(f"y is constant (all {y.size} values are {y[0]:g}), so it has no "
                         "noise to calibrate the prior of sigma from; check that y is the "
                         "response you meant, or give the model a noise prior of your own "
                         "(for example pm.HalfNormal('sigma', s) with a scale s you expect).")
    D = _design(A, schema.categorical)
    n, p = D.shape
    if p + 1 < n:
        D = np.column_stack([np.ones(n), D])
        coef, *_ = np.linalg.lstsq(D, y, rcond=None)
        resid = y - D @ coef
        sigma_hat = np.sqrt(resid @ resid / max(n - np.linalg.matrix_rank(D), 1))
    else:
        sigma_hat = np.std(y, ddof=1)
    if sigma_hat <= 1e-10 * np.std(y):
        raise ValueError(f"y is an exact linear function of X (least-squares residual sd "
                         f"{sigma_hat:.3g}, sd of y {np.std(y):.3g}), so it has no noise to "
                         "calibrate the prior of sigma from; give the model a noise prior of "
                         "your own (for example pm.HalfNormal('sigma', s) with a scale s you "
                         "expect).")
    lam = sigma_hat**2 * (2.0 * gammaincinv(nu / 2.0, 1.0 - q)) / nu  # chi2(nu) quantile
    return float(nu / 2.0), float(nu * lam / 2.0)


def _design(A: np.ndarray, categorical: np.ndarray) -> np.ndarray:
    """The encoded X (codes for categorical columns, NaN for gaps) as a least-squares design
    without intercept: level indicators but the first for categorical columns (a gap is a
    level of its own), numeric columns with gaps at the column mean plus a gap indicator."""
    cols = []
    for j in range(A.shape[1]):
        x = A[:, j]
        gap = np.isnan(x)
        if categorical[j]:
            codes = np.where(gap, -1, x).astype(np.int64)
            cols.extend((codes == c).astype(float) for c in np.unique(codes)[1:])
        elif gap.all():
            continue
        else:
            cols.append(np.where(gap, x[~gap].mean(), x))
            if gap.any():
                cols.append(gap.astype(float))
    return np.column_stack(cols) if cols else np.empty((A.shape[0], 0))
