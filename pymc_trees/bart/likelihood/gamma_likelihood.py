"""The likelihoods in which log-gamma leaves are conjugate (``BARTTree(...,
leaf_prior="log-gamma")`` or ``"log-inverse-gamma"``; :mod:`pymc_trees.bart.kernels.gamma_leaves`).

A family here has, in ``eta_i``, the log of one of its parameters, a likelihood

    p(y_i | eta_i) ∝ exp(q s_i eta_i - t_i exp(q eta_i))

given its other parameters (and, for some, latent variables drawn per sweep):

==================  ===========================  ===  ===============  =====================
family              eta                          q    s                t
==================  ===========================  ===  ===============  =====================
Poisson             log mu                       1    y                1
zero-inflated       log mu                       1    y                1 for the Poisson's rows,
Poisson                                                                0 for the point mass's
                                                                       (a zero's drawn)
negative binomial   log mu                       1    y                g ~ Gamma(alpha + y,
                                                                       rate alpha + mu)
Gamma               log beta (the rate)          1    alpha            y
Normal              log sigma                    -2   1/2              (y - mu)^2 / 2
Student-t           log sigma                    -2   1/2              lam (y - mu)^2 / 2,
                                                                       lam ~ Gamma((nu+1)/2,
                                                                       rate (nu + r^2)/2)
==================  ===========================  ===  ===============  =====================

``eta = a + b f`` must be affine in the term with one constant ``b``: then ``q b`` is the
exponent ``kappa`` of the term's leaves (1 for ``"log-gamma"``, -1 for
``"log-inverse-gamma"``), and a row's log rate at the trees' zero is
``log t_i + q (a_i + b offset)``.  The negative binomial is its Gamma-Poisson mixture (the
latent rate g of each row, Murray 2021 section 5), the Student-t its Normal scale mixture.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import pymc as pm
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pymc.distributions.distribution import DiracDeltaRV
from pymc.distributions.mixture import MixtureRV
from pytensor.graph.replace import graph_replace
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.subtensor import Subtensor

from pymc_trees.bart.samplers.leaf_priors import leaf_prior_kappa
from pymc_trees.bart.kernels.augment import as_rows
from pymc_trees.bart.likelihood import registry
from pymc_trees.bart.likelihood.model_graph import (affine_problem, constant_value, dependents,
                                                    depends_on, ModelStructureError,
                                                    negative_binomial_logit, scalar_op, unwrap)
from pymc_trees.bart.likelihood.structure import entered_by, point_function

__all__ = ["GammaFamily", "GAMMA_FAMILIES", "GammaLikelihood", "gamma_likelihood", "log_of",
           "GAMMA_FORMS", "auto_leaf_families", "gamma_forms_table"]


def log_of(var, f):
    """A graph of ``log(var)`` in which every ``log(exp(x))`` on the way to ``f`` is ``x``:
    through products, quotients, reciprocals, square roots, constant powers, ``abs`` and
    ``sign`` of an ``exp``; None when ``var`` reaches f through anything else."""
    v = unwrap(var)
    if not depends_on(v, f):
        return pt.log(var)
    node = v.owner
    if node is None:
        return None
    if isinstance(node.op, (DimShuffle, Subtensor)):  # exp(w)[1] as exp(w[1])
        inner = log_of(node.inputs[0], f)
        return None if inner is None else node.op(inner, *node.inputs[1:])
    op = scalar_op(v)
    ins = node.inputs
    if isinstance(op, ps.Exp):
        return ins[0]
    if isinstance(op, ps.Mul):
        parts = [log_of(x, f) for x in ins]
        return None if any(p is None for p in parts) else sum(parts[1:], parts[0])
    if isinstance(op, ps.TrueDiv):
        num, den = log_of(ins[0], f), log_of(ins[1], f)
        return None if num is None or den is None else num - den
    if isinstance(op, (ps.Reciprocal, ps.Sqrt, ps.Abs)):
        inner = log_of(ins[0], f)
        scale = {ps.Reciprocal: -1.0, ps.Sqrt: 0.5, ps.Abs: 1.0}[type(op)]
        return None if inner is None else scale * inner
    if isinstance(op, ps.Pow) and not depends_on(ins[1], f):
        inner = log_of(ins[0], f)
        return None if inner is None else ins[1] * inner
    if isinstance(op, ps.Sign) and isinstance(scalar_op(unwrap(ins[0])), ps.Exp):
        return pt.constant(0.0)  # the sign of an exp is 1
    return None


@dataclass(frozen=True)
class GammaFamily:
    """One likelihood in which log-gamma leaves are conjugate (module doc), an entry of the
    likelihood registry (:mod:`pymc_trees.bart.likelihood.registry`, leaf form
    ``"log-gamma"``).

    ``read(obs, inputs, f) -> (eta, params) | None`` finds eta (the log of the parameter,
    affine in f) and the other parameters ``[(label, graph), ...]``; ``rows(rng, y, eta,
    params) -> (s, t)`` the rows' shapes and rates (latent variables drawn from ``rng``
    given ``eta`` when ``latent``)."""

    leaf_form: ClassVar[str] = "log-gamma"  # its key in the registry

    name: str
    distribution: type
    q: float
    read: Callable
    rows: Callable
    latent: bool
    form: str
    # obs -> bool, when an observed variable is not simply one of distribution.rv_type
    matches: Callable | None = None
    # whether leaf_prior="auto" takes it under Particle Gibbs too
    # (docs/benchmarks/log-gamma-leaves.md,
    # "Particle Gibbs with log-gamma leaves"): not the negative binomial, whose Polya-Gamma
    # normal leaves gave Particle Gibbs 5.8 effective draws of f a second against 1.4
    auto_pg: bool = True
    label: str = ""  # what exp(eta) is, in a sentence: "a Poisson mean"
    # the row of docs/explanation/log-gamma-leaves.md's table: the family as written, what
    # eta is the log of, and the rows' s_i and t_i (gamma_forms_table)
    doc: tuple = ("", "", "", "")

    @property
    def forms(self) -> tuple[str, ...]:
        return (self.form,)

    def accepts(self, obs) -> bool:
        """Whether the observed variable ``obs`` is of the family's distribution."""
        if self.matches is not None:
            return self.matches(obs)
        return isinstance(obs.owner.op, self.distribution.rv_type)


