"""Every place where the package reaches into PyMC beyond its public API, in one module.

PyMC has no hook for four things a tree term needs, so :func:`install` (called once by
``import pymc_trees``) wraps three of its functions and two methods, and the tree steps'
``competence`` looks at the call stack once; the steps join PyMC's registry here too
(:func:`register_step_methods`):

* ``pymc.backends.arviz.DataTreeConverter.sample_stats_to_xarray`` and
  ``posterior_to_xarray``: the forests move into their own DataTree group
  (:func:`pymc_trees.bart.term.trace_io.move_forest_stats`), and a run that recorded no
  variable keeps its chain and draw coordinates
  (:func:`pymc_trees.bart.term.trace_io.with_draw_coords`); ``docs/explanation/trace.md``, "Forests kept
  with the trace".
* ``pymc.sampling.mcmc.init_traces``: large tree terms' values stay out of the trace by
  default (:func:`pymc_trees.bart.term.trace_io.recorded_vars`), each tree step learns whether
  its values are recorded (:func:`pymc_trees.bart.term.trace_io.values_as_recorded`), and a trace
  that records no variable still counts its draws (:func:`count_draws`, which swaps the
  class of PyMC's ``NDArray`` traces).
* ``pymc.sampling.forward._maybe_warn_implicit_freeze``: PyMC's posterior predictive refuses
  to reuse a tree term's training-row values after its X changed, or to draw it from the
  tree prior (:func:`pymc_trees.bart.term.ppc_guard.refuse_wrong_draws`); ``docs/explanation/trace.md``,
  "New data through PyMC's API".
* ``pymc.sample_prior_predictive`` (also as ``pymc.sampling`` and
  ``pymc.sampling.forward`` hold it): it draws within its model's context, where a tree
  term's ``leaf_prior="auto"`` settles by the likelihood it enters
  (:func:`pymc_trees.bart.likelihood.leaf_choice.settled_leaf_priors`), as the tree step settles it.
* :func:`reduce_step`: the steps pickle from their state alone, without the arguments
  PyMC's ``BlockedStep`` keeps in its private ``_BlockedStep__newargs``.
* :func:`external_nuts_sampler`: which ``nuts_sampler`` the ``pm.sample`` call on the
  stack was given (the tree steps' ``competence`` refuses an external NUTS, which cannot run
  a tree step), read from ``pm.sample``'s frame.

These were written against the PyMC versions in :data:`PYMC_TESTED`; importing the module
checks the installed PyMC (:func:`check_pymc_version`) and warns when it is newer, since a
private function may then have changed or gone.  No other module of the package patches
PyMC or reads a frame (``tests/test_layout.py`` holds them to it).
"""

from __future__ import annotations

import re
import sys
import warnings
from types import CodeType, FrameType

import pymc as pm

__all__ = ["PYMC_TESTED", "PyMCVersionWarning", "check_pymc_version", "pymc_frame",
           "external_nuts_sampler", "EXTERNAL_NUTS", "count_draws", "register_step_methods",
           "reduce_step", "rebuilt", "install"]

# (major, minor) of the oldest and newest PyMC releases the patches below were written and
# tested against (pyproject: pymc>=6.3,<7; the suite last ran on 6.4.0)
PYMC_TESTED = ((6, 3), (6, 4))


class PyMCVersionWarning(UserWarning):
    """The installed PyMC is newer than the versions :mod:`pymc_trees.bart.term.pymc_compat` was
    tested against."""


