"""Level shifts: an intercept ``c`` (and random effects beside it) moved against a tree
term's level, an exact update along a line that leaves the likelihood unchanged
(``docs/math.md``, section 13; ``docs/explanation/terms-and-intercepts.md``).  Read from the
model around the term's likelihood (:mod:`pymc_trees.bart.likelihood.structure`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.tensor.random.basic import NormalRV

from pymc_trees.bart.likelihood.model_graph import affine_problem, dependents, depends_on
from pymc_trees.bart.likelihood.structure import TreeLikelihood, held_fixed, point_function

__all__ = ["LevelShift", "EffectShift", "level_shifts"]


@dataclass
class LevelShift:
    """A scalar ``c ~ Normal(mu0, sd0)`` that enters the tree term's likelihood only through
    its mean, in proportion to f: per row, ``d mu / d c = k * d mu / d f`` with one constant k.
    Moving c by s and f by ``-k s`` then leaves the likelihood unchanged.
    ``prior(point)`` gives ``(mu0, sd0)``."""

    name: str
    prior: Callable[[dict], tuple]
    slopes: Callable[[dict], tuple]  # point -> (d mu / d c, d mu / d f), per row
    # neither the slopes nor mu0, sd0 depend on a sampled variable: evaluated once a chain
    static: bool = False
    _memo: tuple | None = None
    # random effects that c can be shifted against too (:class:`EffectShift`)
    effects: tuple = ()

    def shift_effects(self, rng: np.random.Generator, point: dict, mu0: float,
                      sd0: float) -> dict:
        """The point's c and random effects after one :meth:`EffectShift.draw` each."""
        out = {}
        for effect in self.effects:
            out.update(effect.draw(rng, {**point, **out}, self.name, mu0, sd0))
        return out

    def reset(self) -> None:
        """Forget the terms kept from the chain's first iteration (data may have changed)."""
        self._memo = None

    def terms(self, point: dict, n: int) -> tuple[float, float, float] | None:
        """``(k, mu0, sd0)`` at this point (:meth:`ratio`, :attr:`prior`), or None when the
        slopes are not proportional.  When :attr:`static`, evaluated at the first call after
        :meth:`reset` and kept: the compiled slopes and prior cost about 0.3 ms an iteration
        of a small model (a fifth of its step).  Not pickled (a worker evaluates anew)."""
        if self._memo is not None:
            return self._memo[0]
        k = self.ratio(point, n)
        got = None if k is None else (k, *(float(x) for x in self.prior(point)))
        if self.static:
            self._memo = (got,)
        return got

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_memo"] = None
        return state

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


@dataclass
class EffectShift:
    """A random effect ``u ~ Normal(mu_u, sd_u)`` (a vector, ``alpha + u[group]``) that enters
    the likelihood as the intercept c does: moving c by s and every entry of u by -s leaves
    the linear predictor, hence the likelihood, unchanged.  Along that line the conditional
    of s is Gaussian, with precision ``1 / sd0^2 + sum_g 1 / sd_u[g]^2`` and mean
    ``((mu0 - c) / sd0^2 + sum_g (u_g - mu_u[g]) / sd_u[g]^2) / precision``: drawing it is an
    exact Gibbs update that moves c along the ridge between the intercept and the effects'
    mean, which NUTS crosses slowly (``docs/explanation/terms-and-intercepts.md``, "Intercepts:
    the level shift").
    ``prior(point)`` gives ``(mu_u, sd_u)``."""

    name: str
    prior: Callable[[dict], tuple]

    def draw(self, rng: np.random.Generator, point: dict, c_name: str, mu0: float,
             sd0: float) -> dict:
        c = np.asarray(point[c_name])
        u = np.asarray(point[self.name])
        mu_u, sd_u = (np.broadcast_to(np.asarray(x, float), u.shape) for x in self.prior(point))
        w = 1.0 / sd_u**2
        prec = 1.0 / sd0**2 + float(w.sum())
        mean = ((mu0 - float(c)) / sd0**2 + float((w * (u - mu_u)).sum())) / prec
        s = mean + rng.standard_normal() / np.sqrt(prec)
        return {c_name: np.asarray(float(c) + s, dtype=c.dtype),
                self.name: np.asarray(u - s, dtype=u.dtype)}


