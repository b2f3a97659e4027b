"""The tree term as a PyMC variable: ``BARTTree`` and its plan (which sampler, which leaves), the
prior draws, the trace's forests group and what reaches into PyMC's internals.
"""