def _read_poisson(obs, inputs, f):
    (mu,) = inputs
    eta = log_of(mu, f)
    return None if eta is None else (eta, [])


def _read_negative_binomial(obs, inputs, f):
    alpha, p = inputs
    u = negative_binomial_logit(p, f)  # logit p = log alpha - log mu
    return None if u is None else (pt.log(alpha) - u, [("alpha", alpha)])


def _nb_rows(rng, y, eta, params):
    alpha = as_rows(params[0], y.shape)
    g = rng.gamma(alpha + y, 1.0 / (alpha + np.exp(eta)))
    return y, g


def _read_gamma(obs, inputs, f):
    alpha, scale = inputs
    eta = log_of(scale, f)
    return None if eta is None else (-eta, [("alpha", alpha)])


def _read_normal(obs, inputs, f):
    mu, sigma = inputs
    eta = log_of(sigma, f)
    return None if eta is None else (eta, [("mu", mu)])


def _read_student_t(obs, inputs, f):
    nu, mu, sigma = inputs
    eta = log_of(sigma, f)
    return None if eta is None else (eta, [("nu", nu), ("mu", mu)])


def _student_t_rows(rng, y, eta, params):
    nu, mu = params
    r2 = (y - mu) ** 2
    lam = rng.gamma((nu + 1.0) / 2.0, 2.0 / (nu + r2 * np.exp(-2.0 * eta)))
    return np.full(y.shape, 0.5), lam * r2 / 2.0


def _is_zip(obs) -> bool:
    """A two-component mixture of a point mass at 0 and a Poisson:
    ``pm.ZeroInflatedPoisson``."""
    if not isinstance(obs.owner.op, MixtureRV) or len(obs.owner.inputs) != 4:
        return False
    dirac, comp = obs.owner.inputs[2:]
    return (isinstance(dirac.owner.op, DiracDeltaRV)
            and constant_value(dirac.owner.inputs[-1]) == 0.0
            and isinstance(comp.owner.op, pm.Poisson.rv_type))


def _read_zip(obs, inputs, f):
    _, weights, _, comp = obs.owner.inputs  # a mixture's inputs: rng, weights, components
    eta = log_of(comp.owner.inputs[2], f)
    return None if eta is None else (eta, [("psi", weights[..., 1])])