def _effect_shifts(model, f_rv, c, lik) -> tuple:
    """The random effects ``u`` that the intercept ``c`` can be shifted against
    (:class:`EffectShift`): vectors ``u ~ Normal(mu_u, sd_u)`` (untransformed, their prior
    free of c and f) whose only dependent is the observation, outside the likelihood's other
    parameters, such that moving c by t and u by -t leaves its mean unchanged.  That is
    checked at random values of c, u and t (the mean then cancels exactly: it is affine along
    the line with these slopes, as in ``alpha + u[group] + f``)."""
    obs, mu = lik.observed, lik.eta
    t = pt.dscalar("t")
    rng = np.random.default_rng(0)
    out = []
    for u in model.free_RVs:
        if (u is f_rv or u is c or u.ndim != 1 or not isinstance(u.owner.op, NormalRV)
                or model.rvs_to_transforms.get(u) is not None
                or dependents(model, u) != [obs] or any(depends_on(g, u) for g in lik.others)):
            continue
        mu_u, sd_u = u.owner.inputs[2:4]
        if any(depends_on(x, v) for x in (mu_u, sd_u) for v in (c, f_rv, u)):
            continue
        moved = graph_replace(mu, {c: c + t, u: u - t}, strict=False) - mu
        fn = point_function(model, [moved, mu], inputs=[t])
        point = dict(model.initial_point())
        ok = True
        for _ in range(2):
            point[c.name] = np.asarray(rng.normal(0.0, 3.0), dtype=point[c.name].dtype)
            point[u.name] = rng.normal(0.0, 3.0, np.shape(point[u.name])).astype(
                point[u.name].dtype)
            for step in (1.0, -2.5):
                diff, level = (np.asarray(x, float) for x in fn(point, step))
                ok = ok and bool(np.all(np.abs(diff) <= 1e-9 * (1.0 + np.abs(level))))
        if ok:
            out.append(EffectShift(name=u.name, prior=point_function(model, [mu_u, sd_u])))
    return tuple(out)


def level_shifts(model, f_rv, lik: TreeLikelihood) -> list[LevelShift]:
    """The intercept-like variables of tree term ``f_rv`` (see :class:`LevelShift`): scalar
    Normal variables that reach the likelihood through its linear predictor alone, affinely.
    A variable that also enters another parameter of the likelihood (``sigma=exp(a)`` beside
    ``mu=a + f``) or another variable gets none: the shift would change the likelihood."""
    obs = lik.observed
    mu = lik.eta
    out = []
    for c in model.free_RVs:
        if (c is f_rv or c.ndim != 0 or not isinstance(c.owner.op, NormalRV)
                or model.rvs_to_transforms.get(c) is not None
                or dependents(model, c) != [obs] or affine_problem(mu, c) is not None
                or any(depends_on(g, c) for g in lik.others)):
            continue
        mu0, sd0 = c.owner.inputs[2:4]
        if depends_on(mu0, f_rv) or depends_on(sd0, f_rv):
            continue
        # per-row slopes of mu in c and in f; both must be free of sampled variables
        zeros = pt.zeros_like(f_rv)
        d_c = graph_replace(mu, {c: c + 1.0}, strict=False) - mu
        d_f = graph_replace(pytensor.grad(pt.sum(mu), f_rv), {f_rv: zeros}, strict=False)
        d_c = graph_replace(d_c, {f_rv: zeros}, strict=False)
        # c and f reach the slopes only through the unit difference and f's shape (mu is
        # affine in both): static when no other sampled variable does
        shift = LevelShift(name=c.name, prior=point_function(model, [mu0, sd0]),
                           slopes=point_function(model, [d_c, d_f]),
                           static=held_fixed(model, [d_c, d_f, mu0, sd0], [c, f_rv]),
                           effects=_effect_shifts(model, f_rv, c, lik))
        if shift.ratio(model.initial_point(), lik.n) is not None:
            out.append(shift)
    return out
