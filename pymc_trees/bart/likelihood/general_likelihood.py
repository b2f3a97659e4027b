"""The likelihood of a tree term that has no exact augmentation, compiled for the general tree
step's reversible-jump moves (docs/math.md section 9): the row log densities, their first and
second derivatives in each row's own value of the term, the row graph the sweep kernel calls
(:mod:`pymc_trees.bart.likelihood.rowgraph`), and the link through which the term enters its parameter
when that is recognised.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors

from pymc_trees.bart.kernels.general import call_all, call_rows
from pymc_trees.bart.kernels.moves import MOVES
from pymc_trees.bart.likelihood.model_graph import (affine_problem, dependents, depends_on,
                                                    ModelStructureError, scalar_op, unwrap)
from pymc_trees.bart.likelihood.rowgraph import RowFunctions, compile_rows, numba_object_mode

__all__ = ["GeneralLikelihood", "general_likelihood", "compile_values"]


@dataclass
class GeneralLikelihood:
    """The observed likelihood of a tree term that has no exact augmentation, compiled for
    the reversible-jump tree moves of docs/math.md section 9.

    ``bind(point)`` returns ``loglik(f, derivatives=False)``: the row log-likelihoods, shape
    (n,), at the term's values ``f`` (shape (n,)) with every other variable at the point, and
    with ``derivatives=True`` also the first and the negated second derivative of every row's
    log-likelihood in its own ``f_i`` (from the PyTensor graph, ``pytensor.grad``)."""

    observed_name: str
    observed: object
    n: int
    f_name: str
    _fn: Callable
    _dfn: Callable
    output: int | None = None  # the output j of a term of shape (k, n)
    outputs: int | None = None  # k, when the k outputs of the term share their trees (joint)
    family: str = "general"
    link: str | None = None  # how eta enters its parameter, when recognised (_general_link)
    parameter: str | None = None  # the name of that parameter
    rows: RowFunctions | None = None  # the row graph the sweep kernel calls (rowgraph)
    rows_reason: str | None = None  # why there is none (the Python sweep runs instead)

    needs_general_step = True  # (protocol.TermLikelihood)
    draws_latents = False

    def reset(self) -> None:
        """Nothing is cached between draws (kept for the tree step's chain set-up)."""

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        return not python_sweep

    def update(self, ctx, smp, point: dict, warm: bool, sweeps: int = 1) -> dict:
        """The general step's sweeps of ``smp`` at ``point`` (docs/math.md section 9), in the
        kernel where the row graph compiled; with ``warm`` a grow-from-root sweep against the
        Newton pseudo-data at the current values, ``z = f + g / h`` with precisions ``h``
        (rows without curvature carry no weight), undone when it leaves the likelihood's
        support (the pseudo-data know nothing of it)."""
        if warm:
            f = smp.values()
            _, g, h = self.evaluate(point, f)
            ok = np.isfinite(g) & np.isfinite(h) & (h > 0)
            omega = np.where(ok, h, 0.0)
            z = np.where(ok, f + g / np.where(ok, h, 1.0), f) - smp.offset
            before = smp.forest.copy()
            smp.gfr_sweep(ctx.rng, z, omega)
            if not np.all(np.isfinite(self.evaluate(point, smp.values())[0])):
                smp.forest = before
            return {f"accept_{mv}": np.nan for mv in (*MOVES, "leaf")}
        stats = smp.general_sweep(ctx.rng, self.bind(point), ctx.move_cp,
                                  None if ctx.python_sweep else self.compiled(point),
                                  sweeps=sweeps)
        ctx.tuned(stats, sweeps)
        return stats

    def compiled(self, point: dict):
        """``(rows_fn, pre)`` for :func:`pymc_trees.bart.kernels.general.general_sweep`
        at ``point`` (for output j of a term of shape (k, n), the term's entry holds its
        current values at all outputs), or None when the row graph could not be compiled
        (``rows_reason`` says why)."""
        if self.rows is None:
            return None
        return self.rows.rows_fn, self.rows.pre(point)

    def evaluate(self, point: dict, f: np.ndarray) -> tuple:
        """``(ll, g, h)`` per row at the term's values ``f`` (shape (n,)) with every other
        variable at ``point``: through the kernel's row graph when there is one (checked
        against the whole graph when the step was built), else as ``bind``."""
        f = np.ascontiguousarray(f, dtype=np.float64)
        if self.rows is not None:
            return call_all(self.rows.rows_fn, f, self.rows.pre(point))
        return self.bind(point)(f, derivatives=True)

    def bind(self, point: dict, check=None) -> Callable:
        """``loglik`` at ``point``; for output j of a term of shape (k, n), ``f`` is that
        output's row and the other outputs keep their values at ``point``.  ``check``, a
        function of the values returning ``(ll, g, h)``, replaces the compiled ones (the
        construction's checks)."""
        values = {**point}
        name = self.f_name
        j = self.output
        full = None if j is None else np.array(point[name], dtype=np.float64)

        def loglik(f, derivatives: bool = False):
            if j is None:
                values[name] = f
            else:
                full[j] = f
                values[name] = full
            if check is not None:
                out = self._row_arrays(check(values))
                return out if derivatives else out[0]
            if derivatives:
                return self._row_arrays(self._dfn(values))
            return _rows(self._fn(values), self.n)

        return loglik

    def _row_arrays(self, lgh) -> tuple:
        """``(ll, g, h)`` as float64 rows: ``ll`` (n,), ``g`` and ``h`` (n,), or (k, n) for
        the k outputs of a joint likelihood."""
        ll, g, h = lgh
        if self.outputs is None:
            return _rows(ll, self.n), _rows(g, self.n), _rows(h, self.n)
        shape = (self.outputs, self.n)
        return (_rows(ll, self.n), np.broadcast_to(np.asarray(g, np.float64), shape),
                np.broadcast_to(np.asarray(h, np.float64), shape))


def _rows(x, n: int) -> np.ndarray:
    """``x`` as float64 of shape (n,) (a row value that does not vary is broadcast)."""
    x = np.asarray(x, dtype=np.float64)
    return x if x.shape == (n,) else np.broadcast_to(x, (n,))


def _elementwise_conditions(cond) -> list | None:
    """The conditions ``c_k`` of a parameter check ``cond = all(all(c_1), ..., all(c_K))`` as
    PyMC builds it (``check_parameters``), or None for another form."""
    from pytensor.tensor.basic import MakeVector, ScalarFromTensor
    from pytensor.tensor.math import All

    node = cond.owner
    if node is not None and isinstance(node.op, ScalarFromTensor):
        cond = node.inputs[0]
        node = cond.owner
    if node is None or not isinstance(node.op, All) or node.op.axis is not None:
        return None
    inner = node.inputs[0]
    if inner.owner is None or not isinstance(inner.owner.op, MakeVector):
        return [inner]
    out = []
    for x in inner.owner.inputs:
        xn = x.owner
        out.append(xn.inputs[0] if xn is not None and isinstance(xn.op, All)
                   and xn.op.axis is None else x)
    return out


def _broadcasts(shape: tuple, target: tuple) -> bool:
    """Whether an array of ``shape`` broadcasts to ``target`` without growing it (numpy's
    rule, axes aligned from the right; a length None, not known, matches any).

    Parameters
    ----------
    shape, target : tuple
        Lengths, each an int or None.

    Returns
    -------
    bool
    """
    if len(shape) > len(target):
        return False
    return all(a == 1 or a == b or a is None or b is None
               for a, b in zip(shape[::-1], target[::-1]))


def _rowwise_support(lp, shapes: Callable | None = None):
    """``lp`` with every parameter check that PyMC would turn into one ``-inf`` for the whole
    vector (``switch(all(conditions), logp, -inf)``) applied row by row instead:
    ``switch(conditions_i, logp_i, -inf)``, so that a proposal outside the support at some rows
    leaves the other rows' log densities as they are (a leaf update then rejects only the
    leaves whose rows left the support).  Checks whose conditions have more dimensions than
    their log density keep PyMC's form.  A condition that does not broadcast to the log
    density (a mixture's weights, shape (K,), against its rows, shape (n,)) is applied whole,
    ``all(condition)``, as PyMC does: broadcast against the rows, it failed with
    "Incompatible Elemwise input shapes".

    Parameters
    ----------
    lp : TensorVariable
        A log density, ``model.logp(vars=[obs], sum=False)[0]``.
    shapes : callable, optional
        A function of a list of variables returning their shapes at the model's point, for
        the lengths not known statically (weights in ``pm.Data``); without it an unknown
        length is taken to broadcast.

    Returns
    -------
    TensorVariable
        ``lp`` with the checks replaced."""
    from pymc.logprob.utils import CheckParameterValue
    from pytensor.graph.traversal import applys_between

    inputs = [v for v in ancestors([lp]) if v.owner is None]
    checks = []
    for node in applys_between(inputs, [lp]):
        if not (isinstance(node.op, CheckParameterValue) and node.op.can_be_replaced_by_ninf):
            continue
        expr, *conds = node.inputs
        parts = []
        for c in conds:
            ec = _elementwise_conditions(c)
            if ec is None or any(x.ndim > expr.ndim for x in ec):
                parts = None
                break
            parts.extend(ec)
        if not parts or expr.ndim == 0:
            continue
        checks.append((node, expr, parts))
    unknown = list({v: None for _, expr, parts in checks for v in (expr, *parts)
                    if any(d is None for d in v.type.shape)})
    known = dict(zip(unknown, shapes(unknown))) if unknown and shapes is not None else {}
    replace = {}
    for node, expr, parts in checks:
        target = known.get(expr, expr.type.shape)
        ok = None
        for x in parts:
            shape = known.get(x, x.type.shape)
            x = x if _broadcasts(tuple(shape), tuple(target)) else pt.all(x)
            ok = x if ok is None else pt.and_(ok, x)
        out = pt.switch(ok, expr, -np.inf)
        replace[node.outputs[0]] = pt.cast(out, node.outputs[0].dtype)
    return graph_replace(lp, replace, strict=False) if replace else lp

def _row_log_density(model, obs, name: str, n: int, point: dict):
    """The log density of observed ``obs`` per row of X, shape (n,).  A single row value is
    broadcast; a log density of shape (k, n) or (n, k) (a likelihood broadcast over the outputs
    of a term of shape (k, n), such as several quantiles of one y) is summed over its other
    axis, so that row i holds everything that depends on column i of the term.  Other shapes
    are refused with the reason; that row i depends on no other row is checked by the caller."""
    def shapes(xs):
        out = compile_values(model.value_vars, [x.shape for x in xs])(point)
        return [tuple(int(d) for d in x) for x in (out if len(xs) > 1 else [out])]

    lp = _rowwise_support(model.logp(vars=[obs], sum=False)[0], shapes)
    if lp.ndim not in (1, 2):
        raise ModelStructureError(
            f"The log density of {obs.name!r} has {lp.ndim} dimensions; the tree step for "
            f"{name!r} needs one value per row of X (shape ({n},)), or (k, {n}) for a "
            "likelihood broadcast over the k outputs of a term.")
    shape = tuple(lp.type.shape)
    if any(d is None for d in shape):
        shape = tuple(int(d) for d in compile_values(model.value_vars, [lp.shape])(point))
    if lp.ndim == 2:
        if shape[1] != n and shape[0] == n:  # rows along the first axis
            lp, rows = lp.sum(axis=1), n
        else:
            lp, rows = lp.sum(axis=0), shape[1]
    else:
        rows = shape[0]
    if rows not in (1, n):
        raise ModelStructureError(
            f"The log density of {obs.name!r} has {rows} rows, but {name!r} has one value per "
            f"row of X ({n}): the tree step needs the rows of the observed variable to be the "
            f"rows of X, row i depending on {name}[i] alone. Indexing or slicing a tree term "
            f"({name}[idx], {name}[:k]) is not supported: give the term the rows of X it is "
            f"observed at (BARTTree(..., X[idx])), and use pmt.predict for other rows.")
    return lp if rows == n else pt.broadcast_to(lp, (n,))

def general_likelihood(model, f_rv, n: int, output: int | None = None,
                       joint: bool = False, rows_cache: dict | None = None) -> GeneralLikelihood:
    """Compile the likelihood of tree term ``f_rv`` (of output ``output`` of a term of shape
    (k, n); with ``joint``, of all k outputs at once, for a term whose outputs share their
    trees: ``f``, ``g`` and ``h`` then have shape (k, n), the derivatives in each output's
    own value) for the general tree step.

    ``f_rv`` must enter one or more observed variables and nothing else; each one's log
    density is a sum over rows in which row i depends on the term only through ``f_i``, and
    the rows of several add (two outcomes sharing one function of X).  That is checked at the
    initial point: moving f at half of the rows leaves the other rows' log densities
    unchanged.  Raises :class:`ModelStructureError` otherwise.  ``rows_cache``: a dict kept
    across the outputs of one term, in which their shared row graph is compiled once
    (:func:`pymc_trees.bart.likelihood.rowgraph.compile_rows`)."""
    deps = dependents(model, f_rv)
    name = f_rv.name
    if not deps or any(d not in model.observed_RVs for d in deps):
        found = ", ".join(d.name or str(d) for d in deps) or "none"
        raise ModelStructureError(
            f"{name!r} must enter observed likelihoods only (one or several, row by row); "
            f"variables that depend on it: {found}.")
    f_value = model.rvs_to_values[f_rv]
    point = model.initial_point()
    lp = sum(_row_log_density(model, obs, name, n, point) for obs in deps)
    obs = deps[0]
    observed_name = obs.name if len(deps) == 1 else " + ".join(d.name for d in deps)
    outputs = f_rv.owner.op.outputs if joint else None
    if joint:
        g = pytensor.grad(pt.sum(lp), f_value)
        h = pt.stack([-pytensor.grad(pt.sum(g[j]), f_value)[j] for j in range(outputs)])
        link, parameter = None, None
    elif output is None:
        g = pytensor.grad(pt.sum(lp), f_value)
        h = -pytensor.grad(pt.sum(g), f_value)
        link, parameter = _general_link(obs, f_rv) if len(deps) == 1 else (None, None)
    else:
        g = pytensor.grad(pt.sum(lp), f_value)[output]
        h = -pytensor.grad(pt.sum(g), f_value)[output]
        link, parameter = None, None
    # the whole-graph functions are compiled when first called (the Python sweep, a graph the
    # kernel cannot run); the checks below use a function PyTensor compiles in a tenth of
    # the time (FAST_COMPILE), the kernel's row graph otherwise
    lik = GeneralLikelihood(observed_name=observed_name, observed=obs, n=n, f_name=f_value.name,
                            _fn=_LazyValues(list(model.value_vars), [lp], fast=False),
                            _dfn=_LazyValues(list(model.value_vars), [lp, g, h], fast=True),
                            output=output, outputs=outputs, link=link, parameter=parameter)
    check = compile_values(model.value_vars, [lp, g, h], mode="FAST_COMPILE")
    f0 = np.asarray(point[f_value.name], dtype=np.float64)
    if output is not None:
        f0 = f0[output]
        name = f"{name}[{output}]"
    loglik = lik.bind(point, check)
    base = loglik(f0)
    if base.shape != (n,):
        raise ModelStructureError(f"The log density of {observed_name!r} has shape {base.shape}; "
                                  f"{name!r} has shape ({n},).")
    moved = np.random.default_rng(0).random(n) < 0.5
    probe = loglik(np.where(moved, f0 + 0.3, f0))
    same = (probe == base) | (np.isnan(probe) & np.isnan(base))
    if not np.all(same[~moved]):
        raise ModelStructureError(
            f"In {observed_name!r} a row's log density depends on the values of {name!r} at other "
            "rows; the tree step needs each row to depend on its own value f_i only (an "
            "elementwise link such as pm.math.exp(f) is fine, a sum or a softmax over rows "
            "is not).")
    _attach_rows(model, lik, lp, f_value, point, f0, check, rows_cache)
    return lik


def _attach_rows(model, lik: GeneralLikelihood, lp, f_value, point: dict, f0, check,
                 rows_cache: dict | None = None) -> None:
    """Compile the row graph for the sweep kernel (:mod:`pymc_trees.bart.likelihood.rowgraph`) and check
    it against the whole-graph function at a perturbed point: at all rows, and at a third of
    the rows (in random order) against all rows.  Any failure leaves ``lik.rows`` None with
    the reason; the Python sweep then runs, with the same moves."""
    names = {v: v.name for v in model.value_vars}
    try:
        rf = compile_rows(lp, f_value, lik.output, lik.n, point, names, lik.outputs,
                          cache=rows_cache)
    except Exception as err:  # noqa: BLE001 - any graph the splitter does not know
        rf = f"{type(err).__name__}: {err}"
    if isinstance(rf, str):
        lik.rows_reason = rf
        return
    rng = np.random.default_rng(1)
    n = lik.n
    f = f0 + rng.normal(0.0, 0.3, np.shape(f0))
    values = dict(point)
    if lik.output is None:
        values[lik.f_name] = f
    else:
        full = np.array(point[lik.f_name], dtype=np.float64)
        full[lik.output] = f
        values[lik.f_name] = full
    ref = lik._row_arrays(check(values))
    rows = rng.permutation(n)[:max(1, n // 3)].astype(np.int64)
    # an error inside the compiled callback cannot propagate through it: Python reports it
    # as "Exception ignored" with a traceback; here it is caught and makes the check fail
    ignored = []
    hook, sys.unraisablehook = sys.unraisablehook, ignored.append
    try:
        pre = rf.pre(values)
        got = call_all(rf.rows_fn, f, pre)
        part = call_rows(rf.rows_fn, np.ascontiguousarray(f[..., rows]), rows, pre)
    except Exception as err:  # noqa: BLE001 - a shape the row graph still fixes, say
        lik.rows_reason = f"the row graph failed at the check: {type(err).__name__}: {err}"
        return
    finally:
        sys.unraisablehook = hook
    if ignored:
        err = ignored[0].exc_value
        lik.rows_reason = f"the row graph failed at the check: {type(err).__name__}: {err}"
        return
    # the log density to 1e-9; its derivatives, which only shape the proposals, to 1e-4 (a
    # curvature can cancel: the Gamma's in its shape loses digits in any implementation,
    # C's included), enough to catch a row graph that is wrong (wrong rows, wrong shapes)
    tol = (1e-9, 1e-4, 1e-4)
    if not all(_agree(a, b, r) for a, b, r in zip(got, ref, tol)):
        lik.rows_reason = "the compiled row graph disagrees with the whole graph"
    elif not all(_agree(a, b[..., rows], r) for a, b, r in zip(part, got, tol)):
        lik.rows_reason = "the row graph at a subset of the rows disagrees with all rows"
    else:
        lik.rows = rf


def _agree(a, b, rtol: float) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    fa, fb = np.isfinite(a), np.isfinite(b)
    if np.any(fa != fb):
        return False
    x, y = a[~fa], b[~fb]
    if not np.all((x == y) | (np.isnan(x) & np.isnan(y))):
        return False
    return bool(np.allclose(a[fa], b[fb], rtol=rtol, atol=rtol * 1e-3))


def _general_link(obs, f):
    """``(link, parameter)``: how tree term ``f`` enters the one parameter of ``obs`` that
    depends on it, when that is recognised: ``"identity"`` (affine in f), ``"log"``
    (``exp`` of an affine function of f) or ``"logit"`` (its sigmoid).  ``(None, name)`` for
    any other form and ``(None, None)`` when f enters several parameters; the tree step then
    has no calibration to check."""
    params = obs.owner.inputs[2:]
    dep = [k for k, v in enumerate(params) if depends_on(v, f) or v is f]
    if len(dep) != 1:
        return None, None
    param = params[dep[0]]
    pname = _parameter_names(obs)
    pname = pname[dep[0]] if pname and len(pname) == len(params) else f"parameter {dep[0]}"
    if affine_problem(param, f) is None:
        return "identity", pname
    sop = scalar_op(param)
    inner = unwrap(param).owner.inputs[0] if sop is not None else None
    if inner is not None and affine_problem(inner, f) is None:
        if isinstance(sop, ps.Exp):
            return "log", pname
        if isinstance(sop, ps.Sigmoid):
            return "logit", pname
    return None, pname


def _parameter_names(obs) -> list[str] | None:
    """The names of the distribution parameters of observed RV ``obs``, in the order of its
    inputs, from the ``dist`` signature of its PyMC distribution when they match."""
    import inspect

    import pymc as pm

    kind = type(obs.owner.op).__name__.removesuffix("RV")
    dist = getattr(pm, kind, None)
    n_params = len(obs.owner.inputs) - 2
    names = None
    # the user's names (``Poisson.dist(mu)``) where they map one to one onto the op's
    # inputs, else the op's own (``Gamma``: alpha, beta of alpha, beta, mu, sigma)
    for fn in (getattr(dist, "dist", None), getattr(dist, "rv_op", None)):
        if fn is None:
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        names = [k for k, v in sig.parameters.items()
                 if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)
                 and k not in ("cls", "size", "rng")]
        if len(names) == n_params:
            return names
    return names


def _compile_fast(value_vars, outs):
    """``compile_values``, with PyTensor's C backend instead when the default (numba) backend
    would run some operation in object mode, one Python call per element: the trigamma
    function in the curvature of a Gamma or negative binomial log density takes 8 ms at 200
    rows there and 0.1 ms in C.  Decided once, at compile time, from the graph's nodes."""
    fn = compile_values(value_vars, outs)
    if numba_object_mode(fn.fn) and pytensor.config.cxx:
        return compile_values(value_vars, outs, mode="FAST_RUN_C")
    return fn


def compile_values(value_vars, outs, mode=None):
    """A compiled function of a dict of the values of ``value_vars`` (the model's value
    variables; the model's point).

    As in :func:`pymc.pytensorf.compile`, a parameter outside its support (a scale of zero or
    below, a negative rate) makes the log density ``-inf`` (PyMC's rewrite
    ``local_check_parameter_to_ninf_switch``) instead of raising ``ParameterValueError``: a
    tree proposal that reaches such values is then rejected."""
    names = [v.name for v in value_vars]
    if mode == "FAST_RUN_C":
        mode = pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")
    mode = pytensor.compile.mode.get_mode(mode)
    mode = pytensor.compile.mode.Mode(
        linker=mode.linker,
        optimizer=mode.provided_optimizer.including("local_check_parameter_to_ninf_switch"))
    fn = pytensor.function(list(value_vars), outs, on_unused_input="ignore", mode=mode)
    fn.trust_input = False
    return _Bound(fn, names, len(outs))


class _LazyValues:
    """``compile_values`` (``fast``: ``_compile_fast``) of ``outs``, compiled on the first
    call; picklable before and after (it keeps the graphs)."""

    def __init__(self, value_vars: list, outs: list, fast: bool):
        self.value_vars, self.outs, self.fast = value_vars, outs, fast
        self._fn = None

    def __getstate__(self):
        return {**self.__dict__, "_fn": None}

    def __call__(self, values):
        if self._fn is None:
            self._fn = (_compile_fast(self.value_vars, self.outs) if self.fast
                        else compile_values(self.value_vars, self.outs))
        return self._fn(values)


class _Bound:
    """Picklable wrapper: the compiled function called with a dict of values."""

    def __init__(self, fn, names, k):
        self.fn, self.names, self.k = fn, names, k

    def __call__(self, values):
        out = self.fn(*(values[k] for k in self.names))
        return out[0] if self.k == 1 else out
