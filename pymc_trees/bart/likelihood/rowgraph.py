"""The row log density of a tree term as machine code that the general sweep kernel calls
(issue 25): the likelihood of the rows a move changes, with its derivatives in the term, and
nothing of PyTensor or Python between trees.

The graph of the row log densities ``l_i(f_i)`` (:func:`pymc_trees.bart.likelihood.general_likelihood._row_log_density`)
and of their first and negated second derivatives in the term is split in two:

* the **frontier**: every value the rows need that does not depend on the term (the observed
  values, other parameters at the point, other terms' values, ``exp`` of a scale term, a
  ``gammaln`` of a shape...), computed once per sweep by a compiled PyTensor function of the
  model's point (:meth:`RowFunctions.pre`);
* the **row graph**: everything that depends on the term, compiled by PyTensor's numba backend
  into one function the kernel calls, ``rows_fn(f_sub, rows, pre)`` at the rows ``rows``
  (each frontier array with a row axis is gathered there inside the function, so a move costs
  work proportional to the rows it changes); the leaf updates call it at rows 0 .. n-1.

The row axis of a frontier array is its one axis of length n.  Everything is checked at
construction against the whole-graph function (values at all rows, and at a subset of rows
against all rows); any graph this cannot split, gather or compile without Python (an
operation numba runs in object mode) is reported by :func:`compile_rows` returning the reason,
and the tree step keeps the plain-Python sweep for it.
"""

from __future__ import annotations

import warnings
import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.builders import SymbolicOp
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.traversal import ancestors, toposort
from pytensor.scalar.math import TriGamma
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.shape import Shape, Shape_i, SpecifyShape

from pymc_trees.bart.kernels.row_calls import ROW_SIGNATURE

__all__ = ["RowFunctions", "compile_rows", "numba_object_mode"]


def _rebuild(outs, replace: dict) -> list:
    """``outs`` with the variables of ``replace`` replaced, every node above them rebuilt by its
    op's ``make_node`` (so static shapes are inferred anew) and every ``SpecifyShape`` dropped:
    the row graph runs on subsets of the rows, so no shape may be fixed to n.  A trigamma
    becomes :func:`_trigamma`."""
    memo = dict(replace)
    for node in toposort(outs):
        if all(o in memo for o in node.outputs):
            continue
        ins = [memo.get(i, i) for i in node.inputs]
        if isinstance(node.op, SpecifyShape):
            memo[node.outputs[0]] = ins[0]
            continue
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, TriGamma):
            memo[node.outputs[0]] = _trigamma(ins[0])
            continue
        if all(a is b for a, b in zip(ins, node.inputs)):
            continue
        if isinstance(node.op, SymbolicOp):
            # an op built for its input types (softmax): built again for the new ones
            new = node.op(*ins, return_list=True)
        else:
            new = node.op.make_node(*ins).outputs
        for o, no in zip(node.outputs, new):
            memo[o] = no
    return [memo.get(o, o) for o in outs]


def _trigamma(x):
    """``polygamma(1, x)`` in elementwise operations numba compiles natively (PyTensor's numba
    backend runs its trigamma in object mode, one Python call per element): the recurrence
    ``psi1(x) = psi1(x + 1) + 1 / x^2`` ten times, then the asymptotic series at ``z = x + 10``
    to ``z^-9``.  Relative error below 2e-13 for x > 0 against ``scipy.special.polygamma``
    (tests/test_row_kernel.py); NaN for x <= 0, where the tree step's curvature falls back to
    ``g^2`` (a trigamma appears in a curvature only, through a shape parameter that must be
    positive)."""
    s = 0.0
    for k in range(10):
        s = s + 1.0 / pt.sqr(x + k)
    z = x + 10.0
    iz = 1.0 / z
    z2 = iz * iz
    out = s + iz + 0.5 * z2 + iz * z2 * (1.0 / 6 - z2 * (1.0 / 30 - z2 * (1.0 / 42 - z2 / 30)))
    return pt.switch(pt.gt(x, 0), out, np.nan)


def _row_side(outputs, f_in) -> dict:
    """For every variable of the graph: whether it belongs to the row graph (depends on the
    term, or is a shape, which must be read from the gathered arrays)."""
    memo = {}
    for v in ancestors(outputs):  # ancestors before descendants is not guaranteed: recurse
        _mark(v, f_in, memo)
    return memo


