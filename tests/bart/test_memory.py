"""What a training row costs: narrow leaf-index and bin types that widen when they must, a
sampler pickled (to PyMC's worker processes) without its per-row arrays, and the rows' leaves
of the old forest let go before a new one is allocated."""

from __future__ import annotations

import pickle
import weakref

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc_trees.bart.kernels.forest import leaf_index_dtype
from pymc_trees.bart.term.plan import make_forest_sampler
from pymc_trees.bart.samplers.tree_prior import TreePrior

MOVES = np.array([0.25, 0.5, 0.9, 1.0])


def test_leaf_index_type_holds_every_slot():
    assert leaf_index_dtype(256) == np.uint8  # slots 0 .. 255
    assert leaf_index_dtype(257) == np.uint16
    assert leaf_index_dtype(65_536) == np.uint16
    assert leaf_index_dtype(65_537) == np.int32


def test_rule_masks_are_16_bit_up_to_15_category_bins():
    """The available-rule ranges of every node (``Forest.amask``) are int16 unless a numeric
    feature has 32,767 cutpoints or more or a categorical one more than 15 bins: a small
    category no longer takes int32, which compiled every sweep a second time.  At 15 bins a
    node holding every level stores its range ``-(2**15 - 1) .. `` and reads it back whole."""
    from pymc_trees.bart.kernels.forest import load_mask, mask_dtype, store_mask
    from pymc_trees.bart.kernels.nodes import node_availability
    from pymc_trees.core.features import build_layout

    num, cat = np.array([False]), np.array([True])
    assert mask_dtype(np.array([400]), num) == np.int16
    assert mask_dtype(np.array([32_767]), num) == np.int32
    assert mask_dtype(np.array([14]), cat) == np.int16  # 15 bins
    assert mask_dtype(np.array([15]), cat) == np.int32  # 16 bins
    assert mask_dtype(np.array([400, 14]), np.array([False, True])) == np.int16

    codes = np.repeat(np.arange(15.0), 3)[:, None]  # 15 levels of 3 rows
    lay = build_layout(codes, np.array([True]), 100)
    assert mask_dtype(lay.ncuts, lay.iscat) == np.int16
    lo, hi = np.zeros(1, np.int32), np.zeros(1, np.int32)
    node_availability(lay.Xb, np.arange(45, dtype=np.int32), 0, 45, lay.ncuts, lay.iscat, 1,
                      np.ones(1), np.zeros((1, lay.max_cuts + 1), np.int32), lo, hi)
    assert lo[0] == -(2 ** 15 - 1) and hi[0] > lo[0]
    amask = np.zeros((1, 1, 2), mask_dtype(lay.ncuts, lay.iscat))
    store_mask(amask, 0, 0, lo, hi)
    got_lo, got_hi = np.zeros(1, np.int32), np.zeros(1, np.int32)
    load_mask(amask, 0, 0, got_lo, got_hi)
    assert (got_lo[0], got_hi[0]) == (lo[0], hi[0])


def _fitted(response="constant", numcut=100, m=20, n=3000, seed=0, cgm=True):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 4))
    X[rng.uniform(size=X.shape) < 0.05] = np.nan
    y = np.sin(6 * np.nan_to_num(X[:, 0])) + X[:, 1] + rng.normal(0, 0.1, n)
    fs = make_forest_sampler(X, TreePrior(m=m, numcut=numcut, response=response), 0.0, 0.3)
    w = np.full(n, 100.0)
    fs.gfr_sweep(np.random.default_rng(1), y, w)
    if cgm:
        fs.cgm_sweep(np.random.default_rng(2), y, w, MOVES)
    return fs, X, y, w


