"""How a forest is sampled: the tree prior's hyperparameters, the forest samplers (constant, linear
and log-gamma leaves, k outputs, shared trees) and the trees' sums they keep, plain Python
around :mod:`pymc_trees.bart.kernels`; nothing of PyMC.
"""
