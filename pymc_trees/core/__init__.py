"""numba kernels: binning, flat tree arrays, node statistics, moves, prior draws, prediction.

Nothing here imports PyMC; the kernels take arrays, scalars and a ``numpy.random.Generator``.
"""
