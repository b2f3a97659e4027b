"""What the tree and noise steps read from a PyMC model.

* :func:`tree_likelihood` finds the likelihood of a ``BARTTree`` term (one of the families of
  the registry, :mod:`pymc_trees.bart.likelihood.likelihoods`: Normal, Student-t, Bernoulli probit or
  logit, Binomial logit, negative binomial with a log mean, asymmetric Laplace) and compiles
  the per-row pieces of its linear predictor ``a + b * f`` and parameters (docs/math.md,
  sections 1 and 8); :func:`output_tree_likelihood` and :func:`joint_output_likelihoods` do
  so for the outputs of a term of shape (k, n).
* The general tree step's likelihood (any other form) is compiled by
  :mod:`pymc_trees.bart.likelihood.general_likelihood`.
* :func:`noise_likelihood` checks that a variance (InverseGamma) or precision (Gamma) enters
  only the scale of Normal likelihoods, as ``s_i^2 = sigma^2 / w_i`` (or ``1 / (tau w_i)``), and
  compiles what the conjugate update of docs/math.md section 4 needs.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.random.basic import GammaRV, InvGammaRV, NormalRV
from pytensor.tensor.variable import TensorConstant

from pymc_trees.bart.likelihood.general_likelihood import GeneralLikelihood, general_likelihood
from pymc_trees.bart.likelihood.likelihoods import FAMILIES, read_form, tree_supported
from pymc_trees.bart.kernels.augment import as_rows
from pymc_trees.bart.kernels.bundles import read_only_rows
from pymc_trees.bart.likelihood.model_graph import (affine_problem, constant_value, dependents,
                                                    depends_on, ModelStructureError, NotAugmentable)

__all__ = ["ModelStructureError", "NotAugmentable", "tree_likelihood", "general_likelihood",
           "output_tree_likelihood", "joint_output_likelihoods", "unobserved_term",
           "GeneralLikelihood", "noise_likelihood", "TreeLikelihood", "NoiseLikelihood",
           "point_function", "held_fixed", "entered_by"]


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
    return not dependents(model, f_rv)


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


def point_function(model, outs, inputs=(), mode=None):
    return _PointFn(model, outs, inputs, mode)


def held_fixed(model, outs, moved_only_in_form) -> bool:
    """Whether no sampled variable reaches the graphs ``outs``, besides the random variables
    ``moved_only_in_form`` (which reach them only through a shape or a difference that does
    not depend on their value): their values can then be computed once a chain."""
    values = set(model.value_vars) - {model.rvs_to_values[v] for v in moved_only_in_form}
    return not any(v in values for v in ancestors(model.replace_rvs_by_values(outs)))


@dataclass
class TreeLikelihood:
    """The observed likelihood of a tree term, compiled to per-row arrays.

    ``family`` is the name of its entry in the likelihood registry
    (:data:`pymc_trees.bart.likelihood.likelihoods.FAMILIES`: ``"normal"``, ``"student_t"``,
    ``"probit"``, ``"logit"`` for Bernoulli or Binomial, ``"negative_binomial"`` and
    ``"asymmetric_laplace"``); ``link`` is the link it implies for the term (``"identity"``,
    ``"probit"``, ``"logit"``, ``"log"``).  ``eta`` is the graph of the linear predictor
    ``a + b * f`` in which the augmentation works (for the negative binomial:
    ``logit p = log alpha - eta``, see :func:`tree_likelihood`).

    ``pieces(point)`` returns ``(y, a, b, *params)``, each broadcastable to shape (n,), with
    params ``(sigma,)`` (normal), ``(nu, sigma)`` (Student-t), ``()`` (probit), ``(trials,)``
    (logit), ``(alpha,)`` (negative binomial) and ``(b, kappa)`` (asymmetric Laplace): the
    entry's parameters.  For a Gaussian family (the Normal), when none of them depends on a
    sampled variable (``static``), the pseudo-data are computed once per chain and reused
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
    # the graphs of the likelihood's other parameters (sigma, nu, ...), for the level shifts
    others: tuple = ()
    _held: tuple | None = None
    needs_general_step = False  # (protocol.TermLikelihood)

    def reset(self) -> None:
        self._cached = None

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        return sampler_kind == "cgm" and not self.draws_latents

    def update(self, ctx, smp, point: dict, warm: bool, sweeps: int = 1) -> dict:
        """The conjugate tree update of one forest against its (augmented) pseudo-data, the
        latent variables of docs/math.md section 8 drawn first given the current forest."""
        if not self.draws_latents:
            z, omega = self.pseudo_data(point, smp.offset)
        else:
            z, omega = self.pseudo_data(point, smp.offset, smp.values(), ctx.rng)
        if warm:
            smp.gfr_sweep(ctx.rng, z, omega)
            return ctx.warm_stats()
        stats = ctx.sweep(z, omega, smp, sweeps)
        if smp is ctx.sampler:  # one forest: a learned scale's non-centred update
            ctx.interweave(ctx.rng, smp, z, omega)
        return stats

    @contextmanager
    def held_at(self, point: dict):
        """Within the block, :meth:`pseudo_data` at this very ``point`` (the same dict
        object) evaluates the pieces once and reuses them: the tree step's sweeps of one
        iteration run at one point (the model's other variables are held), and each sweep
        evaluating the compiled pieces again cost about 50 us of a 6-row model's 500 us
        sweep.  Any other point (a new dict) evaluates them as usual."""
        self._held = (point, None)
        try:
            yield self
        finally:
            self._held = None

    def _pieces_at(self, point: dict) -> list:
        held = self._held
        if held is not None and held[0] is point and held[1] is not None:
            return held[1]
        pieces = [np.asarray(x, dtype=np.float64) for x in self.pieces(point)]
        if held is not None and held[0] is point:
            self._held = (point, pieces)
        return pieces

    @property
    def draws_latents(self) -> bool:
        """Whether :meth:`pseudo_data` draws latent variables (and so needs the term's values
        and a generator): every registered family but the Gaussian ones."""
        return FAMILIES[self.family].draws_latents

    def __getstate__(self) -> dict:
        """Pickled (PyMC sends the tree step to each worker process) without ``observed``
        and ``eta``: the model's graphs, read when the step is built, carry the model's data
        (X, 80 bytes a training row at p = 10); ``pieces`` is all a step uses after that."""
        state = dict(self.__dict__)
        state["observed"] = state["eta"] = None
        state["others"] = ()
        state["_held"] = None
        return state

    def pseudo_data(self, point: dict, offset: float, f: np.ndarray | None = None,
                    rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Pseudo-data ``r`` for the sum of trees (offset removed) and row precisions
        ``omega`` (0 where b = 0): given them, the likelihood of the trees is
        ``prod_i Normal(r_i; sum_j g_j(x_i), 1/omega_i)``.

        A Gaussian family (the Normal): ``r = (y - a)/b - offset``, ``omega = b^2/s^2``
        (docs/math.md section 1).  Otherwise the family's latent variables of docs/math.md section 8
        (:attr:`pymc_trees.bart.likelihood.likelihoods.LikelihoodFamily.latents`) are drawn from ``rng``
        given the current values ``f`` of the term, which give ``Normal(z, 1/w)`` in eta, and
        then ``r = (z - a)/b - offset``, ``omega = w b^2``.
        """
        if self._cached is not None:
            return self._cached
        y, a, b, *params = self._pieces_at(point)
        n = self.n
        fam = FAMILIES[self.family]
        if fam.latents is None:
            z, w = fam.gaussian(y, params)
        else:
            if f is None or rng is None:
                raise ValueError(f"The {self.family} likelihood needs the term's current values "
                                 "and a generator to draw its latent variables.")
            eta = as_rows(a + b * np.asarray(f, dtype=np.float64), (n,))
            y = as_rows(y, (n,))
            z, w = fam.latents(rng, y, eta, params)
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
        out = (_rows(r, n), _rows(omega, n))
        if self.static:
            self._cached = out
        return out



def _rows(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` as a read-only contiguous float64 array of shape (n,), as the sweeps take it
    (:func:`~pymc_trees.bart.kernels.bundles.read_only_rows`); broadcast only when it is not
    of shape (n,) already (``np.broadcast_to`` cost 15 us a call of a small model's step)."""
    return read_only_rows(x if x.shape == (n,) else np.broadcast_to(x, (n,)))


def _as_scalar_if_constant(var):
    """``var`` as a 0-d constant when it is one value broadcast over the rows, else itself."""
    c = constant_value(var)
    return var if c is None else pt.constant(c, dtype="float64")




def tree_likelihood(model, f_rv, n: int) -> TreeLikelihood:
    """Find and compile the likelihood of tree term ``f_rv``; raise a clear error otherwise.

    Recognised forms: those of the likelihood registry
    (:data:`pymc_trees.bart.likelihood.likelihoods.LIKELIHOOD_FORMS`): Normal and Student-t with mean
    eta, Bernoulli with a probit or logit link, Binomial with a logit link, negative binomial
    with ``mu = exp(eta)``, asymmetric Laplace with location eta, where ``eta = a + b * f``.
    Anything else raises :class:`ModelStructureError` listing every supported form.
    """
    deps = dependents(model, f_rv)
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
                f"augmentations take one.\n{tree_supported()}")
        raise ModelStructureError(
            f"{name!r} must enter observed likelihoods only (one of the forms below for an "
            f"exact augmentation; any, one or several row by row, for the general tree step); "
            f"variables that depend on it: {found}.\n{tree_supported()}")
    obs = deps[0]
    if obs not in model.observed_RVs:
        raise ModelStructureError(
            f"{obs.name!r} depends on {name!r} but is not observed.\n{tree_supported()}")
    fam, eta, params, problem = read_form(obs, f_rv)
    if problem is not None:
        raise NotAugmentable(f"{name!r} enters {obs.name!r}, but {problem}.\n"
                                  f"{tree_supported()}")
    for label, par in params:
        if depends_on(par, f_rv):
            raise NotAugmentable(f"The {label} of {obs.name!r} depends on {name!r}.\n"
                                      f"{tree_supported()}")
    if (msg := affine_problem(eta, f_rv)) is not None:
        raise NotAugmentable(f"The linear predictor of {obs.name!r} is not affine in "
                                  f"{name!r}: found {msg}.\n{tree_supported()}")
    zeros = pt.zeros_like(f_rv)
    a = graph_replace(eta, {f_rv: zeros}, strict=False)
    b = graph_replace(pytensor.grad(pt.sum(eta), f_rv), {f_rv: zeros}, strict=False)
    # a and b the same at every row (eta = f: 0 and 1) are computed as scalars, not n-vectors
    a, b = (_as_scalar_if_constant(x) for x in (a, b))
    y = model.rvs_to_values[obs]
    outs = [y, a, b, *(par for _, par in params)]
    fn = point_function(model, outs)
    # f itself only reaches a and b through its shape (zeros_like), never through its value
    static = not fam.draws_latents and held_fixed(model, outs, [f_rv])
    lik = TreeLikelihood(observed_name=obs.name, observed=obs, family=fam.name, link=fam.link,
                         eta=eta, pieces=fn, n=n, static=static,
                         others=tuple(par for _, par in params))
    point = model.initial_point()
    labels = ("observed", "a", "b", *(label for label, _ in params))
    for label, x in zip(labels, fn(point)):
        shp = np.shape(x)
        if len(shp) > 1 or (len(shp) == 1 and shp[0] not in (1, n)):
            raise ModelStructureError(
                f"In {obs.name!r} the {label} part has shape {shp}, but {name!r} has shape "
                f"({n},); every row of the likelihood must match one row of X.\n"
                f"{tree_supported()}")
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
    the likelihood registry (:data:`pymc_trees.bart.likelihood.likelihoods.LIKELIHOOD_FORMS`) whose linear
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
    deps = dependents(model, f_rv)
    name = f"{f_rv.name}[{output}]"
    if len(deps) > 1 and all(d in model.observed_RVs for d in deps):
        # outputs in likelihoods of their own (y1 ~ Normal(f[0], s1), y2 ~ Normal(f[1], s2)):
        # the one this output enters
        deps = entered_by(model, deps, f_rv, n, output)
    if len(deps) != 1 or deps[0] not in model.observed_RVs:
        raise NotAugmentable(f"{name!r} does not enter exactly one observed likelihood.")
    obs = deps[0]
    fam, eta, params, problem = read_form(obs, f_rv, output=True)
    if problem is not None:
        raise NotAugmentable(f"{name!r} enters {obs.name!r}, but {problem}.")
    if fam.given_others is not None:
        return _given_others_output(model, obs, fam, eta, f_rv, n, output, name)
    zeroed = pt.set_subtensor(f_rv[output], 0.0)
    a = graph_replace(eta, {f_rv: zeroed}, strict=False)
    b = graph_replace(pytensor.grad(pt.sum(eta), f_rv)[output], {f_rv: zeroed}, strict=False)
    y = model.rvs_to_values[obs]
    fn = point_function(model, [y, a, b, *(par for _, par in params)])
    probe = point_function(model, [eta, *(par for _, par in params)])
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
    return TreeLikelihood(observed_name=obs.name, observed=obs, family=fam.name, link=fam.link,
                          eta=eta, pieces=_OutputPieces(fn, output), n=n)


