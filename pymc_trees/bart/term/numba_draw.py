"""Prior draws of a tree term inside functions that PyTensor compiles with numba.

PyTensor compiles ``pm.sample_prior_predictive`` and ``pm.draw`` with its numba backend by
default.  A random variable without a numba implementation is run by a generic fallback that
warns "Numba will use object mode to run BARTTree's perform method" on every compile.  A
forest drawn from the tree prior is orchestration (Python over the compiled kernels of
:mod:`pymc_trees.bart.kernels`), not one numba function, so calling the Python draw is the
right implementation; this module registers it as the term's numba core function, so the
draw runs the same code without the warning.  The generator that numba passes in is the
compiled function's own ``np.random.Generator`` (boxed back to the Python object), so seeded
draws are reproducible as in any other mode.

The registration needs ``pytensor.link.numba``, whose import takes about a second, so it
happens when the first ``BARTTreeRV`` is made (:func:`register_numba_draw`), not when
:mod:`pymc_trees` is imported.
"""

from __future__ import annotations

import numpy as np

__all__ = ["register_numba_draw"]

_registered = False


def register_numba_draw(rv_class: type) -> None:
    """Register the numba core function of the tree term's random variable with PyTensor's
    numba backend (once per process; later calls do nothing).

    Parameters
    ----------
    rv_class : type
        :class:`~pymc_trees.bart.term.distribution.BARTTreeRV` (passed in, so that this module
        does not import the one that calls it).
    """
    global _registered
    if _registered:
        return
    import numba
    from pytensor.link.numba.dispatch import basic as numba_basic
    from pytensor.link.numba.dispatch.random import numba_core_rv_funcify

    @numba_core_rv_funcify.register(rv_class)
    def _core_draw(op, node):
        out = node.default_output().type
        dtype = np.dtype(out.dtype)
        ret = numba.types.Array(numba.from_dtype(dtype), 1 if op.outputs is None else 2, "C")

        def draw(rng, X, offset, leaf_sd, split_weights):
            return np.ascontiguousarray(op.rng_fn(rng, X, offset, leaf_sd, split_weights,
                                                  None), dtype=dtype)

        @numba_basic.numba_njit
        def core(rng, X, offset, leaf_sd, split_weights):
            with numba.objmode(value=ret):
                value = draw(rng, X, offset, leaf_sd, split_weights)
            return value

        # None: not cached on disk (the draw closes over the Op, which a cache cannot key)
        return core, None

    _registered = True
