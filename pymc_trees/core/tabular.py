"""The input boundary for tabular data: column kinds, category levels and missing values.

Tree models split every column either as a number (``x <= threshold``) or, for a categorical
column, by a set of categories.  :class:`TableSchema` records, at fit time, what each column of
the training X is, and turns any later X (new rows for prediction, evaluation sets) into the
same float matrix the tree kernels read:

* **numeric** columns are their values as float64 (bool as 0/1); NaN (also ``None`` and
  ``pd.NA`` in pandas columns) marks a missing value;
* **categorical** columns (pandas ``category`` dtype, unordered; string or object columns; or
  integer codes marked with ``categorical=``) are the position of each value in the column's
  ``levels`` as a float code ``0.0, 1.0, ..., L - 1``, NaN when missing;
* **ordinal** columns (pandas ``category`` dtype with ``ordered=True``) are encoded like
  categorical ones, as codes ``0 .. L - 1`` in the order of the categories, but split like a
  number (``code <= threshold``).  To treat an ordered factor as unordered, pass
  ``X.assign(col=X["col"].cat.as_unordered())``.

A string or object column whose cells are mostly numbers (more than half of its non-missing
cells) but not all is refused, naming the cells that are not numbers: such a column is a column
of numbers with a few stray text cells (a ``"?"`` or ``"n/a"`` for a missing value, a typo), and
splitting it as categories would make every distinct number a level.  Fix the cells or make them
missing (``pd.to_numeric(X[col], errors="coerce")``); a column that really is categorical is
passed as a ``category`` column or named in ``categorical=``.

Levels are compared as strings: a category ``3`` in training and a value ``"3"`` later are the
same level.  A level not seen in training is refused with an error naming the column and the
levels; map such values to a known level or to NaN (missing) first.  Infinite values are
refused everywhere.

``TableSchema`` is a frozen dataclass of tuples, so it is hashable and can sit on a PyTensor Op
as a property; two schemas built from the same columns are equal.

Example
-------
>>> import pandas as pd
>>> df = pd.DataFrame({"x": [0.5, None, 2.0],
...                    "colour": pd.Categorical(["red", "blue", None])})
>>> schema, X = TableSchema.from_training(df)
>>> schema.kinds, schema.levels
(('numeric', 'categorical'), (None, ('blue', 'red')))
>>> X
array([[0.5, 1. ],
       [nan, 0. ],
       [2. , nan]])
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["KINDS", "TableSchema", "mark_missing", "text_in_numbers", "describe_cells"]

KINDS = ("numeric", "ordinal", "categorical")

_SHOW = 5  # how many offending values or columns an error message lists


MAX_CODE = 100_000  # integer category codes given as numbers are levels 0 .. code


def _pandas():
    """The pandas module, or None when it is not installed."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with pymc
        return None
    return pd


def as_pandas(X: Any) -> Any:
    """A data frame of another library (polars, pyarrow, ...: any object with the data frame
    interchange protocol's ``__dataframe__``) as a pandas DataFrame, so that its columns are
    read by name and kind like a pandas frame's; anything else unchanged."""
    pd = _pandas()
    if (pd is None or isinstance(X, (pd.DataFrame, pd.Series, np.ndarray))
            or not hasattr(X, "__dataframe__")):
        return X
    return pd.api.interchange.from_dataframe(X)


def _is_frame(X) -> bool:
    pd = _pandas()
    return pd is not None and isinstance(X, pd.DataFrame)


def _is_series(X) -> bool:
    pd = _pandas()
    return pd is not None and isinstance(X, pd.Series)


def _show(values) -> str:
    values = list(values)
    head = ", ".join(repr(v) for v in values[:_SHOW])
    return head + (f", ... ({len(values)} in all)" if len(values) > _SHOW else "")


def _numeric_array(X, what: str) -> np.ndarray:
    """``X`` as a float64 array when it is a numeric (or bool) array; a clear error for
    strings, objects, dates, complex numbers and sparse matrices."""
    if type(X).__module__.startswith("scipy.sparse"):
        raise ValueError(f"{what} is a sparse matrix; sparse data is not supported. Pass a "
                         f"dense array ({what}.toarray()); NaN marks missing values.")
    A = np.asarray(X)
    if A.dtype.kind in "OUS":
        raise ValueError(
            f"{what} is an array of dtype {A.dtype} (strings or Python objects). For "
            "categorical data pass a pandas DataFrame with `category` or string columns "
            f"(or integer codes with categorical=...); otherwise convert {what} to numbers.")
    if A.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {what} has dtype {A.dtype}; pass real "
                         "numbers (for example the real and imaginary parts as two columns).")
    if A.dtype.kind not in "biuf":
        raise ValueError(f"{what} has dtype {A.dtype}, which is not numeric; convert it to "
                         "numbers (dates, for example, to days since a reference date).")
    return A


