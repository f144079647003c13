"""Many fits: models and fits pickle, and fits in threads equal fits made alone."""

import concurrent.futures
import json
import pickle
import textwrap

import numpy as np
import pytest

import mvi
from conftest import EXAMPLES

# Keys of fit.json that time the run rather than give its results.
NOT_RESULTS = {"wall_time_s"}

# Logistic regression with an intercept and two covariates: per-group fits of a few dozen rows.
LOGISTIC = textwrap.dedent(
    """
    data {
      X: matrix[N, 2]
      y: ints[N]
    }
    param {
      a: real
      b: vector[2]
    }
    model {
      a ~ normal(0, 2)
      b ~ normal(0, 1)
      y ~ bernoulli_logit(a + X * b)
    }
    infer { method = laplace; seed = 7; draws = 200 }
    """
)


def groups(n, rows=40):
    """`n` data sets of `rows` rows each, with group-specific coefficients."""
    rng = np.random.default_rng(46)
    out = []
    for g in range(n):
        X = rng.normal(size=(rows, 2))
        eta = 0.3 * g / n - 0.5 + X @ np.array([1.0, -0.5 + g / n])
        y = (rng.uniform(size=rows) < 1 / (1 + np.exp(-eta))).astype(np.int64)
        out.append({"X": X, "y": y})
    return out


def results(fit):
    return {k: v for k, v in json.loads(fit.to_json()).items() if k not in NOT_RESULTS}


def assert_same_fit(a, b):
    """Every number of two fits equal to the bit, wall time aside."""
    assert results(a) == results(b)
    assert a.draws.keys() == b.draws.keys()
    for name in a.draws:
        assert a.draws[name].shape == b.draws[name].shape
        assert a.draws[name].tobytes() == b.draws[name].tobytes(), name
    assert a.lp.tobytes() == b.lp.tobytes()
    assert a.log_p.tobytes() == b.log_p.tobytes()
    assert (a.log_q is None) == (b.log_q is None)
    if a.log_q is not None:
        assert a.log_q.tobytes() == b.log_q.tobytes()
    assert a.summary().equals(b.summary())


# -- pickling -----------------------------------------------------------------------------


def test_model_pickles_to_an_equal_model_from_its_text_name_and_directory(tmp_path):
    from_text = mvi.Model(LOGISTIC, name="groups.mvi", model_dir=tmp_path)
    from_file = mvi.Model.from_file(EXAMPLES / "logistic_rbf_banana.mvi")
    for model in (from_text, from_file):
        copy = pickle.loads(pickle.dumps(model))
        assert copy is not model
        assert copy == model
        assert hash(copy) == hash(model)
        assert (copy.source, copy.name, copy.model_dir) == (model.source, model.name, model.model_dir)
    assert from_text != from_file
    assert from_text != mvi.Model(LOGISTIC, name="other.mvi", model_dir=tmp_path)
    data = groups(1)[0]
    assert_same_fit(pickle.loads(pickle.dumps(from_text)).fit(data=data), from_text.fit(data=data))


@pytest.mark.parametrize(
    "method, options",
    [
        ("laplace", {}),
        ("vi_diag", {"samples": 50}),
        ("nuts", {"chains": 2, "draws": 50, "warmup": 50}),
    ],
)
def test_fit_pickles_with_every_array_and_number(method, options):
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    fit = model.fit(data=groups(1)[0], method=method, **options)
    copy = pickle.loads(pickle.dumps(fit))
    assert copy == fit
    assert hash(copy) == hash(fit)
    assert fit.to_json() == copy.to_json()
    assert str(fit) == str(copy)
    assert_same_fit(fit, copy)
    assert copy.params == fit.params
    assert copy.sampler_stats.keys() == fit.sampler_stats.keys()
    assert (method == "nuts") == bool(copy.sampler_stats)
    for name, values in fit.sampler_stats.items():
        assert copy.sampler_stats[name].dtype == values.dtype
        assert copy.sampler_stats[name].tobytes() == values.tobytes()
    for key in ("method", "options", "elbo", "khat", "theta", "converged", "iterations", "notes"):
        assert getattr(copy, key) == getattr(fit, key), key
    # the unpickled fit is a whole fit: ArviZ data with the same draws and attributes
    tree, copy_tree = fit.to_arviz(), copy.to_arviz()
    assert copy_tree.attrs == tree.attrs
    for name in fit.draws:
        assert np.array_equal(copy_tree["posterior"][name].values, tree["posterior"][name].values)


# -- threads ------------------------------------------------------------------------------


def test_fits_in_a_thread_pool_equal_fits_in_turn():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(6)
    options = {"method": "vi_diag", "samples": 100}
    alone = [model.fit(data=d, **options) for d in datasets]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        together = list(pool.map(lambda d: model.fit(data=d, **options), datasets))
    for a, b in zip(alone, together):
        assert_same_fit(a, b)
