"""numba's thread count for a block of code, restored afterwards."""

from __future__ import annotations

from contextlib import contextmanager

import numba


@contextmanager
def numba_threads(n_jobs: int | None):
    """Run numba's parallel kernels with ``n_jobs`` threads (None or 0: numba's current
    setting; -1: all; at most ``NUMBA_NUM_THREADS``), restoring the setting afterwards;
    yields the number used."""
    old = numba.get_num_threads()
    if n_jobs is not None and n_jobs != 0:
        top = numba.config.NUMBA_NUM_THREADS
        numba.set_num_threads(max(1, min(top, n_jobs if n_jobs > 0 else top)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(old)