def text_in_numbers(s) -> tuple[np.ndarray, np.ndarray] | None:
    """The cells that are not numbers in a text column that holds numbers.

    Parameters
    ----------
    s : pandas Series
        A column of any dtype.

    Returns
    -------
    (positions, values) or None
        For a string or object column whose non-missing cells are numbers (as
        ``pd.to_numeric`` reads them) except for some, fewer than half: the positions of the
        other cells (ndarray of shape (k,), dtype int64, 0-based in the order of the rows) and
        their values (ndarray of shape (k,), dtype object).  None for any other column:
        numbers, categories, text whose cells are all numbers or mostly not.
    """
    pd = _pandas()
    t = pd.api.types
    if isinstance(s.dtype, pd.CategoricalDtype) or not (t.is_object_dtype(s.dtype)
                                                        or t.is_string_dtype(s.dtype)):
        return None
    codes, distinct = pd.factorize(s)  # -1: missing; the distinct values are parsed once
    if distinct.size == 0:
        return None
    parsed = pd.to_numeric(pd.Series(np.asarray(distinct, dtype=object)), errors="coerce")
    text = parsed.isna().to_numpy()
    present = codes >= 0
    bad = np.zeros(codes.size, bool)
    bad[present] = text[codes[present]]
    k = int(bad.sum())
    if k == 0 or 2 * k >= int(present.sum()):
        return None
    pos = np.flatnonzero(bad)
    return pos, s.to_numpy(dtype=object)[pos]


def describe_cells(rows, values) -> str:
    """``rows`` (labels for the reader) and their ``values`` as a short list for a message:
    ``"row 17: 'abc', row 20: '?'"``, the first few only, with the count when there are
    more."""
    items = [f"{r}: {v!r}" for r, v in zip(list(rows)[:_SHOW], list(values)[:_SHOW])]
    n = len(values)
    return ", ".join(items) + (f", ... ({n} in all)" if n > _SHOW else "")


def _text_cells_error(s, label: str, what: str, training: bool) -> ValueError | None:
    """The error for a column of numbers with text cells (:func:`text_in_numbers`) of the
    training X (``training``: the column could also be meant as categories) or of new rows
    for a column that was numeric in training."""
    found = text_in_numbers(s)
    if found is None:
        return None
    pos, vals = found
    rows = [f"row {r!r}" for r in s.index[pos]]
    k = pos.size
    cells = f"{k} cells that are not numbers" if k > 1 else "1 cell that is not a number"
    head = (f"{what} {label} holds numbers except for {cells}: {describe_cells(rows, vals)} "
            f"(rows by their index label). Fix or remove {'these cells' if k > 1 else 'it'}, or "
            "mark them missing (X[col] = pd.to_numeric(X[col], errors='coerce') makes every "
            "cell that is not a number NaN)")
    if not training:
        return ValueError(head + "; the column was numeric in training.")
    return ValueError(head + "; if the column really is categorical, pass it as "
                      "X[col].astype('category') or name it in categorical=. (A text column "
                      "is split as categories, which would make every distinct number a "
                      "level.)")


def mark_missing(X: Any, missing: float | None) -> Any:
    """``X`` with the entries equal to ``missing`` (a number that marks missing values, as
    XGBoost's ``missing``) made NaN: a float array for an array, and for a DataFrame the same
    frame with its numeric columns masked (category and string columns are left as they
    are).  A data frame of another library is read as a pandas one first (:func:`as_pandas`);
    otherwise unchanged when ``missing`` is None."""
    X = as_pandas(X)
    if missing is None:
        return X
    if _is_frame(X):
        pd = _pandas()
        t = pd.api.types
        cols = [s.mask(s == missing) if t.is_numeric_dtype(s.dtype)
                and not t.is_bool_dtype(s.dtype) else s
                for _, s in X.items()]
        return pd.concat(cols, axis=1) if cols else X
    A = np.asarray(X, dtype=np.float64)
    return np.where(A == missing, np.nan, A)


