"""One chain on several threads (docs/explanation/threads.md): above 65,536 rows the sweeps'
passes over the rows run in fixed blocks whose sums are added in block order, so a seed
gives the same draws, bit for bit, with 1 and 2 threads; the thread option is checked and
its default never oversubscribes the cores."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from pymc_trees.bart.kernels.forest import forest_values
from pymc_trees.bart.kernels.row_blocks import ROW_BLOCK, block_span, n_blocks
from pymc_trees.bart.samplers.gamma_sampler import GammaForestSampler
from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs
from pymc_trees.bart.steps.threads import chain_threads, check_threads, usable_cores, use_threads

N = 2 * ROW_BLOCK + 4_003  # three blocks, the last one short and not a multiple of 4


@pytest.mark.parametrize("n", [1, 8, 13, ROW_BLOCK, ROW_BLOCK + 1, 100_000, N, 1_000_000,
                               3_000_017])
def test_the_row_blocks_cover_the_rows_in_equal_blocks_of_a_multiple_of_8(n):
    nb = n_blocks(n)
    spans = [block_span(b, n) for b in range(nb)]
    assert nb == -(-n // ROW_BLOCK)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    sizes = [hi - lo for lo, hi in spans]
    assert min(sizes) > 0 and max(sizes) <= ROW_BLOCK
    assert all(s % 8 == 0 for s in sizes[:-1])
    # equal shares: at 100,000 rows two blocks of 50,000, not 65,536 and 34,464
    assert max(sizes) - min(sizes) <= 8 * nb


def _rows(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N, 3))
    f = np.sin(3 * X[:, 0]) + X[:, 1]
    return rng, X, f


def _hash(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _linear_run(threads: int) -> str:
    rng, X, f = _rows(1)
    y = f + 0.3 * rng.normal(size=N)
    smp = LinearForestSampler(X, TreePrior(m=4, response="linear"), 0.0, 0.3)
    draw = np.random.default_rng(7)
    numba.set_num_threads(threads)
    try:
        for _ in range(6):
            smp.cgm_sweep(draw, y, np.full(N, 4.0), None, 1)
    finally:
        numba.set_num_threads(usable_cores())
    f_ = smp.forest
    return _hash(f_.var, f_.cut, f_.value, smp.slope, smp.values())


def _gamma_run(threads: int) -> str:
    rng, X, f = _rows(2)
    counts = rng.poisson(np.exp(0.5 * f)).astype(np.float64)
    smp = GammaForestSampler(X, TreePrior(m=4), 0.0, 0.5, kappa=1.0)
    cp = move_cumulative_probs({"grow": 0.25, "prune": 0.25, "change": 0.4, "swap": 0.1})
    draw = np.random.default_rng(8)
    numba.set_num_threads(threads)
    try:
        for _ in range(6):
            smp.gamma_sweep(draw, counts, np.zeros(N), cp, 1)
    finally:
        numba.set_num_threads(usable_cores())
    f_ = smp.forest
    return _hash(f_.var, f_.cut, f_.value, smp.values())


needs_two = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                               reason="numba has one thread here (NUMBA_NUM_THREADS)")


@pytest.mark.slow
@needs_two
@pytest.mark.parametrize("run", [_linear_run, _gamma_run], ids=["linear", "log-gamma"])
def test_the_draws_are_the_same_with_one_and_two_threads(run):
    assert run(1) == run(2)


@needs_two
def test_the_trees_sum_is_the_same_on_any_number_of_threads_and_the_serial_one():
    rng = np.random.default_rng(3)
    value = rng.normal(size=(7, 5))
    leaf_of_row = rng.integers(0, 5, size=(7, N)).astype(np.uint8)
    got = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        out = np.empty(N)
        forest_values(value, leaf_of_row, 0.25, out)
        got.append(out)
    numba.set_num_threads(usable_cores())
    want = 0.25 + np.zeros(N)
    for t in range(7):  # tree order, as the packed prediction adds them
        want = want + value[t, leaf_of_row[t]]
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[0], want)


def test_the_threads_option_is_checked_and_the_default_fits_the_cores():
    assert check_threads(None) is None and check_threads(2) == 2
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be None"):
            check_threads(bad)
    cores = usable_cores()
    assert chain_threads(None) == cores  # the main process: chains one after the other
    assert chain_threads(1) == 1
    assert chain_threads(10 * cores) == cores  # never more than the cores


def test_a_chain_on_several_threads_takes_blas_to_one_thread_and_gives_it_back():
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    use_threads(1)  # a chain on one thread: BLAS with its own counts
    before = blas_threads()
    try:
        assert use_threads(2) == min(2, usable_cores())
        if usable_cores() > 1:
            assert blas_threads() == [1] * len(before)
        assert use_threads(1) == 1
        assert blas_threads() == before
    finally:
        use_threads(1)
        numba.set_num_threads(usable_cores())


def test_the_package_sets_a_short_spin_only_when_the_user_chose_no_wait_policy():
    code = ("import os, pymc_trees.bart.kernels; "
            "print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["10000", "None"]
    out = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "PASSIVE"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["None", "PASSIVE"]
