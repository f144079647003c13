"""Many fits: models and fits pickle, fits in threads, and `mvi.fit_many` on local threads
and on a `dask.distributed` cluster of worker processes, each fit equal to the bit to the
same fit made alone."""

import concurrent.futures
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
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


# -- fit_many on local threads ------------------------------------------------------------


def test_fit_many_without_a_client_returns_the_fits_in_order():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(8)
    alone = [model.fit(data=d, seed=3) for d in datasets]
    many = mvi.fit_many(model, datasets, seed=3)
    assert len(many) == len(datasets)
    for a, b in zip(alone, many):
        assert_same_fit(a, b)
    assert mvi.fit_many(model, []) == []


def test_fit_many_passes_the_method_and_options_as_model_fit_takes_them():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(2)
    many = mvi.fit_many(model, datasets, method="vi_diag", samples=60, seed=5)
    for d, fit in zip(datasets, many):
        assert fit.method == "vi_diag"
        assert fit.options["samples"] == "60"
        assert_same_fit(fit, model.fit(data=d, method="vi_diag", samples=60, seed=5))


def test_fit_many_names_the_data_set_that_fails():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(6)
    datasets[4] = {"X": datasets[4]["X"], "y": datasets[4]["y"][:-1]}  # one row short
    with pytest.raises(mvi.ModelError, match=r"data set 4 \(of 6") as caught:
        mvi.fit_many(model, datasets)
    err = caught.value
    assert err.index == 4
    assert err.code is not None and err.code.startswith("mvi::")
    assert err.diagnostics
    assert isinstance(err.__cause__, mvi.ModelError)


def test_fit_many_names_a_data_set_of_the_wrong_type():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(3)
    datasets[1] = {"X": datasets[1]["X"], "y": "not numbers"}
    with pytest.raises(mvi.ModelError, match=r"data set 1 \(of 3") as caught:
        mvi.fit_many(model, datasets)
    assert caught.value.index == 1
    assert isinstance(caught.value.__cause__, TypeError)


def test_fit_many_takes_a_process_pool_of_spawned_processes():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(3)
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        many = mvi.fit_many(model, datasets, client=pool, seed=4)
    for d, fit in zip(datasets, many):
        assert_same_fit(fit, model.fit(data=d, seed=4))


def test_fit_many_rejects_data_as_an_option_and_a_client_that_is_not_one():
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    with pytest.raises(TypeError, match="datasets"):
        mvi.fit_many(model, groups(1), data=groups(1)[0])
    with pytest.raises(TypeError, match="client"):
        mvi.fit_many(model, groups(1), client="tcp://127.0.0.1:8786")


def test_importing_mvi_does_not_import_dask():
    code = "import sys, mvi; print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


# -- fit_many on a Dask cluster of worker processes -----------------------------------------


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install 'mvi[dask]')"
    )
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def test_fit_many_on_a_dask_cluster_equals_serial_fits_to_the_bit(dask_client):
    distributed = pytest.importorskip("distributed")
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(20)
    alone = [model.fit(data=d) for d in datasets]
    with distributed.get_task_stream(client=dask_client) as tasks:
        many = mvi.fit_many(model, datasets, client=dask_client)
    assert len(many) == 20
    for a, b in zip(alone, many):
        assert_same_fit(a, b)
    # the fits were made by the cluster's worker processes, not in this one
    assert len(tasks.data) == 20
    assert {t["worker"] for t in tasks.data} <= set(dask_client.scheduler_info()["workers"])
    pids = dask_client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()


def test_fit_many_on_a_dask_cluster_names_the_data_set_that_fails(dask_client):
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(5)
    datasets[2] = {"X": datasets[2]["X"]}  # no `y`
    with pytest.raises(mvi.ModelError, match=r"data set 2 \(of 5") as caught:
        mvi.fit_many(model, datasets, client=dask_client)
    assert caught.value.index == 2
    assert caught.value.code.startswith("mvi::")
    # the cluster still fits after a failure
    assert_same_fit(mvi.fit_many(model, datasets[:1], client=dask_client)[0], model.fit(data=datasets[0]))


def test_fit_many_takes_data_sets_scattered_to_the_cluster(dask_client):
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    datasets = groups(3)
    scattered = dask_client.scatter(datasets)
    for a, b in zip(mvi.fit_many(model, scattered, client=dask_client), datasets):
        assert_same_fit(a, model.fit(data=b))


def test_fit_many_on_a_closed_client_raises_the_clients_error(dask_client):
    distributed = pytest.importorskip("distributed")
    model = mvi.Model(LOGISTIC, name="groups.mvi")
    closed = distributed.Client(dask_client.cluster)
    closed.close()
    with pytest.raises(distributed.client.ClosedClientError):
        mvi.fit_many(model, groups(3), client=closed)