def entered_by(model, observed: list, f_rv, n: int, output: int) -> list:
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
        fn = point_function(model, [model.logp(vars=[obs], sum=False)[0]], mode="FAST_COMPILE")
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


def _given_others_output(model, obs, fam, X, f_rv, n: int, output: int, name: str
                         ) -> TreeLikelihood:
    """Output ``output`` of a (k, n) term in the (k, n) logits ``X`` of a family read output
    by output (:attr:`~pymc_trees.bart.likelihood.likelihoods.LikelihoodFamily.given_others`,
    a softmax's classes): its likelihood given the other outputs, of the family's latent
    draw in ``eta_j = a_j + b_j f_j`` with ``a_j`` the given part at ``f_j = 0``.  Checked end
    to end at a random point: moving ``f[j]`` changes the model's row log densities as the
    family's ``logp`` says."""
    zeroed = pt.set_subtensor(f_rv[output], 0.0)
    Xz = graph_replace(X, {f_rv: zeroed}, strict=False)
    y, a, logp = fam.given_others(model.rvs_to_values[obs], Xz, output)
    b = graph_replace(pytensor.grad(pt.sum(X), f_rv)[output], {f_rv: zeroed}, strict=False)
    fn = point_function(model, [y, a, b, pt.constant(1.0)])
    rows = point_function(model, [model.logp(vars=[obs], sum=False)[0]])
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
        got.append(logp(yb, a0 + b0 * w[output]))
        want.append(np.broadcast_to(np.asarray(rows(at)[0], float), (n,)))
    if not np.allclose(got[1] - got[0], want[1] - want[0], rtol=1e-9, atol=1e-9):
        raise NotAugmentable(f"{name!r} is not one output's {fam.name} likelihood of "
                             f"{obs.name!r} given the others, row by row.")
    return TreeLikelihood(observed_name=obs.name, observed=obs, family=fam.name, link=fam.link,
                          eta=X[output], pieces=_OutputPieces(fn, output), n=n)


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
    deps = dependents(model, rv)
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
        if depends_on(mu, rv):
            raise ModelStructureError(f"The mean of {d.name!r} depends on {rv.name!r}. "
                                      f"{NOISE_SUPPORTED}")
        y = model.rvs_to_values[d]
        outs += [y - mu, sigma**2]
        scale2_probe.append(graph_replace(sigma**2, {rv: probe}, strict=False))
    # s_i^2 must be proportional to the variable (variance) or to its inverse (precision).
    probe_fn = point_function(model, scale2_probe, inputs=[probe], mode="FAST_COMPILE")
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
    return NoiseLikelihood(kind=kind, prior=point_function(model, [alpha0, rate0]),
                           residuals=point_function(model, outs))
