"""The families in which a tree term of normal leaves has an exact augmentation
(docs/math.md sections 1 and 8), one :class:`LikelihoodFamily` entry each in the likelihood
registry (:mod:`pymc_trees.bart.likelihood.registry`, leaf form ``"normal"``).

An entry says everything the package knows of its family:

* how it is matched in a model's graph: the PyMC distributions it is written with
  (``distributions``) and ``read``, which finds the linear predictor eta and the other
  parameters in the observed variable's inputs (or None when the graph is not of the form);
* its link (``link``), which sets the term's calibration (:meth:`LikelihoodFamily.calibration`,
  :func:`pymc_trees.bart.likelihood.calibration.leaf_calibration`) and which ``BARTTree(link=...)``
  must match;
* its pseudo-data given the parameters: directly for a Gaussian family (``gaussian``), else
  the latent-variable draw of docs/math.md section 8 (``latents``, the kernels of
  :mod:`pymc_trees.bart.kernels.augment`), each returning ``(z, w)`` with which the
  likelihood of eta is ``prod_i Normal(z_i; eta_i, 1/w_i)``;
* how it is written in the docs and in the error that lists the supported forms.

:func:`pymc_trees.bart.likelihood.structure.tree_likelihood` matches an observed variable against the
entries in order (:func:`read_form`); :meth:`pymc_trees.bart.likelihood.structure.TreeLikelihood.pseudo_data`
calls the entry's draw.  The table of ``docs/explanation/augmentations.md`` ("Other likelihoods:
exact data
augmentation") is :func:`forms_table` (a test checks that they are equal).  Adding a family is
one :func:`register` call below plus its tests: an enumeration or quadrature test of the latent
draw, and a model the new entry recognises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import pymc as pm
import pytensor.scalar as ps
import pytensor.tensor as pt

from pymc_trees.bart.likelihood.calibration import LINKS, leaf_calibration
from pymc_trees.bart.kernels import augment
from pymc_trees.bart.likelihood.model_graph import (constant_value, depends_on,
                                                    negative_binomial_logit, scalar_op, unwrap)
from pymc_trees.bart.likelihood import registry
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.special import Softmax

__all__ = ["LikelihoodFamily", "FAMILIES", "register", "read_form", "LIKELIHOOD_FORMS",
           "TREE_SUPPORTED", "tree_supported", "forms_table", "FORMS_TABLE_HEADER"]


@dataclass(frozen=True)
class LikelihoodFamily:
    """One likelihood family with an exact augmentation.

    Parameters
    ----------
    name : str
        The family's key (``TreeLikelihood.family``), e.g. ``"negative_binomial"``.
    distributions : tuple of PyMC distribution classes
        The distributions it is written with (matched by their ``rv_type``).
    link : str
        The link the family implies for the term, one of
        :data:`pymc_trees.bart.likelihood.calibration.LINKS`.
    read : callable
        ``read(obs, inputs, f) -> (eta, params) | None``: from the observed variable ``obs``,
        its distribution parameters ``inputs`` (``obs.owner.inputs[2:]``) and the term ``f``,
        the graph of the linear predictor eta in which the augmentation works and the other
        parameters as ``[(label, graph), ...]`` (which must not depend on f); None when the
        graph is not of this form.
    forms : tuple of str
        The forms as written in a model, one line each in the error that lists them.
    parameters : tuple of str
        The other parameters, as the error names them ("no other parameter ... depends on f").
    doc_form, doc_latent, doc_zw : str
        The columns of the docs table: the form, the latent draw per row, and ``z``, ``w``.
    gaussian : callable, optional
        ``gaussian(y, params) -> (z, w)`` for a family that is Gaussian in eta given its
        parameters: no latent variable, the pseudo-data computed directly.
    latents : callable, optional
        ``latents(rng, y, eta, params) -> (z, w)``: the latent variables' draw given eta
        (shape (n,)) and the data (y of shape (n,), params broadcastable to it).  Exactly one
        of ``gaussian`` and ``latents`` is given.
    mismatch : callable, optional
        ``mismatch(obs) -> str``: why an observed variable of these distributions is not of
        this form (when no entry reads it), for the error.
    given_others : callable, optional
        For a family whose eta is a (k, n) array that a term of shape (k, n) enters output by
        output (a softmax's logits): ``given_others(y, X, j) -> (y_j, a_j, logp)``, output j's
        likelihood given the other outputs, a family of ``latents`` in ``eta_j = a_j + b_j
        f_j`` with observed values ``y_j`` and ``logp(y_j, eta_j)`` its row log densities up
        to a constant (the check of the form).  Such a family reads no term of shape (n,).
    """

    leaf_form: ClassVar[str] = "normal"  # its key in the registry

    name: str
    distributions: tuple
    link: str
    read: Callable
    forms: tuple[str, ...]
    parameters: tuple[str, ...]
    doc_form: str
    doc_latent: str
    doc_zw: str
    gaussian: Callable | None = None
    latents: Callable | None = None
    mismatch: Callable | None = None
    given_others: Callable | None = None

    def __post_init__(self):
        if self.link not in LINKS:
            raise ValueError(f"The link of likelihood family {self.name!r} must be one of "
                             f"{LINKS}; got {self.link!r}.")
        if (self.gaussian is None) == (self.latents is None):
            raise ValueError(f"Likelihood family {self.name!r} needs exactly one of gaussian "
                             "(its pseudo-data given the parameters) and latents (its latent "
                             "draw).")

    @property
    def draws_latents(self) -> bool:
        """Whether the pseudo-data need a draw of latent variables given the term."""
        return self.latents is not None

    def accepts(self, obs) -> bool:
        """Whether the observed variable ``obs`` is one of the family's distributions."""
        return isinstance(obs.owner.op, tuple(d.rv_type for d in self.distributions))

    def calibration(self, Y=None, **kwargs) -> tuple[float, float]:
        """``(offset, leaf_sd)`` of a term in this family's link:
        :func:`~pymc_trees.bart.likelihood.calibration.leaf_calibration` with ``link=self.link``."""
        return leaf_calibration(Y, link=self.link, **kwargs)


# the normal leaves' families by name: a live view of the registry
FAMILIES = registry.families("normal")


def register(family: LikelihoodFamily) -> LikelihoodFamily:
    """Add ``family`` to the registry (:func:`pymc_trees.bart.likelihood.registry.register`,
    after the others: an observed variable is matched against the entries in order)."""
    if not isinstance(family, LikelihoodFamily):
        raise TypeError(f"register takes a LikelihoodFamily; got {type(family).__name__}.")
    return registry.register(family)


def read_form(obs, f, output: bool = False):
    """``(family, eta, params, problem)`` of an observed RV in which f appears: the first
    entry that reads it (:attr:`LikelihoodFamily.read`), or ``(None, None, None, problem)``
    with what is not supported.  ``output``: f is one output of a (k, n) term, which the
    families read output by output (:attr:`LikelihoodFamily.given_others`) take too."""
    inputs = obs.owner.inputs[2:]
    problem = None
    for fam in registry.accepting("normal", obs):
        got = fam.read(obs, inputs, f)
        if got is not None and (output or fam.given_others is None):
            eta, params = got
            return fam, eta, params, None
        if got is not None:
            problem = (f"{obs.name!r} takes a term of shape (k, n) output by output "
                       f"({fam.forms[0]}), not one of shape (n,)")
        elif fam.mismatch is not None:
            problem = fam.mismatch(obs)
    if problem is None:
        op = obs.owner.op
        kind = type(op).__name__
        problem = (f"{obs.name!r} is a {kind.removesuffix('RV') or kind} likelihood, which has "
                   "no exact augmentation here")
    return None, None, None, problem


# ---- the families -----------------------------------------------------------------------


def _read_normal(obs, inputs, f):
    mu, sigma = inputs
    return mu, [("sigma", sigma)]


def _normal_rows(y, params):
    """Normal: ``z = y``, ``w = 1/sigma^2`` (docs/math.md section 1)."""
    return y, 1.0 / params[0] ** 2


register(LikelihoodFamily(
    name="normal", distributions=(pm.Normal,), link="identity", read=_read_normal,
    forms=("y ~ Normal(mu=eta, sigma)",), parameters=("sigma",),
    doc_form="`Normal(mu=eta, sigma)`", doc_latent="none", doc_zw="`y`, `1/sigma^2`",
    gaussian=_normal_rows))


def _read_student_t(obs, inputs, f):
    nu, mu, sigma = inputs
    return mu, [("nu", nu), ("sigma", sigma)]


def _student_t_latents(rng, y, eta, params):
    return augment.student_t_latents(rng, y, eta, params[0], params[1])


register(LikelihoodFamily(
    name="student_t", distributions=(pm.StudentT,), link="identity", read=_read_student_t,
    forms=("y ~ StudentT(nu, mu=eta, sigma)",), parameters=("nu", "sigma"),
    doc_form="`StudentT(nu, mu=eta, sigma)`",
    doc_latent="`lambda ~ Gamma((nu+1)/2, rate (nu + ((y-eta)/sigma)^2)/2)`",
    doc_zw="`y`, `lambda/sigma^2`", latents=_student_t_latents))


def _probability_mismatch(obs) -> str:
    return (f"the probability p of {obs.name!r} is not invprobit(eta) (Bernoulli only), "
            "invlogit(eta) or sigmoid(eta)")


def _read_probit(obs, inputs, f):
    if not isinstance(obs.owner.op, pm.Bernoulli.rv_type):
        return None
    (p,) = inputs
    p = unwrap(p)
    if isinstance(scalar_op(p), ps.Mul) and len(p.owner.inputs) == 2:
        c, e = (unwrap(x) for x in p.owner.inputs)
        if constant_value(e) is not None:
            c, e = e, c
        if constant_value(c) == 0.5 and isinstance(scalar_op(e), ps.Erfc):
            # invprobit(eta) = 0.5 erfc(-eta / sqrt 2)
            return e.owner.inputs[0] * (-np.sqrt(2.0)), []
    return None


def _probit_latents(rng, y, eta, params):
    return augment.probit_latents(rng, y, eta)


register(LikelihoodFamily(
    name="probit", distributions=(pm.Bernoulli,), link="probit", read=_read_probit,
    forms=("y ~ Bernoulli(p=pm.math.invprobit(eta))",), parameters=(),
    doc_form="`Bernoulli(p=pm.math.invprobit(eta))`",
    doc_latent="`z ~ Normal(eta, 1)` truncated to `z > 0` (y = 1) or `z <= 0` (Albert and "
               "Chib 1993)",
    doc_zw="`z`, 1", latents=_probit_latents, mismatch=_probability_mismatch))


def _read_logit(obs, inputs, f):
    if isinstance(obs.owner.op, pm.Bernoulli.rv_type):
        (p,), trials = inputs, pt.constant(1.0)
    else:
        trials, p = inputs
    p = unwrap(p)
    if isinstance(scalar_op(p), ps.Sigmoid):
        return p.owner.inputs[0], [("n", trials)]
    return None


def _logit_latents(rng, y, eta, params):
    return augment.logit_latents(rng, y, params[0], eta)


register(LikelihoodFamily(
    name="logit", distributions=(pm.Bernoulli, pm.Binomial), link="logit", read=_read_logit,
    forms=("y ~ Bernoulli(logit_p=eta), or p=pm.math.invlogit(eta) or pm.math.sigmoid(eta)",
           "y ~ Binomial(n, logit_p=eta), or p=pm.math.invlogit(eta) or pm.math.sigmoid(eta)"),
    parameters=("n",),
    doc_form="`Bernoulli(logit_p=eta)`, `p=invlogit(eta)` or `sigmoid(eta)`; "
             "`Binomial(n, ...)` the same",
    doc_latent="`w ~ PG(n, eta)` (Polson, Scott and Windle 2013)",
    doc_zw="`(y - n/2)/w`, `w`", latents=_logit_latents, mismatch=_probability_mismatch))


def _read_negative_binomial(obs, inputs, f):
    alpha, p = inputs
    # p = sigmoid(log alpha - eta), or x / (x + exp(eta)): work in u = logit p
    # (docs/math.md section 8)
    u = negative_binomial_logit(p, f)
    return None if u is None else (u, [("alpha", alpha)])


def _negative_binomial_latents(rng, y, eta, params):
    """Polya-Gamma in ``u = logit p``: successes alpha, trials ``y + alpha``."""
    alpha = augment.as_rows(params[0], eta.shape)
    return augment.logit_latents(rng, alpha, y + alpha, eta)


register(LikelihoodFamily(
    name="negative_binomial", distributions=(pm.NegativeBinomial,), link="log",
    read=_read_negative_binomial,
    forms=("y ~ NegativeBinomial(mu=pm.math.exp(eta), alpha), or n=a, p=a / (a + exp(eta))",),
    parameters=("alpha",),
    doc_form="`NegativeBinomial(mu=pm.math.exp(eta), alpha)`",
    doc_latent="`w ~ PG(y + alpha, u)` in `u = logit p = log alpha - eta`",
    doc_zw="`(alpha - y)/2/w` in `u`, `w`", latents=_negative_binomial_latents,
    mismatch=lambda obs: (f"the mean of {obs.name!r} is not written as mu=pm.math.exp(eta) "
                          "(the log link)")))


def _read_asymmetric_laplace(obs, inputs, f):
    b, kappa, mu = inputs
    return mu, [("b", b), ("kappa", kappa)]


def _asymmetric_laplace_latents(rng, y, eta, params):
    return augment.asymmetric_laplace_latents(rng, y, eta, params[0], params[1])


register(LikelihoodFamily(
    name="asymmetric_laplace", distributions=(pm.AsymmetricLaplace,), link="identity",
    read=_read_asymmetric_laplace,
    forms=("y ~ AsymmetricLaplace(mu=eta, b, kappa or q) (quantile regression)",),
    parameters=("the asymmetric Laplace's b and kappa",),
    doc_form="`AsymmetricLaplace(mu=eta, b, kappa or q)` (quantile regression)",
    doc_latent="`1/v ~ InverseGaussian(mean sqrt(psi tau^2)/abs(y - eta), shape psi)` "
               "(`v ~ Gamma(1/2, rate psi/2)` at `y = eta`), `theta = (1/kappa - kappa)/b`, "
               "`tau^2 = 2/b^2`, `psi = theta^2/tau^2 + 2`",
    doc_zw="`y - theta v`, `1/(tau^2 v)`", latents=_asymmetric_laplace_latents))


def _class_logits(p):
    """The logits (k, n) of ``p`` (n, k) = a softmax over the classes, written
    ``softmax(X, axis=0).T`` or ``softmax(X, axis=-1)``; None for any other form."""
    p = unwrap(p)
    transposed = False
    op = p.owner.op if p.owner is not None else None
    if isinstance(op, DimShuffle) and tuple(op.new_order) == (1, 0):  # .T
        p, transposed = unwrap(p.owner.inputs[0]), True
    if p.owner is None or not isinstance(p.owner.op, Softmax) or p.ndim != 2:
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


def _read_softmax(obs, inputs, f):
    (p,) = inputs
    X = _class_logits(p)
    return None if X is None or not depends_on(X, f) else (X, [])


def _softmax_given_others(y, X, j: int):
    """Class j given the other classes' logits: ``p(y_i | f) = exp(x_{y_i i}) / (exp(x_{j
    i}) + C_i)``, ``C_i = sum_{c != j} exp(x_{c i})``, is as a function of ``x_j`` the
    Bernoulli likelihood of ``[y_i = j]`` with logit ``x_{j i} - log C_i`` (Holmes and Held
    2006; Polson, Scott and Windle 2013, section 5): the logit augmentation with one trial."""
    others = pt.concatenate([X[:j], X[j + 1:]], axis=0)
    return (pt.cast(pt.eq(y, j), "float64"), X[j] - pt.logsumexp(others, axis=0),
            lambda yj, eta: yj * eta - np.logaddexp(0.0, eta))


register(LikelihoodFamily(
    name="softmax", distributions=(pm.Categorical,), link="logit", read=_read_softmax,
    forms=("y ~ Categorical(p=pm.math.softmax(eta, axis=0).T) or softmax(eta.T, axis=-1), "
           "with f of shape (k, n) in eta, one output per class",),
    parameters=(),
    doc_form="`Categorical(p=softmax(eta, axis=0).T)`, f of shape (k, n): each class's "
             "logits given the others",
    doc_latent="`w ~ PG(1, eta_j - log sum_(c != j) exp(eta_c))`",
    doc_zw="`([y = j] - 1/2)/w`, `w`", latents=_logit_latents,
    given_others=_softmax_given_others,
    mismatch=lambda obs: (f"the probabilities of {obs.name!r} are not a softmax of logits "
                          "that hold the term")))


# ---- what the docs and the errors list ----------------------------------------------------


def _likelihood_forms() -> tuple:
    """``(distribution, link, form)`` for every form of every family, in registry order."""
    out = []
    for fam in FAMILIES.values():
        for form in fam.forms:
            dist = next((d.__name__ for d in fam.distributions
                         if f"~ {d.__name__}(" in form), fam.distributions[0].__name__)
            out.append((dist, fam.link, form))
    return tuple(out)


def tree_supported() -> str:
    """The list of supported forms the errors of the exact tree steps give (every registered
    family's forms and parameters)."""
    params = list(dict.fromkeys(p for fam in FAMILIES.values() for p in fam.parameters))
    return ("For an exact augmentation, a sum-of-trees term f enters one observed likelihood "
            "of one of these forms:\n"
            + "".join(f"  - {form}\n" for _, _, form in _likelihood_forms())
            + "where eta = a + b * f is affine in f (a and b do not depend on f; b may be a "
            "vector or a sampled variable) and no other parameter of the likelihood "
            f"({', '.join(params)}) depends on f. No other variable or potential may depend "
            "on f.")


# the registry's forms as (distribution, link, form), and the list the errors give
LIKELIHOOD_FORMS = _likelihood_forms()
TREE_SUPPORTED = tree_supported()

FORMS_TABLE_HEADER = ("| likelihood (as written in the model) | link | latent draw per row "
                      "| `z`, `w` |\n|---|---|---|---|\n")


def forms_table() -> str:
    """The markdown table of ``docs/explanation/augmentations.md`` ("Other likelihoods: exact data
    augmentation"): one row per registered family."""
    return FORMS_TABLE_HEADER + "".join(
        f"| {fam.doc_form} | {fam.link} | {fam.doc_latent} | {fam.doc_zw} |\n"
        for fam in FAMILIES.values())