# this package's folder, as its modules' code objects spell their file names
_PACKAGE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep


def warn_user(message: str) -> None:
    """Issue a ``UserWarning`` about an input, attributed to the line that passed it: the
    first caller outside this package and PyMC (``BARTTree`` is built through PyMC's
    ``Distribution.__new__``), whatever the depth of the call.

    Parameters
    ----------
    message : str
        What is wrong with which input, and the fix.
    """
    skip = [_PACKAGE_DIR]
    pymc = sys.modules.get("pymc")
    if pymc is not None and getattr(pymc, "__file__", None):
        skip.append(os.path.dirname(pymc.__file__) + os.sep)
    warnings.warn(message, UserWarning, skip_file_prefixes=tuple(skip))


def _column_label(j: int, names: tuple[str, ...], named: bool) -> str:
    return f"column {names[j]!r} (index {j})" if named else f"column {j}"


def _check_finite(A: np.ndarray, names: tuple[str, ...], named: bool, what: str) -> None:
    bad = np.flatnonzero(np.isinf(A).any(axis=0))
    if bad.size:
        cols = ", ".join(_column_label(int(j), names, named) for j in bad[:_SHOW])
        raise ValueError(f"{what} has infinite values (inf) in {cols}; replace them with NaN "
                         "(missing) or with finite values.")


def _integer_codes(x: np.ndarray, label: str, what: str) -> np.ndarray:
    """Check that the non-missing values of ``x`` are non-negative integers."""
    v = x[~np.isnan(x)]
    bad = (v < 0) | (v != np.floor(v))
    if np.any(bad):
        raise ValueError(
            f"{what} {label} is marked categorical, so its values must be non-negative "
            f"integer codes or NaN; found {_show(np.unique(v[bad]))}. Pass such a column as a "
            "pandas `category` or string column instead, or round the codes.")
    return v


def _code_label(u: float) -> str:
    return str(int(u))


def _map_labels(labels: np.ndarray, levels: tuple[str, ...], label: str, what: str,
                present: np.ndarray | None = None) -> np.ndarray:
    """Positions in ``levels`` of the string ``labels`` (an object or str array), with the
    error for labels not among them.  ``present``: which labels occur in the data (all when
    None); unseen labels that do not occur are not an error."""
    pd = _pandas()
    pos = pd.Index(np.asarray(levels, dtype=object)).get_indexer(
        np.asarray(labels, dtype=object)).astype(np.int64)
    unseen = pos < 0 if present is None else (pos < 0) & present
    if np.any(unseen):
        bad = sorted(set(labels[unseen].tolist()))
        raise ValueError(
            f"{what} {label} has levels not seen in training: {_show(bad)} (training levels: "
            f"{_show(levels)}). These levels were not in the training data; map them to a "
            "known level or to NaN (missing).")
    return pos


def _object_labels(s) -> tuple[np.ndarray, np.ndarray]:
    """The missing mask and the non-missing values, as str, of a pandas Series."""
    na = s.isna().to_numpy()
    vals = s[~na].astype(str).to_numpy(dtype=object)
    return na, vals


def _resolve_columns(categorical, names: tuple[str, ...], named: bool, p: int) -> np.ndarray:
    """``categorical=`` (indices, names or a boolean mask) as a boolean mask of length p."""
    mask = np.zeros(p, bool)
    if categorical is None:
        return mask
    if isinstance(categorical, (str, bytes)) or not isinstance(categorical,
                                                               (Sequence, np.ndarray)):
        raise ValueError("categorical must be a sequence of column indices or names, or a "
                         f"boolean mask of length {p}; got {categorical!r}.")
    items = list(np.asarray(categorical, dtype=object).ravel()) if isinstance(
        categorical, np.ndarray) else list(categorical)
    if items and all(isinstance(c, (bool, np.bool_)) for c in items):
        if len(items) != p:
            raise ValueError(f"categorical as a boolean mask must have one entry per column "
                             f"({p}); got {len(items)}.")
        return np.asarray(items, bool)
    for c in items:
        if isinstance(c, (bool, np.bool_)):
            raise ValueError("categorical mixes booleans with indices or names; pass either a "
                             f"boolean mask of length {p} or a list of columns.")
        if isinstance(c, (int, np.integer)):
            if not 0 <= c < p:
                raise ValueError(f"categorical names column index {c}, but X has {p} columns "
                                 f"(indices 0 to {p - 1}).")
            mask[int(c)] = True
        elif isinstance(c, str):
            if not named or c not in names:
                raise ValueError(
                    f"categorical names the column {c!r}, which X does not have "
                    + (f"(its columns: {_show(names)})." if named else
                       "(X has no column names; pass column indices)."))
            mask[names.index(c)] = True
        else:
            raise ValueError(f"categorical entries must be column indices or names; got {c!r}.")
    return mask


