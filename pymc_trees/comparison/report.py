"""A self-contained HTML report of a :func:`pymc_trees.compare` run: the metrics tables, and
figures embedded as base64 PNG (no external files, scripts, styles or network).

Figures (each an ``<img>`` with an ``id``, ``alt`` and ``title``; :data:`FIGURES`):

* ``predicted-vs-observed``: per model, the prediction at every held-out row against the
  observed value, with the 90% interval (regression, counts: BART's posterior predictive
  interval, boosting's 0.05 and 0.95 quantiles; classification: the predicted probability by
  observed class, with BART's 90% interval of the probability);
* ``calibration``: regression and counts: coverage of central intervals against their
  nominal level, and their mean width; classification: reliability diagram (observed share of
  y = 1 against the mean predicted probability per bin) and the histogram of predictions;
* ``variable-importance``: permutation importance of every column for both models of the
  last fold (:func:`pymc_trees.interpret.variable_importance`, at its training rows; BART
  with 94% HDI bars over posterior draws);
* ``partial-dependence``: partial dependence of both models of the last fold on the
  :data:`PD_COLUMNS` columns BART finds most important
  (:func:`pymc_trees.interpret.partial_dependence`; BART on the scale of f, boosting on the
  scale of its predictions).
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from pymc_trees.comparison.result import ComparisonResult

__all__ = ["write_report", "render_report", "FIGURES", "PD_COLUMNS"]

#: id -> (alt text, title) of every figure of the report
FIGURES = {
    "predicted-vs-observed": (
        "Predicted against observed held-out values for BART and boosting, with 90% "
        "intervals", "Predicted against observed (held-out rows)"),
    "calibration": (
        "Calibration of both models' predictive distributions on the held-out rows",
        "Calibration"),
    "variable-importance": (
        "Permutation importance of every column for BART (posterior mean and 94% HDI) and "
        "boosting, last fold", "Variable importance"),
    "partial-dependence": (
        "Partial dependence of BART (posterior mean and 94% HDI band) and boosting on the "
        "columns BART finds most important, last fold", "Partial dependence"),
}
#: partial dependence is drawn for this many of BART's most important columns
PD_COLUMNS = 2
#: rows of the last fold's training X used for importance and partial dependence (a random
#: subset when there are more) and posterior draws used
INTERPRET_ROWS, INTERPRET_DRAWS = 300, 100
COLOURS = {"BART": "#1f77b4", "boosting": "#d62728", "boosting (plug-in)": "#ff9896"}


def _png(fig) -> str:
    """A matplotlib figure as a base64 PNG string (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _predicted_vs_observed(res: "ComparisonResult"):
    import matplotlib.pyplot as plt

    pred, task = res.predictions, res.info["task"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, sharex=True)
    rng = np.random.default_rng(0)
    for ax, mdl in zip(axes, ("BART", "boosting")):
        y, pt = pred["y"].to_numpy(float), pred[f"{mdl}_point"].to_numpy(float)
        has_int = f"{mdl}_lo" in pred
        if task == "classification":
            x = y + rng.uniform(-0.15, 0.15, y.size)
            if has_int:
                ax.vlines(x, pred[f"{mdl}_lo"], pred[f"{mdl}_hi"], color=COLOURS[mdl],
                          alpha=0.25, lw=1)
            ax.scatter(x, pt, s=10, color=COLOURS[mdl])
            ax.set_xticks([0, 1])
            ax.set_xticklabels([f"not {res.info['positive']}", str(res.info["positive"])])
            ax.set_xlabel(f"observed {res.info['target']}")
            ax.axhline(0.5, color="grey", lw=0.8, ls=":")
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{mdl}: predicted probability"
                         + (" (90% interval)" if has_int else ""))
        else:
            lo, hi = pred[f"{mdl}_lo"].to_numpy(float), pred[f"{mdl}_hi"].to_numpy(float)
            inside = (lo <= y) & (y <= hi)
            for sel, colour, lab in ((inside, COLOURS[mdl], "interval covers y"),
                                     (~inside, "black", "interval misses y")):
                ax.vlines(y[sel], lo[sel], hi[sel], color=colour, alpha=0.3, lw=1)
                ax.scatter(y[sel], pt[sel], s=9, color=colour, label=f"{lab} ({sel.sum()})")
            span = [min(y.min(), lo.min()), max(y.max(), hi.max())]
            ax.plot(span, span, color="grey", lw=0.8, ls="--")
            ax.set_xlabel(f"observed {res.info['target']}")
            ax.set_title(f"{mdl}: prediction and 90% interval")
            ax.legend(fontsize=8, loc="upper left")
    axes[0].set_ylabel("predicted")
    fig.tight_layout()
    return fig


