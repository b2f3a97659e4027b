"""The data of a tree term: the training X as the term holds it (its schema and encoding,
:func:`table_schema`), its column names and current value, and the number of outputs a
shape asks for; read when ``BARTTree`` is built and when new data arrive."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

from pymc_trees.core.tabular import TableSchema, mark_missing

__all__ = ["table_schema", "categorical_columns", "given_names", "column_names", "data_value",
           "outputs_of"]


def table_schema(X, categorical, columns, missing=None) -> tuple[TableSchema, object]:
    """The schema of the training X and the X the term holds: a DataFrame or array becomes
    its encoding (a constant); a PyTensor X (``pm.Data``, expressions) stays as it is and
    must hold the encoding (level codes as numbers) already.

    ``categorical`` is None, column indices / names / a boolean mask of code columns, or a
    :class:`TableSchema` that X is the encoding of; ``columns`` are the names given with
    ``columns=`` or from a ``pm.Data``'s coords (None when unnamed); ``missing`` marks missing
    entries (read as NaN)."""
    if not isinstance(X, Variable):
        X = mark_missing(X, missing)
    if isinstance(categorical, TableSchema):
        schema = categorical
        if not isinstance(X, Variable):
            X = schema.encode(X, what="X")
        return schema, X
    if not isinstance(X, Variable):
        schema, X = TableSchema.from_training(X, categorical)
    else:
        value = data_value(pt.as_tensor_variable(X), missing)
        if value.ndim != 2:  # refused by dist, with the reason
            return TableSchema.from_training(np.zeros((1, 1)))[0], X
        schema, _ = TableSchema.from_training(value, categorical)
    if columns is None or (schema.named and tuple(columns) == schema.names):
        return schema, X
    if len(columns) != schema.p:
        raise ValueError(f"columns names {len(columns)} columns ({list(columns)[:5]}...) but X "
                         f"has {schema.p}; give one name per column of X.")
    if schema.named:
        raise ValueError(f"X is a DataFrame with columns {list(schema.names)}, and columns= "
                         f"names them {list(columns)}; drop columns= (a DataFrame's names "
                         "are used) or rename the DataFrame's columns.")
    return dataclasses.replace(schema, names=tuple(columns), named=True), X


def categorical_columns(op) -> np.ndarray | None:
    """The categorical columns of a tree term's X (None when all are numeric)."""
    schema = getattr(op, "schema", None)
    return None if schema is None else schema.categorical


def given_names(columns) -> tuple[str, ...]:
    """``columns=`` as a tuple of distinct str."""
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
        raise ValueError(f"columns must be a sequence of column names (for example "
                         f"df.columns); got {columns!r}.")
    names = tuple(str(c) for c in columns)
    if len(set(names)) != len(names):
        raise ValueError(f"columns has repeated names {sorted({c for c in names if names.count(c) > 1})}"
                         "; give every column its own name.")
    return names


def column_names(X, model) -> tuple[str, ...] | None:
    """Training column names: a DataFrame's columns, or the coords of the second dim of a
    ``pm.Data`` registered with dims (None when the columns have no names)."""
    cols = getattr(X, "columns", None)
    if cols is not None:
        return tuple(str(c) for c in cols)
    if model is not None and getattr(X, "name", None) in model.named_vars_to_dims:
        dims = model.named_vars_to_dims[X.name]
        if len(dims) == 2 and dims[1] is not None and model.coords.get(dims[1]) is not None:
            return tuple(str(c) for c in model.coords[dims[1]])
    return None


def data_value(X, missing: float | None = None) -> np.ndarray:
    """The current value of X (data, or an expression of ``pm.Data`` and constants), with
    the entries equal to ``missing`` (if given) made NaN."""
    if any(v.owner is not None and isinstance(v.owner.op, RandomVariable)
           for v in ancestors([X])):
        raise ValueError("X of a BARTTree must be data (arrays, pm.Data or expressions of "
                         "them); it depends on a random variable. Trees split on fixed "
                         "covariates.")
    value = X.data if isinstance(X, Constant) else X.eval()
    return mark_missing(np.asarray(value, dtype=np.float64), missing)


def outputs_of(key: str, shape, n: int) -> int | None:
    """The number of outputs k that shape/size/dims ask for: None for one value per row of X
    (``(n,)``), k for ``(k, n)``; anything else is refused."""
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    if isinstance(shape, pt.TensorVariable):
        length = shape.type.shape[0] if shape.ndim == 1 else None
        entries = None
        if length is not None:
            try:
                entries = tuple(int(v) for v in shape.eval())
            except Exception:
                entries = None
    else:
        shape = tuple(shape)
        length = len(shape)
        entries = tuple(_entry_value(e) for e in shape)
    if length is not None and length not in (1, 2):
        raise ValueError(f"A BARTTree has one value per row of X, shape (n,) = ({n},), or k "
                         f"values per row, shape (k, n); {key}={shape!r} asks for {length} "
                         "dimensions. Use one of those shapes (or several BARTTree terms).")
    if length is None:
        return None
    if entries is not None and entries[-1] is not None and int(entries[-1]) != n:
        raise ValueError(f"{key}={shape!r} does not match the {n} rows of X: the last "
                         f"dimension of a BARTTree is the rows of X (shape (n,) or (k, n)).")
    if length == 1:
        return None
    k = entries[0] if entries is not None else None
    if k is None or int(k) < 1:
        raise ValueError(f"{key}={shape!r}: the number of outputs k of a BARTTree of shape "
                         "(k, n) must be a known positive integer (a number, or dims whose "
                         "coords are set).")
    return int(k)


def _entry_value(e):
    if isinstance(e, numbers.Integral):
        return int(e)
    val = getattr(e, "data", None)
    if val is None and hasattr(e, "get_value"):
        val = e.get_value()
    if val is None:
        try:
            val = e.eval()
        except Exception:
            return None
    return int(val)
