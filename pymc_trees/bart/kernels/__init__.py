"""BART's numba kernels: the mutable forest, node rules, the prior, and one module per tree
update (``cgm``: Chipman-George-McCulloch moves; ``pg``: Particle Gibbs; ``gfr``: grow-from-
root warm start; ``general``: moves for any likelihood; ``augment``: data augmentation).
Arrays in and out, the rng passed in, nothing of PyMC."""