def _zip_rows(rng, y, eta, params):
    """Given eta, a zero is the Poisson's with probability ``psi exp(-mu) / (1 - psi + psi
    exp(-mu))``: the rows drawn from the point mass carry nothing (``t = 0``)."""
    psi = as_rows(params[0], y.shape)
    p0 = psi * np.exp(-np.exp(eta))
    poisson = (y > 0) | (rng.random(y.shape) * (1.0 - psi + p0) < p0)
    return y, poisson.astype(np.float64)


# the log-gamma leaves' families by name: a live view of the registry
GAMMA_FAMILIES = registry.families("log-gamma")

registry.register(GammaFamily(
    "poisson", pm.Poisson, 1.0, _read_poisson,
    lambda rng, y, eta, params: (y, np.ones(y.shape)), False,
    "y ~ Poisson(mu=pm.math.exp(eta)) (an exposure multiplies mu)",
    label="a Poisson mean",
    doc=("`Poisson(mu=exp(eta))` (an exposure multiplies mu)", "log mu", "y", "1")))

registry.register(GammaFamily(
    "zero_inflated_poisson", pm.Poisson, 1.0, _read_zip, _zip_rows, True,
    "y ~ ZeroInflatedPoisson(psi, mu=pm.math.exp(eta))", matches=_is_zip,
    label="a zero-inflated Poisson mean",
    doc=("`ZeroInflatedPoisson(psi, mu=exp(eta))`", "log mu", "y",
         "1 for a row of the Poisson, 0 for one of the point mass: a zero is the Poisson's "
         "with probability `psi e^-mu / (1 - psi + psi e^-mu)`, drawn every sweep")))

registry.register(GammaFamily(
    "negative_binomial", pm.NegativeBinomial, 1.0, _read_negative_binomial, _nb_rows, True,
    "y ~ NegativeBinomial(mu=pm.math.exp(eta), alpha), or n=a, p=a / (a + exp(eta))",
    auto_pg=False, label="a negative binomial mean",
    doc=("`NegativeBinomial(mu=exp(eta), alpha)`, or `n=a, p=a / (a + exp(eta))`",
         "log mu", "y", "g_i, drawn every sweep: `g ~ Gamma(alpha + y, rate alpha + mu)` "
         "(the Gamma-Poisson mixture)")))

registry.register(GammaFamily(
    "gamma", pm.Gamma, 1.0, _read_gamma,
    lambda rng, y, eta, params: (as_rows(params[0], y.shape), y), False,
    "y ~ Gamma(alpha, beta=alpha * pm.math.exp(-eta)) (mean exp(eta), shape alpha)",
    label="a Gamma mean",
    doc=("`Gamma(alpha, beta=alpha * exp(-eta))`", "log beta", "alpha", "y")))

registry.register(GammaFamily(
    "normal", pm.Normal, -2.0, _read_normal,
    lambda rng, y, eta, params: (np.full(y.shape, 0.5), (y - params[0]) ** 2 / 2.0),
    False, "y ~ Normal(mu, sigma=pm.math.exp(eta)) (or tau=pm.math.exp(-2 * eta))",
    label="a Normal's scale",
    doc=("`Normal(mu, sigma=exp(eta))` (or `tau`)", "log sigma", "1/2",
         "`(y - mu)^2 / 2`")))

registry.register(GammaFamily(
    "student_t", pm.StudentT, -2.0, _read_student_t, _student_t_rows, True,
    "y ~ StudentT(nu, mu, sigma=pm.math.exp(eta))", label="a Student-t's scale",
    doc=("`StudentT(nu, mu, sigma=exp(eta))`", "log sigma", "1/2",
         "`lam (y - mu)^2 / 2`, `lam ~ Gamma((nu + 1)/2, rate (nu + r^2)/2)` drawn every "
         "sweep")))


GAMMA_TABLE_HEADER = "| family, as written | eta | q | s_i | t_i |\n|---|---|---|---|---|\n"


def gamma_forms_table() -> str:
    """The markdown table of ``docs/explanation/log-gamma-leaves.md`` ("The form"): one row
    per entry of :data:`GAMMA_FAMILIES` (a test checks that the page holds it)."""
    return GAMMA_TABLE_HEADER + "".join(
        f"| {fam.doc[0]} | {fam.doc[1]} | {fam.q:g} | {fam.doc[2]} | {fam.doc[3]} |\n"
        for fam in GAMMA_FAMILIES.values())


