"""A term's graph inputs are read by name in one place (``term_inputs``), and every reach into
PyMC beyond its public API lives in ``pymc_trees.bart.term.pymc_compat``, which warns when the
installed PyMC is newer than the versions it was tested against (issue 49, item 6)."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc_trees.bart.term import pymc_compat
from pymc_trees.bart.term.distribution import TermInputs, term_inputs

PACKAGE = Path(__file__).resolve().parents[2] / "pymc_trees"
READER = "pymc_trees/bart/term/distribution.py"
COMPAT = "pymc_trees/bart/term/pymc_compat.py"


def test_term_inputs_names_the_inputs_of_a_term():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 3))
    y = X[:, 0] + rng.normal(size=30)
    with pm.Model():
        Xd = pm.Data("X", X)
        s = pm.Dirichlet("s", a=np.ones(3))
        f = pmt.BARTTree("f", Xd, m=4, leaf_sd=0.3, split_prior=s)
        inp = term_inputs(f)
        assert isinstance(inp, TermInputs)
        assert inp._fields[:4] == ("X", "offset", "leaf_sd", "split_weights")
        assert inp.X is Xd
        assert inp.split_weights is s
        assert float(inp.leaf_sd.eval()) == pytest.approx(0.3)
        assert float(inp.offset.eval()) == 0.0
        # the fields are the node's inputs, rng and size included, none twice
        assert {id(v) for v in inp} == {id(v) for v in f.owner.inputs}
        with pytest.raises(TypeError, match="term_inputs takes a BARTTree variable"):
            term_inputs(s)


def test_a_newer_pymc_is_warned_about_naming_the_module_and_the_versions(monkeypatch):
    lo, hi = pymc_compat.PYMC_TESTED
    newer = f"{hi[0]}.{hi[1] + 1}.0"
    with pytest.warns(pymc_compat.PyMCVersionWarning) as record:
        assert not pymc_compat.check_pymc_version(newer)
    text = str(record[0].message)
    assert "pymc_trees.bart.term.pymc_compat" in text
    assert f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}" in text and newer in text
    # at import, with the installed version read from PyMC
    monkeypatch.setattr(pm, "__version__", f"{hi[0] + 1}.0.0rc1")
    with pytest.warns(UserWarning, match=f"installed PyMC is {hi[0] + 1}.0.0rc1"):
        importlib.reload(pymc_compat)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(pymc_compat)  # the installed PyMC is a tested one: no warning
        assert pymc_compat.check_pymc_version()
        assert pymc_compat.check_pymc_version(f"{hi[0]}.{hi[1]}.9")


# -- source scans -------------------------------------------------------------------------

# names under which the package holds a tree term; a read of ``<term>.owner.inputs`` outside
# the reader (``term_inputs``) is what the scan refuses
TERM_NAMES = {"rv", "tree_rv", "term", "tree", "t", "f", "trees"}
# functions whose ``rv.owner.inputs`` is not a tree term's (the noise prior's InverseGamma or
# Gamma in the conjugate noise update)
NOT_TERMS = {"noise_likelihood"}
FRAME_READS = {("sys", "_getframe"), ("inspect", "currentframe"), ("inspect", "stack"),
               ("inspect", "getouterframes"), ("sys", "settrace")}
MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault"}


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _parents(tree):
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def term_input_reads(source: str) -> list[int]:
    """Lines of ``source`` that read a tree term's graph inputs by position:
    ``<term>.owner.inputs`` (subscripted, unpacked or passed on), or a 6-name unpacking of
    any ``.owner.inputs``."""
    tree = ast.parse(source)
    parents = _parents(tree)
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "inputs"
                and isinstance(node.value, ast.Attribute) and node.value.attr == "owner"):
            continue
        up, func = node, None
        while up in parents:
            up = parents[up]
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                func = up.name
                break
        if func in NOT_TERMS:
            continue
        receiver = node.value.value
        name = receiver.id if isinstance(receiver, ast.Name) else (
            receiver.value.id if isinstance(receiver, ast.Subscript)
            and isinstance(receiver.value, ast.Name) else None)
        parent = parents.get(node)
        unpack6 = (isinstance(parent, ast.Assign) and parent.value is node
                   and isinstance(parent.targets[0], ast.Tuple)
                   and len(parent.targets[0].elts) == 6)
        if name in TERM_NAMES or unpack6:
            lines.append(node.lineno)
    return lines


def pymc_patches(source: str) -> list[int]:
    """Lines of ``source`` that change PyMC's objects or read the call stack: an assignment,
    ``setattr`` or mutating call on a name bound to PyMC (imported from it, or assigned from
    such a name), any ``__class__`` assignment, and frame reads (``sys._getframe``, ...)."""
    tree = ast.parse(source)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names
                      if a.name.split(".")[0] == "pymc"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pymc":
            bound |= {a.asname or a.name for a in node.names}
    changed = True
    while changed:  # names assigned from PyMC's objects (conv = pm_arviz.DataTreeConverter)
        changed = False
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
                    and _root(node.value) in bound):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id not in bound:
                        bound.add(t.id)
                        changed = True
    lines = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for t in targets:
            if isinstance(t, (ast.Attribute, ast.Subscript)) and (
                    _root(t) in bound or (isinstance(t, ast.Attribute)
                                          and t.attr == "__class__")):
                lines.append(node.lineno)
        if isinstance(node, ast.Call):
            fn = node.func
            if (isinstance(fn, ast.Name) and fn.id in ("setattr", "delattr") and node.args
                    and _root(node.args[0]) in bound):
                lines.append(node.lineno)
            if (isinstance(fn, ast.Attribute) and fn.attr in MUTATORS
                    and _root(fn.value) in bound and isinstance(fn.value, ast.Attribute)):
                lines.append(node.lineno)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in FRAME_READS):
            lines.append(node.lineno)
    return lines


def _sources():
    for f in sorted(PACKAGE.rglob("*.py")):
        yield f.relative_to(PACKAGE.parent).as_posix(), f.read_text()


def test_the_scans_catch_what_they_refuse():
    assert term_input_reads("def g(rv):\n    return rv.owner.inputs[2]\n") == [2]
    assert term_input_reads("_, _, X, o, sd, w = node.owner.inputs\n") == [1]
    assert term_input_reads("def noise_likelihood(rv):\n    a = rv.owner.inputs[2]\n") == []
    assert term_input_reads("x = obs.owner.inputs[2:]\n") == []
    assert pymc_patches("from pymc.sampling import forward\n"
                        "forward._maybe_warn_implicit_freeze = None\n") == [2]
    assert pymc_patches("import pymc as pm\nc = pm.backends.arviz.DataTreeConverter\n"
                        "c.method = None\n") == [3]
    assert pymc_patches("import pymc as pm\npm.step_methods.STEP_METHODS.append(1)\n") == [2]
    assert pymc_patches("import sys\nf = sys._getframe(1)\n") == [2]
    assert pymc_patches("trace.__class__ = object\n") == [1]
    assert pymc_patches("import pymc as pm\nx = pm.sample\nd = {}\nd['a'] = 1\n") == []


def test_only_term_inputs_reads_a_terms_inputs():
    found = {path: term_input_reads(src) for path, src in _sources() if path != READER}
    found = {k: v for k, v in found.items() if v}
    assert not found, ("a tree term's graph inputs read by position outside term_inputs "
                       f"(call pymc_trees.bart.term.distribution.term_inputs instead): {found}")


def test_only_pymc_compat_patches_pymc():
    found = {path: pymc_patches(src) for path, src in _sources() if path != COMPAT}
    found = {k: v for k, v in found.items() if v}
    assert not found, ("PyMC patched, or the call stack read, outside "
                       f"pymc_trees/bart/term/pymc_compat.py (move it there): {found}")
    assert pymc_patches(Path(PACKAGE.parent, COMPAT).read_text())  # the scan sees its patches
