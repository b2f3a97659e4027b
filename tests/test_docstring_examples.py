"""The Examples sections of the public API run as written: every ``>>>`` example in the
docstring of a public name of ``pymc_trees``, ``interpret``, ``boosting`` and ``comparison``
is executed, statement by statement in one namespace per docstring, with ``pm.sample``
shortened (100 + 100 iterations, 2 chains, one process).  Every public function and class
must have one.  (Outputs are not compared: an example shows a call, the tests of each
module check its numbers.)"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

MODULES = ("pymc_trees", "pymc_trees.interpret", "pymc_trees.boosting", "pymc_trees.comparison")
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


def test_every_public_function_and_class_has_an_example():
    missing = []
    for module in MODULES:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    ">>>" not in (inspect.getdoc(obj) or ""):
                missing.append(f"{module}.{name}")
    assert not missing, f"no Examples section: {missing}"


@pytest.mark.slow
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
        code = compile(example.source, key, "exec")
        if example.exc_msg is None:
            exec(code, namespace)
            continue
        # an example that shows an error must raise that error, with that message
        with pytest.raises(Exception) as raised:
            exec(code, namespace)
        shown = f"{type(raised.value).__name__}: {raised.value}"
        assert shown.strip() == example.exc_msg.strip(), (shown, example.exc_msg)
    matplotlib.pyplot.close("all")
