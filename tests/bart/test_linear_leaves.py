"""Linear leaves (``BARTTree(..., response="linear")``) against closed forms and enumeration.

* The leaf's log marginal likelihood against the Gaussian density it stands for.
* The exact posterior over trees, each leaf with its regressor (the column of the split above
  it), enumerated by brute force on tables small enough, against the forests ``pm.sample``
  stores: one tree on two numeric columns; two trees on one column with per-row scales and
  a multiplier (the pseudo-data of docs/math.md section 1); the level shift of an intercept.  The
  posterior mean and second moment of f at every row check the coefficients' draw.
* Prediction, saving and interpretation of linear leaves (hand-built forests with gaps), and
  the refusals.

Tolerances as in ``tests/bart/test_enumeration.py``: total variation against a bound from the ESS
of the five most probable cells (``check_cells``), f moments within 4 Monte Carlo SEs.
"""

from __future__ import annotations

import itertools
import math
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from enumeration import check_cells, normalise
from pymc_trees.bart.kernels.linear import linear_log_ml, standardize_columns

ALPHA, BETA, LEAF_SD = 0.95, 1.0, 1.0


# --- the sweep's pass over the rows ----------------------------------------------------------


@pytest.mark.parametrize("equal_precisions", [True, False])
def test_the_pass_sums_a_proposals_leaves_as_the_collected_rows_do(equal_precisions):
    """The linear sweep's pass over the rows sums the leaves a grow, a change or a prune
    would make (the proposal's rows with the new regressor, split by a numeric rule) as the
    moves' sums over the collected, stably partitioned rows do, to rounding (the pass of
    trees of at most two leaves adds in vector lanes); and every leaf's own five sums as the
    naive sums; both for the pass of small trees and the plain one."""
    from pymc_trees.bart.kernels.forest import LEAF
    from pymc_trees.bart.kernels.linear import leaf_regressors, rows_sums
    from pymc_trees.bart.kernels.linear import LinearRows
    from pymc_trees.bart.kernels.linear_sweep import linear_pass, new_pass_cache
    from pymc_trees.bart.kernels.small_pass import two_leaves
    from pymc_trees.bart.kernels.tree_edit import pair_rows, partition_rows
    from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
    from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs

    rng = np.random.default_rng(7)
    n = 500
    Xr = rng.uniform(size=(n, 4))
    Xr[rng.random(n) < 0.1, 2] = np.nan  # a column with gaps: its own features
    yr = np.sin(3 * Xr[:, 0]) + rng.normal(size=n)
    fs = LinearForestSampler(Xr, TreePrior(m=16, response="linear"), 0.0, 0.3)
    omega = np.full(n, 2.5) if equal_precisions else rng.uniform(0.5, 2.0, n)
    for _ in range(30):  # trees of a few leaves
        fs.cgm_sweep(rng, yr, omega, move_cumulative_probs({"grow": .5, "prune": .5}))
    f, Z, XbT = fs.forest, fs.Z, fs._XbT
    K = f.capacity
    sums = np.zeros((5, K))
    W, Wz, Wzz, S, Sz = sums
    reg = np.empty(K, np.int64)
    reg_prev = np.empty(K, np.int64)
    fusion = np.zeros(11)
    idx, tmp = np.empty(n, np.int64), np.empty(n, np.int64)
    oc = float(omega[0]) if equal_precisions else 0.0
    checked = {True: 0, False: 0}
    for t in range(1, f.m):
        small = two_leaves(f.arrays(), t)[0] >= 0 and two_leaves(f.arrays(), t - 1)[0] >= 0
        leaf_regressors(t - 1, f.var, f.parent, f.n_nodes, fs.regcol, fs.lin, reg_prev)
        leaf_regressors(t, f.var, f.parent, f.n_nodes, fs.regcol, fs.lin, reg)
        leaves = [k for k in range(f.n_nodes[t]) if f.var[t, k] == LEAF]
        for fa, fb in [(leaves[0], leaves[0]), (leaves[0], leaves[-1])]:
            for fv, fc, jn in [(1, int(f.ncut.max()) // 2, 1), (-1, 0, 2), (3, 0, -1)]:
                r = rng.normal(size=n)
                r_in = r.copy()
                linear_pass(t, f.arrays(), fs.slope, (reg, reg_prev), LinearRows(fs.regcol, Z),
                            (r, omega, oc), sums, new_pass_cache(f.m, K), (fa, fb, fv, fc, jn),
                            XbT, fusion)
                # the residual after the pass, then the rows collected as the moves do
                cnt = pair_rows(t, fa, fb, f.leaf_of_row, idx)
                mid = cnt if fv < 0 else partition_rows(XbT, idx, 0, cnt, fv, fc, tmp)
                L = rows_sums(idx, 0, mid, jn, Z, r, omega)
                R = rows_sums(idx, mid, cnt, jn, Z, r, omega)
                assert fusion[0] == 1.0
                np.testing.assert_allclose(fusion[1:11], L + R, rtol=1e-12, atol=1e-12)
                # every leaf's own sums, naively (its regressor, the rows' final residual)
                for k in leaves:
                    rows = np.flatnonzero(f.leaf_of_row[t] == k)
                    z = Z[reg[k], rows] if reg[k] >= 0 else np.zeros(rows.size)
                    w, wr = omega[rows], omega[rows] * r[rows]
                    np.testing.assert_allclose(
                        [W[k], Wz[k], Wzz[k], S[k], Sz[k]],
                        [w.sum(), (w * z).sum(), (w * z * z).sum(), wr.sum(), (wr * z).sum()],
                        rtol=1e-12, atol=1e-12)
                # the residual: tree t - 1's values out, tree t's in
                vals = np.zeros((2, n))
                for row, (tt, rg) in enumerate([(t - 1, reg_prev), (t, reg)]):
                    k_ = f.leaf_of_row[tt]
                    zz = np.where(rg[k_] >= 0, Z[np.maximum(rg[k_], 0), np.arange(n)], 0.0)
                    vals[row] = f.value[tt, k_] + fs.slope[tt, k_] * zz
                np.testing.assert_allclose(r, r_in + vals[1] - vals[0], rtol=1e-12, atol=1e-12)
                checked[small] += 1
    assert checked[True] >= 12 and checked[False] >= 12, checked


@pytest.mark.parametrize("mix", [False, True])
def test_the_counts_a_tree_keeps_give_the_draws_of_counting_afresh(mix):
    """The plain pass takes a tree's counts and moments from the cache while the tree's
    nodes and leaf regressors are those they were stored with (kernels/linear_sweep.py):
    sweeps with the cache kept draw the same forests, to the bit, as sweeps with the cache
    emptied before each, with trees that grow, are pruned, change their rules and (with
    ``response="mix"``) their kind.  A key that misses a rule's cut or a leaf's regressor
    makes them differ."""
    from pymc_trees.bart.kernels.forest import LEAF
    from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
    from pymc_trees.bart.samplers.tree_prior import TreePrior

    rng = np.random.default_rng(11)
    n = 400
    X = rng.uniform(size=(n, 4))
    y = np.sin(4 * X[:, 0]) + 2 * X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    omega = np.full(n, 1 / 0.09)
    runs = []
    for keep in (True, False):
        fs = LinearForestSampler(X, TreePrior(m=8, response="mix" if mix else "linear"), 0.0,
                                 0.3)
        draw = np.random.default_rng(3)
        kept = 0
        for _ in range(40):
            if not keep:
                fs._pass_cache = None
            fs.cgm_sweep(draw, y, omega, None, 1)
            kept = max(kept, int((fs._pass_cache[2] >= 0).sum()))
        f = fs.forest
        leaves = [(f.var[t, :f.n_nodes[t]] == LEAF).sum() for t in range(f.m)]
        runs.append((f.var.copy(), f.cut.copy(), f.value.copy(), fs.slope.copy(), fs.lin.copy()))
        if keep:
            assert kept >= 3 and max(leaves) >= 3, (kept, leaves)  # the cache was used
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_the_values_are_the_packed_forests_predictions_to_the_bit():
    """The values at the training rows (a traced term's) equal the packed forest's
    predictions to the bit, for trees of at most two leaves (read as a choice between two
    lines) and larger ones, with gaps in a regressor column."""
    from pymc_trees.bart.kernels.small_pass import two_leaves
    from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
    from pymc_trees.bart.samplers.tree_prior import TreePrior

    rng = np.random.default_rng(21)
    n = 400
    X = rng.uniform(size=(n, 3))
    X[rng.random(n) < 0.1, 1] = np.nan
    z = np.sin(3 * X[:, 0]) + np.nan_to_num(X[:, 1]) + 0.3 * rng.normal(size=n)
    fs = LinearForestSampler(X, TreePrior(m=16, response="linear"), 0.1, 0.3)
    for _ in range(25):
        fs.cgm_sweep(rng, z - 0.1, np.full(n, 4.0), None)
    f = fs.forest.arrays()
    small = sum(two_leaves(f, t)[0] >= 0 for t in range(16))
    assert 3 <= small <= 13, small  # both kinds of tree
    np.testing.assert_array_equal(fs.pack().predict(X), fs.values())


# --- the leaf's marginal likelihood ------------------------------------------------------------


def _log_normal(y, cov):
    sign, logdet = np.linalg.slogdet(cov)
    return -0.5 * (len(y) * math.log(2 * math.pi) + logdet + y @ np.linalg.solve(cov, y))


@pytest.mark.parametrize("has_slope", [False, True])
def test_leaf_log_ml_is_the_gaussian_marginal_over_the_likelihood_at_zero(has_slope):
    rng = np.random.default_rng(4)
    n, sd = 7, 0.8
    r = rng.normal(size=n)
    omega = rng.uniform(0.5, 3.0, size=n)
    zz = rng.normal(size=n)
    prec0 = 1 / sd**2
    design = np.c_[np.ones(n), zz] if has_slope else np.ones((n, 1))
    D = np.eye(design.shape[1]) * (sd**2 / 2 if has_slope else sd**2)
    want = (_log_normal(r, np.diag(1 / omega) + design @ D @ design.T)
            - _log_normal(r, np.diag(1 / omega)))
    got = linear_log_ml(omega.sum(), (omega * zz).sum(), (omega * zz**2).sum(),
                        (omega * r).sum(), (omega * zz * r).sum(), has_slope, prec0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- enumeration ------------------------------------------------------------------------------


def enumerate_linear_trees(X, alpha, beta, min_leaf=1):
    """All trees over the rows of X (numeric columns, a cut between consecutive distinct
    values, ``min_leaf`` rows each side), as (log prior, frozenset of (rows, regressor)):
    a leaf's regressor is the column of the split above it, -1 at the root."""
    n, p = X.shape
    memo = {}

    def trees(rows, d, reg):
        key = (rows, d, reg)
        if key in memo:
            return memo[key]
        avail = {}
        for v in range(p):
            vals = np.unique(X[list(rows), v])
            ks = [c for c in (vals[:-1] + vals[1:]) / 2
                  if min_leaf <= sum(X[i, v] <= c for i in rows) <= len(rows) - min_leaf]
            if ks:
                avail[v] = ks
        if not avail:
            memo[key] = [(0.0, frozenset([(rows, reg)]))]
            return memo[key]
        ps = alpha * (1 + d) ** (-beta)
        out = [(math.log1p(-ps), frozenset([(rows, reg)]))]
        for v, ks in avail.items():
            for c in ks:
                rule = math.log(ps) - math.log(len(avail)) - math.log(len(ks))
                lrows = tuple(i for i in rows if X[i, v] <= c)
                rrows = tuple(i for i in rows if X[i, v] > c)
                for (lp_l, pl), (lp_r, pr) in itertools.product(trees(lrows, d + 1, v),
                                                                 trees(rrows, d + 1, v)):
                    out.append((rule + lp_l + lp_r, pl | pr))
        memo[key] = out
        return out

    prior = {}
    for lp, cell in trees(tuple(range(n)), 0, -1):
        prior[cell] = prior.get(cell, 0.0) + math.exp(lp)
    return prior


def _design(cell, Z, sd):
    """The design matrix of one tree's coefficients and their prior variances."""
    n = Z.shape[0]
    cols, var = [], []
    for rows, reg in sorted(cell, key=lambda c: (c[0], c[1])):
        ind = np.zeros(n)
        ind[list(rows)] = 1.0
        if reg < 0:
            cols.append(ind)
            var.append(sd**2)
        else:
            cols += [ind, ind * Z[:, reg]]
            var += [sd**2 / 2, sd**2 / 2]
    return np.array(cols).T, np.array(var)


def mixed(prior: dict) -> dict:
    """The prior over the cells of response="mix": each tree linear or constant with
    probability 1/2 (a constant tree's leaves have no regressor)."""
    out = {}
    for cell, p in prior.items():
        const = frozenset((rows, -1) for rows, _ in cell)
        out[cell] = out.get(cell, 0.0) + p / 2
        out[const] = out.get(const, 0.0) + p / 2
    return out


def exact_linear(X, y, sigma, m, sd=LEAF_SD, b=None, extra=(), mix=False):
    """Exact posterior over m-tuples of trees (leaves integrated jointly), the prior of the
    tuples, and the exact mean and second moment of f at every row.  ``extra``: more
    (design, variance) blocks integrated with the trees (an intercept)."""
    n = len(y)
    Z = standardize_columns(X, np.zeros(X.shape[1], bool))[0].T  # (n, p)
    prior = enumerate_linear_trees(X, ALPHA, BETA)
    if mix:
        prior = mixed(prior)
    bvec = np.ones(n) if b is None else np.asarray(b, float)
    noise = np.diag(np.broadcast_to(np.asarray(sigma, float) ** 2, (n,)).copy())
    logs, prior_m, parts = {}, {}, {}
    for combo in itertools.product(list(prior), repeat=m):
        blocks = [_design(c, Z, sd) for c in combo] + list(extra)
        B = np.hstack([blk[0] for blk in blocks])
        V = np.concatenate([blk[1] for blk in blocks])
        DB = bvec[:, None] * B
        logs[combo] = (sum(math.log(prior[c]) for c in combo)
                       + _log_normal(y, noise + DB @ np.diag(V) @ DB.T))
        prior_m[combo] = math.prod(prior[c] for c in combo)
        parts[combo] = (B, V, DB)
    post = normalise(logs)
    prec = 1 / np.broadcast_to(np.asarray(sigma, float) ** 2, (n,))
    mean, second = np.zeros(n), np.zeros(n)
    last = np.zeros(2)  # mean and second moment of the last coefficient (of ``extra``)
    for combo, pc in post.items():
        B, V, DB = parts[combo]
        k = sum(_design(c, Z, sd)[0].shape[1] for c in combo)  # the trees' coefficients
        cov = np.linalg.inv(DB.T @ (prec[:, None] * DB) + np.diag(1 / V))
        mu = cov @ DB.T @ (prec * y)
        Bf = B[:, :k]
        m_f = Bf @ mu[:k]
        v_f = np.einsum("ij,jk,ik->i", Bf, cov[:k, :k], Bf)
        mean += pc * m_f
        second += pc * (v_f + m_f**2)
        last += pc * np.array([mu[-1], cov[-1, -1] + mu[-1] ** 2])
    if extra:
        return post, prior_m, mean, second, last
    return post, prior_m, mean, second


def linear_cells(forest, X):
    """Per tree of a packed forest, the frozenset of (rows, regressor) of its leaves."""
    out = []
    nodes = forest.nodes
    for t in range(forest.m):
        groups = {}
        for i, x in enumerate(X):
            k = int(forest.start[t])
            while nodes[k]["feature"] >= 0:
                go_left = x[nodes[k]["feature"]] <= nodes[k]["threshold"]
                k = int(nodes[k]["left"]) + (0 if go_left else 1)
            groups.setdefault(k, []).append(i)
        out.append(frozenset((tuple(rows), -2 - int(nodes[k]["feature"])
                              if nodes[k]["feature"] < -1 else -1)
                             for k, rows in groups.items()))
    return tuple(out)


def _check(idata, X, post, prior, mean, second, name="f"):
    parts = [[linear_cells(fr, X) for fr in chain] for chain in pmt.forests(idata, name).values]
    check_cells(parts, post, prior)
    f = idata.posterior[name]
    for stat, exact_val in (("mean", mean), ("second", second)):
        draws = f if stat == "mean" else f**2
        got = draws.mean(("chain", "draw")).values
        se = np.asarray(az.mcse(draws.values)).ravel()
        assert np.all(np.abs(got - exact_val) < 4 * se), (stat, got, exact_val, se)


X2 = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0], [1.0, 2.0], [2.0, 0.0]])
Y2 = np.array([-1.2, -0.1, 1.4, 2.9, 0.2, 0.9])