def _mark(v, f_in, memo) -> bool:
    stack = [v]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        if x is f_in:
            memo[x] = True
        elif x.owner is None:
            memo[x] = False
        elif isinstance(x.owner.op, (Shape, Shape_i)):
            memo[x] = True
        else:
            todo = [i for i in x.owner.inputs if i not in memo]
            if todo:
                stack.extend(todo)
                continue
            memo[x] = any(memo[i] for i in x.owner.inputs)
        stack.pop()
    return memo[v]


def _rewrite_mode():
    """PyTensor's fast_run rewrites without the in-place ones (the kernel's arrays are not
    PyTensor's to overwrite), without fusion and scalarisation (those come when the row graph
    itself is compiled), with PyMC's parameter checks as ``-inf``."""
    from pytensor.compile.mode import get_mode, optdb

    q = (get_mode("FAST_RUN").provided_optimizer
         .excluding("inplace", "fusion", "scalarize", "fuse_indexed_into_elemwise")
         .including("local_check_parameter_to_ninf_switch"))
    return optdb.query(q)


def _c_callback(jf, outputs: int | None = None):
    """The compiled row graph ``jf`` behind a C signature (``ROW_SIGNATURE`` of
    :mod:`pymc_trees.bart.kernels.general`: ``(f, rows, r, pre, n_pre, out)``, ``out`` of
    shape (3, r) row-major): every model's row
    functions have the same type, so the sweep kernel is compiled once and cached on disk.
    For J = ``outputs`` outputs that share their trees, ``f`` has shape (J, r) and ``out``
    (1 + 2 J, r): the log density, then the J first and the J negated second derivatives."""
    carray = numba.carray
    if outputs is None:
        def call(fp, rp, r, pp, npre, outp):
            ll, g, h = jf(carray(fp, (r,)), carray(rp, (r,)), carray(pp, (npre,)))
            out = carray(outp, (3, r))
            for i in range(r):
                out[0, i] = ll[i]
                out[1, i] = g[i]
                out[2, i] = h[i]
        return numba.cfunc(ROW_SIGNATURE)(call)
    J = int(outputs)

    def call_joint(fp, rp, r, pp, npre, outp):
        ll, g, h = jf(carray(fp, (J, r)), carray(rp, (r,)), carray(pp, (npre,)))
        out = carray(outp, (1 + 2 * J, r))
        for i in range(r):
            out[0, i] = ll[i]
            for j in range(J):
                out[1 + j, i] = g[j, i]
                out[1 + J + j, i] = h[j, i]
    return numba.cfunc(ROW_SIGNATURE)(call_joint)


def _frontier(pre_fn, roots: list, point: dict) -> list:
    """``pre_fn`` at ``point``: its inputs are model values (``("point", name)``), shared
    variables read now (``("shared", var)``), constants (``("const", value)``) or the output
    index of a term of shape (k, n) (``("output", j)``, the last)."""
    args = []
    for kind, key in roots:
        if kind == "point":
            args.append(point[key])
        elif kind == "output":
            args.append(np.int64(key))
        elif kind == "shared":
            args.append(key.get_value(borrow=True))
        else:
            args.append(key)
    return pre_fn(*args)


class _Compiled:
    """The compiled row graph, shared by the outputs of one term (each output's
    :class:`RowFunctions` differs only in its frontier's output index); pickled as the graph,
    so that the outputs still share one compilation where it is unpickled."""

    def __init__(self, graphs: tuple, outputs: int | None):
        self.graphs = graphs  # (inputs, outputs) of the row graph
        self.outputs = outputs  # J when the row graph takes all J outputs at once
        self.fn = None  # the PyTensor function (numba backend), in a tuple
        self.callbacks = None

    def __getstate__(self):
        return {**self.__dict__, "fn": None, "callbacks": None}


