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

    Before numba starts its threads, ``OMP_WAIT_POLICY`` is set to ``PASSIVE`` unless it is
    set already: OpenMP's threads otherwise spin between the passes, on a core the sweep's
    serial work needs (the README's model at 100,000 rows took 0.13 s an iteration on two
    threads against 0.09 on one; 0.09 on two with passive threads, and the same at a million
    rows either way)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    k = chain_threads(threads)
    if numba.get_num_threads() != k:
        numba.set_num_threads(k)
    return k