@pytest.mark.slow
def test_one_tree_on_two_columns_matches_enumeration():
    post, prior, mean, second = exact_linear(X2, Y2, 1.0, 1)
    with pm.Model():
        f = pmt.BARTTree("f", X2, m=1, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         split_prior="uniform", response="linear")
        pm.Normal("y", mu=f, sigma=1.0, observed=Y2)
        idata = pm.sample(draws=20000, tune=300, chains=2, cores=1, random_seed=31,
                          progressbar=False, compute_convergence_checks=False)
    _check(idata, X2, post, prior, mean, second)


@pytest.mark.slow
def test_mix_of_linear_and_constant_trees_matches_enumeration():
    """response="mix": each tree's kind has prior 1/2 and is drawn given the tree."""
    post, prior, mean, second = exact_linear(X2, Y2, 0.8, 1, mix=True)
    with pm.Model():
        f = pmt.BARTTree("f", X2, m=1, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         split_prior="uniform", response="mix")
        pm.Normal("y", mu=f, sigma=0.8, observed=Y2)
        idata = pm.sample(draws=30000, tune=300, chains=2, cores=1, random_seed=34,
                          progressbar=False, compute_convergence_checks=False)
    _check(idata, X2, post, prior, mean, second)
    parts = [linear_cells(fr, X2)[0] for fr in pmt.forests(idata, "f").values.ravel()]
    linear = np.mean([any(reg >= 0 for _, reg in c) for c in parts])
    exact = sum(p for c, p in post.items() if any(reg >= 0 for _, reg in c[0]))
    assert 0.2 < exact < 0.8 and abs(linear - exact) < 0.05  # both kinds are visited


