"""A family of ``benchmarks/general.py`` sampled by the package as it was at an older commit,
timed by this checkout's ``general._table`` (the same data, seed, iterations and untimed
first run): the "today's general step" baseline of issue 51 for a form that a later change
moved to another sampler (the negative binomial's ``(n, p)`` form, which fell to the general
step up to f4fa3fd and is read by the Polya-Gamma augmentation and log-gamma leaves since).

Run::

    git worktree add /tmp/wt51 f4fa3fd
    python benchmarks/general_at_commit.py /tmp/wt51 [--family negative_binomial]

The model is written as that commit's API takes it (no ``leaf_prior``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("worktree", help="a checkout of the older commit")
    ap.add_argument("--family", default="negative_binomial", choices=["negative_binomial"])
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(a.worktree).resolve()))
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    import pymc as pm

    import general as G
    import pymc_trees as pmt

    if not Path(pmt.__file__).resolve().is_relative_to(Path(a.worktree).resolve()):
        raise SystemExit(f"pymc_trees was imported from {pmt.__file__}, not {a.worktree}")

    def nb_then(X, y, m):
        f = pmt.BARTTree("f", X, y, m=m, link="log")
        n = pm.Gamma("a", 2.0, 0.5)
        pm.NegativeBinomial("y", n=n, p=n / (n + pm.math.exp(f)), observed=y)

    ours, _ = G._sim_run(nb_then, G._nb_theirs, ["f"], ["a"])
    name = f"ours at {Path(a.worktree).name}"
    G._table({a.family: (G.sim_nb, {name: ours}, G.lpd_nb)}, [a.family], 50, 500, 500)


if __name__ == "__main__":
    main()
