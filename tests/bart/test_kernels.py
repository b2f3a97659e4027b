"""numba kernels against naive Python on small inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_trees.core.binning import bin_data, make_cutpoints
from pymc_trees.bart.kernels.bundles import SweepData
from pymc_trees.bart.kernels.forest import FREE, forest_values
from pymc_trees.bart.kernels.nodes import log_ml, node_availability, partition
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior


def test_cutpoints_few_distinct_values_are_midpoints():
    X = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    cuts, ncuts = make_cutpoints(X, 100)
    assert ncuts.tolist() == [2, 0]
    np.testing.assert_array_equal(cuts[0, :2], [1.5, 2.5])


def test_cutpoints_many_values_are_thinned_to_quantiles():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=(5000, 1))
    cuts, ncuts = make_cutpoints(x, 20)
    c = cuts[0, : ncuts[0]]
    assert 15 <= ncuts[0] <= 20
    assert np.all(np.diff(c) > 0) and c[0] > x.min() and c[-1] < x.max()
    # roughly equal numbers of rows between consecutive cutpoints
    counts = np.diff(np.searchsorted(np.sort(x[:, 0]), c))
    assert counts.max() < 3 * counts.min()


def test_bins_match_naive():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 7, size=(200, 3)).astype(float)
    X[:, 2] = rng.normal(size=200)
    cuts, ncuts = make_cutpoints(X, 10)
    Xb = bin_data(X, cuts, ncuts)
    for v in range(3):
        naive = [(cuts[v, : ncuts[v]] < x).sum() for x in X[:, v]]
        assert Xb[:, v].tolist() == naive
        # bin <= k  <=>  x <= cut_k
        for k in range(ncuts[v]):
            np.testing.assert_array_equal(Xb[:, v] <= k, X[:, v] <= cuts[v, k])


@pytest.mark.parametrize("min_leaf", [1, 2, 5])
def test_node_availability_matches_brute_force(min_leaf):
    rng = np.random.default_rng(min_leaf)
    X = rng.integers(0, 6, size=(40, 4)).astype(float)
    X[:, 3] = 2.0  # constant feature: never available
    cuts, ncuts = make_cutpoints(X, 100)
    Xb = bin_data(X, cuts, ncuts)
    sp = np.array([1.0, 0.0, 2.5, 1.0])  # feature 1 has prior weight 0
    hist = np.zeros((4, cuts.shape[1] + 1), np.int32)
    lo = np.zeros(4, np.int32)
    hi = np.zeros(4, np.int32)
    for trial in range(30):
        rows = rng.choice(40, size=rng.integers(1, 40), replace=False).astype(np.int32)
        idx = np.concatenate([np.zeros(3, np.int32), rows])  # segment starts at 3
        wsum = node_availability(Xb, idx, 3, idx.size, ncuts, np.zeros(4, bool), min_leaf, sp,
                                 hist, lo, hi)
        expect_w = 0.0
        for v in range(4):
            avail = [k for k in range(ncuts[v]) if sp[v] > 0
                     and min_leaf <= (Xb[rows, v] <= k).sum() <= rows.size - min_leaf]
            got = list(range(lo[v], hi[v] + 1))
            assert got == avail, (v, got, avail)
            expect_w += sp[v] if avail else 0.0
        assert wsum == pytest.approx(expect_w)


def test_partition_matches_naive():
    rng = np.random.default_rng(3)
    Xb = rng.integers(0, 5, size=(50, 2)).astype(np.uint16)
    idx = rng.permutation(50).astype(np.int32)
    before = set(idx[5:45].tolist())
    mid = partition(Xb, idx, 5, 45, 1, 2)
    assert set(idx[5:45].tolist()) == before
    assert np.all(Xb[idx[5:mid], 1] <= 2) and np.all(Xb[idx[mid:45], 1] > 2)


def test_log_ml_differences_match_gaussian_marginal():
    """log_ml drops a partition-free term; its differences between partitions must equal those
    of the exact Gaussian marginal likelihood (with row precisions omega)."""
    rng = np.random.default_rng(4)
    n = 7
    r = rng.normal(size=n)
    omega = rng.uniform(0.5, 3.0, size=n)
    sd = 0.7

    def exact(groups):
        C = np.diag(1 / omega)
        for g in groups:
            e = np.zeros(n)
            e[g] = 1
            C = C + sd**2 * np.outer(e, e)
        _, logdet = np.linalg.slogdet(C)
        return -0.5 * (logdet + r @ np.linalg.solve(C, r))

    def ours(groups):
        return sum(log_ml(omega[g].sum(), (omega[g] * r[g]).sum(), 1 / sd**2) for g in groups)

    a = [[0, 1, 2, 3, 4, 5, 6]]
    b = [[0, 1, 2], [3, 4, 5, 6]]
    c = [[0], [1, 2], [3, 4, 5, 6]]
    assert ours(b) - ours(a) == pytest.approx(exact(b) - exact(a), rel=1e-10)
    assert ours(c) - ours(b) == pytest.approx(exact(c) - exact(b), rel=1e-10)


def test_packed_forest_predicts_like_training_state_and_naive_walk():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(300, 4))
    z = X[:, 0] * 3 + np.sin(6 * X[:, 1])
    fs = ForestSampler(X, TreePrior(m=20, min_leaf=3), offset=0.25, leaf_sd=0.3)
    cp = np.cumsum([0.25, 0.25, 0.4, 0.1])
    for _ in range(30):
        fs.cgm_sweep(rng, z - 0.25, np.full(300, 4.0), cp)
    packed = fs.pack()
    f_train = fs.values()
    np.testing.assert_array_equal(packed.predict(X), f_train)  # bit for bit

    X_new = rng.uniform(-0.2, 1.2, size=(50, 4))

    def naive(x):
        tot = packed.offset
        for t in range(packed.m):
            k = packed.start[t]
            while packed.feature[k] >= 0:
                k = packed.left[k] if x[packed.feature[k]] <= packed.threshold[k] else packed.right[k]
            tot += packed.value[k]
        return tot

    np.testing.assert_allclose(packed.predict(X_new), [naive(x) for x in X_new], rtol=1e-12)


@pytest.mark.parametrize("table", [False, True])
@pytest.mark.parametrize("sampler", ["cgm", "pg", "gfr"])
def test_forest_state_is_consistent_after_sweeps(sampler, table):
    """leaf_of_row agrees with routing each row down its tree, cached availability and the
    availability masks agree with a recomputation (also after the split weights change), and
    every leaf keeps >= min_leaf rows; also with missing values in a numeric column (two
    features inside) and a categorical column with a missing level (every rule a valid set of
    the levels present at its node)."""
    from pymc_trees.bart.kernels.nodes import goes_left

    rng = np.random.default_rng(6)
    X = np.column_stack([rng.uniform(size=(200, 2)), rng.integers(0, 3 + 2 * table, 200)])
    cat = None
    if table:
        X[rng.uniform(size=200) < 0.15, 0] = np.nan
        X[rng.uniform(size=200) < 0.1, 2] = np.nan
        cat = np.array([False, False, True])
    fs = ForestSampler(X, TreePrior(m=10, min_leaf=4, alpha=0.95, beta=1.0), 0.0, 0.5, cat)
    q = fs.layout.q
    assert q == (4 if table else 3)
    fs.set_split_weights(np.array([0.2, 0.5, 0.3]))
    cp = np.cumsum([0.25, 0.25, 0.4, 0.1])
    y = (np.where(np.nan_to_num(X[:, 0], nan=0.7) > 0.5, 2.0, -1.0) + X[:, 1]
         + np.nan_to_num(X[:, 2], nan=1.5))
    hist = np.zeros((q, fs.layout.max_cuts + 1), np.int32)
    lo = np.zeros(q, np.int32)
    hi = np.zeros(q, np.int32)
    for it in range(50):
        if sampler == "cgm" or (sampler == "gfr" and it % 2):
            fs.cgm_sweep(rng, y, np.full(200, 10.0), cp)
        elif sampler == "pg":
            fs.pg_sweep(rng, y, np.full(200, 10.0), 5)
        else:
            fs.gfr_sweep(rng, y, np.full(200, 10.0))
    f = fs.forest
    used = set()
    for weights in (np.array([0.2, 0.5, 0.3]), np.array([0.6, 0.1, 0.3])):
        fs.set_split_weights(weights)
        partial = 0
        for t in range(f.m):
            for i in range(200):
                k = 0
                while f.var[t, k] >= 0:
                    go = goes_left(fs.Xb[i, f.var[t, k]], f.cut[t, k])
                    k = f.left[t, k] if go else f.right[t, k]
                assert f.leaf_of_row[t, i] == k
            for k in range(f.n_nodes[t]):
                if f.var[t, k] < -1:
                    continue
                rows = np.flatnonzero(_rows_below(f, t, k, fs.Xb)).astype(np.int32)
                w = node_availability(fs.Xb, rows, 0, rows.size, fs.ncuts, fs.iscat, 4,
                                      fs.split_prior, hist, lo, hi)
                assert f.wavail[t, k] == pytest.approx(w)
                bits = sum(1 << v for v in range(q) if lo[v] <= hi[v])
                # the kept rule ranges are the recomputed ones (empty ranges compared as empty)
                klo, khi = f.amask[t, k, :q], f.amask[t, k, q:]
                for v in range(q):
                    if lo[v] <= hi[v]:
                        assert (klo[v], khi[v]) == (lo[v], hi[v])
                    else:
                        assert klo[v] > khi[v]
                partial += 0 < bits < (1 << q) - 1
                if f.var[t, k] == -1:
                    assert rows.size >= 4
                    continue
                v, c = f.var[t, k], f.cut[t, k]
                used.add(int(v))
                assert f.ncut[t, k] == hi[v] - lo[v] + 1
                if c >= 0:
                    assert lo[v] <= c <= hi[v]
                else:  # a set of present levels leaving min_leaf rows on each side
                    present = -lo[v]
                    assert lo[v] < 0 and (~c) & ~present == 0
                    nl = sum(goes_left(fs.Xb[i, v], c) for i in rows)
                    assert 4 <= nl <= rows.size - 4
        assert partial > 0  # some nodes have lost a feature
    if table:
        assert 3 in used and used & {0, 1}  # the category and a feature of the gap column


def _rows_below(f, t, k, Xb):
    path = []
    node = k
    while f.parent[t, node] >= 0:
        par = f.parent[t, node]
        path.append((par, f.left[t, par] == node))
        node = par
    mask = np.ones(Xb.shape[0], bool)
    for par, went_left in path:
        c = f.cut[t, par]
        b = Xb[:, f.var[t, par]].astype(np.int64)
        goes_left = b <= c if c >= 0 else ((~c >> b) & 1) == 1
        mask &= goes_left if went_left else ~goes_left
    return mask


def test_forest_values_sum_in_tree_order():
    value = np.array([[0.1, 0.2], [0.3, 1e16]])
    leaf = np.array([[0, 1], [1, 0]], np.int32)
    out = np.empty(2)
    forest_values(value, leaf, 1.0, out)
    assert out[0] == ((1.0 + 0.1) + 1e16)
    assert out[1] == ((1.0 + 0.2) + 0.3)
    assert not math.isnan(out.sum())


def test_forest_values_in_blocks_equal_tree_order_sums():
    # more rows than one block of the kernel (2,048), uneven at the end
    rng = np.random.default_rng(3)
    m, n = 7, 5000
    value = rng.normal(size=(m, 4)) * 10.0 ** rng.integers(-8, 8, size=(m, 4))
    leaf = rng.integers(0, 4, size=(m, n)).astype(np.uint8)
    out = np.empty(n)
    forest_values(value, leaf, 0.25, out)
    expect = np.full(n, 0.25)
    for t in range(m):
        expect = expect + value[t, leaf[t]]
    np.testing.assert_array_equal(out, expect)


@pytest.mark.slow
@pytest.mark.parametrize("with_categorical", [False, True])
def test_block_prediction_equals_naive_walk_with_nan_and_uneven_trees(with_categorical):
    """The blocked, branch-free prediction kernel (serial and parallel) against a plain walk:
    random trees of uneven depth, NaN sent either way, a row count that is not a multiple of
    the block size, and a forest that starts inside a larger node array (as in a trace); and
    with categorical splits on a column of level codes (a level goes left when its bit of
    ``cats`` is set)."""
    from pymc_trees.core.packed import predict_packed, predict_packed_parallel
    from pymc_trees.core.packed import NODE_DTYPE

    rng = np.random.default_rng(11)
    nodes = []
    nf = 4 if with_categorical else 3

    def grow_into(k, depth):
        if depth < 7 and rng.uniform() < 0.75:
            left = len(nodes)
            nodes.extend([None, None])
            grow_into(left, depth + 1)
            grow_into(left + 1, depth + 1)
            v = int(rng.integers(nf))
            cats = int(rng.integers(1, 2**40)) if v == 3 else 0
            nodes[k] = (v, left, float(rng.normal()) if v < 3 else 0.0, 0.0,
                        int(rng.integers(2)), cats)
        else:
            nodes[k] = (-1, -1, 0.0, float(rng.normal()), 1, 0)

    pad = 5  # the forest starts at node 5 of the array
    nodes.extend([(-1, -1, 0.0, 9.0, 1, 0)] * pad)
    starts = [pad]
    for _ in range(12):
        k = len(nodes)
        nodes.append(None)
        grow_into(k, 0)
        starts.append(len(nodes))
    arr = np.array(nodes, dtype=NODE_DTYPE)
    start = np.array(starts, np.int64)
    X = rng.normal(size=(203, nf))
    if with_categorical:
        X[:, 3] = rng.integers(0, 40, size=203)
    X[rng.uniform(size=X.shape) < 0.2] = np.nan

    def naive(x):
        tot = 0.7
        for t in range(start.size - 1):
            k = start[t]
            while arr[k]["feature"] >= 0:
                v = x[arr[k]["feature"]]
                if np.isnan(v):
                    go_left = bool(arr[k]["missing_left"])
                elif arr[k]["cats"]:
                    go_left = bool((int(arr[k]["cats"]) >> int(v)) & 1)
                else:
                    go_left = v <= arr[k]["threshold"]
                k = arr[k]["left"] if go_left else arr[k]["left"] + 1
            tot += arr[k]["value"]
        return tot

    want = np.array([naive(x) for x in X])
    for kernel in (predict_packed, predict_packed_parallel):
        out = np.empty(X.shape[0])
        kernel(start, arr, 0.7, X, out)
        np.testing.assert_array_equal(out, want)


def test_sweep_reuses_tree_sums_only_for_the_same_trees():
    """The tree sums a CGM sweep starts from come from the last values() (kept in
    ``_tree_sums``) only while the trees (rules, links, leaf values) and its buffer are
    unchanged since; after a level shift, new scratch or a sweep they are summed again."""
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(300, 3))
    y = np.sin(5 * X[:, 0]) + 0.1 * rng.standard_normal(300)
    fs = ForestSampler(X, TreePrior(m=8), 0.3, 0.4)
    cp = np.cumsum([0.25, 0.25, 0.4, 0.1])
    for _ in range(5):
        fs.cgm_sweep(rng, y - 0.3, np.full(300, 4.0), cp)
    f = fs.forest
    direct = np.empty(300)

    def check():
        fs._load_tree_sums()
        forest_values(f.value, f.leaf_of_row, 0.0, direct)
        np.testing.assert_allclose(fs._tree_sums.buf, direct, rtol=0, atol=1e-12)

    fs.values()
    check()  # the cached sums
    # taken by the sweep's start, which writes the buffer
    assert fs._tree_sums.holds(fs._forest_key()) is None
    fs.values()
    assert fs._tree_sums.holds(fs._forest_key()) == "sums"
    fs.level_shift(rng, 0.0, 0.0, 1.0)  # every leaf moves: the cache must not be used
    assert fs._tree_sums.holds(fs._forest_key()) is None
    check()
    fs.values()
    fs._alloc_scratch()  # a new, zeroed buffer (the forest's capacity grew)
    check()
    fs.values()
    fs.cgm_sweep(rng, y - 0.3, np.full(300, 4.0), cp)  # starts from the cache
    assert np.all(np.isfinite(fs._tree_sums.buf))
    assert fs._tree_sums.holds(fs._forest_key()) == "values"  # for values() to take
    swept = fs._tree_sums.buf.copy()
    np.testing.assert_array_equal(fs.values(), swept)
    fs.cgm_sweep(rng, y - 0.3, np.full(300, 4.0), cp)
    check()


@pytest.mark.parametrize("omega_const", [0.0, 2.5])
@pytest.mark.parametrize("rule", [7, ~0b1011])
def test_split_sums_equal_naive_children_sums(omega_const, rule):
    # the grow's and the change's children statistics, taken without moving the rows, for a
    # numeric cut (bin <= 7) and a categorical set (levels {0, 1, 3} go left), on rows in an
    # uneven number (not a multiple of the four lanes) and in no particular order
    from pymc_trees.bart.kernels.row_sums import split_sums

    rng = np.random.default_rng(11)
    n, p, v = 1003, 3, 1
    XbT = rng.integers(0, 16 if rule >= 0 else 5, size=(p, n)).astype(np.uint8)
    r = rng.normal(size=n) * 10.0 ** rng.integers(-3, 3, size=n)
    omega = np.full(n, omega_const) if omega_const > 0 else rng.gamma(2.0, size=n)
    idx = rng.permutation(n)[:997].astype(np.int32)
    out = np.zeros(4)
    split_sums(XbT, v, rule, idx, idx.size, r, omega, omega_const, out)
    b = XbT[v, idx]
    left = b <= rule if rule >= 0 else ((~rule >> b) & 1) == 1
    assert 0 < left.sum() < idx.size
    w, x = omega[idx], omega[idx] * r[idx]
    expect = [w[left].sum(), x[left].sum(), w[~left].sum(), x[~left].sum()]
    np.testing.assert_allclose(out, expect, rtol=1e-12, atol=1e-12)


def test_sweep_keeps_every_leafs_row_count():
    """With equal precisions the sweep's pass reads each leaf's W from the counts the sweeps
    keep (it sums the residuals only): after sweeps with all four moves, and after a sweep of
    another kind changed the trees, the kept counts are the counts of the rows' leaves."""
    from pymc_trees.bart.kernels.row_passes import leaf_counts
    from pymc_trees.bart.kernels.forest import LEAF

    rng = np.random.default_rng(5)
    n = 403
    X = rng.uniform(size=(n, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(n)
    fs = ForestSampler(X, TreePrior(m=6, min_leaf=3), 0.3, 0.4)
    cp = np.cumsum([0.3, 0.2, 0.35, 0.15])
    accepted = 0.0

    def check():
        f = fs.forest
        key, kept = fs._tree_sums.counts
        assert key == fs._structure_key()
        recount = np.zeros(f.var.shape)
        leaf_counts(f.leaf_of_row, recount)
        leaves = f.var == LEAF
        np.testing.assert_array_equal(kept[leaves], recount[leaves])

    for s in range(30):
        rates = fs.cgm_sweep(rng, y - 0.3, np.full(n, 4.0 + s), cp)
        accepted += sum(v for v in rates.values() if np.isfinite(v))
        check()
    assert accepted > 0  # the trees did change
    # unequal precisions: the counts are not kept; the next equal-precision sweep counts anew
    fs.cgm_sweep(rng, y - 0.3, rng.uniform(1.0, 5.0, n), cp)
    assert fs._tree_sums.counts is None
    fs.gfr_sweep(rng, y - 0.3, np.full(n, 4.0))
    fs.cgm_sweep(rng, y - 0.3, np.full(n, 4.0), cp)
    check()


@pytest.mark.parametrize("min_leaf", [1, 5])
def test_availability_below_equals_counting_every_bin(min_leaf):
    """A child's available rules from its parent's ranges (reading rows until both ends are
    settled, counting a feature's bins only when they are not) equal the full count, for
    children of numeric and categorical splits, small children, a feature the parent lacked
    and one with split probability 0."""
    from pymc_trees.bart.kernels.nodes import availability_below

    rng = np.random.default_rng(9)
    n, p = 2000, 5
    Xb = np.empty((n, p), np.uint8)
    Xb[:, 0] = rng.integers(0, 40, n)           # numeric, many bins
    Xb[:, 1] = rng.integers(0, 3, n)            # numeric, few bins
    Xb[:, 2] = rng.integers(0, 5, n)            # categorical levels
    Xb[:, 3] = rng.integers(0, 40, n) // 8 * 8  # numeric, bins with gaps
    Xb[:, 4] = 0                                # one value: no rule
    XbT = np.ascontiguousarray(Xb.T)
    ncuts = np.array([39, 2, 4, 39, 0], np.int32)
    iscat = np.array([False, False, True, False, False])
    hist = np.zeros((p, 41), np.int32)
    checked = 0
    for trial in range(60):
        split_prior = rng.uniform(0.5, 1.5, p)
        if trial % 7 == 0:
            split_prior[3] = 0.0
        size = int(rng.choice([8, 30, 400, 2000]))
        parent = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        plo = np.zeros(p, np.int32)
        phi = np.zeros(p, np.int32)
        node_availability(Xb, parent, 0, size, ncuts, iscat, min_leaf, split_prior, hist, plo,
                          phi)
        # the child: a numeric or categorical rule of the parent, or random rows of it
        kind = trial % 3
        if kind == 0:
            child = parent[Xb[parent, 0] <= rng.integers(0, 40)]
        elif kind == 1:
            child = parent[np.isin(Xb[parent, 2], rng.choice(5, 2, replace=False))]
        else:
            child = parent[rng.uniform(size=size) < 0.5]
        idx = np.concatenate([np.zeros(3, np.int32), child.astype(np.int32)])  # start 3
        lo = np.zeros(p, np.int32)
        hi = np.zeros(p, np.int32)
        data = SweepData(Xb, XbT, ncuts, iscat, split_prior)
        w = availability_below(data, idx, 3, idx.size, min_leaf, plo, phi, hist, lo, hi)
        elo = np.zeros(p, np.int32)
        ehi = np.zeros(p, np.int32)
        ew = node_availability(Xb, idx, 3, idx.size, ncuts, iscat, min_leaf, split_prior, hist,
                               elo, ehi)
        assert w == ew
        np.testing.assert_array_equal(lo <= hi, elo <= ehi)
        has = elo <= ehi
        np.testing.assert_array_equal(lo[has], elo[has])
        np.testing.assert_array_equal(hi[has], ehi[has])
        checked += has.sum()
    assert checked > 100


@pytest.mark.parametrize("t", [0, 2])
def test_pass_with_proposal_sums_equals_naive_pass_and_left_sums(t):
    # the CGM pass that also sums a proposal's rows (a grow's leaf, or a change's two leaves,
    # under a numeric rule): the residual and the leaves' sums of the plain pass, and the rows
    # of the marked nodes that the rule sends left, against numpy; at t = 0 the previous tree
    # (the last one) is not taken out; rows in an uneven number (not a multiple of four)
    from pymc_trees.bart.kernels.row_passes import pass_left_sums, values_two

    rng = np.random.default_rng(23 + t)
    n, m, K, p = 1003, 4, 9, 3
    L = rng.integers(0, K, size=(m, n)).astype(np.uint8)
    value = rng.normal(size=(m, K))
    XbT = rng.integers(0, 12, size=(p, n)).astype(np.uint8)
    r = rng.normal(size=n)
    tp, back = (t - 1, 1.0) if t > 0 else (m - 1, 0.0)
    v, c, marked = 2, 6, [3, 7]
    sel = np.zeros(K)
    sel[marked] = 1.0
    acc = np.zeros(8 * K)
    r_new = r.copy()
    vp = value[tp] if t > 0 else np.zeros(K)  # the first tree takes no tree out
    nl, sl = pass_left_sums(t, tp, vp, L, value, r_new, acc, K, sel, XbT, v, c)
    expect_r = r + value[t, L[t]] - back * value[tp, L[tp]]
    np.testing.assert_allclose(r_new, expect_r, rtol=0, atol=1e-14)
    sums = acc[:K] + acc[K:2 * K] + acc[2 * K:3 * K] + acc[3 * K:4 * K]
    np.testing.assert_allclose(sums, np.bincount(L[t], expect_r, K), rtol=1e-12, atol=1e-12)
    left = np.isin(L[t], marked) & (XbT[v] <= c)
    assert 0 < left.sum() < np.isin(L[t], marked).sum()
    assert nl == left.sum()
    np.testing.assert_allclose(sl, expect_r[left].sum(), rtol=1e-12, atol=1e-12)
    # the values of trees t - 2 and t - 1, added in that order
    fsum = rng.normal(size=n)
    f2 = fsum.copy()
    values_two(0, 1, L, value, f2)
    np.testing.assert_array_equal(f2, (fsum + value[0, L[0]]) + value[1, L[1]])


@pytest.mark.parametrize("n", [1006, 1011])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_plain_passes_equal_a_row_by_row_pass(n, dtype):
    # the CGM passes with equal precisions (one-byte leaf indices read eight at a time) give
    # exactly the residual, lanes of leaf sums and values of the row-by-row pass: row i adds
    # to lane i mod 4, the rows after the last multiple of four to lane 0; n = 1006 and 1011
    # leave rows after the last multiple of eight in both kinds of lane
    from pymc_trees.bart.kernels.row_passes import pass_one, pass_pair, values_two

    rng = np.random.default_rng(n)
    m, K = 5, 11
    L = rng.integers(0, K, size=(m, n)).astype(dtype)
    value = rng.normal(size=(m, K))
    r0, f0 = rng.normal(size=n), rng.normal(size=n)
    n4 = n - n % 4

    def reference(t, tp, back, tq):
        r, f, acc = r0.copy(), f0.copy(), np.zeros(8 * K)
        for i in range(n):
            vb = back * value[tp, L[tp, i]]
            r[i] = r[i] + value[t, L[t, i]] - vb
            if tq >= 0:
                f[i] = (f[i] + value[tq, L[tq, i]]) + vb
            acc[(i % 4 if i < n4 else 0) * K + L[t, i]] += r[i]
        return r, f, acc

    for t, tp, back in [(0, m - 1, 0.0), (3, 2, 1.0)]:
        r, acc = r0.copy(), np.zeros(8 * K)
        pass_one(t, tp, back * value[tp], L, value, r, acc, K)
        er, _, eacc = reference(t, tp, back, -1)
        np.testing.assert_array_equal(r, er)
        np.testing.assert_array_equal(acc, eacc)
    r, f, acc = r0.copy(), f0.copy(), np.zeros(8 * K)
    pass_pair(4, 3, 2, L, value, r, f, acc, K)
    er, ef, eacc = reference(4, 3, 1.0, 2)
    np.testing.assert_array_equal(r, er)
    np.testing.assert_array_equal(f, ef)
    np.testing.assert_array_equal(acc, eacc)
    f = f0.copy()
    values_two(2, 3, L, value, f)
    np.testing.assert_array_equal(f, (f0 + value[2, L[2]]) + value[3, L[3]])


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["both", "left_leaf", "right_leaf"])
def test_two_level_sums_equal_naive_leaf_sums(shape):
    # a node whose children split into two leaves each (or one child is a leaf): the four
    # leaves' statistics in one pass over the rows, against sums over boolean masks
    from pymc_trees.bart.kernels.row_sums import ALL_LEFT, two_level_sums

    rng = np.random.default_rng(17)
    n, p = 1001, 3
    XbT = rng.integers(0, 6, size=(p, n)).astype(np.uint8)
    r = rng.normal(size=n)
    idx = rng.permutation(n)[:995].astype(np.int32)
    v0, c0 = 0, 2
    vL, cL = (1, 3) if shape != "left_leaf" else (0, ALL_LEFT)
    vR, cR = (2, ~0b10110) if shape != "right_leaf" else (0, ALL_LEFT)  # categorical on the right
    out = np.zeros(8)
    splits = tuple(np.int64(x) for x in (v0, c0, vL, cL, vR, cR))
    two_level_sums(XbT, splits, idx, idx.size, r, 0.5, out)
    b = XbT[:, idx]
    g = b[v0] <= c0
    gl = b[vL] <= cL
    gr = ((~cR >> b[vR]) & 1) == 1 if cR < 0 else b[vR] <= cR
    masks = [g & gl, g & ~gl, ~g & gr, ~g & ~gr]
    expect = np.ravel([[0.5 * m.sum(), 0.5 * r[idx][m].sum()] for m in masks])
    np.testing.assert_allclose(out, expect, rtol=1e-12, atol=1e-12)
    assert all(m.sum() > 0 for m in masks if shape == "both")
    # the same with the rows' own sum known (a subtree's root): the last leaf by difference
    # and a leaf child's rule not read
    known = np.full(8, np.nan)
    two_level_sums(XbT, splits, idx, idx.size, r, 0.5, known,
                   0.5 * r[idx].sum())
    np.testing.assert_allclose(known, expect, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("m", [1, 4])
@pytest.mark.parametrize("equal", [True, False])
def test_values_from_the_residual_and_exactly_every_so_often(m, equal, monkeypatch):
    """exact_values=False (a term whose values stay out of the trace): with equal
    precisions a CGM sweep returns the pseudo-data minus the residual it keeps, equal to
    the trees' sum up to rounding and not summed tree by tree (not always the same bits);
    after EXACT_VALUES_EVERY - 1 such sweeps in a row one sums them exactly.  Unequal
    precisions always sum them exactly."""
    import pymc_trees.bart.samplers.sampler as sampler_module

    monkeypatch.setattr(sampler_module, "EXACT_VALUES_EVERY", 4)
    rng = np.random.default_rng(10 + m)
    n = 3001
    X = rng.uniform(size=(n, 4))
    y = np.sin(5 * X[:, 0]) + rng.normal(0, 0.1, n)
    w = np.full(n, 50.0) if equal else rng.uniform(10, 60, n)
    fs = ForestSampler(X, TreePrior(m=m), 0.37, 0.2, exact_values=False)
    cp = np.cumsum([0.5, 0.5, 0.0, 0.0])
    direct = np.empty(n)
    same = []
    for it in range(12):
        fs.cgm_sweep(rng, y - 0.37, w, cp)
        v = fs.values()
        forest_values(fs.forest.value, fs.forest.leaf_of_row, 0.37, direct)
        np.testing.assert_allclose(v, direct, rtol=1e-13, atol=1e-13)
        same.append(np.array_equal(v, direct))
    # sweeps 4, 8 and 12 sum exactly; the others take the residual's (with equal precisions)
    exact = [it % 4 == 3 for it in range(12)]
    assert [s for s, e in zip(same, exact) if e] == [True] * 3
    assert all(same) != equal


@pytest.mark.parametrize("m", [1, 4, 5, 23])
@pytest.mark.parametrize("equal", [True, False])
def test_sweep_returns_the_values_forest_values_gives(m, equal):
    """A CGM sweep adds every tree, once final, to the values it returns (in the pass of the
    next tree), in tree order from the offset: the same numbers as forest_values to the last
    bit, which values() then hands out without summing the trees again; after two sweeps
    without values() between, and with equal or unequal row precisions."""
    rng = np.random.default_rng(m)
    n = 3001  # not a multiple of the pass's four rows
    X = rng.uniform(size=(n, 4))
    y = np.sin(5 * X[:, 0]) + rng.normal(0, 0.1, n)
    w = np.full(n, 50.0) if equal else rng.uniform(10, 60, n)
    fs = ForestSampler(X, TreePrior(m=m), 0.37, 0.2)
    cp = np.cumsum([0.25, 0.25, 0.4, 0.1])
    direct = np.empty(n)
    for it in range(8):
        fs.cgm_sweep(rng, y - 0.37, w, cp)
        if it % 3 == 0:
            fs.cgm_sweep(rng, y - 0.37, w, cp)
        v = fs.values()
        forest_values(fs.forest.value, fs.forest.leaf_of_row, 0.37, direct)
        np.testing.assert_array_equal(v, direct)


@pytest.mark.parametrize("precisions", ["equal", "row by row"])
def test_sweeps_in_one_kernel_call_are_the_sweeps_one_by_one(precisions):
    """``cgm_sweep(..., sweeps=k)`` runs k sweeps in one kernel call: the same random numbers,
    forest, values and move counts as k calls of one sweep (the trees' sum passes between the
    sweeps without the offset, which only the last adds)."""
    from pymc_trees.bart.term.plan import make_forest_sampler

    rng = np.random.default_rng(5)
    X = rng.uniform(size=(300, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1] + rng.normal(0, 0.2, 300)
    w = np.full(300, 25.0) if precisions == "equal" else rng.uniform(10.0, 40.0, 300)
    moves = np.array([0.25, 0.5, 0.9, 1.0])
    pair = [make_forest_sampler(X, TreePrior(m=8), 0.7, 0.3) for _ in range(2)]
    for fs in pair:
        fs.gfr_sweep(np.random.default_rng(1), y - 0.7, w)
    one, many = np.random.default_rng(2), np.random.default_rng(2)
    for _ in range(3):
        each = pair[0].cgm_sweep(one, y - 0.7, w, moves)
    together = pair[1].cgm_sweep(many, y - 0.7, w, moves, sweeps=3)
    a, b = pair[0].forest, pair[1].forest
    # the three sweeps in one call had room made for 6 new nodes a tree, not 2
    K = a.capacity
    assert b.capacity >= K and np.all(b.var[:, K:] == FREE)
    np.testing.assert_array_equal(a.n_nodes, b.n_nodes)
    for field in ("var", "cut", "left", "right", "value"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field)[:, :K])
    np.testing.assert_array_equal(pair[0].values(), pair[1].values())
    assert one.random() == many.random()
    # the rates are over all three sweeps: not those of the last sweep alone
    assert set(each) == set(together)
    assert 0 < together["accept_grow"] < 1


def test_sweeps_in_one_kernel_call_have_room_for_every_grow():
    """Each sweep may grow every tree by two nodes and the kernel does not check the arrays'
    room, so k sweeps in one call need room for 2 k new nodes a tree: from stumps in arrays
    of 32 slots, 40 sweeps of mostly grows fill 33 or more (before the fix the count of slots
    in use went past the arrays, a write out of bounds)."""
    from pymc_trees.bart.term.plan import make_forest_sampler

    rng = np.random.default_rng(5)
    X = rng.uniform(size=(300, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1]
    fs = make_forest_sampler(X, TreePrior(m=2, alpha=0.99, beta=0.1), 0.0, 0.3)
    assert fs.forest.capacity == 32
    fs.cgm_sweep(rng, y, np.full(300, 100.0), np.array([0.95, 1.0, 1.0, 1.0]), sweeps=40)
    f = fs.forest
    assert f.n_nodes.max() > 32
    assert f.n_nodes.max() <= f.capacity
    np.testing.assert_allclose(fs.values(), fs.pack().predict(X), atol=1e-12)


def test_sweeps_must_be_a_positive_integer():
    import pymc as pm

    import pymc_trees as pmt

    X = np.linspace(0, 1, 20)[:, None]
    with pm.Model():
        f = pmt.BARTTree("f", X, X[:, 0], m=2)
        pm.Normal("y", mu=f, sigma=1.0, observed=X[:, 0])
        for bad in (0, 2.5, True):
            with pytest.raises(ValueError, match="sweeps must be a positive integer"):
                pmt.CGMTreeStep([f], sweeps=bad)
        assert pmt.PGTreeStep([f], sweeps=3).sweeps == 3
