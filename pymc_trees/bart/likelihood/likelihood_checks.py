"""Checks of the likelihood a tree term enters, made when its tree step is built (and the
warning of a general step that never moved): the link the term was calibrated for, a start
of positive density, outputs on one scale.  Each message names the input and the fix."""

from __future__ import annotations

import numpy as np
import pytensor

from pymc_trees.bart.likelihood.term_checks import OUTPUT_SCALE_RATIO
from pymc_trees.bart.likelihood.structure import ModelStructureError, point_function
from pymc_trees.core.tabular import warn_user

__all__ = ["check_link", "check_general_link", "check_general_start", "check_gamma_start",
           "warn_output_scales", "stuck_message"]


def check_link(rv, lik) -> None:
    """A term calibrated for one link must not enter a likelihood with another."""
    link = rv.owner.op.link
    if link is not None and link != lik.link:
        raise ModelStructureError(
            f"{rv.name!r} was calibrated for the {link!r} link (BARTTree(..., link={link!r})"
            f"{', the default with Y' if link == 'identity' else ''}), but it enters "
            f"{lik.observed_name!r}, a {lik.family.replace('_', ' ')} likelihood with the "
            f"{lik.link!r} link, so its offset and leaf scale are on the wrong scale. Pass "
            f"link={lik.link!r} to BARTTree, with Y on the data scale (the observed "
            f"{lik.observed_name!r} itself, not transformed: the link transforms it), or an "
            "explicit leaf_sd.")


def check_general_start(rv, liks, point: dict) -> None:
    """Every tree starts as a single leaf, so the term starts at its offset at every row (and
    output); the general step needs a start of positive density (its moves compare
    densities).  A start outside the likelihood's support is refused with the rows and the
    fix."""
    lik = liks[0]  # for several outputs: the whole term is at its starting value in the point
    f0 = np.asarray(point[lik.f_name], dtype=np.float64)
    ll = lik.evaluate(point, f0 if lik.output is None else f0[lik.output])[0]
    _refuse_zero_density(rv, lik.observed_name, ll, f0,
                         "Write the likelihood so that it is valid there (a scale as "
                         "pm.math.exp(...) of the term rather than the term itself or its "
                         "pm.math.abs), or pass a Y whose calibration puts the offset inside "
                         "the support.")


def check_gamma_start(model, rv, lik, point: dict) -> None:
    """Log-gamma leaves keep every tree's value positive through ``exp``, so a start of zero
    density comes from the data or the other parameters: an observation outside the
    likelihood's support (a negative count, a Gamma outcome at or below 0) or an exposure
    at or below 0.  Refused with the rows, where the sweep would otherwise run on and move
    the term (or give NaN draws)."""
    obs = model[lik.observed_name]
    fast = pytensor.compile.mode.get_mode("FAST_COMPILE")
    # a parameter outside its support is a density of 0 at its rows, not an exception
    mode = pytensor.compile.mode.Mode(linker=fast.linker, optimizer=fast.provided_optimizer
                                      .including("local_check_parameter_to_ninf_switch"))
    fn = point_function(model, model.logp(vars=[obs], jacobian=False, sum=False), mode=mode)
    ll = np.broadcast_to(np.asarray(fn(point)[0], dtype=np.float64), (lik.n,))
    if not np.isfinite(ll).any():
        # a check on a whole parameter (every exposure above 0) fails all rows at once: the
        # rows are those where the likelihood's pieces (its log rate, its parameters) are not
        # finite, when there are such rows
        pieces = [np.broadcast_to(np.asarray(x, dtype=np.float64), (lik.n,))
                  for x in lik.pieces(point)]
        odd = ~np.logical_and.reduce([np.isfinite(x) for x in pieces])
        if odd.any():
            ll = np.where(odd, -np.inf, 0.0)
    f0 = np.asarray(point[rv.name], dtype=np.float64)
    _refuse_zero_density(rv, lik.observed_name, ll, f0,
                         f"With log-gamma leaves every value of the term is valid, so look at "
                         f"the data: the observed {lik.observed_name!r} must lie in the "
                         f"support of its likelihood at every row (a count at least 0, a "
                         f"Gamma outcome above 0) and a multiplier of the mean (an exposure) "
                         f"must be above 0; drop or correct those rows.")


