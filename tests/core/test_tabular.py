"""TableSchema: column kinds, levels, codes and missing values at the input boundary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pymc_trees.core.tabular import KINDS, TableSchema


def _frame():
    return pd.DataFrame({
        "num": [1.5, np.nan, -2.0, 4.0, 0.0],
        "flag": [True, False, True, True, False],
        "city": ["paris", None, "lima", "oslo", "lima"],
        "size": pd.Categorical(["S", "L", None, "M", "S"], categories=["S", "M", "L"],
                               ordered=True),
        "colour": pd.Categorical(["red", "blue", "red", None, "green"],
                                 categories=["red", "green", "blue"]),
    })


# --- numpy arrays ----------------------------------------------------------------------------


def test_numeric_array_round_trip_keeps_nan_and_bool_is_zero_one():
    X = np.array([[1.0, np.nan], [2.5, 3.0], [np.nan, -1.0]])
    schema, A = TableSchema.from_training(X)
    assert schema.names == ("0", "1") and not schema.named
    assert schema.kinds == ("numeric", "numeric") and schema.levels == (None, None)
    assert schema.p == 2 and schema.n_levels.tolist() == [0, 0]
    assert A.dtype == np.float64 and A.flags.c_contiguous
    np.testing.assert_array_equal(A, X)
    np.testing.assert_array_equal(schema.encode(X[::-1]), X[::-1])
    _, B = TableSchema.from_training(np.array([[True, False], [False, False]]))
    np.testing.assert_array_equal(B, [[1.0, 0.0], [0.0, 0.0]])
    # one column: a 1-D X_new is read as (n, 1); from_training wants 2-D
    s1, _ = TableSchema.from_training(X[:, :1])
    assert s1.encode(np.array([1.0, 2.0])).shape == (2, 1)
    with pytest.raises(ValueError, match="reshape"):
        TableSchema.from_training(np.array([1.0, 2.0]))


def test_numeric_array_refusals_name_the_input():
    X = np.array([[1.0, 2.0, 3.0], [4.0, np.inf, 6.0]])
    with pytest.raises(ValueError, match=r"inf.*column 1\b.*replace them"):
        TableSchema.from_training(X)
    with pytest.raises(ValueError, match="pandas DataFrame with `category` or string"):
        TableSchema.from_training(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="pandas DataFrame with `category` or string"):
        TableSchema.from_training(np.array([[1, "b"]], dtype=object))
    schema, _ = TableSchema.from_training(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        schema.encode(np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"X_test has infinite values .* column 2"):
        schema.encode(np.array([[0.0, 0.0, -np.inf]]), what="X_test")


def test_categorical_codes_in_a_numeric_array_are_their_own_positions():
    """Codes given as numbers keep their values (levels "0" .. max code), so that the same
    codes given again as numbers, which encode() reads as positions, mean the same levels
    (re-mapping {3, 7, 10} to {0, 1, 2} at training would turn a later code 3 into 10)."""
    X = np.array([[10.0, 0.1], [3.0, 0.2], [np.nan, 0.3], [7.0, 0.4], [10.0, 0.5]])
    for spec in ([0], (np.int64(0),), np.array([True, False])):
        schema, A = TableSchema.from_training(X, categorical=spec)
        assert schema.kinds == ("categorical", "numeric")
        assert schema.levels[0] == tuple(str(c) for c in range(11))
        np.testing.assert_array_equal(A[:, 0], X[:, 0])
        np.testing.assert_array_equal(A[:, 1], X[:, 1])
        np.testing.assert_array_equal(schema.encode(X), A)
        assert schema.categorical.tolist() == [True, False]
        assert schema.n_levels.tolist() == [11, 0]
    with pytest.raises(ValueError, match="codes must be below"):
        TableSchema.from_training(np.array([[1e6], [1.0]]), categorical=[0])
    with pytest.raises(ValueError, match=r"column 0 is marked categorical.*non-negative "
                                         r"integer.*2\.5"):
        TableSchema.from_training(np.array([[2.5], [1.0]]), categorical=[0])
    with pytest.raises(ValueError, match=r"-1\.0"):
        TableSchema.from_training(np.array([[-1.0], [1.0]]), categorical=[0])
    with pytest.raises(ValueError, match="column index 5"):
        TableSchema.from_training(X, categorical=[5])
    with pytest.raises(ValueError, match="no column names"):
        TableSchema.from_training(X, categorical=["a"])
    with pytest.raises(ValueError, match=r"boolean mask .*\(2\)"):
        TableSchema.from_training(X, categorical=[True])


def test_numeric_array_for_a_categorical_schema_is_read_as_codes():
    schema, A = TableSchema.from_training(_frame())
    np.testing.assert_array_equal(schema.encode(A), A)  # already encoded: unchanged
    L = schema.n_levels
    assert L.tolist() == [0, 0, 3, 3, 3]
    for bad in (2.5, 3.0, -1.0):
        B = A.copy()
        B[0, 2] = bad
        with pytest.raises(ValueError, match=r"column 'city' \(index 2\).*integers in \[0, 3\)"):
            schema.encode(B)
    B = A.copy()
    B[:, 3] = np.nan  # missing codes are fine
    assert np.isnan(schema.encode(B)[:, 3]).all()


# --- DataFrames ----------------------------------------------------------------------------


def test_dataframe_kinds_levels_and_codes():
    df = _frame()
    schema, A = TableSchema.from_training(df)
    assert schema.named and schema.names == tuple(df.columns)
    assert schema.kinds == ("numeric", "numeric", "categorical", "ordinal", "categorical")
    assert all(k in KINDS for k in schema.kinds)
    # strings: sorted distinct values; category: its categories in order (unused ones kept)
    assert schema.levels == (None, None, ("lima", "oslo", "paris"), ("S", "M", "L"),
                             ("red", "green", "blue"))
    want = np.array([[1.5, 1, 2, 0, 0],
                     [np.nan, 0, np.nan, 2, 2],
                     [-2.0, 1, 0, np.nan, 0],
                     [4.0, 1, 1, 1, np.nan],
                     [0.0, 0, 0, 0, 1]])
    np.testing.assert_array_equal(A, want)
    assert schema.categorical.tolist() == [False, False, True, False, True]
    # the same rows, columns in another order and rows reversed: matched by name
    np.testing.assert_array_equal(schema.encode(df[df.columns[::-1]].iloc[::-1]), want[::-1])
    # new rows with labels only (strings for the category columns) give the same codes
    new = pd.DataFrame({"colour": ["blue", None], "size": ["L", "S"], "city": ["oslo", "lima"],
                        "flag": [False, True], "num": [np.nan, 1.0]})
    np.testing.assert_array_equal(schema.encode(new),
                                  [[np.nan, 0, 1, 2, 2], [1.0, 1, 0, 0, np.nan]])


def test_unseen_levels_are_refused_with_the_column_and_the_fix():
    df = _frame()
    schema, _ = TableSchema.from_training(df)
    bad = df.assign(city=["paris", "rome", "tokyo", None, "lima"])
    with pytest.raises(ValueError, match=r"column 'city' \(index 2\).*'rome', 'tokyo'.*map them "
                                         r"to a known level or to NaN"):
        schema.encode(bad)
    bad = df.assign(colour=pd.Categorical(["red", "pink", None, None, None]))
    with pytest.raises(ValueError, match=r"'colour'.*'pink'"):
        schema.encode(bad)
    # an unseen category that no row takes is not an error
    ok = df.assign(colour=pd.Categorical(["red", "blue", None, "red", "red"],
                                         categories=["blue", "purple", "red"]))
    np.testing.assert_array_equal(schema.encode(ok)[:, 4], [0, 2, np.nan, 0, 0])


def test_ordered_and_unordered_categories():
    x = pd.Categorical(["b", "a", "c", "a"], categories=["c", "a", "b"])
    s_un, A_un = TableSchema.from_training(pd.DataFrame({"x": x}))
    s_or, A_or = TableSchema.from_training(pd.DataFrame({"x": x.as_ordered()}))
    assert s_un.kinds == ("categorical",) and s_or.kinds == ("ordinal",)
    assert s_un.levels == s_or.levels == (("c", "a", "b"),)
    np.testing.assert_array_equal(A_un, A_or)
    np.testing.assert_array_equal(A_or[:, 0], [2, 1, 0, 1])
    assert s_un != s_or and s_or.categorical.tolist() == [False]
    assert s_or.n_levels.tolist() == [3]
    s_back, _ = TableSchema.from_training(pd.DataFrame({"x": x.as_ordered().as_unordered()}))
    assert s_back == s_un
    with pytest.raises(ValueError, match="as_unordered"):
        TableSchema.from_training(pd.DataFrame({"x": x.as_ordered()}), categorical=["x"])


def test_bool_and_nullable_dtypes():
    df = pd.DataFrame({
        "i": pd.array([1, pd.NA, 3], dtype="Int64"),
        "f": pd.array([0.5, pd.NA, 2.0], dtype="Float64"),
        "b": pd.array([True, pd.NA, False], dtype="boolean"),
        "nb": np.array([True, False, True]),
        "s": pd.array(["u", pd.NA, "v"], dtype="string"),
        "o": pd.Series(["v", None, np.nan], dtype=object),
    })
    schema, A = TableSchema.from_training(df)
    assert schema.kinds == ("numeric",) * 4 + ("categorical",) * 2
    np.testing.assert_array_equal(A, [[1, 0.5, 1, 1, 0, 0],
                                      [np.nan, np.nan, np.nan, 0, np.nan, np.nan],
                                      [3, 2.0, 0, 1, 1, np.nan]])
    assert schema.levels[4] == ("u", "v") and schema.levels[5] == ("v",)


def test_levels_compare_as_strings_and_integer_codes_in_frames():
    df = pd.DataFrame({"k": pd.Categorical([10, 20, 30, 10]), "z": [5, 0, 5, 9]})
    schema, A = TableSchema.from_training(df, categorical=["z"])
    assert schema.levels == (("10", "20", "30"), tuple(str(c) for c in range(10)))
    np.testing.assert_array_equal(A, [[0, 5], [1, 0], [2, 5], [0, 9]])
    new = pd.DataFrame({"z": [9.0, np.nan, 0.0], "k": ["30", "10", None]})
    np.testing.assert_array_equal(schema.encode(new), [[2, 9], [0, np.nan], [np.nan, 0]])
    new_num = pd.DataFrame({"k": [20, 30], "z": [5, 5]})
    np.testing.assert_array_equal(schema.encode(new_num), [[1, 5], [2, 5]])
    with pytest.raises(ValueError, match=r"'z'.*'12'"):
        schema.encode(pd.DataFrame({"k": [20], "z": [12]}))
    with pytest.raises(ValueError, match=r"'z' \(index 1\) is marked categorical.*0\.5"):
        TableSchema.from_training(df.assign(z=[0.5, 1, 1, 1]), categorical=["z"])


def test_column_names_missing_unknown_and_positional_frames():
    df = _frame()
    schema, A = TableSchema.from_training(df)
    with pytest.raises(ValueError, match=r"missing 'flag'.*unknown 'extra'"):
        schema.encode(df.drop(columns="flag").assign(extra=1.0))
    # a numpy array for a named schema: columns in order
    np.testing.assert_array_equal(schema.encode(A), A)
    # a frame with integer labels: they are its names ("0", "1"), matched by name
    pos = pd.DataFrame(np.arange(6.0).reshape(3, 2))
    s2, B = TableSchema.from_training(pos)
    assert s2.named and s2.names == ("0", "1")
    np.testing.assert_array_equal(s2.encode(pos[[1, 0]]), B)
    with pytest.raises(ValueError, match="missing '0', '1', unknown 'a', 'b'"):
        s2.encode(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    # no names (an array, or a pm.Data without coords): a frame is read by position (issue
    # 27: pm.Data("X", df) keeps no names), unless its labels are positions out of order
    s3, _ = TableSchema.from_training(B)
    assert not s3.named
    np.testing.assert_array_equal(s3.encode(pos), B)
    named = pd.DataFrame({"b": B[:, 0], "a": B[:, 1]})
    np.testing.assert_array_equal(s3.encode(named), B)
    with pytest.raises(ValueError, match="positions in another order.*sort_index"):
        s3.encode(pos[[1, 0]])
    with pytest.raises(ValueError, match="has 3 columns; the training data had 2"):
        s3.encode(pd.DataFrame(np.zeros((1, 3))))
    with pytest.raises(ValueError, match="repeated column names"):
        TableSchema.from_training(pd.DataFrame(np.zeros((2, 2)), columns=["a", "a"]))


def test_unsupported_frame_columns_are_refused_by_name():
    df = pd.DataFrame({"x": [1.0, 2.0], "when": pd.to_datetime(["2024-01-01", "2024-02-01"])})
    with pytest.raises(ValueError, match=r"column 'when' \(index 1\) has dtype datetime64.*"
                                         r"Convert it"):
        TableSchema.from_training(df)
    with pytest.raises(ValueError, match=r"inf.*'x'"):
        TableSchema.from_training(pd.DataFrame({"x": [1.0, np.inf]}))
    schema, _ = TableSchema.from_training(pd.DataFrame({"x": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="was numeric in training"):
        schema.encode(pd.DataFrame({"x": ["a", "b"]}))


def test_schema_is_hashable_and_equal_by_value():
    s1, _ = TableSchema.from_training(_frame())
    s2, _ = TableSchema.from_training(_frame().iloc[::-1])  # same columns and levels
    s3, _ = TableSchema.from_training(_frame().drop(columns="num"))
    assert s1 == s2 and hash(s1) == hash(s2) and s1 != s3
    table = {s1: "a", s3: "b"}
    assert table[s2] == "a" and len(table) == 2
    with pytest.raises(AttributeError):
        s1.named = False  # frozen
    # built by hand: lists are turned into tuples, bad kinds and levels refused
    s4 = TableSchema(["a"], ["categorical"], [["x", "y"]], True)
    assert s4.levels == (("x", "y"),) and hash(s4) == hash(TableSchema(("a",), ("categorical",),
                                                                       (("x", "y"),), True))
    with pytest.raises(ValueError, match="one of"):
        TableSchema(("a",), ("nominal",), (("x",),), True)
    with pytest.raises(ValueError, match="must be None for a numeric column"):
        TableSchema(("a",), ("numeric",), (("x",),), True)
    with pytest.raises(ValueError, match="repeated labels"):
        TableSchema(("a",), ("categorical",), (("x", "x"),), True)