def test_16_bit_bins_and_a_leaf_index_that_widens_past_256_slots():
    """More than 255 cutpoints take 16-bit bins (8-bit at 255 or fewer).  The warm start
    keeps trees within 127 slots (8-bit leaf index); a forest that needs more slots moves to
    16 bits with the same leaves, values and predictions, and the sweeps go on.  (Numba
    compiles CGM's sweep once per combination of these types, about 40 s of one core on a
    cold cache: one test takes both wide types.)"""
    fs, X, y, w = _fitted(numcut=400, cgm=False)
    assert fs.Xb.dtype == np.uint16 and fs.ncuts.max() > 255
    f = fs.forest
    assert f.capacity <= 256 and f.leaf_of_row.dtype == np.uint8
    assert f.n_nodes.max() <= 127
    np.testing.assert_allclose(fs.pack().predict(X), fs.values(), atol=1e-9)
    leaves, values = f.leaf_of_row.copy(), fs.values()
    f.ensure_capacity(300)
    assert f.leaf_of_row.dtype == np.uint16
    np.testing.assert_array_equal(f.leaf_of_row, leaves)
    np.testing.assert_array_equal(fs.values(), values)
    fs._alloc_scratch()
    fs.cgm_sweep(np.random.default_rng(3), y, w, MOVES)
    assert f.leaf_of_row.dtype == np.uint16
    np.testing.assert_allclose(fs.pack().predict(X), fs.values(), atol=1e-9)
    fs8, *_ = _fitted(numcut=100, cgm=False)
    assert fs8.Xb.dtype == np.uint8


@pytest.mark.parametrize("response", ["constant", "linear"])
def test_pickled_sampler_leaves_its_rows_behind_and_continues_the_same_chain(response):
    """PyMC pickles a step for each worker process: the sampler travels without the rows'
    leaves and the sweep scratch, and on arrival routes the rows to the same leaves, so that
    the next sweep with the same generator gives the same forest."""
    fs, X, y, w = _fitted(response, m=200, n=20_000)
    blob = pickle.dumps(fs)
    # against pickling its attributes as they are: at least the m x n leaf index less
    full = len(pickle.dumps(dict(vars(fs))))
    assert len(blob) < full - fs.forest.leaf_of_row.nbytes
    fs2 = pickle.loads(blob)
    np.testing.assert_array_equal(fs2.forest.leaf_of_row, fs.forest.leaf_of_row)
    np.testing.assert_array_equal(fs2.values(), fs.values())
    fs.cgm_sweep(np.random.default_rng(3), y, w, MOVES)
    fs2.cgm_sweep(np.random.default_rng(3), y, w, MOVES)
    np.testing.assert_array_equal(fs2.values(), fs.values())


def test_reset_lets_go_of_the_old_rows_first():
    """A chain's start (``reset``) must not hold two m x n leaf indexes at once: the old
    forest's buffer is freed (not kept alive by a view) before the new one exists."""
    fs, *_ = _fitted()
    old = fs.forest
    gone = weakref.ref(old.leaf_of_row)
    fs.reset()
    assert gone() is None and old.leaf_of_row.size == 0
    assert fs.forest.leaf_of_row.shape == (20, 3000) and not fs.forest.leaf_of_row.any()


def test_released_rows_come_back_routed_and_the_chain_goes_on_the_same():
    fs, X, y, w = _fitted(m=30)
    twin = pickle.loads(pickle.dumps(fs))
    leaves, values = fs.forest.leaf_of_row.copy(), fs.values()
    fs.release_rows()
    assert fs.forest.leaf_of_row.shape == (30, 0) and fs._scratch is None
    np.testing.assert_array_equal(fs.values(), values)
    np.testing.assert_array_equal(fs.forest.leaf_of_row, leaves)
    fs.release_rows()
    fs.cgm_sweep(np.random.default_rng(5), y, w, MOVES)
    twin.cgm_sweep(np.random.default_rng(5), y, w, MOVES)
    np.testing.assert_array_equal(fs.values(), twin.values())


def _small_run(n, cores, tune, draws):
    """Two chains of a 10-tree term on y = 2 x0 + noise, with a CGM step built first: X, the
    step, the trace and the shape of the built step's leaf index."""
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(n, 3))
    y = 2 * X[:, 0] + rng.normal(0, 0.2, n)
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=10)
        pm.Normal("y", f, 0.2, observed=y)
        step = pmt.CGMTreeStep([f])
        built = step.sampler.forest.leaf_of_row.shape
        idata = pm.sample(tune=tune, draws=draws, chains=2, cores=cores, step=[step],
                          random_seed=3, progressbar=False, compute_convergence_checks=False)
    return X, step, idata, built