def auto_leaf_families(step: str) -> str:
    """The likelihoods to which ``leaf_prior="auto"`` gives log-gamma leaves under the step
    kind ``step``, in a sentence (``"a Poisson mean, ... or a Student-t's scale"``), read from
    :data:`GAMMA_FAMILIES` so that a message listing them cannot drift from it."""
    labels = [fam.label for fam in GAMMA_FAMILIES.values() if step != "pg" or fam.auto_pg]
    return ", ".join(labels[:-1]) + " or " + labels[-1]

GAMMA_FORMS = (
    "A term with log-gamma leaves enters one observed likelihood of one of these forms:\n"
    + "".join(f"  - {fam.form}\n" for fam in GAMMA_FAMILIES.values())
    + "where eta = a + b * f with one constant b: b = 1 for leaf_prior='log-gamma' in the "
    "Poisson, negative binomial and Gamma rate (b = -1 in a Gamma mean exp(f)), and "
    "b = -1/2 for 'log-gamma' or 1/2 for 'log-inverse-gamma' in a Normal or Student-t "
    "sigma (sigma = exp(f / 2): f the log variance). A leaf's exp(kappa * value) is Gamma "
    "with kappa = q * b (q = 1 for the first three, -2 for a sigma) and must be 1 for "
    "'log-gamma' and -1 for 'log-inverse-gamma'; leaf_prior='auto' (the default) also "
    "takes kappa = -2 (sigma = exp(f)). Use leaf_prior='normal' (the general tree step) "
    "for any other form.")


