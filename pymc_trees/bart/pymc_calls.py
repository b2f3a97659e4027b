"""Where a PyMC entry point has no hook for a tree term, find out which call we are inside.

PyMC calls a step's ``competence`` without saying on whose behalf.  One situation needs that
answer to fail loudly instead of silently: the tree steps' ``competence`` inside
``pm.sample(nuts_sampler="nutpie" | ...)``, where PyMC would hand the whole model to an
external NUTS that cannot run a tree step.  (The posterior predictive's refusal needs no
stack: :mod:`pymc_trees.bart.ppc_guard`.)

The test is by identity of the PyMC function's code object on the call stack, not by name.
"""

from __future__ import annotations

import sys
from types import CodeType, FrameType

__all__ = ["pymc_frame"]


def pymc_frame(func) -> FrameType | None:
    """The innermost frame on the stack that is running ``func`` (a Python function), or None."""
    code: CodeType = getattr(func, "__wrapped__", func).__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame
        frame = frame.f_back
    return None
