"""How many threads one chain's sweeps use (docs/explanation/threads.md).

``pm.sample(cores=c, chains=k)`` runs min(c, k) chains at once: with c > 1 and k > 1 each
chain runs in a worker process of its own, else the chains run one after the other in the
main process.  So by default a chain in a worker process takes one thread, and a chain in
the main process takes every core the process may run on (its CPU affinity, so a process
pinned with ``taskset`` to one core takes one): never more threads than cores in total.
``cgm_tree={"threads": k}`` (or ``pg_tree=``) sets it.  The draws are the same for any
number of threads (:mod:`pymc_trees.bart.kernels.row_blocks`)."""

from __future__ import annotations

import multiprocessing
import numbers
import os

import numba

__all__ = ["usable_cores", "chain_threads", "check_threads", "use_threads"]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system reports one),
    at most numba's thread pool."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, int(numba.config.NUMBA_NUM_THREADS)))


def check_threads(threads) -> int | None:
    """``threads`` as given to a tree step: None (the default, :func:`chain_threads`) or a
    positive integer; anything else is a ``ValueError`` that names it."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"threads must be None (the cores the chain can use) or a positive "
                         f"integer; got {threads!r}.")
    return int(threads)


def chain_threads(threads: int | None) -> int:
    """The threads of one chain in this process: ``threads`` when given (at most
    :func:`usable_cores`), else 1 in a worker process (chains side by side) and
    :func:`usable_cores` in the main process."""
    cores = usable_cores()
    if threads is not None:
        return min(int(threads), cores)
    return 1 if multiprocessing.parent_process() is not None else cores


def use_threads(threads: int | None) -> int:
    """Set numba's thread count for this thread's kernel calls to :func:`chain_threads`
    and return it.

    A chain on more than one thread also takes the BLAS libraries (OpenBLAS, MKL) down to
    one thread, and gives them back their own count when a chain runs on one thread again:
    a BLAS call on more than 10,000 rows (a linear term's product in NUTS, say) otherwise
    leaves BLAS's threads spinning for a while on the cores the sweep's threads run on.  With
    a linear term sampled by NUTS beside the trees at 100,000 rows, two threads took 0.129 s
    an iteration against 0.053 on one; with BLAS on one thread, 0.038
    (docs/explanation/threads.md, "Waiting between the passes")."""
    k = chain_threads(threads)
    if numba.get_num_threads() != k:
        numba.set_num_threads(k)
    _blas_on_one_thread(k > 1)
    return k


_BLAS = {"limiter": None}


def _blas_on_one_thread(on: bool) -> None:
    """Limit the BLAS libraries to one thread (``on``), or restore the limits they had."""
    limiter = _BLAS["limiter"]
    if on and limiter is None:
        from threadpoolctl import threadpool_limits  # only for a chain on several threads

        _BLAS["limiter"] = threadpool_limits(limits=1, user_api="blas")
    elif not on and limiter is not None:
        limiter.restore_original_limits()
        _BLAS["limiter"] = None
