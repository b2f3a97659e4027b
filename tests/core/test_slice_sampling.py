"""The one slice-sampling transition (:mod:`pymc_trees.core.slice_sampling`): it leaves its
density invariant with and without a cap on the steps out, the uncapped form takes the random
numbers of the plain stepping-out loop the level shift of log-gamma leaves had, and a start
where the density is not finite is refused with the caller's fix."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pymc_trees.core.slice_sampling import slice_sample


def _plain_stepping_out(rng, x0, logf, w):
    """Neal's figures 3 and 5 without a cap, written out as the level shift had it."""
    level = logf(x0) - rng.exponential()
    lo = x0 - w * rng.random()
    hi = lo + w
    while logf(lo) > level:
        lo -= w
    while logf(hi) > level:
        hi += w
    while True:
        s = lo + (hi - lo) * rng.random()
        if logf(s) > level:
            return s
        if s < x0:
            lo = s
        else:
            hi = s


def test_uncapped_transition_takes_the_plain_loops_numbers():
    def logf(s):  # the level shift's log-concave density along its line
        return -0.5 * ((0.3 + s) / 0.7) ** 2 - 2.0 * s - 1.5 * np.exp(-0.4 * s)

    for seed in range(20):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        x = y = 0.0
        for _ in range(5):
            x = slice_sample(a, x, logf, 0.8, None)
            y = _plain_stepping_out(b, y, logf, 0.8)
            assert x == y


@pytest.mark.parametrize("max_steps", [None, 32])
def test_the_transition_leaves_a_gamma_in_log_space_invariant(max_steps):
    # log x for x ~ Gamma(3, 1): density exp(3 u - e^u); 20,000 transitions from the exact
    # distribution.  The chain's autocorrelation is low (effective draws about 8,000), so the
    # mean's sd is about sqrt(trigamma(3) / 8000) = 0.009 and the tolerance of 0.04 is over
    # 4 sd; the Kolmogorov-Smirnov check thins to every 5th draw, nearly independent.
    rng = np.random.default_rng(3)

    def logf(u):
        return 3.0 * u - np.exp(u)

    u = np.log(rng.gamma(3.0))
    draws = np.empty(20_000)
    for i in range(draws.size):
        u = slice_sample(rng, u, logf, 1.0, max_steps)
        draws[i] = u
    exact = stats.loggamma(3.0)
    assert abs(draws.mean() - exact.mean()) < 0.04
    assert stats.kstest(draws[::5], exact.cdf).pvalue > 1e-3


def test_a_start_where_the_density_is_not_finite_is_refused_with_the_fix():
    with pytest.raises(FloatingPointError, match="log density is -inf.*Pass a fixed leaf_sd"):
        slice_sample(np.random.default_rng(0), -1.0, lambda x: np.log(x) if x > 0 else -np.inf,
                     1.0, 32, "Pass a fixed leaf_sd.")
