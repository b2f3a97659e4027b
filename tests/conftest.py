import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# OpenMP threads that wait by sleeping, not spinning.  ``make test`` runs two pytest-xdist
# workers on two cores, and xgboost's and numba's parallel kernels (numba's threading layer is
# OpenMP here) start two threads each: with libgomp's default wait policy the idle threads of
# one worker spin on the cores the other worker needs.  Measured on tests/boosting in two
# workers: 349 s with the default policy (the quantile test 116 s, 0.6 s alone), 184 s with
# OMP_NUM_THREADS=1 (numba's threads still spin), 7.5 s with OMP_WAIT_POLICY=PASSIVE.  Set
# here, before any test imports xgboost or numba, so the workers and the warm-up inherit it;
# a value already in the environment wins.  No result depends on it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    """With more than one pytest-xdist worker (``make test``), compile the numba kernels the
    tests use in three processes side by side before any test runs (tests/warm_kernels.py):
    in a fresh clone both workers would otherwise compile the same kernels at once.  Runs in
    the controller after the workers were started (they collect meanwhile) and counts in the
    session's time.  A failure here is reported and the tests run anyway (they compile what
    they need)."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    workers = getattr(config.option, "numprocesses", None)
    if not isinstance(workers, int) or workers < 2:
        return
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    groups = "abc"
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, str(here / "warm_kernels.py"), group],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for group in groups]
    outs, ends = [None] * len(procs), [0.0] * len(procs)

    def wait(i):
        outs[i] = procs[i].communicate()[0]
        ends[i] = time.perf_counter() - start

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(len(procs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    tr = config.pluginmanager.get_plugin("terminalreporter")
    for group, p, out in zip(groups, procs, outs):
        if p.returncode != 0 and tr is not None:
            tr.write_line(f"warm_kernels.py {group} failed (the tests compile what they "
                          f"need):\n{out.decode(errors='replace')[-2000:]}")
    if tr is not None:
        each = ", ".join(f"{g} {e:.0f} s" for g, e in zip(groups, ends))
        tr.write_line(f"numba kernels compiled in {len(groups)} processes: {took:.0f} s "
                      f"({each})")
