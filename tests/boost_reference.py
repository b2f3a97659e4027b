"""Naive XGBoost leaf weight and node gain (the test files' reference, written from XGBoost's
rules without the kernels' tricks)."""

from __future__ import annotations

import numpy as np


def _weight(G, H, lam, alpha, mds):
    if H <= 0:
        return 0.0
    t = G - alpha if G > alpha else (G + alpha if G < -alpha else 0.0)
    w = -t / (H + lam)
    if mds and abs(w) > mds:
        w = float(np.sign(w)) * mds
    return w


def _gain(G, H, lam, alpha, mds):
    if H <= 0:
        return 0.0
    w = _weight(G, H, lam, alpha, mds)
    return -(2 * G * w + (H + lam) * w * w + 2 * alpha * abs(w))
