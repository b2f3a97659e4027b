"""Run a benchmark's independent fits on a Dask cluster: the scripts send every fit through
``joblib.Parallel``, which runs them one after the other by default; ``--dask-workers N``
starts a ``distributed.LocalCluster`` of N worker processes (one thread each) and runs the
same jobs there under ``joblib.parallel_config(backend="dask")``.  For a cluster of several
machines, call the script's ``main`` inside ``joblib.parallel_config(backend="dask")`` with a
``distributed.Client`` of that cluster (or Ray's joblib backend): nothing else changes.

Fits that run side by side share the machines, so their wall times are comparable only in
a serial run; the errors are the same (every fit's seed is fixed before it runs)."""

from __future__ import annotations

import contextlib


def add_option(ap) -> None:
    ap.add_argument("--dask-workers", type=int, default=0,
                    help="run the fits on a local Dask cluster of this many worker processes "
                         "(0: one after the other in this process)")


@contextlib.contextmanager
def backend(workers: int):
    """The joblib backend for ``--dask-workers``: a local Dask cluster, or none (serial)."""
    if not workers:
        yield
        return
    import os

    import distributed
    import joblib

    # the workers import this folder's modules (tables, ...) as the scripts do
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [here, *filter(None, [os.environ.get("PYTHONPATH")])])
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        yield
