"""Notebooks are text (jupytext percent scripts); CI runs them with small sizes so they never
rot."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "docs" / "notebooks").glob("*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("PYMC_TREES_NOTEBOOK_SMALL", "1")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
