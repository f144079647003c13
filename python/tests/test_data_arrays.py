"""NumPy arrays and pandas columns reach the engine as buffers of numbers, not as text:
they bind as the same values as lists (the JSON path) and give the same fit to the bit,
and bad arrays raise `mvi.ModelError` saying what is wrong."""

import json
import textwrap

import numpy as np
import pandas as pd
import pytest

import mvi

LOGIT = textwrap.dedent(
    """
    data {
      X: matrix[N, D]
      y: ints[N]
      x1: vector[N]
    }
    param {
      w: vector[D]
      b: real
    }
    model {
      w ~ normal(0, 1)
      b ~ normal(0, 1)
      y ~ bernoulli_logit(X * w + b * x1)
    }
    """
)

# Entries of fit.json that are not results (time, the model's and the data's names).
NOT_RESULTS = {"wall_time_s", "model", "data_files"}


def make_table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["label"] = (frame["a"] - frame["b"] + rng.normal(size=n) > 0).astype("int64")
    return frame


def fit_results(data):
    fit = mvi.Model(LOGIT).fit(data=data, method="laplace", draws=40, seed=3)
    return {k: v for k, v in json.loads(fit.to_json()).items() if k not in NOT_RESULTS}


def test_a_dataframe_column_a_2d_array_and_int_arrays_bind_as_lists_do():
    t = make_table()
    arrays = {"X": t[["a", "b"]].to_numpy(), "y": t["label"].to_numpy(), "x1": t["c"]}
    lists = {"X": t[["a", "b"]].to_numpy().tolist(), "y": t["label"].tolist(), "x1": t["c"].tolist()}
    layout = mvi.Model(LOGIT).check(arrays)
    assert layout["sizes"] == {"N": 200, "D": 2}
    assert fit_results(arrays) == fit_results(lists)


def test_a_dataframe_binds_to_a_matrix_and_fortran_and_strided_arrays_are_read_in_order():
    t = make_table()
    base = fit_results({"X": t[["a", "b"]].to_numpy().tolist(), "y": t["label"].tolist(), "x1": t["c"].tolist()})
    x = t[["a", "b"]].to_numpy()
    wide = np.zeros((200, 4))
    wide[:, ::2] = x
    for form in (t[["a", "b"]], np.asfortranarray(x), wide[:, ::2]):
        data = {"X": form, "y": t["label"].astype("int32"), "x1": t["c"].to_numpy()}
        assert fit_results(data) == base
    # float32 numbers are widened exactly: the same fit as lists of the widened values
    x32 = x.astype(np.float32)
    lists32 = {"X": x32.astype(np.float64).tolist(), "y": t["label"].tolist(), "x1": t["c"].tolist()}
    assert fit_results({"X": x32, "y": t["label"], "x1": t["c"]}) == fit_results(lists32)


def test_int_and_bool_arrays_bind_to_ints_and_floats_of_whole_numbers_too():
    t = make_table()
    x, c = t[["a", "b"]].to_numpy(), t["c"].to_numpy()
    base = fit_results({"X": x, "y": t["label"].tolist(), "x1": c})
    for y in (t["label"].to_numpy(np.int8), t["label"].to_numpy(np.uint16), t["label"].to_numpy(bool), t["label"].to_numpy(float)):
        assert fit_results({"X": x, "y": y, "x1": c}) == base


def test_bad_arrays_raise_model_error_saying_what_is_wrong():
    t = make_table()
    good = {"X": t[["a", "b"]].to_numpy(), "y": t["label"].to_numpy(), "x1": t["c"].to_numpy()}
    model = mvi.Model(LOGIT)
    y = good["y"].astype(float)
    y[7] = 0.5
    with pytest.raises(mvi.ModelError) as e:
        model.check({**good, "y": y})
    assert e.value.code == "mvi::data::not_int"
    assert "entry 8" in str(e.value) and "help" in str(e.value)
    # the diagnostic points at the declaration, line 4 of the model
    assert e.value.line == 4
    x = good["X"].copy()
    x[2, 1] = np.nan
    with pytest.raises(mvi.ModelError) as e:
        model.check({**good, "X": x})
    assert e.value.code == "mvi::data::missing_value"
    assert "row 3, column 2" in str(e.value)
    with pytest.raises(mvi.ModelError) as e:
        model.check({**good, "X": np.zeros((2, 2, 2))})
    assert "at most two dims" in str(e.value)
    # a string array is the wrong type of value, as a string is
    with pytest.raises(TypeError) as e:
        model.check({**good, "y": np.array(["a", "b"])})
    assert "`y`" in str(e.value)
