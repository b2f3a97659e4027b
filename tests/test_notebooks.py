"""The notebooks (jupytext percent scripts in ``docs/notebooks``) are executed by the docs
build, ``make docs``, which ``.ci/run`` runs after ``make test``: myst-nb runs every one of
them with the small sizes (``PYMC_TREES_NOTEBOOK_SMALL``) and fails the build on an error or
a warning.  ``make test`` ran them a second time with the same sizes (about 50 s of one core
in CI); it now checks only that the site still executes them all, so that a notebook cannot
drop out of CI unnoticed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

DOCS = Path(__file__).parents[1] / "docs"
NOTEBOOKS = sorted((DOCS / "notebooks").glob("*.py"))


def _conf() -> dict[str, object]:
    """The constant assignments of ``docs/conf.py``."""
    out = {}
    for node in ast.parse((DOCS / "conf.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def test_the_docs_build_executes_every_notebook_and_fails_on_its_errors():
    conf = _conf()
    assert conf["nb_execution_mode"] == "force"
    assert conf["nb_execution_raise_on_error"] is True
    listed = set(re.findall(r"^notebooks/(\w+)\s*$", (DOCS / "index.md").read_text(), re.M))
    assert NOTEBOOKS and {p.stem for p in NOTEBOOKS} <= listed
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert "make docs" in ci and "PYMC_TREES_NOTEBOOK_SMALL" in (DOCS / "conf.py").read_text()
