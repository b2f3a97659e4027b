"""The package layout (docs/explanation/code-layout.md, "Code layout"): imports only go down the
layers, the
import graph has no cycle, no private name crosses a module boundary, the shared core and the
boosting learner load no PyMC, and no public name shadows a module.

The graph is read from the source (every ``import`` and ``from ... import`` statement,
also those inside functions), so a lazy import counts as an edge."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pymc_trees"

# lower layers first; a module may import from its own layer (same subpackage) or below
LAYERS = {"core": 0, "bart": 1, "boosting": 1, "results": 2, "interpret": 3,
          "comparison": 4, "": 5}


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


def _imports(mods: dict[str, Path]):
    """(importer, imported module, imported name or None) for every import of the package."""
    for name, f in mods.items():
        pkg = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "pymc_trees":
                        yield name, a.name, None
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "pymc_trees":
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    yield (name, sub, None) if sub in mods else (name, target, a.name)


def _layer(module: str) -> tuple[int, str]:
    parts = module.split(".")
    room = parts[1] if len(parts) > 1 and parts[1] != "__main__" else ""
    return LAYERS[room], room


def test_imports_only_go_down_the_layers():
    mods = _modules()
    wrong = []
    for src, dst, _ in _imports(mods):
        (ls, rs), (ld, rd) = _layer(src), _layer(dst)
        if ld > ls or (ld == ls and rd != rs and rs != ""):
            wrong.append(f"{src} -> {dst}")
    assert not wrong, "imports that go up or sideways:\n" + "\n".join(sorted(set(wrong)))


# bart/ in wings, lower first: a module imports from its own wing or a lower one; the
# package's __init__ ("") sits on top
BART_WINGS = {"kernels": 0, "samplers": 1, "likelihood": 2, "term": 3, "steps": 4, "": 5}


def _wing(module: str) -> int:
    parts = module.split(".")
    return BART_WINGS[parts[2] if len(parts) > 2 else ""]


def test_the_wings_of_bart_import_down_and_hold_every_module():
    mods = _modules()
    wrong = [f"{src} -> {dst}" for src, dst, _ in _imports(mods)
             if src.startswith("pymc_trees.bart") and dst.startswith("pymc_trees.bart.")
             and _wing(dst) > _wing(src)]
    assert not wrong, "imports that go up a wing of bart/:\n" + "\n".join(sorted(set(wrong)))
    loose = [f.name for f in (PACKAGE / "bart").glob("*.py") if f.name != "__init__.py"]
    assert len(loose) <= 5, f"modules directly in bart/ (at most 5, the rest in wings): {loose}"
    assert {d.name for d in (PACKAGE / "bart").iterdir()
            if d.is_dir() and (d / "__init__.py").exists()} <= set(BART_WINGS)


def test_the_import_graph_has_no_cycle():
    mods = _modules()
    graph = {m: set() for m in mods}
    for src, dst, _ in _imports(mods):
        if dst != src and dst in mods:
            graph[src].add(dst)
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_no_private_name_crosses_a_module_boundary():
    mods = _modules()
    crossing = [f"{src} imports {name} from {dst}" for src, dst, name in _imports(mods)
                if name and name.startswith("_") and not name.startswith("__") and dst != src]
    assert not crossing, "\n".join(crossing)


@pytest.mark.parametrize("module", ["pymc_trees.core", "pymc_trees.boosting"])
def test_shared_core_and_boosting_load_no_pymc(module):
    code = (f"import sys, {module}; bad = [m for m in ('pymc', 'pytensor', 'arviz') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, f"import {module} loaded {run.stdout.strip()}: {run.stderr}"


def test_public_names_resolve_and_shadow_no_module():
    import pymc_trees

    for name in pymc_trees.__all__:
        assert getattr(pymc_trees, name) is not None
        assert importlib.util.find_spec(f"pymc_trees.{name}") is None, (
            f"pymc_trees.{name} is both a public name and a module")
    for sub in ("bart", "results", "boosting", "interpret", "comparison", "core"):
        mod = importlib.import_module(f"pymc_trees.{sub}")
        for name in mod.__all__:
            assert getattr(mod, name) is not None, f"pymc_trees.{sub}.{name}"


def test_old_module_paths_import_with_a_warning_that_names_the_new_one():
    """Code written against the flat layout keeps working: the old module paths give the
    same functions and classes, with a FutureWarning naming where they live now."""
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    from pymc_trees.datasets import friedman1\n"
        "    from pymc_trees.tabular import TableSchema\n"
        "    from pymc_trees.core.boost import grow_hist\n"
        "import pymc_trees.comparison.datasets as d, pymc_trees.core as c\n"
        "import pymc_trees.boosting.kernels as k\n"
        "assert friedman1 is d.friedman1 and TableSchema is c.TableSchema\n"
        "assert grow_hist is k.grow_hist\n"
        "msgs = [str(x.message) for x in w if x.category is FutureWarning]\n"
        "assert any('pymc_trees.datasets moved to pymc_trees.comparison.datasets' in m\n"
        "           for m in msgs), msgs\n"
        "assert any('pymc_trees.core.boost moved to pymc_trees.boosting.kernels' in m\n"
        "           for m in msgs), msgs\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    demo = subprocess.run([sys.executable, "-m", "pymc_trees.demo", "--help"],
                          capture_output=True, text=True)
    assert demo.returncode == 0 and "usage" in demo.stdout, demo.stderr


def test_a_trace_saved_by_the_flat_layout_loads_and_predicts_the_same():
    """tests/data/trace_flat_layout.nc was written by commit b89a2cf (the flat layout): a
    BART term on a DataFrame with a categorical column and gaps, 2 chains x 6 draws, and its
    predictions at three new rows.  The forests group holds numeric arrays only, so the move
    must not change a number."""
    import json

    import arviz as az
    import numpy as np
    import pandas as pd

    import pymc_trees as pmt

    data = Path(__file__).parent / "data"
    idata = az.from_netcdf(data / "trace_flat_layout.nc")
    new = pd.DataFrame({"x": [0.1, 0.9, 0.5], "shop": pd.Categorical(["c", "b", "a"]),
                        "z": [np.nan, 0.3, -1.0]})
    want = np.array(json.loads((data / "trace_flat_layout_predict.json").read_text()))
    got = pmt.predict(idata, new)
    assert got.dims[:2] == ("chain", "draw") and got.shape == want.shape
    np.testing.assert_array_equal(got.values, want)


# Size limits: a function takes at most MAX_PARAMS parameters (``self`` and ``cls`` not
# counted; a kernel takes named bundles, kernels/bundles.py) and a module has at most
# MAX_LINES lines.  The exceptions are user-facing signatures whose parameters are the
# documented options: scikit-learn requires an estimator's ``__init__`` to list its
# hyperparameters explicitly (``get_params`` reads them), and ``BARTTree``, ``compare``,
# ``sample_posterior_predictive`` and ``plot_partial_dependence_grid`` take their options as
# keywords in the same way.
MAX_PARAMS, MAX_LINES = 12, 800
# bart/, in wings, is held to 600 lines a module: a module near that is a sign to move
# something out
MAX_LINES_BART = 600
PUBLIC_SIGNATURES = {
    ("boosting/estimators.py", "__init__"),      # the scikit-learn estimators' hyperparameters
    ("bart/term/distribution.py", "__new__"),         # BARTTree(name, X, Y, m, alpha, ...)
    ("bart/term/distribution.py", "dist"),            # BARTTree.dist(X, Y, m, alpha, ...)
    ("comparison/run.py", "compare"),            # pmt.compare(data, learners, ...)
    ("results/predictive.py", "sample_posterior_predictive"),  # its documented keywords
    ("interpret/plots.py", "plot_partial_dependence_grid"),    # its documented keywords
}


def _n_params(node) -> int:
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    k = len(names) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    return k - (1 if names and names[0] in ("self", "cls") else 0)


def _size_violations(package: Path) -> list[str]:
    bad = []
    for f in sorted(package.rglob("*.py")):
        rel = f.relative_to(package).as_posix()
        src = f.read_text()
        cap = MAX_LINES_BART if rel.startswith("bart/") else MAX_LINES
        if src.count("\n") > cap:
            bad.append(f"{rel}: {src.count(chr(10))} lines (at most {cap})")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                k = _n_params(node)
                if k > MAX_PARAMS and (rel, node.name) not in PUBLIC_SIGNATURES:
                    bad.append(f"{rel}:{node.lineno} {node.name} takes {k} parameters "
                               f"(at most {MAX_PARAMS}: pass a named bundle)")
    return bad


def test_no_function_takes_more_than_12_parameters_and_no_module_is_too_long():
    assert _size_violations(PACKAGE) == []


def test_the_size_check_finds_a_long_signature_and_a_long_module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    args = ", ".join(f"a{i}" for i in range(MAX_PARAMS + 1))
    (pkg / "k.py").write_text(f"def kernel({args}):\n    pass\n"
                              "class C:\n    def m(self, "
                              + ", ".join(f"b{i}" for i in range(MAX_PARAMS)) + "):\n        pass\n")
    (pkg / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    bad = _size_violations(pkg)
    assert len(bad) == 2
    assert any(f"kernel takes {MAX_PARAMS + 1} parameters" in b for b in bad)
    assert any(b.startswith("long.py") for b in bad)