def test_a_built_tree_step_holds_no_rows_until_its_chain_starts():
    """PyMC builds the steps in its own process; with several cores the chains run in workers
    from a pickled copy, so the step it keeps holds no per-row arrays of the trees."""
    X, step, idata, built = _small_run(500, cores=2, tune=20, draws=20)
    assert built == (10, 0)
    assert step.sampler.forest.leaf_of_row.shape == (10, 0)  # the parent's copy stayed empty
    post = idata.posterior["f"].mean(("chain", "draw")).values
    assert np.corrcoef(post, 2 * X[:, 0])[0, 1] > 0.95


def test_a_chains_last_step_lets_go_of_the_rows():
    """PyMC converts the trace after the last draw, copying X into ``constant_data``; with the
    rows' leaves still held that was the run's peak of memory.  The last step of a chain lets
    go of them; the next chain (cores=1), or a step called by hand, routes the rows again to
    the same leaves: the values of the step's forest equal the trace's last f."""
    _, step, idata, _ = _small_run(400, cores=1, tune=6, draws=5)
    smp = step.sampler
    assert smp.forest.leaf_of_row.shape == (10, 0) and smp._scratch is None
    assert not np.array_equal(idata.posterior["f"][0, -1], idata.posterior["f"][1, -1])
    np.testing.assert_array_equal(smp.values(), idata.posterior["f"][1, -1].values)
    assert smp.forest.leaf_of_row.shape == (10, 400)


@pytest.mark.parametrize("response", ["constant", None])
def test_a_pickled_step_carries_neither_x_nor_the_model(response):
    """PyMC pickles the steps for its worker processes (under forkserver and spawn: the
    default start method of Python 3.14 on Linux and of macOS and Windows).  PyMC's
    ``BlockedStep`` pickles the arguments a step was built with, the model among them; ours
    pickle their state alone, and the sampler and the likelihood leave X out (the sampler
    keeps its bins), and compiled functions hold y beside them, once for both steps.  At
    p = 10, X alone is 80 bytes a row; the pickle of the README model's two steps is the
    bins (20), y (8) and the forest.  The default's linear leaves (``response=None``) need
    the columns themselves for their lines: their sampler carries X (80) and standardises it
    again on arrival.  The unpickled steps continue the chain exactly as the originals do."""
    import pickle

    import cloudpickle

    rng = np.random.default_rng(2)
    n = 20_000
    X = rng.uniform(size=(n, 10))
    y = 3 * X[:, 0] + rng.normal(0, 0.5, n)
    with pm.Model():
        Xd = pm.Data("X", X)
        f = pmt.BARTTree("f", Xd, y, m=20, response=response)
        s2 = pm.InverseGamma("s2", *pmt.noise_prior(X, y))
        pm.Normal("y", f, pm.math.sqrt(s2), observed=y, shape=Xd.shape[0])
        steps = [pmt.CGMTreeStep([f]), pmt.NoiseGibbs([s2])]
    blob = cloudpickle.dumps(steps, protocol=-1)
    linear = response is None
    assert len(blob) / n < (40 + 80 if linear else 40), len(blob) / n
    back = pickle.loads(blob)
    assert type(back[0].sampler).__name__ == ("LinearForestSampler" if linear
                                              else "ForestSampler")
    assert (back[0].sampler.X is None) != linear and back[0].sampler.n == n
    assert back[0].likelihood.observed is None and back[0].likelihood.eta is None
    assert "_BlockedStep__newargs" not in vars(back[0])
    twins = pickle.loads(blob)
    point = {"f": np.full(n, y.mean()), "s2_log__": np.array(np.log(0.3))}
    for step_a, step_b in zip(back, twins):
        step_a.setup_chain(np.random.default_rng(7), tune=0, draws=3)
        step_b.setup_chain(np.random.default_rng(7), tune=0, draws=3)
    a, b = dict(point), dict(point)
    for _ in range(3):
        for step_a, step_b in zip(back, twins):
            a, _ = step_a.step(a)
            b, _ = step_b.step(b)
    np.testing.assert_array_equal(a["f"], b["f"])
    assert np.all(np.isfinite(a["f"])) and not np.allclose(a["f"], point["f"])