class RowFunctions:
    """The compiled row graph of one tree term (one output of a term of shape (k, n)).

    ``rows_fn`` is a C callback of ``ROW_SIGNATURE`` (:mod:`pymc_trees.bart.kernels.general`)
    that writes ``(ll, g, h)`` of the rows ``rows`` (int64, shape (r,)) at the term's values there into ``out`` (3, r); the
    leaf updates call it at rows 0 .. n-1 (one compiled graph, not a second one for all rows
    without the gathers: that doubled the step's build time, 1.5 s of 5 on a two-term Gamma
    model, for a few microseconds per call); ``pre`` is :meth:`pre` at the model's point, every frontier value as float64 in one vector (the row graph casts each
    back to its type).  The k outputs of a term of shape (k, n) share one row graph, whose
    output index is a frontier value (:meth:`for_output`): one compilation for the term, not
    k (a softmax of three classes built its step in 12.6 s warm and about 46 s on a cold
    cache, three quarters of it compiling the three outputs' graphs).
    Pickled as its PyTensor graphs (the callbacks are compiled again on first use in the
    process that unpickles it, e.g. a chain's worker)."""

    def __init__(self, graphs: tuple, pre_fn, roots: list, layout: list,
                 outputs: int | None = None, shared: _Compiled | None = None):
        self._shared = shared if shared is not None else _Compiled(graphs, outputs)
        self._pre_fn = pre_fn
        self._roots = roots  # per input of _pre_fn: ("point", name) | ("const", value) | ("shared", var)
        self._layout = layout  # per frontier output: its shape in the packed vector

    def for_output(self, output: int) -> "RowFunctions":
        """The same row graph at output ``output`` of the term (the last root of the frontier
        function is the output index)."""
        kind, _ = self._roots[-1]
        if kind != "output":
            raise ValueError("this row graph has no output index")
        return RowFunctions(None, self._pre_fn, [*self._roots[:-1], ("output", int(output))],
                            self._layout, shared=self._shared)

    def compiled_functions(self) -> tuple:
        """The PyTensor function (numba backend) of the row graph at given rows, in a tuple."""
        sh = self._shared
        if sh.fn is None:
            ri, ro = sh.graphs
            sh.fn = (pytensor.function(ri, ro, mode="NUMBA", on_unused_input="ignore"),)
        return sh.fn

    def _build(self):
        sh = self._shared
        if sh.callbacks is None:
            (fr,) = self.compiled_functions()
            sh.callbacks = _c_callback(fr.vm.jit_fn, sh.outputs)
        return sh.callbacks

    @property
    def rows_fn(self):
        return self._build()

    def frontier(self, point: dict) -> list:
        """The frontier values at ``point``, each as PyTensor computes it."""
        return _frontier(self._pre_fn, self._roots, point)

    def pre(self, point: dict) -> np.ndarray:
        """The frontier at ``point`` (a dict of the model's values; for output j of a term of
        shape (k, n), the term's entry holds its current values at all outputs), packed as
        float64 into one vector."""
        parts = []
        for x, shape in zip(self.frontier(point), self._layout):
            x = np.asarray(x, dtype=np.float64)
            if x.shape != shape:
                raise ValueError(
                    f"An input of the likelihood changed shape from {shape} to {x.shape} "
                    "since the tree step was built; build the model again for new data.")
            parts.append(x.ravel())
        return np.concatenate(parts) if parts else np.zeros(0)


def compile_rows(lp, f_value, output: int | None, n: int, point: dict, value_names: dict,
                 outputs: int | None = None, cache: dict | None = None) -> RowFunctions | str:
    """Split and compile the row log density ``lp`` (shape (n,), a graph of the model's value
    variables) of tree term ``f_value`` (the term's value variable; for ``output`` j of a term
    of shape (k, n), row j of it; with ``outputs`` = k, all k outputs at once, for a term
    whose outputs share their trees: the row graph takes f of shape (k, r) and gives the
    derivatives in each output's own value).  ``value_names`` maps the model's value
    variables to their names in a point.  Returns the :class:`RowFunctions`, or the reason (a
    string) why this graph cannot run in the kernel; the caller checks the functions'
    values.  With ``output`` j, the output index is an input of the row graph; ``cache`` (a
    dict the caller keeps for the term's k outputs) holds the result, so the next output
    takes the same compiled graph (:meth:`RowFunctions.for_output`) instead of its own."""
    if output is not None and cache is not None and "rows" in cache:
        done = cache["rows"]
        return done if isinstance(done, str) else done.for_output(output)
    rf = _compile_rows(lp, f_value, output, n, point, value_names, outputs)
    if output is not None and cache is not None:
        cache["rows"] = rf
    return rf