def _calibration(res: "ComparisonResult"):
    import matplotlib.pyplot as plt

    cal, task = res.calibration, res.info["task"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    if task == "classification":
        ax = axes[0]
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        for mdl, g in cal.groupby("model", sort=False):
            ax.plot(g["mean_predicted"], g["observed"], "-", color=COLOURS[mdl], lw=1)
            ax.scatter(g["mean_predicted"], g["observed"], s=10 + 2 * g["n"],
                       color=COLOURS[mdl], alpha=0.7, label=mdl)
        ax.set_xlabel("mean predicted probability (bin)")
        ax.set_ylabel("observed share of y = 1")
        ax.set_title("Reliability (marker area: rows in the bin)")
        ax.legend(fontsize=8)
        ax = axes[1]
        for mdl in ("BART", "boosting"):
            ax.hist(res.predictions[f"{mdl}_point"], bins=20, range=(0, 1), alpha=0.5,
                    color=COLOURS[mdl], label=mdl)
        ax.set_xlabel("predicted probability")
        ax.set_ylabel("held-out rows")
        ax.set_title("Predicted probabilities")
        ax.legend(fontsize=8)
    else:
        for mdl, g in cal.groupby("model", sort=False):
            style = "--" if "plug-in" in mdl else "-"
            axes[0].plot(g["nominal"], g["coverage"], style, marker="o", color=COLOURS[mdl],
                         label=mdl)
            axes[1].plot(g["nominal"], g["width"], style, marker="o", color=COLOURS[mdl],
                         label=mdl)
        lo, hi = cal["nominal"].min() - 0.05, cal["nominal"].max() + 0.03
        axes[0].plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
        axes[0].set_ylabel("held-out coverage")
        axes[0].set_title("Coverage of central intervals")
        axes[1].set_ylabel(f"mean width ({res.info['target']})")
        axes[1].set_title("Width of central intervals")
        for ax in axes:
            ax.set_xlabel("nominal level")
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _interpret_rows(res: "ComparisonResult") -> pd.DataFrame:
    X = res.train_X
    if len(X) > INTERPRET_ROWS:
        rows = np.sort(np.random.default_rng(res.info["seed"]).choice(len(X), INTERPRET_ROWS,
                                                                      replace=False))
        X = X.iloc[rows]
    return X


def _importance(res: "ComparisonResult"):
    """Figure and BART's importance (DataArray with dims chain, draw, column)."""
    import matplotlib.pyplot as plt

    from pymc_trees.interpret import plot_variable_importance, variable_importance

    X = _interpret_rows(res)
    kw = dict(kind="permutation", n_repeats=3, rng=res.info["seed"])
    imp = {"BART": variable_importance(res.bart_idata, X, max_draws=INTERPRET_DRAWS, **kw),
           "boosting": variable_importance(res.boosting_model, X, **kw)}
    height = 1.2 + 0.35 * len(res.info["covariates"])
    fig, axes = plt.subplots(1, 2, figsize=(11, height))
    for ax, (mdl, da) in zip(axes, imp.items()):
        plot_variable_importance(da, ax=ax)
        ax.set_title(f"{mdl}: permutation importance ({len(X)} training rows)")
    fig.tight_layout()
    return fig, imp["BART"]


def _partial_dependence(res: "ComparisonResult", bart_importance):
    import matplotlib.pyplot as plt

    from pymc_trees.interpret import partial_dependence, plot_partial_dependence

    X = _interpret_rows(res)
    mean = bart_importance.mean(("chain", "draw")).to_series().fillna(-np.inf)
    cols = list(mean.sort_values(ascending=False).index[:PD_COLUMNS])
    scale = {"regression": ("f", "prediction"),
             "classification": ("f (log-odds)", f"P({res.info['positive']})"),
             "count": ("f (log mean)", "mean count")}[res.info["task"]]
    fig, axes = plt.subplots(len(cols), 2, figsize=(11, 3.6 * len(cols)), squeeze=False,
                             sharey="row" if res.info["task"] == "regression" else "none")
    for row, col in zip(axes, cols):
        for ax, mdl, src, lab in zip(row, ("BART", "boosting"),
                                     (res.bart_idata, res.boosting_model), scale):
            kw = {"max_draws": INTERPRET_DRAWS} if mdl == "BART" else {}
            plot_partial_dependence(partial_dependence(src, X, col, **kw), ax=ax)
            ax.set_title(f"{mdl}: {col}")
            ax.set_ylabel(f"partial dependence of {lab}")
    fig.tight_layout()
    return fig


def _table_html(df: pd.DataFrame, index: bool = True) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            if np.isnan(v):
                return "-"
            return f"{v:.4g}"
        return html.escape(str(v))

    shown = df.copy()
    for c in shown.columns:
        shown[c] = shown[c].map(fmt)
    return shown.to_html(index=index, escape=False, border=0, classes="metrics")


_STYLE = """
body { font-family: sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.4; }
table.metrics { border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 0.92em; }
table.metrics th, table.metrics td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd;
       text-align: right; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; }
figcaption { font-size: 0.9em; color: #555; }
.note { color: #555; font-size: 0.92em; }
"""


def _metric_notes(task: str) -> str:
    point = ("<b>log loss</b>: mean of -log P(observed class) (BART: the posterior mean "
             "probability); <b>accuracy</b>: share of rows on the right side of 0.5"
             if task == "classification" else
             "<b>RMSE</b>: root mean squared error of the point prediction (BART: posterior "
             "predictive mean; boosting: the squared-error "
             + ("model" if task == "regression" else "Poisson model's mean") + ")")
    plug = {"regression": "a Normal with the boosting prediction as mean and the residual sd "
                          "of its validation rows as sd",
            "classification": "a Bernoulli with the predicted probability",
            "count": "a Poisson with the predicted mean"}[task]
    items = [
        point,
        "<b>log predictive density</b>: mean over held-out rows of log p(y | training data) "
        "(higher is better); BART: log of the mean over posterior draws of the likelihood of "
        f"the row; boosting: the log density of its plug-in distribution, {plug}",
        "<b>CRPS</b> (continuous ranked probability score, lower is better, in the units of "
        "y): BART from its posterior predictive draws, boosting in closed form from the "
        "plug-in distribution" + ("; for a 0/1 outcome it is the Brier score"
                                  if task == "classification" else ""),
    ]
    if task == "classification":
        items.append("<b>calibration error</b>: expected calibration error over 10 equal-width "
                     "bins of the predicted probability")
    else:
        items += [
            "<b>coverage 90%</b> and <b>width 90%</b>: share of held-out y inside the central "
            "90% interval and its mean width; BART: quantiles 0.05 and 0.95 of the posterior "
            "predictive draws; boosting: its quantile-objective model at 0.05 and 0.95",
            "<b>calibration error</b>: mean absolute difference between held-out coverage and "
            "nominal level over the levels of the calibration table (same intervals)",
        ]
    items.append("<b>seconds</b>: wall time summed over folds (BART: model build, sampling and "
                 "prediction; boosting: all its fits and predictions)")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def render_report(res: "ComparisonResult") -> str:
    """The report as one HTML string (figures inline as ``data:image/png;base64`` URIs)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    info = res.info
    esc = html.escape
    figs = {"predicted-vs-observed": _predicted_vs_observed(res),
            "calibration": _calibration(res)}
    figs["variable-importance"], bart_importance = _importance(res)
    figs["partial-dependence"] = _partial_dependence(res, bart_importance)
    fig_html = []
    for fid, fig in figs.items():
        alt, title = FIGURES[fid]
        fig_html.append(
            f'<figure><img id="{fid}" alt="{esc(alt)}" title="{esc(title)}" '
            f'src="data:image/png;base64,{_png(fig)}"><figcaption>{esc(title)}: {esc(alt)}.'
            "</figcaption></figure>")
    settings = (f"BART: m = {info['m']} trees, {info['chains']} chain(s) x ({info['tune']} "
                f"tuning + {info['draws']} draws), one core. Boosting: {info['boosting']}. "
                f"Splits: {info['scheme']}, seed {info['seed']}.")
    notes = "".join(f"<li>{esc(n)}</li>" for n in info["notes"])
    cal_title = ("Reliability bins of the predicted probability" if info["task"] ==
                 "classification" else "Coverage and width of central intervals by nominal "
                 "level (boosting (plug-in): intervals of its plug-in distribution)")
    positive = (f" (1 = {esc(str(info['positive']))})" if info["task"] == "classification"
                else "")
    body = f"""
<h1>BART against boosting: {esc(info['target'])}</h1>
<p>{esc(info['about'])}.<br>Target <b>{esc(info['target'])}</b>{positive}, task
<b>{esc(info['task'])}</b>; {info['rows']:,} rows, {len(info['covariates'])} covariates
({esc(', '.join(info['covariates']))}).</p>
<p class="note">{esc(settings)}</p>
<h2>Held-out metrics</h2>
{_table_html(res.table)}
{_metric_notes(info['task'])}
<h2>Per-row differences, BART minus boosting</h2>
<p class="note">Mean over held-out rows and its standard error (negative is better for BART
for squared error, log loss and CRPS; positive for the log predictive density).</p>
{_table_html(res.differences)}
<h2>Figures</h2>
{''.join(fig_html)}
<p class="note">Variable importance and partial dependence: the last fold's models at (a
random subset of at most {INTERPRET_ROWS} of) its training rows, with
<code>pymc_trees.interpret</code>. Permutation importance is the drop in the explained
variance of a model's own predictions when a column is permuted (mean of 3 permutations;
BART per posterior draw, {INTERPRET_DRAWS} draws). Partial dependence: BART on the scale of
its term f, boosting on the scale of its predictions.</p>
<h2>{esc(cal_title)}</h2>
{_table_html(res.calibration, index=False)}
<h2>Per fold</h2>
{_table_html(res.folds, index=False)}
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
<p class="note">Written by <code>pymc_trees.compare</code> in {info['wall seconds']:.1f} s.</p>
"""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>BART against boosting: {esc(info['target'])}</title>"
            f"<style>{_STYLE}</style></head><body>{body}</body></html>\n")


def write_report(res: "ComparisonResult", path: str | Path) -> Path:
    """Write the HTML report of a comparison (:func:`render_report`: the metrics, the per-row
    differences, calibration and the per-fold table) to ``path``, creating its parent
    folders.

    Parameters
    ----------
    res : ComparisonResult
        What :func:`compare` returned (with ``out=None`` it writes no report itself).
    path : str or Path
        Where to write the file.

    Returns
    -------
    Path
        The absolute path written.

    Examples
    --------
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison import write_report
    >>> res = pmt.compare("penguins", folds=2, m=10, draws=50, chains=1, out=None,
    ...                   progress=False)
    >>> path = write_report(res, "reports/penguins.html")
    >>> path.name
    'penguins.html'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(res), encoding="utf-8")
    return path.resolve()