def _refuse_zero_density(rv, observed_name: str, ll: np.ndarray, f0: np.ndarray,
                         fix: str) -> None:
    """A ValueError naming the rows where the log density ``ll`` at the start is not
    finite, and the fix, if any."""
    bad = np.flatnonzero(~np.isfinite(ll))
    if not bad.size:
        return
    name = rv.name
    rows = bad[:10].tolist()
    raise ValueError(
        f"{observed_name!r} has zero density at the starting point of {name!r} at "
        f"{bad.size} of {ll.size} rows ({rows}{' ...' if bad.size > 10 else ''}): every tree "
        f"starts as a single leaf, so {name} = {float(f0.flat[0]):.6g} (the term's offset) at "
        "every row, with the other variables at their initial values. The offset is 0 "
        "without Y and is calibrated from Y (on the data scale) for the term's link. " + fix)


def warn_output_scales(rv, liks, start, offset: float) -> None:
    """A term of shape (k, n) has one offset and one leaf scale for all its outputs.  Where
    the outputs enter Normal likelihoods as locations (``mu = a + b * f[j]``), their data on
    the term's scale, ``(y - a) / b``, show whether one scale can serve them: a warning names
    outputs whose data vary ``OUTPUT_SCALE_RATIO`` times as much as another's (the output
    far from the calibration is not fitted, with nothing else to say so)."""
    normal = [(j, lik) for j, lik in enumerate(liks)  # (log-gamma leaves have no pseudo-data)
              if not lik.needs_general_step and not lik.draws_latents
              and hasattr(lik, "pseudo_data")]
    if len(normal) < 2:
        return
    point = start()
    spread = {}
    for j, lik in normal:
        try:
            z, omega = lik.pseudo_data(point, offset)
        except Exception:  # a piece that needs more than the point: no check
            return
        z = np.asarray(z, dtype=np.float64)[np.asarray(omega) > 0]
        if z.size > 1:
            spread[j] = float(np.std(z))
    if len(spread) < 2 or min(spread.values()) <= 0:
        return
    lo = min(spread, key=spread.get)
    hi = max(spread, key=spread.get)
    if spread[hi] <= OUTPUT_SCALE_RATIO * spread[lo]:
        return
    desc = ", ".join(f"output {j}: {v:.4g}" for j, v in sorted(spread.items()))
    warn_user(
        f"The outputs of {rv.name!r} are on different scales (sd of each output's data on the "
        f"term's scale, (y - a) / b: {desc}; outputs {lo} and {hi} differ "
        f"{spread[hi] / spread[lo]:.3g} times): its outputs share one offset and one leaf "
        "scale, so an output far from that calibration is not fitted (its leaves are shrunk "
        "to the wrong scale). Put each output's scale in the model, e.g. "
        "mu_j = c_j + s_j * f[j] with c_j, s_j the mean and sd of y_j, with "
        "Y[j] = (y_j - c_j) / s_j as the (k, n) calibration Y; or use one BARTTree term per "
        "output.")


def stuck_message(name: str, sweeps: int, liks) -> str:
    """The warning of a general tree step that accepted nothing during tuning."""
    lik = liks[0]
    cause = ""
    if lik.link == "identity":
        cause = (f" A likely cause: {name!r} enters the parameter {lik.parameter!r} of "
                 f"{lik.observed_name!r} directly (the identity link), and proposals leave "
                 "that parameter's support (a rate, a scale or a probability must stay "
                 "positive or in (0, 1)). Write the parameter as pm.math.exp(f) with "
                 "BARTTree(..., link='log') (pm.math.sigmoid(f) with link='logit' for a "
                 "probability).")
    return (f"The tree step of {name!r} rejected every proposal in all {sweeps} tuning "
            f"sweeps: the chain has not moved from its start, and its draws are not from the "
            f"posterior.{cause} Otherwise check the term's offset and leaf_sd against the "
            "scale of the parameter it enters, and look at the accept_* sample stats.")


def check_general_link(rv, lik) -> None:
    """The general step's counterpart of ``check_link``: a term calibrated for one link must
    not enter its parameter through another (checked when the form is recognised)."""
    link = rv.owner.op.link
    if link is None or lik.link is None or link == lik.link:
        return
    through = {"identity": "directly (affine)", "log": "through exp(...)",
               "logit": "through sigmoid(...)"}[lik.link]
    raise ModelStructureError(
        f"{rv.name!r} was calibrated for the {link!r} link (BARTTree(..., link={link!r})"
        f"{', the default with Y' if link == 'identity' else ''}), but it enters the "
        f"parameter {lik.parameter!r} of {lik.observed_name!r} {through}, so its offset and leaf scale are "
        f"on the wrong scale. Pass link={lik.link!r} when Y calibrates the term for that "
        f"parameter (Y stays on the data scale, the observed values themselves, not "
        f"transformed: the link transforms it), or, for a term in a scale or shape parameter "
        f"(which Y does not describe), "
        f"drop Y and give leaf_sd (the prior sd of each tree's contribution to eta).")
