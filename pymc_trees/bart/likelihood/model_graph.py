"""Reading a PyMC model's graph around a tree term: which variables depend on it, whether an
expression is affine in it, and the wrappers and scalar operations PyMC writes a link with.

Shared by the likelihood registry (:mod:`pymc_trees.bart.likelihood.likelihoods`), the augmented
likelihoods (:mod:`pymc_trees.bart.likelihood.structure`) and the general step's likelihood
(:mod:`pymc_trees.bart.likelihood.general_likelihood`).
"""

from __future__ import annotations

import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.graph.traversal import ancestors
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.shape import SpecifyShape

__all__ = ["ModelStructureError", "NotAugmentable", "depends_on", "dependents", "check_float64",
           "affine_problem", "constant_value", "unwrap", "scalar_op", "strip_log_exp",
           "negative_binomial_logit"]


class ModelStructureError(ValueError):
    """The model does not have the structure a step method needs.

    Raised when a step is built (by ``pm.sample`` or by hand), before any draw, with a message
    that names the variable and what the step supports.  A ``ValueError``, so code that
    catches those catches it too.

    Examples
    --------
    :class:`~pymc_trees.NoiseGibbs` draws a variance or precision from its conjugate
    conditional, so it refuses a half-normal scale (NUTS samples that one):

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=X[:, 0], m=10)
    ...     s = pm.HalfNormal("s")
    ...     y = pm.Normal("y", mu=f, sigma=s, observed=X[:, 0])
    ...     try:
    ...         pmt.NoiseGibbs([s])
    ...     except pmt.ModelStructureError as e:
    ...         print(str(e)[:38])
    's' is neither InverseGamma nor Gamma.
    """


class NotAugmentable(ModelStructureError):
    """The tree term enters one observed likelihood, but not in a form with an exact
    augmentation (docs/math.md section 8); the general tree step (section 9) may apply."""



def depends_on(var, target) -> bool:
    """Whether the graph of ``var`` has ``target`` among its ancestors."""
    return any(a is target for a in ancestors([var]))


def dependents(model, rv):
    """Model variables and potentials (other than rv) whose graph depends on rv."""
    out = []
    for v in [*model.free_RVs, *model.observed_RVs, *model.potentials]:
        if v is rv:
            continue
        inputs = v.owner.inputs if v.owner is not None else []
        if any(depends_on(i, rv) for i in inputs) or (v in model.potentials
                                                     and depends_on(v, rv)):
            out.append(v)
    return out



_PASS_THROUGH_SCALAR = (ps.Identity, ps.Cast, ps.Neg)


def affine_problem(var, f) -> str | None:
    """None when ``var`` is elementwise affine in ``f``; otherwise what breaks it."""
    if var is f or not depends_on(var, f):
        return None
    node = var.owner
    op = node.op
    if isinstance(op, Elemwise):
        sop = op.scalar_op
        dep = [i for i in node.inputs if depends_on(i, f) or i is f]
        if isinstance(sop, (ps.Add, ps.Sub)) or isinstance(sop, _PASS_THROUGH_SCALAR):
            for i in dep:
                if (msg := affine_problem(i, f)) is not None:
                    return msg
            return None
        if isinstance(sop, ps.Mul):
            if len(dep) > 1:
                return "a product of two terms that both depend on f"
            return affine_problem(dep[0], f)
        if isinstance(sop, ps.TrueDiv):
            if node.inputs[1] in dep:
                return "a division by a term that depends on f"
            return affine_problem(node.inputs[0], f)
        return f"the elementwise operation {sop} applied to f"
    if isinstance(op, (DimShuffle, SpecifyShape, DeepCopyOp, ViewOp)):  # ViewOp: OutputGuard too
        return affine_problem(node.inputs[0], f)
    return f"the operation {op} applied to f"




def constant_value(var) -> float | None:
    """The value of ``var`` when it is one constant number (broadcast or not), else None."""
    try:
        return float(pt.get_underlying_scalar_constant_value(var))
    except Exception:
        return None


