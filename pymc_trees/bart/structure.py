"""What the tree and noise steps read from a PyMC model.

* :func:`tree_likelihood` finds the likelihood of a ``BARTTree`` term (Normal, Student-t,
  Bernoulli probit or logit, Binomial logit, negative binomial with a log mean) and compiles
  the per-row pieces of its linear predictor ``a + b * f`` and parameters (bart-math sections
  1 and 8).
* :func:`noise_likelihood` checks that a variance (InverseGamma) or precision (Gamma) enters
  only the scale of Normal likelihoods, as ``s_i^2 = sigma^2 / w_i`` (or ``1 / (tau w_i)``), and
  compiles what the conjugate update of bart-math section 4 needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.random.basic import GammaRV, InvGammaRV, NormalRV
from pytensor.tensor.shape import SpecifyShape
from pytensor.tensor.variable import TensorConstant

from pymc_trees.bart.kernels import augment
from pymc_trees.bart.kernels.general import call_all, call_rows
from pymc_trees.bart.rowgraph import RowFunctions, compile_rows, numba_object_mode

__all__ = ["ModelStructureError", "NotAugmentable", "tree_likelihood", "general_likelihood",
           "output_tree_likelihood", "joint_output_likelihoods", "unobserved_term",
           "GeneralLikelihood", "noise_likelihood", "level_shifts",
           "TreeLikelihood", "NoiseLikelihood", "LevelShift"]

LIKELIHOOD_FORMS = (
    ("Normal", "identity", "y ~ Normal(mu=eta, sigma)"),
    ("StudentT", "identity", "y ~ StudentT(nu, mu=eta, sigma)"),
    ("Bernoulli", "probit", "y ~ Bernoulli(p=pm.math.invprobit(eta))"),
    ("Bernoulli", "logit", "y ~ Bernoulli(logit_p=eta), or p=pm.math.invlogit(eta) or "
                           "pm.math.sigmoid(eta)"),
    ("Binomial", "logit", "y ~ Binomial(n, logit_p=eta), or p=pm.math.invlogit(eta) or "
                          "pm.math.sigmoid(eta)"),
    ("NegativeBinomial", "log", "y ~ NegativeBinomial(mu=pm.math.exp(eta), alpha)"),
    ("AsymmetricLaplace", "identity", "y ~ AsymmetricLaplace(mu=eta, b, kappa or q) "
                                      "(quantile regression)"),
)

TREE_SUPPORTED = (
    "For an exact augmentation, a sum-of-trees term f enters one observed likelihood of one "
    "of these forms:\n"
    + "".join(f"  - {form}\n" for _, _, form in LIKELIHOOD_FORMS)
    + "where eta = a + b * f is affine in f (a and b do not depend on f; b may be a vector or a "
    "sampled variable) and no other parameter of the likelihood (sigma, nu, n, alpha, the "
    "asymmetric Laplace's b and kappa) depends on f. No other variable or potential may "
    "depend on f."
)


class ModelStructureError(ValueError):
    """The model does not have the structure a step method needs."""


class NotAugmentable(ModelStructureError):
    """The tree term enters one observed likelihood, but not in a form with an exact
    augmentation (bart-math section 8); the general tree step (section 9) may apply."""


def _depends_on(var, target) -> bool:
    return any(a is target for a in ancestors([var]))


def _dependents(model, rv):
    """Model variables and potentials (other than rv) whose graph depends on rv."""
    out = []
    for v in [*model.free_RVs, *model.observed_RVs, *model.potentials]:
        if v is rv:
            continue
        inputs = v.owner.inputs if v.owner is not None else []
        if any(_depends_on(i, rv) for i in inputs) or (v in model.potentials
                                                     and _depends_on(v, rv)):
            out.append(v)
    return out


def unobserved_term(model, f_rv) -> bool:
    """Whether no density of the model depends on a tree term.

    Parameters
    ----------
    model : pm.Model
    f_rv : TensorVariable
        The tree term (a ``BARTTree`` variable of ``model``).

    Returns
    -------
    bool
        True when no observed variable, no other free variable and no potential depends on
        ``f_rv`` (a Deterministic may).  The term's full conditional is then its prior, which
        its tree step draws from every iteration; a free variable or potential that depends
        on the term is refused by :func:`tree_likelihood`.
    """
    return not _dependents(model, f_rv)


_PASS_THROUGH_SCALAR = (ps.Identity, ps.Cast, ps.Neg)


def _affine_problem(var, f) -> str | None:
    """None when ``var`` is elementwise affine in ``f``; otherwise what breaks it."""
    if var is f or not _depends_on(var, f):
        return None
    node = var.owner
    op = node.op
    if isinstance(op, Elemwise):
        sop = op.scalar_op
        dep = [i for i in node.inputs if _depends_on(i, f) or i is f]
        if isinstance(sop, (ps.Add, ps.Sub)) or isinstance(sop, _PASS_THROUGH_SCALAR):
            for i in dep:
                if (msg := _affine_problem(i, f)) is not None:
                    return msg
            return None
        if isinstance(sop, ps.Mul):
            if len(dep) > 1:
                return "a product of two terms that both depend on f"
            return _affine_problem(dep[0], f)
        if isinstance(sop, ps.TrueDiv):
            if node.inputs[1] in dep:
                return "a division by a term that depends on f"
            return _affine_problem(node.inputs[0], f)
        return f"the elementwise operation {sop} applied to f"
    if isinstance(op, (DimShuffle, SpecifyShape)) or type(op).__name__ in (
            "DeepCopyOp", "OutputGuard", "ViewOp"):
        return _affine_problem(node.inputs[0], f)
    return f"the operation {op} applied to f"


# constants of at least this many elements (a model's data: observed y, X) are inputs of a
# compiled _PointFn, their arrays held beside it
_DATA_SIZE = 1024


class _PointFn:
    """A compiled function of extra inputs followed by a model point.

    The model's large constants in the graph (observed data) become inputs, their arrays
    held in ``data`` and passed at every call: compiled in, PyTensor keeps them in the
    function and its graph, and a pickle (PyMC sends the steps to its worker processes)
    carried each of them twice per function, where now every function that reads y shares
    the one array (the pickle's memo)."""

    def __init__(self, model, outs, extra_inputs=(), mode=None):
        self.names = [v.name for v in model.value_vars]
        outs = model.replace_rvs_by_values(outs)
        consts = [c for c in graph_inputs(outs) if isinstance(c, TensorConstant)
                  and c.data.size >= _DATA_SIZE]
        stand_ins = [c.type() for c in consts]
        if consts:
            outs = graph_replace(outs, dict(zip(consts, stand_ins)), strict=False)
        self.data = [c.data for c in consts]
        self.fn = pytensor.function([*extra_inputs, *stand_ins, *model.value_vars], outs,
                                    on_unused_input="ignore", mode=mode)
        self.fn.trust_input = False

    def __call__(self, point, *extra):
        return self.fn(*extra, *self.data, *(point[name] for name in self.names))


def _compile(model, outs, inputs=(), mode=None):
    return _PointFn(model, outs, inputs, mode)


@dataclass
class TreeLikelihood:
    """The observed likelihood of a tree term, compiled to per-row arrays.

    ``family`` is one of ``"normal"``, ``"student_t"``, ``"probit"``, ``"logit"`` (Bernoulli
    or Binomial) and ``"negative_binomial"``; ``link`` is the link it implies for the term
    (``"identity"``, ``"probit"``, ``"logit"``, ``"log"``).  ``eta`` is the graph of the linear
    predictor ``a + b * f`` in which the augmentation works (for the negative binomial:
    ``logit p = log alpha - eta``, see :func:`tree_likelihood`).

    ``pieces(point)`` returns ``(y, a, b, *params)``, each broadcastable to shape (n,), with
    params ``(sigma,)`` (normal), ``(nu, sigma)`` (Student-t), ``()`` (probit), ``(trials,)``
    (logit) and ``(alpha,)`` (negative binomial).  For the Normal, when none of them depends
    on a sampled variable (``static``), the pseudo-data are computed once per chain and reused
    (:meth:`reset` at the start of a chain, as data may have changed).
    """

    observed_name: str
    observed: object  # the observed RV
    family: str
    link: str
    eta: object  # graph of the linear predictor, affine in f
    pieces: Callable[[dict], tuple]
    n: int
    static: bool = False
    _cached: tuple | None = None

    def reset(self) -> None:
        self._cached = None

    def __getstate__(self) -> dict:
        """Pickled (PyMC sends the tree step to each worker process) without ``observed``
        and ``eta``: the model's graphs, read when the step is built, carry the model's data
        (X, 80 bytes a training row at p = 10); ``pieces`` is all a step uses after that."""
        state = dict(self.__dict__)
        state["observed"] = state["eta"] = None
        return state

    def pseudo_data(self, point: dict, offset: float, f: np.ndarray | None = None,
                    rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Pseudo-data ``r`` for the sum of trees (offset removed) and row precisions
        ``omega`` (0 where b = 0): given them, the likelihood of the trees is
        ``prod_i Normal(r_i; sum_j g_j(x_i), 1/omega_i)``.

        Normal: ``r = (y - a)/b - offset``, ``omega = b^2/s^2`` (bart-math 1).  Otherwise the
        latent variables of bart-math 8 are drawn from ``rng`` given the current values ``f``
        of the term, which give ``Normal(z, 1/w)`` in eta, and then ``r = (z - a)/b - offset``,
        ``omega = w b^2``.
        """
        if self._cached is not None:
            return self._cached
        y, a, b, *params = (np.asarray(x, dtype=np.float64) for x in self.pieces(point))
        n = self.n
        if self.family == "normal":
            z, w = y, 1.0 / params[0] ** 2
        else:
            if f is None or rng is None:
                raise ValueError(f"The {self.family} likelihood needs the term's current values "
                                 "and a generator to draw its latent variables.")
            eta = np.broadcast_to(a + b * np.asarray(f, dtype=np.float64), (n,))
            y = np.broadcast_to(y, (n,))
            if self.family == "probit":
                z, w = augment.probit_latents(rng, y, eta)
            elif self.family == "logit":
                z, w = augment.logit_latents(rng, y, params[0], eta)
            elif self.family == "negative_binomial":
                alpha = np.broadcast_to(params[0], (n,))
                z, w = augment.logit_latents(rng, alpha, y + alpha, eta)
            elif self.family == "student_t":
                z, w = augment.student_t_latents(rng, y, eta, params[0], params[1])
            elif self.family == "asymmetric_laplace":
                z, w = augment.asymmetric_laplace_latents(rng, y, eta, params[0], params[1])
            else:  # pragma: no cover - families are fixed in tree_likelihood
                raise AssertionError(self.family)
        if np.all(b != 0):
            # r = (z - a) / b - offset, in one new array (no n-row temporaries)
            r = np.subtract(z, a)
            np.divide(r, b, out=r)
            np.subtract(r, offset, out=r)
            omega = w * b * b
        else:
            nz = b != 0
            r = np.where(nz, (z - a) / np.where(nz, b, 1.0) - offset, 0.0)
            omega = np.where(nz, w * b * b, 0.0)
        out = (np.ascontiguousarray(np.broadcast_to(r, (n,))),
               np.ascontiguousarray(np.broadcast_to(omega, (n,))))
        if self.static:
            self._cached = out
        return out


def _constant(var) -> float | None:
    try:
        return float(pt.get_underlying_scalar_constant_value(var))
    except Exception:
        return None


def _as_scalar_if_constant(var):
    """``var`` as a 0-d constant when it is one value broadcast over the rows, else itself."""
    c = _constant(var)
    return var if c is None else pt.constant(c, dtype="float64")


_WRAPPERS = ("DeepCopyOp", "OutputGuard", "ViewOp", "SpecifyShape")


def _unwrap(var):
    """``var`` without the identity wrappers of ``pm.Deterministic`` (ViewOp) and shapes."""
    while var.owner is not None and type(var.owner.op).__name__ in _WRAPPERS:
        var = var.owner.inputs[0]
    return var


def _scalar_op(var):
    var = _unwrap(var)
    node = var.owner
    if node is not None and isinstance(node.op, Elemwise):
        return node.op.scalar_op
    return None


def _strip_log_exp(var, f):
    """``var`` with every ``log(exp(x))`` that depends on f replaced by x (PyMC writes the
    negative binomial's ``p`` as ``sigmoid(log alpha - log mu)``)."""
    repl = {}
    for v in ancestors([var]):
        node = v.owner
        if (node is not None and isinstance(node.op, Elemwise)
                and isinstance(node.op.scalar_op, ps.Log)):
            inner = _unwrap(node.inputs[0])
            if isinstance(_scalar_op(inner), ps.Exp) and _depends_on(inner, f):
                repl[v] = inner.owner.inputs[0]
    return graph_replace(var, repl, strict=False) if repl else var


def _read_form(obs, f):
    """``(family, link, eta, params, problem)`` of an observed RV in which f appears: eta is
    the linear predictor in which the family's augmentation works, params the other
    parameters (which must not depend on f); problem explains a form that is not supported."""
    op = obs.owner.op
    inputs = obs.owner.inputs[2:]
    kind = type(op).__name__
    if isinstance(op, NormalRV):
        mu, sigma = inputs
        return "normal", "identity", mu, [("sigma", sigma)], None
    if kind == "StudentTRV":
        nu, mu, sigma = inputs
        return "student_t", "identity", mu, [("nu", nu), ("sigma", sigma)], None
    if kind in ("BernoulliRV", "BinomialRV"):
        if kind == "BernoulliRV":
            (p,), trials = inputs, pt.constant(1.0)
        else:
            trials, p = inputs
        p = _unwrap(p)
        sop = _scalar_op(p)
        if isinstance(sop, ps.Sigmoid):
            return "logit", "logit", p.owner.inputs[0], [("n", trials)], None
        if kind == "BernoulliRV" and isinstance(sop, ps.Mul) and len(p.owner.inputs) == 2:
            c, e = (_unwrap(x) for x in p.owner.inputs)
            if _constant(e) is not None:
                c, e = e, c
            if _constant(c) == 0.5 and isinstance(_scalar_op(e), ps.Erfc):
                # invprobit(eta) = 0.5 erfc(-eta / sqrt 2)
                return "probit", "probit", e.owner.inputs[0] * (-np.sqrt(2.0)), [], None
        return None, None, None, None, (
            f"the probability p of {obs.name!r} is not invprobit(eta) (Bernoulli only), "
            "invlogit(eta) or sigmoid(eta)")
    if kind == "AsymmetricLaplaceRV":
        b, kappa, mu = inputs
        return "asymmetric_laplace", "identity", mu, [("b", b), ("kappa", kappa)], None
    if kind == "NegBinomialRV":
        alpha, p = inputs
        p = _unwrap(p)
        if isinstance(_scalar_op(p), ps.Sigmoid):
            u = _strip_log_exp(p.owner.inputs[0], f)
            if u is not p.owner.inputs[0]:
                # p = sigmoid(log alpha - eta): work in u = logit p (bart-math 8)
                return "negative_binomial", "log", u, [("alpha", alpha)], None
        return None, None, None, None, (
            f"the mean of {obs.name!r} is not written as mu=pm.math.exp(eta) (the log link)")
    return None, None, None, None, (
        f"{obs.name!r} is a {kind.removesuffix('RV') or kind} likelihood, which has no exact "
        "augmentation here")


def tree_likelihood(model, f_rv, n: int) -> TreeLikelihood:
    """Find and compile the likelihood of tree term ``f_rv``; raise a clear error otherwise.

    Recognised forms (``LIKELIHOOD_FORMS``): Normal and Student-t with mean eta, Bernoulli
    with a probit or logit link, Binomial with a logit link, negative binomial with
    ``mu = exp(eta)``, asymmetric Laplace with location eta, where ``eta = a + b * f``.
    Anything else raises :class:`ModelStructureError` listing every supported form.
    """
    deps = _dependents(model, f_rv)
    name = f_rv.name
    for d in deps:
        if d in model.free_RVs and d.name and d.name.endswith("_unobserved"):
            raise ModelStructureError(
                f"The observed values of {d.name[:-len('_unobserved')]!r} contain NaN, so PyMC "
                f"split it into imputed and observed parts; {name!r} needs every row observed. "
                f"Drop the rows with missing y (and the same rows of X), or model them "
                f"explicitly.")
    if len(deps) != 1:
        found = ", ".join(d.name or str(d) for d in deps) or "none"
        if len(deps) > 1 and all(d in model.observed_RVs for d in deps):
            raise NotAugmentable(
                f"{name!r} enters {len(deps)} observed likelihoods ({found}); the exact "
                f"augmentations take one.\n{TREE_SUPPORTED}")
        raise ModelStructureError(
            f"{name!r} must enter observed likelihoods only (one of the forms below for an "
            f"exact augmentation; any, one or several row by row, for the general tree step); "
            f"variables that depend on it: {found}.\n{TREE_SUPPORTED}")
    obs = deps[0]
    if obs not in model.observed_RVs:
        raise ModelStructureError(
            f"{obs.name!r} depends on {name!r} but is not observed.\n{TREE_SUPPORTED}")
    family, link, eta, params, problem = _read_form(obs, f_rv)
    if problem is not None:
        raise NotAugmentable(f"{name!r} enters {obs.name!r}, but {problem}.\n"
                                  f"{TREE_SUPPORTED}")
    for label, par in params:
        if _depends_on(par, f_rv):
            raise NotAugmentable(f"The {label} of {obs.name!r} depends on {name!r}.\n"
                                      f"{TREE_SUPPORTED}")
    if (msg := _affine_problem(eta, f_rv)) is not None:
        raise NotAugmentable(f"The linear predictor of {obs.name!r} is not affine in "
                                  f"{name!r}: found {msg}.\n{TREE_SUPPORTED}")
    zeros = pt.zeros_like(f_rv)
    a = graph_replace(eta, {f_rv: zeros}, strict=False)
    b = graph_replace(pytensor.grad(pt.sum(eta), f_rv), {f_rv: zeros}, strict=False)
    # a and b the same at every row (eta = f: 0 and 1) are computed as scalars, not n-vectors
    a, b = (_as_scalar_if_constant(x) for x in (a, b))
    y = model.rvs_to_values[obs]
    outs = [y, a, b, *(par for _, par in params)]
    fn = _compile(model, outs)
    # f itself only reaches a and b through its shape (zeros_like), never through its value
    values = set(model.value_vars) - {model.rvs_to_values[f_rv]}
    static = family == "normal" and not any(
        v in values for v in ancestors(model.replace_rvs_by_values(outs)))
    lik = TreeLikelihood(observed_name=obs.name, observed=obs, family=family, link=link,
                         eta=eta, pieces=fn, n=n, static=static)
    point = model.initial_point()
    labels = ("observed", "a", "b", *(label for label, _ in params))
    for label, x in zip(labels, fn(point)):
        shp = np.shape(x)
        if len(shp) > 1 or (len(shp) == 1 and shp[0] not in (1, n)):
            raise ModelStructureError(
                f"In {obs.name!r} the {label} part has shape {shp}, but {name!r} has shape "
                f"({n},); every row of the likelihood must match one row of X.\n"
                f"{TREE_SUPPORTED}")
    return lik


class _OutputPieces:
    """The pieces ``(y, a, b, *params)`` of output ``output`` of a (k, n) term at a point:
    rows of (k, n) arrays are the output's, a 2-D array with one row (a scalar parameter
    broadcast to (1, 1) or (1, n)) is that row, (n,) arrays and scalars are kept
    (picklable)."""

    def __init__(self, fn, output: int):
        self.fn, self.output = fn, output

    def __call__(self, point):
        return tuple((x[self.output] if x.shape[0] > 1 else x[0]) if x.ndim == 2 else x
                     for x in (np.asarray(v, dtype=np.float64) for v in self.fn(point)))


def output_tree_likelihood(model, f_rv, n: int, output: int) -> TreeLikelihood:
    """The augmented likelihood of output ``output`` of a tree term of shape (k, n), given the
    other outputs; :class:`NotAugmentable` when that output is not in one.

    The output enters one observed variable (the term may enter others through its other
    outputs: ``y1 ~ Normal(f[0], s1)``, ``y2 ~ Normal(f[1], s2)``) of a form of
    ``LIKELIHOOD_FORMS`` whose linear
    predictor eta, broadcast with the observed values and parameters, has shape (n,) or
    (k, n), and:

    * the output's row i enters eta affinely and elementwise: moving ``f[output]`` by d moves
      eta by ``b * d`` (row ``output`` of eta for shape (k, n), nothing else), with b free of
      ``f[output]``; a and b may depend on the other outputs (``Normal(w[0], abs(w[1]))``:
      output 0 is a Normal mean given output 1);
    * no other parameter of the likelihood depends on ``f[output]``.

    Checked at the initial point with the term at random values (an affine map passes at
    every point; anything else fails at almost every one).  The pieces are evaluated with the
    output's values zeroed, so ``a`` holds the other outputs' current contribution.
    """
    deps = _dependents(model, f_rv)
    name = f"{f_rv.name}[{output}]"
    if len(deps) > 1 and all(d in model.observed_RVs for d in deps):
        # outputs in likelihoods of their own (y1 ~ Normal(f[0], s1), y2 ~ Normal(f[1], s2)):
        # the one this output enters
        deps = _entered_by(model, deps, f_rv, n, output)
    if len(deps) != 1 or deps[0] not in model.observed_RVs:
        raise NotAugmentable(f"{name!r} does not enter exactly one observed likelihood.")
    obs = deps[0]
    if type(obs.owner.op).__name__ == "CategoricalRV":
        return _softmax_output(model, obs, f_rv, n, output, name)
    family, link, eta, params, problem = _read_form(obs, f_rv)
    if problem is not None:
        raise NotAugmentable(f"{name!r} enters {obs.name!r}, but {problem}.")
    zeroed = pt.set_subtensor(f_rv[output], 0.0)
    a = graph_replace(eta, {f_rv: zeroed}, strict=False)
    b = graph_replace(pytensor.grad(pt.sum(eta), f_rv)[output], {f_rv: zeroed}, strict=False)
    y = model.rvs_to_values[obs]
    fn = _compile(model, [y, a, b, *(par for _, par in params)])
    probe = _compile(model, [eta, *(par for _, par in params)])
    point = dict(model.initial_point())
    f_name = model.rvs_to_values[f_rv].name
    k = int(f_rv.owner.op.outputs)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(k, n))
    try:
        parts = [np.asarray(x, dtype=np.float64) for x in fn({**point, f_name: W})]
        shape = np.broadcast_shapes(*(x.shape for x in parts))
    except ValueError:
        shape = None
    if shape not in ((n,), (k, n)):
        raise NotAugmentable(f"The likelihood of {name!r} has shape {shape}, neither ({n},) nor "
                             f"({k}, {n}).")
    moved = W.copy()
    delta = rng.normal(size=n)
    moved[output] += delta
    before, after = (probe({**point, f_name: w}) for w in (W, moved))
    slope = np.broadcast_to(parts[2], (n,))
    step = np.zeros(shape)
    if len(shape) == 2:
        step[output] = slope * delta
    else:
        step[:] = slope * delta
    moved_eta = np.broadcast_to(after[0], shape) - np.broadcast_to(before[0], shape)
    same_params = all(np.array_equal(np.asarray(p0), np.asarray(p1))
                      for p0, p1 in zip(before[1:], after[1:]))
    if not (np.any(slope != 0) and same_params
            and np.allclose(moved_eta, step, rtol=1e-9, atol=1e-9)):
        raise NotAugmentable(f"{name!r} is not a linear predictor of {obs.name!r} on its own "
                             "(row by row, affine) with the other parameters free of it.")
    return TreeLikelihood(observed_name=obs.name, observed=obs, family=family, link=link,
                          eta=eta, pieces=_OutputPieces(fn, output), n=n)


def _entered_by(model, observed: list, f_rv, n: int, output: int) -> list:
    """Those of the ``observed`` variables whose log density moves when output ``output``
    of the (k, n) term ``f_rv`` moves (at the initial point, the term at random values)."""
    f_name = model.rvs_to_values[f_rv].name
    point = dict(model.initial_point())
    rng = np.random.default_rng(2)
    W = rng.normal(size=(int(f_rv.owner.op.outputs), n))
    moved = W.copy()
    moved[output] += rng.normal(size=n)
    out = []
    for obs in observed:
        fn = _compile(model, [model.logp(vars=[obs], sum=False)[0]], mode="FAST_COMPILE")
        a, b = (np.asarray(fn({**point, f_name: w})[0], dtype=np.float64) for w in (W, moved))
        if not np.array_equal(a, b):
            out.append(obs)
    return out


def joint_output_likelihoods(model, f_rv, n: int) -> list[TreeLikelihood]:
    """The augmented likelihoods of the k outputs of a tree term of shape (k, n) when they
    factorise over the outputs: each output is a linear predictor of an augmentable
    likelihood (:func:`output_tree_likelihood`) whose pieces do not depend on the other
    outputs.  Given the latent variables the term's likelihood is then
    ``prod_j prod_i Normal(z_ji; f_ji, 1/w_ji)``, Gaussian in every leaf's k values jointly,
    so a term whose outputs share their trees can integrate the leaf vectors out.  Raises
    :class:`NotAugmentable` otherwise (a softmax's classes, a mean and a scale, outputs
    added in one predictor: each output's pseudo-data depend on the others).

    Checked at the initial point with the term at random values: moving the other outputs
    leaves every output's pieces unchanged."""
    k = int(f_rv.owner.op.outputs)
    liks = [output_tree_likelihood(model, f_rv, n, j) for j in range(k)]
    point = dict(model.initial_point())
    f_name = model.rvs_to_values[f_rv].name
    rng = np.random.default_rng(1)
    W = rng.normal(size=(k, n))
    for j, lik in enumerate(liks):
        moved = W + rng.normal(size=(k, n))
        moved[j] = W[j]
        before, after = (lik.pieces({**point, f_name: w}) for w in (W, moved))
        if not all(np.array_equal(np.asarray(p0), np.asarray(p1))
                   for p0, p1 in zip(before, after)):
            raise NotAugmentable(
                f"The likelihood of {f_rv.name}[{j}] depends on the other outputs of "
                f"{f_rv.name!r}, so the outputs' likelihood does not factorise over them.")
    return liks


def _class_logits(p):
    """The logits (k, n) of ``p`` (n, k) = a softmax over the classes, written
    ``softmax(X, axis=0).T`` or ``softmax(X, axis=-1)``; None for any other form."""
    p = _unwrap(p)
    transposed = False
    op = p.owner.op if p.owner is not None else None
    if op is not None and (type(op).__name__ == "MatrixTranspose" or (
            isinstance(op, DimShuffle) and tuple(op.new_order) == (1, 0))):
        p, transposed = _unwrap(p.owner.inputs[0]), True
    if p.owner is None or type(p.owner.op).__name__ != "Softmax" or p.ndim != 2:
        return None
    axis = p.owner.op.axis
    axis = tuple(a % 2 for a in (axis if isinstance(axis, tuple) else (axis,))) \
        if axis is not None else None
    X = p.owner.inputs[0]
    if transposed and axis == (0,):
        return X
    if not transposed and axis == (1,):
        return X.T
    return None


def _softmax_output(model, obs, f_rv, n: int, output: int, name: str) -> TreeLikelihood:
    """Output ``output`` of a (k, n) term in the logits of a Categorical: given the other
    classes' logits, ``p(y_i | f) = exp(x_{y_i i}) / (exp(x_{j i}) + C_i)`` with
    ``C_i = sum_{c != j} exp(x_{c i})`` is, as a function of ``x_j``, the Bernoulli
    likelihood of ``[y_i = j]`` with logit ``x_{j i} - log C_i`` (Holmes and Held 2006;
    Polson, Scott and Windle 2013, section 5): the logit augmentation, ``a = x_j(f_j = 0) -
    log C``.  Checked end to end at a random point: moving ``f[j]`` changes the model's row
    log densities as that Bernoulli's do."""
    X = _class_logits(obs.owner.inputs[2])
    if X is None or not _depends_on(X, f_rv):
        raise NotAugmentable(f"The probabilities of {obs.name!r} are not a softmax of logits "
                             f"that hold {name!r}.")
    zeroed = pt.set_subtensor(f_rv[output], 0.0)
    Xz = graph_replace(X, {f_rv: zeroed}, strict=False)
    others = pt.concatenate([Xz[:output], Xz[output + 1:]], axis=0)
    a = Xz[output] - pt.logsumexp(others, axis=0)
    b = graph_replace(pytensor.grad(pt.sum(X), f_rv)[output], {f_rv: zeroed}, strict=False)
    y = pt.cast(pt.eq(model.rvs_to_values[obs], output), "float64")
    fn = _compile(model, [y, a, b, pt.constant(1.0)])
    rows = _compile(model, [model.logp(vars=[obs], sum=False)[0]])
    point = dict(model.initial_point())
    f_name = model.rvs_to_values[f_rv].name
    rng = np.random.default_rng(0)
    W = rng.normal(size=(int(f_rv.owner.op.outputs), n))
    moved = W.copy()
    moved[output] += rng.normal(size=n)
    got, want = [], []
    for w in (W, moved):
        at = {**point, f_name: w}
        yb, a0, b0, _ = (np.broadcast_to(np.asarray(x, float), (n,)) for x in fn(at))
        eta = a0 + b0 * w[output]
        got.append(yb * eta - np.logaddexp(0.0, eta))
        want.append(np.broadcast_to(np.asarray(rows(at)[0], float), (n,)))
    if not np.allclose(got[1] - got[0], want[1] - want[0], rtol=1e-9, atol=1e-9):
        raise NotAugmentable(f"{name!r} is not one class's logit of {obs.name!r} row by row.")
    return TreeLikelihood(observed_name=obs.name, observed=obs, family="logit", link="logit",
                          eta=X[output], pieces=_OutputPieces(fn, output), n=n)


@dataclass
class GeneralLikelihood:
    """The observed likelihood of a tree term that has no exact augmentation, compiled for
    the reversible-jump tree moves of bart-math section 9.

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

    def reset(self) -> None:
        """Nothing is cached between draws (kept for the tree step's chain set-up)."""

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
        out = _compile_values(model.value_vars, [x.shape for x in xs])(point)
        return [tuple(int(d) for d in x) for x in (out if len(xs) > 1 else [out])]

    lp = _rowwise_support(model.logp(vars=[obs], sum=False)[0], shapes)
    if lp.ndim not in (1, 2):
        raise ModelStructureError(
            f"The log density of {obs.name!r} has {lp.ndim} dimensions; the tree step for "
            f"{name!r} needs one value per row of X (shape ({n},)), or (k, {n}) for a "
            "likelihood broadcast over the k outputs of a term.")
    shape = tuple(lp.type.shape)
    if any(d is None for d in shape):
        shape = tuple(int(d) for d in _compile_values(model.value_vars, [lp.shape])(point))
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
                       joint: bool = False) -> GeneralLikelihood:
    """Compile the likelihood of tree term ``f_rv`` (of output ``output`` of a term of shape
    (k, n); with ``joint``, of all k outputs at once, for a term whose outputs share their
    trees: ``f``, ``g`` and ``h`` then have shape (k, n), the derivatives in each output's
    own value) for the general tree step.

    ``f_rv`` must enter one or more observed variables and nothing else; each one's log
    density is a sum over rows in which row i depends on the term only through ``f_i``, and
    the rows of several add (two outcomes sharing one function of X).  That is checked at the
    initial point: moving f at half of the rows leaves the other rows' log densities
    unchanged.  Raises :class:`ModelStructureError` otherwise."""
    deps = _dependents(model, f_rv)
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
    check = _compile_values(model.value_vars, [lp, g, h], mode="FAST_COMPILE")
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
    _attach_rows(model, lik, lp, f_value, point, f0, check)
    return lik


def _attach_rows(model, lik: GeneralLikelihood, lp, f_value, point: dict, f0, check) -> None:
    """Compile the row graph for the sweep kernel (:mod:`pymc_trees.bart.rowgraph`) and check
    it against the whole-graph function at a perturbed point: at all rows, and at a third of
    the rows (in random order) against all rows.  Any failure leaves ``lik.rows`` None with
    the reason; the Python sweep then runs, with the same moves."""
    names = {v: v.name for v in model.value_vars}
    try:
        rf = compile_rows(lp, f_value, lik.output, lik.n, point, names, lik.outputs)
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
    try:
        pre = rf.pre(values)
        got = call_all(rf.rows_fn, f, pre)
        part = call_rows(rf.rows_fn, np.ascontiguousarray(f[..., rows]), rows, pre)
    except Exception as err:  # noqa: BLE001 - a shape the row graph still fixes, say
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
    dep = [k for k, v in enumerate(params) if _depends_on(v, f) or v is f]
    if len(dep) != 1:
        return None, None
    param = params[dep[0]]
    pname = _parameter_names(obs)
    pname = pname[dep[0]] if pname and len(pname) == len(params) else f"parameter {dep[0]}"
    if _affine_problem(param, f) is None:
        return "identity", pname
    sop = _scalar_op(param)
    inner = _unwrap(param).owner.inputs[0] if sop is not None else None
    if inner is not None and _affine_problem(inner, f) is None:
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
    """``_compile_values``, with PyTensor's C backend instead when the default (numba) backend
    would run some operation in object mode, one Python call per element: the trigamma
    function in the curvature of a Gamma or negative binomial log density takes 8 ms at 200
    rows there and 0.1 ms in C.  Decided once, at compile time, from the graph's nodes."""
    fn = _compile_values(value_vars, outs)
    if numba_object_mode(fn.fn) and pytensor.config.cxx:
        return _compile_values(value_vars, outs, mode="FAST_RUN_C")
    return fn


def _compile_values(value_vars, outs, mode=None):
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
    """``_compile_values`` (``fast``: ``_compile_fast``) of ``outs``, compiled on the first
    call; picklable before and after (it keeps the graphs)."""

    def __init__(self, value_vars: list, outs: list, fast: bool):
        self.value_vars, self.outs, self.fast = value_vars, outs, fast
        self._fn = None

    def __getstate__(self):
        return {**self.__dict__, "_fn": None}

    def __call__(self, values):
        if self._fn is None:
            self._fn = (_compile_fast(self.value_vars, self.outs) if self.fast
                        else _compile_values(self.value_vars, self.outs))
        return self._fn(values)


class _Bound:
    """Picklable wrapper: the compiled function called with a dict of values."""

    def __init__(self, fn, names, k):
        self.fn, self.names, self.k = fn, names, k

    def __call__(self, values):
        out = self.fn(*(values[k] for k in self.names))
        return out[0] if self.k == 1 else out


@dataclass
class LevelShift:
    """A scalar ``c ~ Normal(mu0, sd0)`` that enters the tree term's likelihood only through
    its mean, in proportion to f: per row, ``d mu / d c = k * d mu / d f`` with one constant k.
    Moving c by s and f by ``-k s`` then leaves the likelihood unchanged.
    ``prior(point)`` gives ``(mu0, sd0)``."""

    name: str
    prior: Callable[[dict], tuple]
    slopes: Callable[[dict], tuple]  # point -> (d mu / d c, d mu / d f), per row

    def ratio(self, point: dict, n: int) -> float | None:
        """k at this point, or None when the slopes are not proportional.  They may involve
        other variables, never c or f (mu is affine in both), so deciding on them leaves the
        move exact.  The slope in c is a unit difference, exact up to rounding, hence the
        1e-9 tolerance."""
        s_c, s_f = (np.broadcast_to(np.asarray(x, float), (n,)) for x in self.slopes(point))
        nz = s_f != 0
        if not np.any(nz):
            return None
        k = float(np.median(s_c[nz] / s_f[nz]))
        if k == 0 or not np.allclose(s_c, k * s_f, rtol=1e-9, atol=1e-9):
            return None
        return k


def level_shifts(model, f_rv, lik: TreeLikelihood) -> list[LevelShift]:
    """The intercept-like variables of tree term ``f_rv`` (see :class:`LevelShift`)."""
    obs = lik.observed
    mu = lik.eta
    out = []
    for c in model.free_RVs:
        if (c is f_rv or c.ndim != 0 or not isinstance(c.owner.op, NormalRV)
                or model.rvs_to_transforms.get(c) is not None
                or _dependents(model, c) != [obs] or _affine_problem(mu, c) is not None):
            continue
        mu0, sd0 = c.owner.inputs[2:4]
        if _depends_on(mu0, f_rv) or _depends_on(sd0, f_rv):
            continue
        # per-row slopes of mu in c and in f; both must be free of sampled variables
        zeros = pt.zeros_like(f_rv)
        d_c = graph_replace(mu, {c: c + 1.0}, strict=False) - mu
        d_f = graph_replace(pytensor.grad(pt.sum(mu), f_rv), {f_rv: zeros}, strict=False)
        d_c = graph_replace(d_c, {f_rv: zeros}, strict=False)
        shift = LevelShift(name=c.name, prior=_compile(model, [mu0, sd0]),
                           slopes=_compile(model, [d_c, d_f]))
        if shift.ratio(model.initial_point(), lik.n) is not None:
            out.append(shift)
    return out


NOISE_SUPPORTED = (
    "NoiseGibbs supports sigma2 ~ InverseGamma(alpha, beta) used as the variance of observed "
    "Normal likelihoods, sigma_i = sqrt(sigma2 / w_i), or tau ~ Gamma(alpha, beta) used as their "
    "precision, with row weights w_i that do not depend on the variable; the means must not "
    "depend on it and no other variable may."
)


@dataclass
class NoiseLikelihood:
    """What the conjugate noise update needs; see :func:`noise_likelihood`."""

    kind: str  # "variance" or "precision"
    prior: Callable[[dict], tuple]  # point -> (alpha0, beta0) as shape/rate
    residuals: Callable[[dict], tuple]  # point -> (e_1, s2_1, e_2, s2_2, ...)


def noise_likelihood(model, rv) -> NoiseLikelihood:
    """Check the conjugate structure around ``rv`` and compile its pieces."""
    op = rv.owner.op
    if isinstance(op, InvGammaRV):
        kind = "variance"
        _, _, alpha0, beta0 = rv.owner.inputs
        rate0 = beta0
    elif isinstance(op, GammaRV):
        kind = "precision"
        _, _, alpha0, scale0 = rv.owner.inputs
        rate0 = 1.0 / scale0
    else:
        raise ModelStructureError(f"{rv.name!r} is neither InverseGamma nor Gamma. "
                                  f"{NOISE_SUPPORTED}")
    if rv.ndim != 0:
        raise ModelStructureError(f"{rv.name!r} must be a scalar. {NOISE_SUPPORTED}")
    deps = _dependents(model, rv)
    if not deps:
        raise ModelStructureError(f"No likelihood depends on {rv.name!r}. {NOISE_SUPPORTED}")
    outs = []
    probe = pt.dscalar("probe")
    scale2_probe = []
    for d in deps:
        if d not in model.observed_RVs or not isinstance(d.owner.op, NormalRV):
            raise ModelStructureError(f"{d.name!r} depends on {rv.name!r} but is not an "
                                      f"observed Normal. {NOISE_SUPPORTED}")
        _, _, mu, sigma = d.owner.inputs
        if _depends_on(mu, rv):
            raise ModelStructureError(f"The mean of {d.name!r} depends on {rv.name!r}. "
                                      f"{NOISE_SUPPORTED}")
        y = model.rvs_to_values[d]
        outs += [y - mu, sigma**2]
        scale2_probe.append(graph_replace(sigma**2, {rv: probe}, strict=False))
    # s_i^2 must be proportional to the variable (variance) or to its inverse (precision).
    probe_fn = _compile(model, scale2_probe, inputs=[probe], mode="FAST_COMPILE")
    point = model.initial_point()
    base = [np.asarray(x, dtype=float) for x in probe_fn(point, 1.0)]
    other = [np.asarray(x, dtype=float) for x in probe_fn(point, 2.5)]
    expect = 2.5 if kind == "variance" else 1 / 2.5
    for d, s1, s2 in zip(deps, base, other):
        if not (np.all(np.isfinite(s1)) and np.all(s1 > 0)
                and np.allclose(s2, expect * s1, rtol=1e-8, atol=0)):
            want = "sigma2 / w_i" if kind == "variance" else "1 / (tau * w_i)"
            raise ModelStructureError(
                f"The variance of {d.name!r} is not of the form {want} in {rv.name!r}. "
                f"{NOISE_SUPPORTED}")
    return NoiseLikelihood(kind=kind, prior=_compile(model, [alpha0, rate0]),
                           residuals=_compile(model, outs))
