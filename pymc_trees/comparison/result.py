"""The result of :func:`pymc_trees.comparison.compare` and its text form."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["ComparisonResult", "MODELS", "format_table", "format_result"]


@dataclass
class ComparisonResult:
    """What :func:`compare` returns (also readable as a dict: ``result["table"]``).

    Attributes
    ----------
    table : DataFrame
        One row per model (``BART``, ``boosting``): the held-out metrics pooled over all
        held-out rows, and the wall time summed over folds.
    report : Path or None
        The HTML report.
    folds : DataFrame
        The same metrics per model and fold, with the rounds early stopping kept and (for
        regression) the sd of boosting's plug-in Normal.
    differences : DataFrame
        Per held-out row differences BART minus boosting (squared error or log loss, log
        predictive density, CRPS): mean and standard error.
    calibration : DataFrame
        Regression and counts: ``model``, ``nominal``, ``coverage``, ``width`` of central
        intervals at :data:`LEVELS` (model ``boosting (plug-in)`` for the plug-in
        distribution's intervals).  Classification: :func:`reliability_bins` per model.
    predictions : DataFrame of shape (n_held_out, ...)
        Per held-out row: ``row`` (position in the table after dropping rows without a
        target), ``fold``, ``y``, and per model ``<model>_point``, ``<model>_lo``,
        ``<model>_hi`` (the 90% interval; for classification BART's interval of the
        probability, none for boosting), ``<model>_lpd``, ``<model>_crps``.
    info : dict
        Data set, target, task, settings and notes.
    bart_idata : DataTree
        The last fold's BART posterior (for further plots).
    boosting_model : estimator
        The last fold's boosting point model.
    train_X : DataFrame
        The last fold's training covariates (both models of that fold were fit on them).

    Examples
    --------
    >>> import pymc_trees as pmt
    >>> res = pmt.compare("penguins", folds=2, m=10, draws=50, chains=1, out=None,
    ...                   progress=False)
    >>> list(res.table.index)
    ['BART', 'boosting']
    >>> res["table"] is res.table
    True
    """

    table: pd.DataFrame
    report: Path | None
    folds: pd.DataFrame
    differences: pd.DataFrame
    calibration: pd.DataFrame
    predictions: pd.DataFrame
    info: dict
    bart_idata: Any = None
    boosting_model: Any = None
    train_X: Any = None

    def __getitem__(self, key: str):
        return getattr(self, key)

    def keys(self) -> list[str]:
        return ["table", "report", "folds", "differences", "calibration", "predictions",
                "info", "bart_idata", "boosting_model", "train_X"]

    def __str__(self) -> str:
        return format_table(self.table)


MODELS = ("BART", "boosting")


def format_table(table: pd.DataFrame) -> str:
    """The metrics table as fixed-width text (4 significant digits, seconds to 0.1)."""
    shown = table.copy()
    for c in shown.columns:
        if c == "seconds":
            shown[c] = shown[c].map(lambda v: f"{v:.1f}")
        elif c == "held-out rows":
            shown[c] = shown[c].map(lambda v: f"{int(v):,}")
        else:
            shown[c] = shown[c].map(lambda v: f"{v:.4g}")
    return shown.to_string()


def format_result(result: "ComparisonResult") -> str:
    """What the command line and the demo print after their header line: the metrics table,
    the per-row differences of BART minus boosting and the report's path.

    Parameters
    ----------
    result : ComparisonResult
        What :func:`compare` returned.

    Returns
    -------
    str

    Examples
    --------
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison import format_result
    >>> res = pmt.compare("penguins", folds=2, m=10, draws=50, chains=1, out=None,
    ...                   progress=False)
    >>> print(format_result(res))   # doctest: +SKIP
             held-out rows   RMSE log predictive density   CRPS ...
    """
    lines = [format_table(result.table), "",
             "Per held-out row, BART minus boosting (mean, standard error):",
             result.differences.to_string(float_format=lambda v: f"{v:.4g}"), ""]
    if result.report is not None:
        lines.append(f"report: {result.report}")
    return "\n".join(lines)