@dataclass
class GammaLikelihood:
    """The likelihood of a term with log-gamma leaves, compiled to per-row pieces.

    ``pieces(point)`` returns ``(y, a, b, *params)``; :meth:`rates` the rows' shapes and
    log rates at the trees' zero for the sweep."""

    observed_name: str
    family: str
    kappa: float
    q: float
    pieces: Callable
    n: int
    link: str = "log"
    needs_general_step = False  # (protocol.TermLikelihood)
    observed: object = None  # the observed RV and eta's graph, for the level shifts
    eta: object = None
    others: tuple = ()  # the graphs of the other parameters, for the level shifts

    def __getstate__(self) -> dict:
        """Pickled without the model's graphs (as :class:`TreeLikelihood`)."""
        return {**self.__dict__, "observed": None, "eta": None, "others": ()}

    @property
    def draws_latents(self) -> bool:
        return GAMMA_FAMILIES[self.family].latent

    def reset(self) -> None:
        """Nothing is cached between draws (the tree step calls it at a chain's start)."""

    @contextmanager
    def held_at(self, point: dict):
        yield self

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        return sampler_kind == "cgm" and not self.draws_latents

    def update(self, ctx, smp, point: dict, warm: bool = False, sweeps: int = 1) -> dict:
        """The tree step's update of the term's sampler ``smp`` (a
        :class:`~pymc_trees.bart.samplers.gamma_sampler.GammaForestSampler`) at ``point``:
        ``ctx.gamma_sweep(smp, s, logt, sweeps)`` (the step's exact sweeps: CGM's moves or
        Particle Gibbs) against the rows' shapes and log rates, latent variables drawn first
        where the family has them; with ``warm`` one grow-from-root sweep against the rows'
        Newton pseudo-data (a start only: its leaves are the normal prior's), its leaves then
        set to 0 and drawn by one exact sweep before anything (a learned leaf scale) reads
        them.  Returns the sweep's stats (a warm start's: ``ctx.warm_stats()``)."""
        rng = ctx.rng
        f = smp.values()
        s, logt = self.rates(point, smp.offset, f if self.draws_latents else None, rng)
        if warm:
            smp.gfr_sweep(rng, *_warm_rows(s, logt, self.kappa, f - smp.offset))
            smp.zero_leaves()
            ctx.gamma_sweep(smp, s, logt, 1)
            return ctx.warm_stats()
        return ctx.gamma_sweep(smp, s, logt, sweeps)

    def rates(self, point: dict, offset: float, f: np.ndarray | None = None,
              rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(s, logt)``, shape (n,) each: the rows' shapes and ``log t_i + q (a_i + b
        offset)`` (module doc), latent variables drawn from ``rng`` given the term's
        current values ``f`` (offset included) where the family has them."""
        n = self.n
        y, a, b, *params = (np.asarray(x, dtype=np.float64) for x in self.pieces(point))
        y = as_rows(y, (n,))
        fam = GAMMA_FAMILIES[self.family]
        eta = None
        if fam.latent:
            if f is None or rng is None:
                raise ValueError(f"The {self.family} likelihood needs the term's current "
                                 "values and a generator to draw its latent variables.")
            eta = as_rows(a + b * np.asarray(f, dtype=np.float64), (n,))
        s, t = fam.rows(rng, y, eta, params)
        with np.errstate(divide="ignore"):
            logt = np.log(t) + self.q * (a + float(b) * offset)
        return (np.ascontiguousarray(as_rows(s, (n,))),
                np.ascontiguousarray(as_rows(logt, (n,))))


def _warm_rows(s, logt, kappa, F) -> tuple[np.ndarray, np.ndarray]:
    """The Newton pseudo-data of the rows at the trees' sum F (offset removed) for a
    grow-from-root warm start: in F a row's log-likelihood is ``kappa s F - r``,
    ``r = exp(logt + kappa F)``, so ``g = kappa (s - r)``, ``h = kappa^2 r`` and
    ``z = F + g / h`` with precision h (a row with ``r = 0`` carries no weight)."""
    r = np.exp(logt + kappa * F)
    ok = r > 0
    z = np.where(ok, F + (s - r) / (kappa * np.where(ok, r, 1.0)), F)
    return z, kappa * kappa * r


def _constant_coefficient(model, b) -> float | None:
    """The value of the coefficient ``b`` when it is one number at every row and at two
    points of the model (its start and a jittered one: a b that a model variable reaches
    changes between them), else None."""
    fn = point_function(model, [b])
    start = model.initial_point()
    rng = np.random.default_rng(0)
    moved = {k: v + 0.37 * (1 + np.abs(v)) * rng.standard_normal(np.shape(v))
             for k, v in start.items()}
    vals = np.concatenate([np.ravel(fn(pt_)[0]) for pt_ in (start, moved)])
    if vals.size and np.all(vals == vals[0]) and np.isfinite(vals[0]):
        return float(vals[0])
    return None


def gamma_likelihood(model, f_rv, n: int, leaf_prior: str,
                     output: int | None = None) -> GammaLikelihood:
    """Find and compile the likelihood of a term with log-gamma leaves (``leaf_prior``
    ``"log-gamma"`` or ``"log-inverse-gamma"``, or ``"auto"``: kappa read from the form); a
    :class:`ModelStructureError` naming the forms and the fix otherwise.

    With ``output`` (a term of shape (k, n)): the likelihood of that output given the others
    (``Normal(w[0], pm.math.exp(w[1]))``: output 1 a log sigma given the mean w[0]); ``a``
    then holds the other outputs' current contribution, and the form is checked at the
    initial point with the term at random values (:func:`_output_problem`)."""
    name = f_rv.name if output is None else f"{f_rv.name}[{output}]"
    # "auto": kappa from the likelihood; every family here gets log-gamma leaves by default,
    # each measured ahead of normal leaves (docs/explanation/log-gamma-leaves.md, "Which prior a
    # model gets")
    auto = leaf_prior == "auto"
    kappa = None if auto else leaf_prior_kappa(leaf_prior)
    head = f"{name!r} has leaf_prior={leaf_prior!r}"
    deps = dependents(model, f_rv)
    if output is not None and len(deps) > 1 and all(d in model.observed_RVs for d in deps):
        deps = entered_by(model, deps, f_rv, n, output)  # outputs in likelihoods of their own
    if len(deps) != 1 or deps[0] not in model.observed_RVs:
        found = ", ".join(d.name or str(d) for d in deps) or "none"
        raise ModelStructureError(f"{head}, so it must enter exactly one observed likelihood; "
                                  f"variables that depend on it: {found}.\n{GAMMA_FORMS}")
    obs = deps[0]
    op = obs.owner.op
    fam = next(iter(registry.accepting("log-gamma", obs)), None)
    got = None if fam is None else fam.read(obs, obs.owner.inputs[2:], f_rv)
    if got is None or not depends_on(got[0], f_rv):  # f elsewhere (a Normal's mean)
        kind = type(op).__name__.removesuffix("RV")
        raise ModelStructureError(f"{head}, but it enters {obs.name!r} (a {kind}) in a form "
                                  f"with no conjugate Gamma update.\n{GAMMA_FORMS}")
    eta, params = got
    if output is None:
        for label, par in params:
            if depends_on(par, f_rv):
                raise ModelStructureError(f"{head}, but the {label} of {obs.name!r} depends "
                                          f"on it too.\n{GAMMA_FORMS}")
        problem = affine_problem(eta, f_rv)
        zeros = pt.zeros((n,))
        a = graph_replace(eta, {f_rv: zeros}, strict=False)
        b = graph_replace(pytensor.grad(pt.sum(eta), f_rv), {f_rv: zeros}, strict=False)
    else:
        zeroed = pt.set_subtensor(f_rv[output], 0.0)
        a = graph_replace(eta, {f_rv: zeroed}, strict=False)
        b = graph_replace(pytensor.grad(pt.sum(eta), f_rv)[output], {f_rv: zeroed},
                          strict=False)
        problem = _output_problem(model, f_rv, n, output, eta, params, b, obs.name)
    if problem is not None:
        raise ModelStructureError(f"{head}, but the log {fam.distribution.__name__} parameter "
                                  f"of {obs.name!r} is not affine in it: found {problem}.\n"
                                  f"{GAMMA_FORMS}")
    b_value = _constant_coefficient(model, b)
    if auto and b_value is not None and fam.q * b_value in (1.0, -1.0, 2.0, -2.0):
        kappa = fam.q * b_value  # +-2: sigma = exp(g), a leaf's exp(-2 mu) Gamma
    if b_value is None or fam.q * b_value != kappa:
        found = "varies (a vector or a model variable)" if b_value is None else \
            f"is {b_value:g}, so kappa = {fam.q * b_value:g}"
        raise ModelStructureError(
            f"{head} (kappa = {'+-1 or +-2' if kappa is None else f'{kappa:g}'}), but in "
            f"{obs.name!r} the coefficient b of {name} in eta {found}.\n{GAMMA_FORMS}")
    y = model.rvs_to_values[obs]
    fn = point_function(model, [y, a, pt.constant(b_value), *(par for _, par in params)])
    point = model.initial_point()
    for label, x in zip(("observed", "a", "b", *(lb for lb, _ in params)), fn(point)):
        shp = np.shape(x)
        if len(shp) > 1 or (len(shp) == 1 and shp[0] not in (1, n)):
            raise ModelStructureError(
                f"In {obs.name!r} the {label} part has shape {shp}, but {name!r} has shape "
                f"({n},); every row of the likelihood must match one row of X.")
    return GammaLikelihood(observed_name=obs.name, family=fam.name, kappa=float(kappa),
                           q=fam.q, pieces=fn, n=n, observed=obs, eta=eta,
                           others=tuple(par for _, par in params))


def _output_problem(model, f_rv, n: int, output: int, eta, params, b, obs_name: str
                    ) -> str | None:
    """What keeps the log parameter ``eta`` from being ``a + b * f[output]`` with the other
    parameters free of ``f[output]`` (None when nothing does), checked at the initial point
    with the term at random values ``W`` and at ``W`` with row ``output`` moved: an affine
    map passes at every point, anything else fails at almost every one (as
    :func:`~pymc_trees.bart.likelihood.structure.output_tree_likelihood` checks its forms)."""
    f_name = model.rvs_to_values[f_rv].name
    point = dict(model.initial_point())
    rng = np.random.default_rng(0)
    W = 0.5 * rng.normal(size=(int(f_rv.owner.op.outputs), n))
    moved = W.copy()
    delta = 0.5 * rng.normal(size=n)
    moved[output] += delta
    probe = point_function(model, [eta, b, *(par for _, par in params)])
    (e0, b0, *p0), (e1, _, *p1) = (
        [np.asarray(x, dtype=np.float64) for x in probe({**point, f_name: w})]
        for w in (W, moved))
    for (label, _), x0, x1 in zip(params, p0, p1):
        if not np.array_equal(x0, x1):
            return f"its {label} moves with {f_rv.name}[{output}] too"
    try:
        ok = np.allclose(np.broadcast_to(e1 - e0, (n,)), b0 * delta, rtol=1e-8, atol=1e-10)
    except ValueError:
        return f"a log parameter of shape {e0.shape} (not ({n},)) in {obs_name!r}"
    return None if ok else "a map that is not a + b * f at every row"