X1 = np.repeat(np.arange(4.0), 2)[:, None]
Y1 = np.array([0.1, -0.4, 0.9, 0.3, 2.6, 2.1, 1.5, 2.2])


@pytest.mark.slow
def test_two_trees_with_row_scales_and_a_multiplier_match_enumeration():
    """y ~ Normal(a + b * f, s): per-row precisions, b = 0 rows (no information)."""
    a = np.linspace(-0.5, 0.5, 8)
    b = np.array([1.0, 2.0, 0.0, 1.5, -1.0, 1.0, 0.5, 2.0])
    s = np.array([0.5, 0.8, 1.0, 0.6, 0.7, 0.9, 0.5, 1.2])
    post, prior, mean, second = exact_linear(X1, Y1 - a, s, 2, b=b)
    with pm.Model():
        f = pmt.BARTTree("f", X1, m=2, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         split_prior="uniform", response="linear")
        pm.Normal("y", mu=a + b * f, sigma=s, observed=Y1)
        idata = pm.sample(draws=30000, tune=300, chains=2, cores=1, random_seed=32,
                          progressbar=False, compute_convergence_checks=False)
    _check(idata, X1, post, prior, mean, second)


@pytest.mark.slow
def test_level_shift_of_an_intercept_matches_enumeration():
    """y ~ Normal(a + f(x), sigma), a ~ Normal(m0, s0), m = 2 trees with linear leaves: a is
    moved only by the tree step's level shift (its own step is a Metropolis with a negligible
    proposal), whose conditional weighs each leaf's b0 by its own prior precision.  20,000
    draws per chain: N_eff 3,104 of the cells, tolerance 0.144 against TV(prior, posterior)
    / 3 = 0.184 (power from N_eff 1,909)."""
    m0, s0, sigma = 0.5, 1.5, 0.6
    X = np.arange(5.0)[:, None]
    y = np.array([-2.0, -2.0, 2.0, 2.5, -1.0])
    post, prior, mean, second, mom = exact_linear(X, y - m0, sigma, 2,
                                                  extra=[(np.ones((5, 1)), np.array([s0**2]))])
    with pm.Model():
        # one column: DART's split probabilities are 1 whatever it draws (uniform: the same
        # posterior without DART's draws)
        f = pmt.BARTTree("f", X, m=2, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         response="linear", split_prior="uniform")
        a = pm.Normal("a", m0, s0)
        pm.Normal("y", mu=a + f, sigma=sigma, observed=y)
        step = [pmt.CGMTreeStep([f]), pm.Metropolis([a], S=np.array([1e-9]), tune=None)]
        idata = pm.sample(draws=20000, tune=300, chains=2, cores=1, step=step, random_seed=33,
                          progressbar=False, compute_convergence_checks=False)
    parts = [[linear_cells(fr, X) for fr in ch] for ch in pmt.forests(idata, "f").values]
    check_cells(parts, post, prior)
    a_draws = idata.posterior["a"]
    exact_a = (m0 + mom[0], mom[1] + 2 * m0 * mom[0] + m0**2)
    for j, draws in enumerate((a_draws, a_draws**2)):
        got = float(draws.mean())
        se = float(np.asarray(az.mcse(draws.values)))
        assert abs(got - exact_a[j]) < 4 * se, (j, got, exact_a[j], se)


