"""Gradient-boosted tree growing (docs/math.md section 7, XGBoost's objective): the histogram and
the exact greedy split finders.

Both grow one tree depth-wise (level by level, as XGBoost's ``grow_policy="depthwise"``) from
per-row first and second derivatives ``g``, ``h`` of the loss with respect to the margin, and
write it into flat node arrays in the packed layout of :mod:`pymc_trees.core.packed` (root at
0; the two children of a node side by side, ``right = left + 1``), so boosting and BART forests
share the prediction kernel.

XGBoost's rules, reproduced exactly (``src/tree/param.h``, ``updater_colmaker.cc``):

* leaf weight ``w(G, H) = -T(G) / (H + lambda)``, ``T`` the L1 soft threshold at ``alpha``,
  clipped to ``+-max_delta_step`` when that is not 0; 0 when ``H <= 0``;
* gain of a node ``-(2 G w + (H + lambda) w^2 + 2 alpha |w|)`` at its weight (``T(G)^2 / (H +
  lambda)`` without clipping); a split's ``loss_chg`` is the children's gains minus the
  parent's; a split needs ``H_left, H_right > 0`` and ``>= min_child_weight``, and is made when
  the best ``loss_chg`` exceeds 1e-6; loss changes are compared as float32, as XGBoost stores
  them, and ties go to the candidate found first (lower feature index, then scan order);
* leaves take ``learning_rate * w``; after growing, splits whose ``loss_chg < gamma`` are
  pruned bottom-up (XGBoost's ``prune`` updater compares ``loss_chg`` itself with gamma).

Missing values (NaN; in the histogram grower's binned data, the bin one past the last real
bin, see :func:`binned_columns`) are learned per split as in XGBoost's
sparsity-aware algorithm: both directions are tried when the feature has missing values in
training and the node has rows missing it, and ``missing_left`` records the better one (missing
right first, kept on ties); when the feature has missing values in training but none in the
node, NaN goes right (the missing-right scan comes first and the other direction would only tie
it); for features without missing values in training NaN goes left.  These are XGBoost's exact
method's choices.

Categorical features (level codes ``0 .. L - 1``, ``L <= 64``; see
:mod:`pymc_trees.core.tabular`) are split by sets of categories with XGBoost's hist rules
(``evaluate_splits.h``), in :func:`best_split_categorical`: one category against the rest when
``L < max_cat_to_onehot``, otherwise a partition found by sorting the node's categories by
their weight ``-G/(H + lambda)`` and scanning prefixes of that order (at most
``max_cat_threshold - 1`` categories), missing rows tried on both sides.  A categorical node
stores the codes that go left as the bit set ``cats`` (0 at numeric splits and leaves; never
0 at a categorical split), the packed rule shared with BART.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

__all__ = ["RT_EPS", "MAX_CATEGORIES", "SplitParams", "NodeArrays", "tree_capacity",
           "calc_weight", "node_gain", "as_float32", "valid_split", "best_split_categorical",
           "cat_left"]

RT_EPS = 1e-6


class SplitParams(NamedTuple):
    """The settings of the split rules and of the leaves, XGBoost's names in brackets: one
    bundle for the growers (numba passes it as a struct).  Build the floats with ``float`` and
    the integers with ``int`` so that every fit compiles the same signature."""

    max_depth: int  # levels below the root (``max_depth``)
    mcw: float  # least hessian sum of a child (``min_child_weight``)
    lam: float  # L2 penalty of leaf weights (``reg_lambda``)
    alpha: float  # L1 penalty of leaf weights (``reg_alpha``)
    mds: float  # clip of a leaf weight, 0 for none (``max_delta_step``)
    eta: float  # the leaves take ``eta`` times their weight (``learning_rate``)
    onehot: int  # one-vs-rest categorical splits below this many levels (``max_cat_to_onehot``)
    cat_thr: int  # most categories on a side of a partition (``max_cat_threshold``)


class NodeArrays(NamedTuple):
    """The node arrays a grower fills, each of the tree's capacity
    (:func:`tree_capacity`): ``feature`` (-1 at leaves), ``cut`` (the histogram grower: a
    row goes left when its bin is ``<= cut``, int64; the exact grower: when its value is
    ``<= cut``, float64), ``missing_left``, ``cats`` (uint64: the codes that go left at a
    categorical split, else 0), ``left`` (the left child; the right one is ``left + 1``),
    ``value`` (leaves: learning rate times the weight; internal nodes too, for pruning),
    ``loss_chg`` and ``cover`` (sum of h)."""

    feature: np.ndarray
    cut: np.ndarray
    missing_left: np.ndarray
    cats: np.ndarray
    left: np.ndarray
    value: np.ndarray
    loss_chg: np.ndarray
    cover: np.ndarray


def tree_capacity(max_depth: int) -> int:
    return 2 ** (max_depth + 1) - 1


@numba.njit(cache=True)
def calc_weight(G, H, lam, alpha, mds):
    if H <= 0.0:
        return 0.0
    if G > alpha:
        t = G - alpha
    elif G < -alpha:
        t = G + alpha
    else:
        t = 0.0
    w = -t / (H + lam)
    if mds != 0.0 and abs(w) > mds:
        w = mds if w > 0 else -mds
    return w


@numba.njit(cache=True)
def node_gain(G, H, lam, alpha, mds):
    if H <= 0.0:
        return 0.0
    if mds == 0.0 and alpha == 0.0:
        return G * G / (H + lam)  # the same value, with one division
    w = calc_weight(G, H, lam, alpha, mds)
    return -(2.0 * G * w + (H + lam) * w * w + 2.0 * alpha * abs(w))


@numba.njit(cache=True)
def as_float32(x):
    """A loss change as XGBoost stores and compares it (float32): candidates whose gains
    differ only by the rounding of sums taken in different orders tie, and the first wins."""
    return float(np.float32(x))


@numba.njit(cache=True)
def valid_split(HL, HR, mcw):
    return HL > 0.0 and HR > 0.0 and HL >= mcw and HR >= mcw


MAX_CATEGORIES = 64  # levels a categorical split can hold: the bits of the packed ``cats``


@numba.njit(cache=True)
def _cat_key(G, H, lam, alpha, mds):
    """XGBoost's sort key of a category in a partition-based split (``CalcWeightCat``, which
    is ``CalcWeight`` of ``param.h``): its leaf weight ``-T(G)/(H + lambda)`` (clipped at
    ``max_delta_step``; 0 when ``H <= 0``; ``min_child_weight`` plays no part), as float32."""
    return np.float32(calc_weight(G, H, lam, alpha, mds))


@numba.njit(cache=True)
def _level_mask(L):
    """The bit set of the codes ``0 .. L - 1`` (``L <= 64``)."""
    if L >= 64:
        return ~np.uint64(0)
    return (np.uint64(1) << np.uint64(L)) - np.uint64(1)


@numba.njit(cache=True)
def best_split_categorical(hv, L, Gt, Ht, root, mcw, lam, alpha, mds, max_cat_to_onehot,
                           max_cat_threshold, best):
    """The best split of one categorical feature at a node, XGBoost's hist rules
    (``evaluate_splits.h``: ``EnumerateOneHot``, ``EnumeratePart``).

    Parameters
    ----------
    hv : ndarray of shape (>= L, 2)
        ``hv[c] = (sum g, sum h)`` over the node's rows whose code is ``c``; rows missing the
        feature are not in it (they are ``(Gt, Ht)`` minus its sum).
    L : int
        Number of levels (codes ``0 .. L - 1``), at most 64.
    Gt, Ht : float
        The node's sums over all its rows; ``root`` its gain.
    max_cat_to_onehot, max_cat_threshold : int
        One-vs-rest splits when ``L < max_cat_to_onehot``; otherwise partitions, scanning at
        most ``max_cat_threshold - 1`` categories into a side.
    best : float
        Loss change to beat (strictly).

    Returns
    -------
    chg : float
        The best loss change found, or ``best`` when none beat it.
    found : bool
    missing_left : bool
    cats : uint64
        The codes that go left (never 0: see below).
    GL, HL : float
        Sums of the left child (missing rows included when ``missing_left``).

    Notes
    -----
    One-vs-rest (``L < max_cat_to_onehot``): for each category ``c`` in code order, ``c``
    alone goes right and the other categories left, first with the missing rows left, then
    with them right.  Partition: the categories are stably sorted by XGBoost's key, their
    weight ``-G/(H + lambda)`` (see :func:`_cat_key`), i.e. by descending ``G/(H + lambda)``;
    a forward scan sends growing prefixes of that order right and the rest, with the missing
    rows, left; a backward scan sends growing suffixes left and the rest, with the missing
    rows, right; each scan stops after ``min(max_cat_threshold, L) - 1`` categories.  Both
    directions are always tried (XGBoost does not look for missing rows first).  Candidates
    are compared as float32 and the first strictly best wins.  Categories without rows at the
    node are scanned like the others (they go where their place in the order puts them).  A
    split whose left side holds no category (one level, its rows right, the missing rows left)
    is returned mirrored, so that ``cats != 0`` marks every categorical split.
    """
    found = False
    b_dl = True
    b_cats = np.uint64(0)
    b_GL = 0.0
    b_HL = 0.0
    one = np.uint64(1)
    full = _level_mask(L)
    if L < max_cat_to_onehot:
        Gp = 0.0
        Hp = 0.0
        for c in range(L):
            Gp += hv[c, 0]
            Hp += hv[c, 1]
        Gm = Gt - Gp
        Hm = Ht - Hp
        for c in range(L):
            rest = full & ~(one << np.uint64(c))
            for missing_right in (False, True):
                GR = hv[c, 0] + (Gm if missing_right else 0.0)
                HR = hv[c, 1] + (Hm if missing_right else 0.0)
                GL = Gt - GR
                HL = Ht - HR
                if valid_split(HL, HR, mcw):
                    chg = as_float32(node_gain(GL, HL, lam, alpha, mds)
                                     + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, found, b_dl, b_cats, b_GL, b_HL = (chg, True, not missing_right,
                                                                 rest, GL, HL)
    else:
        keys = np.empty(L, np.float32)
        for c in range(L):
            keys[c] = _cat_key(hv[c, 0], hv[c, 1], lam, alpha, mds)
        order = np.argsort(keys, kind="mergesort")
        nb = min(max_cat_threshold, L)
        # forward: a prefix of the order right, the rest and the missing rows left
        GR = 0.0
        HR = 0.0
        right = np.uint64(0)
        for j in range(nb - 1):
            c = order[j]
            GR += hv[c, 0]
            HR += hv[c, 1]
            right |= one << np.uint64(c)
            GL = Gt - GR
            HL = Ht - HR
            if valid_split(HL, HR, mcw):
                chg = as_float32(node_gain(GL, HL, lam, alpha, mds)
                                 + node_gain(GR, HR, lam, alpha, mds) - root)
                if chg > best:
                    best, found, b_dl, b_cats, b_GL, b_HL = chg, True, True, full & ~right, GL, HL
        # backward: a suffix of the order left, the rest and the missing rows right
        GL = 0.0
        HL = 0.0
        lset = np.uint64(0)
        for j in range(L - 1, L - nb, -1):
            c = order[j]
            GL += hv[c, 0]
            HL += hv[c, 1]
            lset |= one << np.uint64(c)
            GR = Gt - GL
            HR = Ht - HL
            if valid_split(HL, HR, mcw):
                chg = as_float32(node_gain(GL, HL, lam, alpha, mds)
                                 + node_gain(GR, HR, lam, alpha, mds) - root)
                if chg > best:
                    best, found, b_dl, b_cats, b_GL, b_HL = chg, True, False, lset, GL, HL
    if found and b_cats == 0:  # only missing rows left: mirror the split
        b_cats = full
        b_dl = not b_dl
        b_GL = Gt - b_GL
        b_HL = Ht - b_HL
    return best, found, b_dl, b_cats, b_GL, b_HL


@numba.njit(cache=True, inline="always")
def cat_left(cats, code):
    """Whether the category ``code`` (a non-negative integer below 64) goes left."""
    return ((cats >> np.uint64(code)) & np.uint64(1)) != 0
