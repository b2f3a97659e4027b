"""A million rows: ``pm.sample()`` with its defaults on Friedman #1 (n = 1,000,000, p = 10).

The README's model (``BARTTree`` with m = 200, ``InverseGamma`` noise from
``pmt.noise_prior``, Normal likelihood), sampled by ``pm.sample()`` with nothing changed:
2 chains, 1,000 tuning and 1,000 kept draws each, the warm start, CGM trees
and the conjugate noise step.  Above ``KEEP_VALUES_MAX_ROWS`` rows f at the training rows is
left out of the trace (the forests are kept), so the trace holds the forests and sigma2.

Printed: the wall time of ``pm.sample`` and per iteration, the peak resident memory of the
process and its sampling workers together (summed over the process tree, polled every half
second, so a peak shorter than that can be missed; a forked worker's resident memory counts
the pages it shares with this process again), the same sum of the proportional set sizes
(every shared page counted once: the memory the run takes), the largest rise of the
machine's memory in use, the high-water mark of this process
(``VmHWM``, exact: with one core the chains run here), the size of the trace, the time of
``pmt.predict`` at 5,000 new rows, its RMSE against the noise-free function, the posterior
mean of sigma (the truth is 1) and the effective sample size of sigma2.

Run: ``python benchmarks/million.py --cores 2`` (``--n``, ``--draws``, ``--tune`` to change
the size; ``--save PATH`` also writes the trace and prints its size on disk; ``--mp-ctx``
PyMC's start method for worker processes).  Without ``--cores``, PyMC's default applies: on
this 2-CPU machine kind it is one
core (PyMC takes half of the CPUs to be hyperthreads), and the two chains run one after the
other.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np


def _tree_rss(root: int, field: str = "VmRSS") -> dict[int, int]:
    """Resident bytes of process ``root`` and of each of its descendants (from /proc):
    ``VmRSS`` from ``status``, or ``Pss`` from ``smaps_rollup`` (the proportional set size:
    a page shared by k processes counts 1/k in each)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        path = f"/proc/{pid}/status" if field == "VmRSS" else f"/proc/{pid}/smaps_rollup"
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith(field + ":"):
                        out[pid] = int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return out


class PeakMemory:
    """Polls the resident memory of this process tree in a thread; ``peak`` in bytes, and
    ``at_peak`` the resident bytes of each process at that moment (this one first).  With
    ``field="Pss"`` the proportional set size: PyMC's worker processes are forked from this
    one (its default start method on Linux), so the pages they inherit and never write are
    shared, and each worker's ``VmRSS`` counts them again; summed over the processes, the
    proportional set sizes count every page once."""

    def __init__(self, every: float = 0.5, field: str = "VmRSS"):
        self.every, self.peak, self.at_peak, self.field = every, 0, [], field
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = os.getpid()
        while not self._stop.is_set():
            rss = _tree_rss(me, self.field)
            total = sum(rss.values())
            if total > self.peak:
                self.peak = total
                self.at_peak = [rss.get(me, 0)] + sorted(
                    (v for k, v in rss.items() if k != me), reverse=True)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def machine_used() -> int:
    """Bytes of this machine's memory in use (``MemTotal - MemAvailable`` of /proc/meminfo):
    every process, shared pages once, page cache that cannot be dropped included."""
    vals = {}
    with open("/proc/meminfo") as fh:
        for line in fh:
            key, rest = line.split(":", 1)
            vals[key] = int(rest.split()[0]) * 1024
    return vals["MemTotal"] - vals["MemAvailable"]


class PeakMachine(PeakMemory):
    """Polls :func:`machine_used`; ``peak`` is its largest rise over the value at entry (a
    cross-check of the per-process figures, meaningful when nothing else runs)."""

    def _run(self):
        base = machine_used()
        while not self._stop.is_set():
            self.peak = max(self.peak, machine_used() - base)
            self._stop.wait(self.every)


