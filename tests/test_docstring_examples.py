"""The Examples sections of the public API run as written: every ``>>>`` example in the
docstring of a public name of ``pymc_trees``, ``interpret``, ``boosting`` and ``comparison``
is executed, statement by statement in one namespace per docstring, with ``pm.sample``
shortened (100 + 100 iterations, 2 chains, one process).  The names a new user meets first
must have one.  (Outputs are not compared: an example shows a call, the tests of each
module check its numbers.)"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

MODULES = ("pymc_trees", "pymc_trees.interpret", "pymc_trees.boosting", "pymc_trees.comparison")
MUST_HAVE = {"BARTTree", "CGMTreeStep", "PGTreeStep", "NoiseGibbs", "noise_prior", "predict",
             "forests", "sample_posterior_predictive", "compute_log_likelihood", "compare",
             "BoostedTreesRegressor", "BoostedTreesClassifier", "variable_importance",
             "partial_dependence", "PackedForest", "TableSchema", "friedman1", "crps_normal",
             "interval_coverage", "crps_sample", "load_data", "leaf_calibration",
             "plot_convergence", "plot_variable_importance", "plot_partial_dependence",
             "select_variables"}


def _documented() -> dict[str, str]:
    out = {}
    for module in MODULES:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                doc = inspect.getdoc(obj) or ""
                if ">>>" in doc:
                    out.setdefault(f"{obj.__module__}.{obj.__qualname__}", doc)
    return out


EXAMPLES = _documented()


def test_the_first_names_have_examples():
    have = {key.rsplit(".", 1)[1] for key in EXAMPLES}
    assert MUST_HAVE <= have, sorted(MUST_HAVE - have)


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_the_examples_run(key, monkeypatch, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import pymc as pm

    real = pm.sample

    def short(*args, **kwargs):
        kwargs.update(draws=100, tune=100, chains=2, cores=1, progressbar=False)
        kwargs.setdefault("random_seed", 1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", short)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__example__"}
    for example in doctest.DocTestParser().get_examples(EXAMPLES[key]):
        exec(compile(example.source, key, "exec"), namespace)
    matplotlib.pyplot.close("all")
