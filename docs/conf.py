"""Sphinx configuration of the pymc_trees documentation site (``make docs``)."""

from __future__ import annotations

import os

import pymc_trees

project = "pymc_trees"
author = "the pymc_trees developers"
release = version = pymc_trees.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

# The notebooks are jupytext percent scripts (docs/notebooks/*.py); they are executed at build
# time with small sizes, so the site never shows output the code no longer produces.  This
# build is where CI runs them (tests/test_notebooks.py checks that it still does).
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = "force"
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_in_temp = True  # files a notebook writes stay out of the source tree
os.environ.setdefault("PYMC_TREES_NOTEBOOK_SMALL", "1")

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# .rst first: autosummary writes its pages (docs/generated/, reST) with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".py": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "conf.py", "*.txt"]

numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
autodoc_typehints = "none"
# scikit-learn attaches its metadata-routing setters to every estimator class
autodoc_default_options = {"exclude-members": "set_fit_request, set_predict_request, "
                                              "set_score_request, set_partial_fit_request"}
autosummary_generate = True  # one page per public name, docs/generated/ (not in git)

html_theme = "pydata_sphinx_theme"
html_title = "pymc_trees"
html_static_path: list[str] = []
# a class page: its docstring and its own public methods (no table of inherited ones)
templates_path = ["_templates"]
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
