"""What the model around a tree term is: the likelihood a term enters, read from the PyMC graph
(augmented, log-gamma, general), the calibration of its leaves, and the checks of what it
receives.
"""
