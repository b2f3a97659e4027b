"""The step methods PyMC assigns: the tree steps (CGM, Particle Gibbs), the noise's conjugate
Gibbs, and the parts a tree step composes (leaf scale, split prior, the variables it takes).
"""