_WRAPPERS = ("DeepCopyOp", "OutputGuard", "ViewOp", "SpecifyShape")


def unwrap(var):
    """``var`` without the identity wrappers of ``pm.Deterministic`` (ViewOp) and shapes."""
    while var.owner is not None and type(var.owner.op).__name__ in _WRAPPERS:
        var = var.owner.inputs[0]
    return var


def scalar_op(var):
    """The scalar operation of the elementwise node that computes ``var`` (wrappers removed), or
    None."""
    var = unwrap(var)
    node = var.owner
    if node is not None and isinstance(node.op, Elemwise):
        return node.op.scalar_op
    return None


def strip_log_exp(var, f):
    """``var`` with every ``log(exp(x))`` that depends on f replaced by x (PyMC writes the
    negative binomial's ``p`` as ``sigmoid(log alpha - log mu)``)."""
    repl = {}
    for v in ancestors([var]):
        node = v.owner
        if (node is not None and isinstance(node.op, Elemwise)
                and isinstance(node.op.scalar_op, ps.Log)):
            inner = unwrap(node.inputs[0])
            if isinstance(scalar_op(inner), ps.Exp) and depends_on(inner, f):
                repl[v] = inner.owner.inputs[0]
    return graph_replace(var, repl, strict=False) if repl else var


def negative_binomial_logit(p, f):
    """``u = logit p`` of a negative binomial's success probability when f reaches it as
    PyMC writes the mean form, ``p = sigmoid(log alpha - log mu)`` with ``mu = exp(eta)`` (then
    ``u = log alpha - eta``), or as the ``(n, p)`` form is written by hand,
    ``p = x / (x + exp(eta))`` (either order of the sum; ``u = log x - eta``), where x does
    not depend on f; None otherwise."""
    p = unwrap(p)
    if isinstance(scalar_op(p), ps.Sigmoid):
        u = strip_log_exp(p.owner.inputs[0], f)
        return u if u is not p.owner.inputs[0] else None
    if isinstance(scalar_op(p), ps.TrueDiv):
        x, den = (unwrap(v) for v in p.owner.inputs)
        if depends_on(x, f) or not isinstance(scalar_op(den), ps.Add) \
                or len(den.owner.inputs) != 2:
            return None
        for a, e in (den.owner.inputs, den.owner.inputs[::-1]):
            e = unwrap(e)
            if isinstance(scalar_op(e), ps.Exp) and not depends_on(a, f) \
                    and _same_value(unwrap(a), x):
                return pt.log(x) - e.owner.inputs[0]
    return None


def _same_value(a, b) -> bool:
    """Whether two graphs are the same variable (up to broadcasting), or the same
    constant."""
    while a.owner is not None and isinstance(a.owner.op, DimShuffle):
        a = unwrap(a.owner.inputs[0])
    while b.owner is not None and isinstance(b.owner.op, DimShuffle):
        b = unwrap(b.owner.inputs[0])
    if a is b:
        return True
    ca, cb = constant_value(a), constant_value(b)
    return ca is not None and ca == cb


def check_float64() -> None:
    """Tree terms compute in float64 (the kernels' leaf sums, the values stored with the
    trace and reproduced to the bit by ``pmt.predict``): with PyTensor's ``floatX`` set to
    ``"float32"`` PyMC's graphs would mix the two, and the steps fail inside PyMC with errors
    that do not say why.  Refused when a term is declared, naming the setting."""
    if pytensor.config.floatX != "float64":
        raise ValueError(
            f"pytensor.config.floatX is {pytensor.config.floatX!r}, but BARTTree terms "
            "compute in float64. Set pytensor.config.floatX = 'float64' (the default; or "
            "PYTENSOR_FLAGS='floatX=float64'), or build the model inside "
            "pytensor.config.change_flags(floatX='float64').")