def high_water_mark() -> int:
    """The peak resident bytes of this process so far, as the kernel counts it (``VmHWM``):
    exact, where polling can miss a peak shorter than its interval."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _nbytes(idata) -> int:
    """Bytes of every variable in every group of a DataTree (forests included)."""
    return int(sum(v.nbytes for node in idata.subtree for v in node.dataset.variables.values()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--draws", type=int, default=None, help="pm.sample's default if omitted")
    ap.add_argument("--tune", type=int, default=None, help="pm.sample's default if omitted")
    ap.add_argument("--cores", type=int, default=None,
                    help="pm.sample's default if omitted (on 2 CPUs PyMC counts one core: it "
                         "takes half of the CPUs to be hyperthreads, and runs the chains one "
                         "after the other)")
    ap.add_argument("--chains", type=int, default=None, help="pm.sample's default if omitted")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--mp-ctx", default=None, choices=["fork", "forkserver", "spawn"],
                    help="pm.sample's mp_ctx (its default on Linux: fork)")
    ap.add_argument("--save", default=None, metavar="PATH",
                    help="also write the trace with to_netcdf to PATH and print its size")
    a = ap.parse_args(argv)

    import arviz as az
    import pymc as pm

    import pymc_trees as pmt
    from pymc_trees.comparison.datasets import friedman1, friedman1_f

    X, y, _ = friedman1(a.n, rng=a.seed)
    X_new = np.random.default_rng(a.seed + 1).uniform(size=(5_000, X.shape[1]))
    kwargs = {k: v for k, v in (("draws", a.draws), ("tune", a.tune), ("cores", a.cores),
                                ("chains", a.chains), ("mp_ctx", a.mp_ctx)) if v is not None}
    print(f"n = {a.n:,}, p = {X.shape[1]}, pm.sample({kwargs or ''}) with its other defaults",
          flush=True)
    with PeakMemory() as mem, PeakMemory(field="Pss") as pss, PeakMachine() as machine:
        t0 = time.perf_counter()
        with pm.Model():
            X_data = pm.Data("X", X)
            f = pmt.BARTTree("f", X_data, Y=y, m=200, response="constant")
            sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y,
                      shape=X_data.shape[0])
            t1 = time.perf_counter()
            idata = pm.sample(random_seed=a.seed, progressbar=False, **kwargs)
            t2 = time.perf_counter()
        f_new = pmt.predict(idata, X_new, var_name="f")
        t3 = time.perf_counter()
    iters = idata.posterior.sizes["draw"] + int(kwargs.get("tune", 1000))
    rmse = float(np.sqrt(np.mean((f_new.mean(("chain", "draw")).values
                                  - friedman1_f(X_new)) ** 2)))
    sigma = np.sqrt(idata.posterior["sigma2"])
    print(f"model built in {t1 - t0:.1f} s; pm.sample: {t2 - t1:.0f} s wall "
          f"({(t2 - t1) / iters:.2f} s per iteration, {iters} iterations per chain, "
          f"{idata.posterior.sizes['chain']} chains)")
    print(f"peak resident memory, process and workers: {mem.peak / 2**30:.3f} GiB (this "
          f"process {mem.at_peak[0] / 2**30:.3f}, the others "
          f"{', '.join(f'{b / 2**30:.3f}' for b in mem.at_peak[1:]) or 'none'})")
    print(f"peak proportional set size, process and workers (shared pages once): "
          f"{pss.peak / 2**30:.3f} GiB (this process {pss.at_peak[0] / 2**30:.3f}, the others "
          f"{', '.join(f'{b / 2**30:.3f}' for b in pss.at_peak[1:]) or 'none'})")
    print(f"machine memory in use, largest rise during the run: {machine.peak / 2**30:.3f} GiB")
    print(f"high-water mark of this process (VmHWM, the whole run up to here): "
          f"{high_water_mark() / 2**30:.3f} GiB")
    print(f"trace in memory: {_nbytes(idata) / 2**20:.0f} MiB, of which the forests "
          f"{_nbytes(idata['forests']) / 2**20:.0f} MiB; f kept at the training rows: "
          f"{'f' in idata.posterior}")
    print(f"pmt.predict at {X_new.shape[0]:,} new rows: {t3 - t2:.1f} s; RMSE of the posterior "
          f"mean against the true function: {rmse:.3f}")
    if a.save:
        t4 = time.perf_counter()
        idata.to_netcdf(a.save)
        print(f"saved with to_netcdf in {time.perf_counter() - t4:.1f} s: "
              f"{os.path.getsize(a.save) / 2**20:.0f} MiB on disk")
    print(f"sigma: posterior mean {float(sigma.mean()):.4f} (truth 1); ESS of sigma2 "
          f"{float(az.ess(idata, var_names=['sigma2'])['sigma2']):.0f}")


if __name__ == "__main__":
    main()
