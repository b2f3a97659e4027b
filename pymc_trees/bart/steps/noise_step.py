"""The conjugate noise update, :class:`NoiseGibbs` (docs/math.md section 4), a PyMC step method
registered with the tree steps (:mod:`pymc_trees.bart.steps.tree_step`, from which it is also
imported)."""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.logprob.transforms import LogTransform
from pymc.model import Model, modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_trees.bart.term.pymc_compat import reduce_step
from pymc_trees.bart.likelihood.structure import ModelStructureError, noise_likelihood

__all__ = ["NoiseGibbs", "NoiseGibbsState"]


@dataclass_state
class NoiseGibbsState(StepMethodState):
    pass


class NoiseGibbs(BlockedStep):
    """Conjugate Gibbs update of a Normal likelihood's variance or precision (docs/math.md,
    section 4).

    ``sigma2 ~ InverseGamma(alpha0, beta0)`` with likelihoods ``Normal(mu_i, sqrt(sigma2 / w_i))``
    is drawn from ``InverseGamma(alpha0 + n/2, beta0 + SSE_w/2)``; ``tau ~ Gamma(alpha0, beta0)``
    used as a precision from ``Gamma(alpha0 + n/2, rate=beta0 + SSE_w/2)``.  Works in any model
    with that structure, with or without trees.

    Parameters
    ----------
    vars : list of one PyMC variable
        The variance (``InverseGamma``) or precision (``Gamma``); ``pm.sample`` assigns the
        step by itself, so passing it is needed only to combine it with other steps.
    model : pm.Model, optional
        The model (default: the one of the ``with`` block).

    Raises
    ------
    ModelStructureError
        When the variable is neither InverseGamma nor Gamma, not a scalar, or enters anything
        but the scale of Normal likelihoods as above.
    ValueError
        For more than one variable, or one without its default log transform.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> x = np.linspace(0, 1, 100)
    >>> y = 2 * x + np.random.default_rng(0).normal(0, 0.3, 100)
    >>> with pm.Model():
    ...     b = pm.Normal("b", 0, 5)
    ...     sigma2 = pm.InverseGamma("sigma2", 3, 1)
    ...     obs = pm.Normal("y", b * x, pm.math.sqrt(sigma2), observed=y)
    ...     idata = pm.sample(step=[pmt.NoiseGibbs([sigma2])], random_seed=1)
    """

    name = "noise_gibbs"
    default_blocked = True
    _state_class = NoiseGibbsState
    stats_dtypes_shapes = {"tune": (bool, [])}

    def __reduce_ex__(self, protocol):
        return reduce_step(self)

    def __init__(self, vars, model: Model | None = None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked: bool = True):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError(f"NoiseGibbs takes one variable; got {len(value_vars)}.")
        self.vars = value_vars
        rv = model.values_to_rvs[value_vars[0]]
        self.lik = noise_likelihood(model, rv)
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            self._forward = lambda x: x
        elif isinstance(transform, LogTransform):
            self._forward = np.log
        else:
            raise ValueError(f"NoiseGibbs needs {rv.name!r} with the default log transform or "
                             f"none; got {transform}. Pass default_transform=None or leave it.")
        self.rng = get_random_generator(rng)
        self.tune = True

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.tune = tune > 0

    def step(self, point):
        alpha0, rate0 = (float(x) for x in self.lik.prior(point))
        res = self.lik.residuals(point)
        n = 0
        sse = 0.0  # sum of e_i^2 / s_i^2 at the current value
        for e, s2 in zip(res[::2], res[1::2]):
            e = np.asarray(e, dtype=float)
            s2 = np.broadcast_to(np.asarray(s2, dtype=float), e.shape)
            n += e.size
            sse += float(np.sum(e * e / s2))
        name = self.vars[0].name
        current = _current_value(point[name], self._forward)
        # SSE_w = sum w_i e_i^2 with w_i = sigma2 / s_i^2 (variance) or 1 / (tau s_i^2).
        sse_w = sse * current if self.lik.kind == "variance" else sse / current
        shape = alpha0 + 0.5 * n
        rate = rate0 + 0.5 * sse_w
        g = self.rng.gamma(shape, 1.0 / rate)
        new = 1.0 / g if self.lik.kind == "variance" else g
        new_point = dict(point)
        new_point[name] = np.asarray(self._forward(new), dtype=point[name].dtype)
        return new_point, [{"tune": self.tune}]

    @staticmethod
    def competence(var, has_grad):
        op = getattr(var.owner, "op", None)
        if not isinstance(op, (pm.distributions.continuous.InverseGamma.rv_type,
                               pm.distributions.continuous.Gamma.rv_type)):
            return Competence.INCOMPATIBLE
        model = Model.get_context(error_if_none=False)
        if model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        try:
            noise_likelihood(model, var)
        except ModelStructureError:
            return Competence.INCOMPATIBLE
        return Competence.IDEAL


def _current_value(stored, forward):
    """Untransformed value from the point (inverse of ``forward`` for log or identity)."""
    x = float(np.asarray(stored))
    return float(np.exp(x)) if forward is np.log else x