def _compile_rows(lp, f_value, output, n, point, value_names, outputs):
    joint = outputs is not None
    f_in = pt.dmatrix("f_rows") if joint else pt.dvector("f_rows")
    roots = [v for v in ancestors([lp]) if v.owner is None
             and not (isinstance(v, Constant) and n not in np.shape(v.data))]
    if any(not isinstance(v, (Constant, SharedVariable)) and v not in value_names
           for v in roots):
        return "the likelihood reads a variable that is neither data nor a model value"
    ph = {v: v.type.clone(shape=tuple(1 if d == 1 else None for d in v.type.shape))(
        name=f"in_{v.name}") for v in roots}
    replace = dict(ph)
    # the output index of a term of shape (k, n): an input, so the k outputs share the graph
    j_in = [] if output is None else [pt.lscalar("output")]
    if output is None:
        replace[f_value] = f_in
    else:
        replace[f_value] = pt.set_subtensor(ph[f_value][j_in[0]], f_in)
    [lp_in] = _rebuild([lp], replace)
    pre_fg = FunctionGraph([f_in, *ph.values(), *j_in], [lp_in], clone=False)
    _rewrite_mode().rewrite(pre_fg)
    [lp_in] = pre_fg.outputs
    g = pytensor.grad(pt.sum(lp_in), f_in)
    h = (pt.stack([-pytensor.grad(pt.sum(g[j]), f_in)[j] for j in range(outputs)]) if joint
         else -pytensor.grad(pt.sum(g), f_in))
    fg = FunctionGraph([f_in, *ph.values(), *j_in], [lp_in, g, h], clone=True)
    _rewrite_mode().rewrite(fg)
    fin, *phs = fg.inputs
    outs = _rebuild(fg.outputs, {})
    side = _row_side(outs, fin)
    frontier = []
    for node in toposort(outs):
        if not any(side.get(o, False) for o in node.outputs):
            continue
        for i in node.inputs:
            if (not side.get(i, False) and i not in frontier
                    and not (isinstance(i, Constant) and getattr(i.type, "ndim", 0) == 0)):
                frontier.append(i)
    for o in outs:
        if not side.get(o, False):
            return "a derivative does not depend on the term"
    roots_ph = list(zip(roots, phs))
    source = [("point", value_names[v]) if v in value_names
              else ("shared", v) if isinstance(v, SharedVariable) else ("const", v.data)
              for v, _ in roots_ph]
    if output is not None:
        source.append(("output", int(output)))
    # once per sweep: PyTensor's C backend compiles it several times faster than numba
    # (its compiled ops are cached on disk), and calls it as fast
    linker = "cvm" if pytensor.config.cxx else pytensor.compile.mode.get_default_mode().linker
    pre_fn = pytensor.function(phs, frontier, on_unused_input="ignore",
                               mode=pytensor.compile.mode.Mode(linker=linker,
                                                               optimizer="fast_run"))
    values = [np.asarray(x) for x in _frontier(pre_fn, source, point)]
    idx = pt.lvector("rows")
    f_sub = pt.dmatrix("f_sub") if joint else pt.dvector("f_sub")
    packed = pt.dvector("pre")
    gathered = {fin: f_sub}
    layout = []
    off = 0
    for v, x in zip(frontier, values):
        static = getattr(v.type, "shape", ())
        axes = [a for a, d in enumerate(x.shape) if d == n and static[a] != 1]
        if len(axes) > 1:
            return f"an input of the likelihood has {len(axes)} axes of length n"
        size = int(x.size)
        flat = packed[off:off + size]
        off += size
        layout.append(x.shape)
        if isinstance(v.type, pt.TensorType):
            shaped = flat.reshape(x.shape)
            # gathered before the cast, so a move converts its own rows only
            gathered[v] = pt.cast(pt.take(shaped, idx, axis=axes[0]) if axes else shaped,
                                  v.type.dtype)
        else:  # a scalar-typed value: back to the scalar type
            gathered[v] = pt.basic.scalar_from_tensor(pt.cast(flat[0], v.type.dtype))
    row_outs = _rebuild(outs, gathered)
    rf = RowFunctions(((f_sub, idx, packed), row_outs), pre_fn, source, layout,
                      outputs=outputs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (fr,) = rf.compiled_functions()
    if numba_object_mode(fr) or any(
            "object mode" in str(w.message) for w in caught):
        return "numba would run an operation of the likelihood in object mode"
    return rf


def numba_object_mode(fn) -> bool:
    """Whether PyTensor's numba backend runs some node of the compiled function ``fn`` in
    object mode.  Asked of every node's numba translation directly: the warning numba's
    backend gives when it compiles is absent when its compiled graph comes from the disk
    cache, so reading it made the choice of backend, and with it the draws for a seed,
    depend on whether the cache was warm."""
    from pytensor.link.numba.dispatch.basic import numba_funcify

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for node in fn.maker.fgraph.toposort():
            try:
                numba_funcify(node.op, node=node)
            except Exception:  # noqa: BLE001 - a node numba cannot translate at all
                return True
    return any("object mode" in str(w.message) for w in caught)