@dataclass(frozen=True)
class TableSchema:
    """What each column of the training X is, to encode later X the same way.

    Attributes
    ----------
    names : tuple of str, length p
        Column names; ``"0", "1", ...`` when X had none.
    kinds : tuple of str, length p
        One of :data:`KINDS` per column.
    levels : tuple, length p
        Per column: the category labels as a tuple of str (the code of a value is its position
        here) for ordinal and categorical columns; None for numeric columns.
    named : bool
        Whether the training X had column names (a DataFrame, whose column labels are its
        names as str, integers included; or names given with the data).  Then a DataFrame
        given to :meth:`encode` is matched to the columns by name.  Without names a DataFrame
        is read by position only when its labels are the positions themselves (``0 .. p-1``);
        other labels are refused, since nothing says which column is which.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from pymc_trees import TableSchema
    >>> df = pd.DataFrame({"age": [31.0, np.nan, 52.0],
    ...                    "shop": pd.Categorical(["north", "south", "north"])})
    >>> schema, codes = TableSchema.from_training(df)      # codes: the training X, (3, 2)
    >>> new = schema.encode(df[["shop", "age"]])            # matched by name: shape (3, 2)
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    levels: tuple[tuple[str, ...] | None, ...]
    named: bool

    def __post_init__(self):
        names = tuple(str(n) for n in self.names)
        kinds = tuple(self.kinds)
        levels = tuple(None if lev is None else tuple(str(s) for s in lev)
                       for lev in self.levels)
        p = len(names)
        if len(kinds) != p or len(levels) != p:
            raise ValueError(f"TableSchema needs one kind and one levels entry per name; got "
                             f"{p} names, {len(kinds)} kinds and {len(levels)} levels.")
        for j, (k, lev) in enumerate(zip(kinds, levels)):
            if k not in KINDS:
                raise ValueError(f"kinds[{j}] is {k!r}; it must be one of {KINDS}.")
            if (k == "numeric") != (lev is None):
                raise ValueError(f"levels[{j}] must be None for a numeric column and a tuple "
                                 f"of labels otherwise; column {names[j]!r} is {k} with levels "
                                 f"{lev!r}.")
            if lev is not None and len(set(lev)) != len(lev):
                raise ValueError(f"levels[{j}] (column {names[j]!r}) has repeated labels "
                                 f"{_show(sorted({s for s in lev if lev.count(s) > 1}))}.")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "named", bool(self.named))

    # -- properties ----------------------------------------------------------------------

    @property
    def p(self) -> int:
        """Number of columns."""
        return len(self.names)

    @property
    def categorical(self) -> np.ndarray:
        """Boolean array of shape (p,): which columns are split by sets of categories."""
        return np.array([k == "categorical" for k in self.kinds], bool)

    @property
    def n_levels(self) -> np.ndarray:
        """int64 array of shape (p,): the number of levels of ordinal and categorical columns,
        0 for numeric ones."""
        return np.array([0 if lev is None else len(lev) for lev in self.levels], np.int64)

    # -- building ------------------------------------------------------------------------

    @classmethod
    def from_training(cls, X: Any, categorical: Sequence | np.ndarray | None = None
                      ) -> tuple["TableSchema", np.ndarray]:
        """The schema of the training rows ``X`` and ``X`` encoded with it.

        Parameters
        ----------
        X : array-like of shape (n, p) or pandas DataFrame
            A numeric array (bool as 0/1, NaN for missing values), or a DataFrame whose
            columns may be numeric (also nullable ``Int64``/``Float64``; ``pd.NA`` is
            missing), bool (0/1), ``category`` (unordered: categorical; ordered: ordinal) or
            string/object (categorical, levels the sorted distinct values as str).
        categorical : sequence of int or str, or boolean array of shape (p,), optional
            Numeric columns holding integer category codes, to be split as categories: their
            values must be non-negative integers or NaN; the levels are ``"0", "1", ...`` up
            to the largest code, so that the codes are their own positions and the same
            codes given later as numbers (to :meth:`encode`) mean the same levels.  A string
            or object column named here is split as categories even when most of its cells
            are numbers (otherwise refused, below).

        Returns
        -------
        schema : TableSchema
        X_encoded : ndarray of shape (n, p), dtype float64, C-contiguous
            Numeric columns as values, categorical and ordinal columns as codes
            ``0 .. L - 1``; NaN for missing values.

        Raises
        ------
        ValueError
            For 1-D or empty-shaped input, infinite values, string or object numpy arrays,
            unsupported DataFrame dtypes (dates, complex numbers), non-integer values in a
            column marked categorical, repeated column names, or a string or object column
            of numbers with some cells that are not numbers (more than half of its
            non-missing cells are numbers; the message names the rows, by index label, and
            the cells), unless it is named in ``categorical``.
        """
        X = as_pandas(X)
        if _is_series(X):
            raise ValueError("X is a pandas Series; pass a DataFrame with one column "
                             "(series.to_frame()) for a single feature.")
        if _is_frame(X):
            return cls._from_frame(X, categorical)
        A = _numeric_array(X, "X")
        if A.ndim != 2:
            raise ValueError(f"X must be 2-D of shape (n, p); got shape {A.shape}. For a "
                             "single feature use X.reshape(-1, 1).")
        p = A.shape[1]
        names = tuple(str(j) for j in range(p))
        A = np.array(A, dtype=np.float64, order="C")  # a copy: codes are written into it
        _check_finite(A, names, False, "X")
        mask = _resolve_columns(categorical, names, False, p)
        kinds = ["numeric"] * p
        levels: list[tuple[str, ...] | None] = [None] * p
        for j in np.flatnonzero(mask):
            lev, codes = cls._codes_from_numbers(A[:, j], _column_label(j, names, False), "X")
            kinds[j], levels[j], A[:, j] = "categorical", lev, codes
        return cls(names, tuple(kinds), tuple(levels), False), A

    @staticmethod
    def _codes_from_numbers(x: np.ndarray, label: str, what: str):
        # Codes are their own positions (levels "0" .. "max"), so that a numeric array of the
        # same codes given later (which :meth:`encode` reads as positions) means the same
        # levels; codes absent from training are levels no tree has seen a row of.
        v = _integer_codes(x, label, what)  # the non-missing codes, checked
        top = int(np.max(v)) if v.size else 0
        if top >= MAX_CODE:
            raise ValueError(f"Column {label} of {what} is marked categorical but holds the "
                             f"code {top}; codes must be below {MAX_CODE}. Re-code the "
                             "levels as 0, 1, 2, ... .")
        return tuple(str(u) for u in range(top + 1)), np.array(x, dtype=np.float64)

    @classmethod
    def _from_frame(cls, df, categorical):
        pd = _pandas()
        cols = list(df.columns)
        named = bool(cols)
        names = tuple(str(c) for c in cols)
        if len(set(names)) != len(names):
            dup = sorted({s for s in names if names.count(s) > 1})
            raise ValueError(f"X has repeated column names {_show(dup)}; rename them.")
        n, p = df.shape
        mask = _resolve_columns(categorical, names, named, p)
        A = np.empty((n, p), np.float64)
        kinds: list[str] = []
        levels: list[tuple[str, ...] | None] = []
        t = pd.api.types
        for j in range(p):
            s = df.iloc[:, j]
            dt = s.dtype
            label = _column_label(j, names, named)
            if isinstance(dt, pd.CategoricalDtype):
                if dt.ordered and mask[j]:
                    raise ValueError(
                        f"X {label} is an ordered category (ordinal) and is also listed in "
                        "categorical=; to split it as unordered categories pass "
                        "X[col].cat.as_unordered() and leave it out of categorical=.")
                lev = tuple(str(c) for c in dt.categories)
                if len(set(lev)) != len(lev):
                    raise ValueError(f"X {label} has categories that are equal as strings "
                                     f"({_show(lev)}); rename them.")
                codes = s.cat.codes.to_numpy()
                A[:, j] = np.where(codes < 0, np.nan, codes)
                kinds.append("ordinal" if dt.ordered else "categorical")
                levels.append(lev)
            elif t.is_bool_dtype(dt) or (t.is_numeric_dtype(dt) and not t.is_complex_dtype(dt)):
                x = s.to_numpy(dtype=np.float64, na_value=np.nan)
                if np.isinf(x).any():
                    raise ValueError(f"X has infinite values (inf) in {label}; replace them "
                                     "with NaN (missing) or with finite values.")
                if mask[j]:
                    lev, A[:, j] = cls._codes_from_numbers(x, label, "X")
                    kinds.append("categorical")
                    levels.append(lev)
                else:
                    A[:, j] = x
                    kinds.append("numeric")
                    levels.append(None)
            elif t.is_string_dtype(dt) or t.is_object_dtype(dt):
                err = None if mask[j] else _text_cells_error(s, label, "X", True)
                if err is not None:
                    raise err
                na, vals = _object_labels(s)
                lev = tuple(sorted(_pandas().unique(vals).tolist()))
                x = np.full(n, np.nan)
                x[~na] = _map_labels(vals, lev, label, "X")
                A[:, j] = x
                kinds.append("categorical")
                levels.append(lev)
            else:
                raise ValueError(
                    f"X {label} has dtype {dt}, which is not supported. Convert it to numbers "
                    "(for dates, for example, days since a reference date) or to categories "
                    "(X[col].astype('category')).")
        return cls(names, tuple(kinds), tuple(levels), named), A

    # -- encoding ------------------------------------------------------------------------

    def encode(self, X: Any, what: str = "X_new") -> np.ndarray:
        """``X`` in the training encoding.

        Parameters
        ----------
        X : array-like of shape (n, p) or (n,) when p == 1, or pandas DataFrame / Series
            A DataFrame is matched to the training columns by name when the training X had
            names (any order; extra or missing columns are an error), otherwise its columns
            are taken in order (the training X was an array, or a ``pm.Data`` without coords,
            which keeps no names; labels that are the positions in another order are
            refused).  Category and string values are mapped to codes by their
            label (compared as str).  A plain numeric array is taken as already encoded:
            categorical and ordinal columns must then hold integer codes in ``[0, L)`` or
            NaN.
        what : str, default "X_new"
            What to call ``X`` in error messages.

        Returns
        -------
        ndarray of shape (n, p), dtype float64, C-contiguous

        Raises
        ------
        ValueError
            For a wrong number or wrong names of columns, infinite values, levels not seen in
            training, codes outside ``[0, L)``, or a column whose type does not fit its kind.
        """
        X = as_pandas(X)
        if _is_series(X):
            X = X.to_frame()
            return self._encode_frame(X, what, by_name=False)
        if _is_frame(X):
            return self._encode_frame(X, what, by_name=self.named)
        A = _numeric_array(X, what)
        if A.ndim == 1 and self.p == 1:
            A = A.reshape(-1, 1)
        if A.ndim != 2 or A.shape[1] != self.p:
            hint = (" Reshape your data: X.reshape(1, -1) for a single row." if A.ndim == 1
                    else "")
            raise ValueError(f"{what} must have shape (n, {self.p}) (the training data had "
                             f"{self.p} columns); got shape {A.shape}.{hint}")
        A = np.ascontiguousarray(A, dtype=np.float64)
        _check_finite(A, self.names, self.named, what)
        L = self.n_levels
        for j in range(self.p):
            if self.kinds[j] == "numeric":
                continue
            x = A[:, j]
            v = x[~np.isnan(x)]
            bad = (v < 0) | (v >= L[j]) | (v != np.floor(v))
            if np.any(bad):
                raise ValueError(
                    f"{what} {_column_label(j, self.names, self.named)} is {self.kinds[j]} "
                    f"with {L[j]} levels, and a numeric array is read as its codes, which "
                    f"must be integers in [0, {L[j]}) or NaN; found {_show(np.unique(v[bad]))}."
                    " Pass a DataFrame to map labels to codes, or use positions in "
                    "schema.levels.")
        return A

    def _encode_frame(self, df, what: str, by_name: bool) -> np.ndarray:
        pd = _pandas()
        cols = [str(c) for c in df.columns]
        if by_name:
            missing = [c for c in self.names if c not in cols]
            unknown = [c for c in cols if c not in self.names]
            if missing or unknown:
                parts = ([f"missing {_show(missing)}"] if missing else []) + (
                    [f"unknown {_show(unknown)}"] if unknown else [])
                raise ValueError(
                    f"{what} does not have the training columns: {', '.join(parts)} (the "
                    f"training columns are {_show(self.names)}). Pass a DataFrame with the "
                    "training column names (in any order).")
            if len(set(cols)) != len(cols):
                raise ValueError(f"{what} has repeated column names; rename them.")
            pos = [cols.index(c) for c in self.names]
        else:
            if len(cols) != self.p:
                raise ValueError(f"{what} has {len(cols)} columns; the training data had "
                                 f"{self.p}.")
            positions = [str(j) for j in range(self.p)]
            if cols != positions and sorted(cols) == sorted(positions):
                raise ValueError(
                    f"{what} is a DataFrame whose column labels are the training positions "
                    f"in another order ({_show(cols)}); the training X had no column names "
                    "(a numpy array, or a pm.Data without coords), so its columns are read "
                    "by position, and these labels say that would mix them up. Put them in "
                    f"order ({what}.sort_index(axis=1)), or give the training columns names: "
                    "a DataFrame X, BARTTree(..., columns=df.columns), or a pm.Data with dims "
                    "('obs', 'column') and the model's coords {'column': list(df.columns)}.")
            # the training X had no names (a pm.Data("X", df) keeps none): a DataFrame's
            # columns are taken in the training order, and its names label the results
            pos = list(range(self.p))
        n = df.shape[0]
        A = np.empty((n, self.p), np.float64)
        t = pd.api.types
        for j in range(self.p):
            s = df.iloc[:, pos[j]]
            dt = s.dtype
            label = _column_label(j, self.names, self.named)
            kind = self.kinds[j]
            numeric_like = t.is_bool_dtype(dt) or (t.is_numeric_dtype(dt)
                                                   and not t.is_complex_dtype(dt))
            if kind == "numeric":
                if not numeric_like:
                    err = _text_cells_error(s, label, what, False)
                    if err is not None:
                        raise err
                    raise ValueError(f"{what} {label} has dtype {dt}, but it was numeric in "
                                     "training; pass numbers (NaN for missing).")
                x = s.to_numpy(dtype=np.float64, na_value=np.nan)
                if np.isinf(x).any():
                    raise ValueError(f"{what} has infinite values (inf) in {label}; replace "
                                     "them with NaN (missing) or with finite values.")
                A[:, j] = x
                continue
            levels = self.levels[j]
            if isinstance(dt, pd.CategoricalDtype):
                cats = np.array([str(c) for c in dt.categories], dtype=object)
                codes = s.cat.codes.to_numpy()
                present = np.zeros(cats.size, bool)
                present[codes[codes >= 0]] = True
                m = _map_labels(cats, levels, label, what, present)
                x = np.full(n, np.nan)
                x[codes >= 0] = m[codes[codes >= 0]]
                A[:, j] = x
            elif numeric_like and not t.is_bool_dtype(dt):
                x = s.to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
                if np.isinf(x).any():
                    raise ValueError(f"{what} has infinite values (inf) in {label}; replace "
                                     "them with NaN (missing) or with finite values.")
                keep = ~np.isnan(x)
                uniq, inv = np.unique(x[keep], return_inverse=True)
                index = {lev: k for k, lev in enumerate(levels)}
                m = np.empty(uniq.size, np.int64)
                unseen = []
                for k, u in enumerate(uniq):  # distinct values only
                    cands = ([_code_label(u)] if u == np.floor(u) else []) + [str(u)]
                    m[k] = next((index[c] for c in cands if c in index), -1)
                    if m[k] < 0:
                        unseen.append(cands[0])
                if unseen:
                    _map_labels(np.array(unseen, dtype=object), levels, label, what)
                x[keep] = m[inv]
                A[:, j] = x
            elif t.is_string_dtype(dt) or t.is_object_dtype(dt) or t.is_bool_dtype(dt):
                na, vals = _object_labels(s)
                x = np.full(n, np.nan)
                x[~na] = _map_labels(vals, levels, label, what)
                A[:, j] = x
            else:
                raise ValueError(f"{what} {label} has dtype {dt}, but it was {kind} in "
                                 "training; pass its levels as a category, string or integer "
                                 "column.")
        return A