def _major_minor(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string such as ``"6.4.0"`` or ``"7.0.0rc1"``."""
    m = re.match(r"(\d+)(?:\.(\d+))?", version)
    if m is None:
        raise ValueError(f"Cannot read the PyMC version {version!r}.")
    return int(m.group(1)), int(m.group(2) or 0)


def check_pymc_version(version: str | None = None) -> bool:
    """Warn (:class:`PyMCVersionWarning`) when the installed PyMC (``pymc.__version__``, or
    ``version``) is newer than the newest release in :data:`PYMC_TESTED`; returns whether it
    is within the tested range.  Called once at import."""
    version = pm.__version__ if version is None else version
    installed = _major_minor(version)
    lo, hi = PYMC_TESTED
    tested = f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}"
    if installed > hi:
        warnings.warn(
            f"pymc_trees.bart.term.pymc_compat wraps private functions of PyMC "
            f"(pymc.sampling.forward._maybe_warn_implicit_freeze, "
            f"pymc.sampling.mcmc.init_traces, DataTreeConverter.sample_stats_to_xarray and "
            f"posterior_to_xarray) and reads pm.sample's frame; it was tested with PyMC "
            f"{tested}, and the installed PyMC is {version}. Tree terms may sample, store "
            f"their forests or refuse wrong posterior predictive draws incorrectly if those "
            f"changed: check the results, or install a tested PyMC "
            f"(pip install 'pymc>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}').",
            PyMCVersionWarning, stacklevel=2)
        return False
    return installed >= lo


check_pymc_version()


def pymc_frame(func) -> FrameType | None:
    """The innermost frame on the stack that is running ``func`` (a Python function), or
    None.  The test is by identity of the function's code object, not by name."""
    code: CodeType = getattr(func, "__wrapped__", func).__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


# why a model with a tree term refuses an external NUTS sampler
EXTERNAL_NUTS = (
    "A model with a BARTTree term needs nuts_sampler='pymc' (the default): pm.sample then "
    "composes the tree steps (CGMTreeStep / PGTreeStep) with PyMC's NUTS for the continuous "
    "variables in one chain. nutpie, numpyro and blackjax run NUTS alone over every variable; "
    "a sum of trees has no gradient and no density on f, so they cannot sample it.")


def external_nuts_sampler() -> str | None:
    """The ``nuts_sampler`` of the ``pm.sample`` call on the stack when it is not PyMC's own
    (``"nutpie"``, ``"numpyro"``, ...), else None.

    PyMC calls a step's ``competence`` without saying on whose behalf; inside
    ``pm.sample(nuts_sampler="nutpie" | ...)`` PyMC would hand the whole model to an external
    NUTS that cannot run a tree step, and the tree steps' ``competence`` refuses instead of
    failing silently."""
    frame = pymc_frame(pm.sampling.mcmc.sample)
    if frame is None:
        return None
    nuts = frame.f_locals.get("nuts_sampler")
    return None if nuts in (None, "pymc") else nuts


def register_step_methods(classes) -> None:
    """Append step classes to PyMC's registry ``pymc.step_methods.STEP_METHODS`` (once
    each), from which ``pm.sample`` assigns steps by their ``competence``."""
    registry = pm.step_methods.STEP_METHODS
    for cls in classes:
        if cls not in registry:
            registry.append(cls)


def rebuilt(cls):
    """An empty step of class ``cls``, whose state the unpickler then sets
    (:func:`reduce_step`)."""
    return object.__new__(cls)


def reduce_step(step) -> tuple:
    """How a step of this package pickles: from its state alone.  PyMC's ``BlockedStep``
    pickles the arguments it was built with and builds the step again from them in each
    worker process (``__getnewargs_ex__``); those arguments hold the model, whose data (X:
    80 bytes a training row at p = 10, and y) a built step no longer reads.  Rebuilt from
    its state, the step that reaches a worker carries its bins and its compiled pieces
    only.  (``_BlockedStep__newargs`` is PyMC's private attribute for those arguments.)"""
    state = dict(step.__dict__)
    state.pop("_BlockedStep__newargs", None)
    return rebuilt, (type(step),), state


def count_draws(traces) -> None:
    """Let PyMC's in-memory traces that record no variable still count their draws.

    ``NDArray.__len__`` is 0 while it holds no variable's array, and ``pm.sample`` then ends
    in "Not enough samples to build a trace." after sampling.  That is every run where the
    recorded variables are none: a tree term above 50,000 rows (whose values stay out of the
    trace) with nothing else free, ``keep_values=False`` likewise, or ``var_names=[]``
    (issue 48).  Such a run's result holds the sample stats and the forests, from which
    ``pmt.predict`` gives the term at any rows; its posterior group is empty."""
    from pymc.backends.ndarray import NDArray

    global _DrawCountingNDArray
    if _DrawCountingNDArray is None:
        class DrawCountingNDArray(NDArray):
            """An ``NDArray`` whose length is its number of recorded draws also when it
            records no variable (:func:`count_draws`)."""

            def __len__(self):
                return self.draw_idx

        _DrawCountingNDArray = DrawCountingNDArray
    for trace in traces:
        if type(trace) is NDArray:
            trace.__class__ = _DrawCountingNDArray


_DrawCountingNDArray = None


def _wrapped(original, wrapper, mark: bool = True):
    wrapper.__wrapped__ = original
    wrapper.__doc__ = original.__doc__
    if mark:
        wrapper._pymc_trees = True
    return wrapper


def _install_trace_conversion() -> None:
    """Wrap ``DataTreeConverter.sample_stats_to_xarray`` (the forests into their group) and
    ``posterior_to_xarray`` (an empty posterior keeps its draws' coordinates), once."""
    from pymc.backends import arviz as pm_arviz

    from pymc_trees.bart.term.trace_io import move_forest_stats, with_draw_coords

    conv = pm_arviz.DataTreeConverter
    original = conv.sample_stats_to_xarray
    if getattr(original, "_pymc_trees", False):
        return

    def sample_stats_to_xarray(self):
        return move_forest_stats(original(self) or {}, self.model)

    conv.sample_stats_to_xarray = _wrapped(original, sample_stats_to_xarray)
    posterior = conv.posterior_to_xarray

    def posterior_to_xarray(self):
        return with_draw_coords(posterior(self) or {}, self)

    conv.posterior_to_xarray = _wrapped(posterior, posterior_to_xarray, mark=False)


def _install_trace_vars() -> None:
    """Wrap ``pymc.sampling.mcmc.init_traces`` (called by name from ``pm.sample``), once:
    which variables ``pm.sample`` records, and whether each tree step's are; and a tree term
    given to one of PyMC's own steps is refused (:func:`~pymc_trees.bart.term.ppc_guard.
    refuse_foreign_steps`)."""
    from pymc.sampling import mcmc

    from pymc_trees.bart.term.ppc_guard import refuse_foreign_steps
    from pymc_trees.bart.term.trace_io import recorded_vars, values_as_recorded

    init = mcmc.init_traces
    if getattr(init, "_pymc_trees", False):
        return

    def init_traces(*args, model, trace_vars=None, **kwargs):
        refuse_foreign_steps(kwargs.get("step"), model)
        trace_vars = recorded_vars(model, trace_vars)
        values_as_recorded(kwargs.get("step"), model, trace_vars)
        run, traces = init(*args, model=model, trace_vars=trace_vars, **kwargs)
        if trace_vars is not None and len(trace_vars) == 0:
            count_draws(traces)
        return run, traces

    mcmc.init_traces = _wrapped(init, init_traces)


def _install_refusal() -> None:
    """Make ``pm.sample_posterior_predictive`` refuse to reuse the training-row values of a
    tree term whose X changed (``pm.set_data``), whatever the warnings filters say and also
    with ``freeze_vars=[term]``.

    PyMC decides which trace variables to reuse ("freeze") in ``sample_posterior_predictive``
    and then calls ``pymc.sampling.forward._maybe_warn_implicit_freeze`` (by module name) with
    that decision: the trace variables, the redrawn ones, and the data values at sampling
    time.  That call is wrapped once: before PyMC's own warning,
    :func:`pymc_trees.bart.term.ppc_guard.refuse_wrong_draws` raises where a tree term would be
    drawn from its prior or reused stale.  No call stack is inspected: PyMC hands the
    decision to the wrapper.
    """
    from pymc.sampling import forward

    from pymc_trees.bart.term.ppc_guard import refuse_wrong_draws

    original = getattr(forward, "_maybe_warn_implicit_freeze", None)
    if original is None or not hasattr(forward, "_data_var_is_volatile"):
        raise ImportError(
            "pymc_trees needs pymc.sampling.forward._maybe_warn_implicit_freeze and "
            "_data_var_is_volatile (PyMC 6.3 to 6.x) to refuse wrong posterior predictive "
            f"draws of tree terms; this PyMC ({pm.__version__}) has none. Install a "
            "supported PyMC (pip install 'pymc>=6.3,<7').")
    if getattr(original, "_pymc_trees", False):
        return

    def refuse_then_warn(**kwargs):
        constant_data = kwargs["constant_data"]
        refuse_wrong_draws(kwargs["model"], kwargs["volatile_closure"],
                           kwargs["volatile_vars"], kwargs["vars_in_trace_set"],
                           lambda v: forward._data_var_is_volatile(v, constant_data))
        return original(**kwargs)

    forward._maybe_warn_implicit_freeze = _wrapped(original, refuse_then_warn)


def _install_prior_context() -> None:
    """Make ``pm.sample_prior_predictive`` draw within its model's context, once: a tree term
    whose ``leaf_prior="auto"`` settles by the likelihood it enters finds that model there
    (:func:`pymc_trees.bart.likelihood.leaf_choice.settled_leaf_priors`), also when the model is
    passed as ``model=`` outside its ``with`` block."""
    from pymc import sampling
    from pymc.model import modelcontext
    from pymc.sampling import forward

    original = forward.sample_prior_predictive
    if getattr(original, "_pymc_trees", False):
        return

    def sample_prior_predictive(*args, model=None, **kwargs):
        with modelcontext(model):
            return original(*args, model=model, **kwargs)

    wrapped = _wrapped(original, sample_prior_predictive)
    for module in (forward, sampling, pm):
        if getattr(module, "sample_prior_predictive", None) is original:
            module.sample_prior_predictive = wrapped


def install() -> None:
    """Install the four integration points in PyMC (each once; see the module's text)."""
    _install_trace_conversion()
    _install_trace_vars()
    _install_refusal()
    _install_prior_context()