# --- prediction, saving, interpretation, refusals ---------------------------------------------


def _table(n, seed):
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    u = rng.uniform(-1, 1, n)
    shop = rng.choice(["a", "b", "c"], n)
    y = np.where(x > 0, 1 + 2 * u, -1 - u) + (shop == "a") + 0.2 * rng.normal(size=n)
    x[rng.uniform(size=n) < 0.1] = np.nan  # gaps in a regressor column
    return pd.DataFrame({"x": x, "u": u, "shop": pd.Categorical(shop)}), y


@pytest.fixture(scope="module")
def fitted():
    df, y = _table(120, 1)
    with pm.Model():
        f = pmt.BARTTree("f", df, y, m=8, response="linear")
        pm.Normal("y", mu=f, sigma=pm.HalfNormal("s", 1.0), observed=y)
        idata = pm.sample(draws=40, tune=40, chains=2, cores=1, random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    return idata, df


def test_forests_predict_the_training_values_after_saving(fitted, tmp_path):
    idata, df = fitted
    f = idata.posterior["f"]
    np.testing.assert_allclose(pmt.predict(idata, df).values, f.values, rtol=1e-12, atol=1e-12)
    feats = np.concatenate([fr.nodes["feature"] for fr in pmt.forests(idata, "f").values.ravel()])
    linear = feats[feats < -1]
    assert linear.size > 0
    assert set(-2 - linear) <= {0, 1}  # slopes on x and u, never on the categorical shop
    path = tmp_path / "lin.nc"
    idata.to_netcdf(path)
    import xarray as xr

    back = xr.open_datatree(path)
    np.testing.assert_allclose(pmt.predict(back, df).values, f.values, rtol=1e-12, atol=1e-12)


def test_new_rows_beyond_the_training_range_hold_the_line_at_its_end(fitted, tmp_path):
    # A linear leaf's line is fitted on the training rows; at a value far past them it is
    # held at the end of the training range (the suite's diamonds table had a test row 6 times
    # past the training maximum of a column, and its prediction moved by 27 on a log scale)
    idata, df = fitted
    lo, hi = np.nanmin(df["u"]), np.nanmax(df["u"])
    far, edge = df.iloc[:4].copy(), df.iloc[:4].copy()
    far["u"], edge["u"] = [40.0, -40.0, 40.0, -40.0], [hi, lo, hi, lo]
    # the model's definition beyond the data (as a constant leaf's), so without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = pmt.predict(idata, far).values
    np.testing.assert_array_equal(got, pmt.predict(idata, edge).values)
    # kept with the trace, and the training rows are not moved
    path = tmp_path / "range.nc"
    idata.to_netcdf(path)
    import xarray as xr

    back = xr.open_datatree(path)
    np.testing.assert_array_equal(pmt.predict(back, far).values, got)
    np.testing.assert_array_equal(pmt.predict(back, df).values, pmt.predict(idata, df).values)


def test_partial_dependence_of_linear_leaves_is_the_mean_of_predictions(fitted):
    idata, df = fitted
    grid = [-0.5, 0.25, np.nan]
    res = pmt.partial_dependence(idata, df, "u", grid=grid, max_draws=None)
    for g, v in enumerate(grid):
        d = df.copy()
        d["u"] = v
        want = pmt.predict(idata, d).mean("obs").values
        # the same means added in another order: equal to rounding, also where they are
        # near 0 (hence the absolute tolerance, on values of order 0.1)
        np.testing.assert_allclose(res["average"].values[..., g], want, rtol=1e-12, atol=1e-12)
    # u is a slope column: its curve moves with u
    assert np.ptp(res["average"].mean(("chain", "draw")).values[:2]) > 0.1


def test_a_linear_leaf_predicts_its_line_and_drops_its_column_to_its_mean():
    from pymc_trees.core.packed import NODE_DTYPE, PackedForest, center_bits
    from pymc_trees.interpret.sources import _Trees

    # x0 <= 0.5 ? (leaf: 1 + 2 (x1 - 0.3)) : (leaf: -1 - 0.5 (x0 - 0.7)), NaN in x0 left
    nodes = np.zeros(3, NODE_DTYPE)
    nodes[0] = (0, 1, 0.5, 0.0, 1, 0)
    nodes[1] = (-2 - 1, -1, 2.0, 1.0, 1, center_bits(np.array([0.3]))[0])
    nodes[2] = (-2 - 0, -1, -0.5, -1.0, 1, center_bits(np.array([0.7]))[0])
    forest = PackedForest(np.array([0, 3], np.int32), nodes, 0.25)
    X = np.array([[0.1, 0.9], [0.9, 0.2], [np.nan, 0.4], [0.2, np.nan], [1.5, 0.0]])
    want = 0.25 + np.array([1 + 2 * 0.6, -1 - 0.5 * 0.2, 1 + 2 * 0.1, 1.0, -1 - 0.5 * 0.8])
    np.testing.assert_allclose(forest.predict(X), want, rtol=1e-15)
    trees = _Trees(nodes, np.array([[0, 3]]), np.array([0.25]))
    np.testing.assert_allclose(trees.predict(X)[0], want, rtol=1e-15)
    # dropping x1 (the left leaf's slope column): that leaf's line is replaced by its mean
    # over the rows of X that reach it (rows 0, 2, 3; row 3's x1 is missing: 0)
    left_mean = 1 + 2 * np.mean([0.9 - 0.3, 0.4 - 0.3, 0.0])
    got = trees.predict(X, excluded=np.array([False, True]))[0]
    np.testing.assert_allclose(got[[0, 2, 3]], 0.25 + left_mean, rtol=1e-14)
    np.testing.assert_allclose(got[[1, 4]], want[[1, 4]], rtol=1e-14)
    # dropping x0: rows go both ways, 3 of 5 rows go left; the right leaf's line at its mean
    right_mean = -1 - 0.5 * np.mean([0.9 - 0.7, 1.5 - 0.7])
    got = trees.predict(X, excluded=np.array([True, False]))[0]
    line_left = 1 + 2 * (np.nan_to_num(X[:, 1], nan=0.3) - 0.3)
    np.testing.assert_allclose(got, 0.25 + 0.6 * line_left + 0.4 * right_mean, rtol=1e-14)


def test_leaf_stats_count_coefficients_over_their_prior_variances():
    from pymc_trees.bart.term.plan import make_forest_sampler
    from pymc_trees.bart.samplers.tree_prior import TreePrior

    df, y = _table(80, 2)
    schema, _ = pmt.TableSchema.from_training(df)
    X = schema.encode(df)
    fs = make_forest_sampler(X, TreePrior(m=5, response="linear"), 0.0, 0.5,
                             np.array([False, False, True]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        fs.cgm_sweep(rng, y, np.full(80, 4.0), None)
    f = fs.forest
    L, Q = 0.0, 0.0
    for t in range(f.m):
        for k in range(f.n_nodes[t]):
            if f.var[t, k] != -1:
                continue
            par = f.parent[t, k]
            slope_col = fs.regcol[f.var[t, par]] if par >= 0 else -1
            if slope_col >= 0:
                L += 2
                Q += (f.value[t, k] ** 2 + fs.slope[t, k] ** 2) / 0.5
            else:
                L += 1
                Q += f.value[t, k] ** 2
                assert fs.slope[t, k] == 0.0
    np.testing.assert_allclose(fs.leaf_stats(), (L, Q), rtol=1e-12)
    assert L > f.m  # some leaves are linear


def test_prior_draws_give_each_coefficient_its_variance():
    from pymc_trees.bart.kernels.linear import linear_prior_leaves
    from pymc_trees.bart.kernels.forest import LEAF

    # one tree: a root split on column 0 (two linear leaves), one on a categorical feature
    var = np.array([[0, LEAF, LEAF], [1, LEAF, LEAF], [LEAF, -2, -2]], np.int32)
    parent = np.array([[-1, 0, 0], [-1, 0, 0], [-1, -1, -1]], np.int32)
    n_nodes = np.array([3, 3, 1], np.int32)
    regcol = np.array([0, -1])
    rng = np.random.default_rng(3)
    draws = []
    for _ in range(20000):
        value = np.zeros((3, 3))
        slope = np.zeros((3, 3))
        linear_prior_leaves(rng, var, parent, n_nodes, regcol, np.ones(3, np.uint8), 2.0,
                            value, slope)
        draws.append((value[0, 1], slope[0, 1], value[1, 1], slope[1, 1], value[2, 0]))
    sd = np.std(np.array(draws), axis=0)
    # linear leaves: sd 2 / sqrt(2); constant leaves (categorical parent, root): 2
    # the relative sd of a sample sd of N normal draws is 1 / sqrt(2 N): 4 of them
    np.testing.assert_allclose(sd[[0, 1, 4, 2]], [2 / np.sqrt(2)] * 2 + [2.0, 2.0],
                               rtol=4 / np.sqrt(2 * 20000))
    assert np.all(np.array(draws)[:, 3] == 0.0)


def test_refusals_name_the_fix():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = np.random.default_rng(1).poisson(3.0, 30)
    with pytest.raises(ValueError, match="response must be one of"):
        pmt.BARTTree.dist(X, response="quadratic", leaf_sd=1.0)
    with pm.Model():
        f = pmt.BARTTree("f", X, y.astype(float), m=5, response="linear", sampler="pg")
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        with pytest.raises(pmt.ModelStructureError, match="sampler='cgm'"):
            pmt.PGTreeStep([f])


@pytest.mark.parametrize("response", ["linear", "mix"])
def test_move_probs_are_refused_where_the_user_passes_them(response):
    """Linear leaves have their own moves, which a user's move_probs would not change: the
    tree step refuses them at its construction (as ``pm.sample(cgm_tree={"move_probs": ...})``
    builds it), naming the argument and the fix; without them the step builds."""
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = np.random.default_rng(1).normal(size=30)
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=3, response=response)
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        with pytest.raises(ValueError, match="move_probs=.*response='constant'"):
            pmt.CGMTreeStep([f], move_probs={"grow": 0.5, "prune": 0.5})
        pmt.CGMTreeStep([f])


@pytest.mark.parametrize("response", ["constant", "linear"])
def test_new_rows_through_pm_set_data_and_a_two_output_term(response):
    """Also a (2, n) Normal whose scalar sigma PyMC broadcasts to shape (1, 1) (read as every
    output's: it used to fail with an IndexError)."""
    rng = np.random.default_rng(8)
    X = rng.uniform(-1, 1, size=(60, 2))
    y = np.stack([2 * X[:, 0], -X[:, 1]]) + 0.1 * rng.normal(size=(2, 60))
    Xn = rng.uniform(-1, 1, size=(9, 2))
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        f = pmt.BARTTree("f", Xd, y[0], m=6, response=response, shape=(2, Xd.shape[0]))
        pm.Normal("y", mu=f, sigma=0.1, observed=y, shape=f.shape)
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=3, progressbar=False,
                          compute_convergence_checks=False)
        np.testing.assert_allclose(pmt.predict(idata, X).values, idata.posterior["f"].values,
                                   rtol=1e-12, atol=1e-12)
        pm.set_data({"X": Xn})
        pp = pmt.sample_posterior_predictive(idata, var_names=["f"], predictions=True,
                                             progressbar=False)
    assert pp.predictions["f"].shape == (1, 20, 2, 9)
    np.testing.assert_array_equal(pp.predictions["f"].values, pmt.predict(idata, Xn).values)
    feats = np.concatenate([fr.nodes["feature"] for fr in pmt.forests(idata, "f").values.ravel()])
    assert (feats < -1).any() == (response == "linear")  # linear leaves in the outputs' trees
    # sigma = 0.1 is read for both outputs: their fits follow 2 x0 and -x1
    fit = idata.posterior["f"].isel(draw=slice(10, None)).mean(("chain", "draw")).values
    assert np.corrcoef(fit[0], 2 * X[:, 0])[0, 1] > 0.9
    assert np.corrcoef(fit[1], -X[:, 1])[0, 1] > 0.9
