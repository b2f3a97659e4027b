"""Findings 12 to 15 of issue 48 (the tests of each fix fail on the code before it; the
ones that check what stays silent guard against false alarms):

* 12. a ``link="log"`` term calibrated on a log-transformed Y (``np.log1p(counts)``) is warned
  about; negative Y is refused with the data-scale fix;
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_trees as pmt

SAMPLE = dict(tune=20, draws=16, chains=1, cores=1, random_seed=7, progressbar=False,
              compute_convergence_checks=False)


def _user_warnings(fn) -> list[str]:
    """The messages of the UserWarnings that ``fn()`` issues."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _counts(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    return X, rng.poisson(np.exp(1.0 + X[:, 0])).astype(float)


def _term(X, **kwargs):
    with pm.Model():
        pmt.BARTTree("f", X, m=4, **kwargs)


# -- 12. Y on the data scale with link="log" ------------------------------------------------

def test_a_log1p_response_with_the_log_link_is_warned_about():
    X, y = _counts()
    for Y in (np.log1p(y), np.log1p(y).tolist(), pd.Series(np.log1p(y))):
        msgs = _user_warnings(lambda: _term(X, Y=Y, link="log"))
        assert len(msgs) == 1
        assert 'link="log"' in msgs[0] and "looks already log-transformed" in msgs[0]
        assert "data scale (e.g. the counts), not log1p(y)" in msgs[0]
    # log of counts without zeros, and the public calibration function alike
    pos = y[y > 0]
    with pytest.warns(UserWarning, match="looks already log-transformed"):
        _term(X[y > 0], Y=np.log(pos), link="log")
    with pytest.warns(UserWarning, match="looks already log-transformed"):
        pmt.leaf_calibration(np.log1p(y), link="log", m=4)


def test_counts_rates_and_the_identity_link_give_no_log_scale_warning():
    X, y = _counts()
    rate = y / np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    for kwargs in (dict(Y=y, link="log"), dict(Y=rate, link="log"), dict(Y=y / 2, link="log"),
                   dict(Y=np.log1p(y))):  # a model of log1p(y) with the identity link
        assert not [m for m in _user_warnings(lambda: _term(X, **kwargs))
                    if "log-transformed" in m]


def test_negative_Y_with_the_log_link_is_refused_with_the_data_scale_fix():
    X, y = _counts()
    with pytest.raises(ValueError, match=r"data scale: give Y=y .*not np.log\(y\)"):
        _term(X, Y=np.log(y + 0.1), link="log")
