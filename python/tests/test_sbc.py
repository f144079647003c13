"""`mvi.sbc`: simulation-based calibration from Python, equal to `mvi sbc --json` to the
bit, the same wherever the simulations run (this process, an executor, a Dask cluster)."""

import concurrent.futures
import json
import subprocess
from pathlib import Path

import pytest

import mvi

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "sbc_models"


def model_and_data(stem: str):
    model = mvi.Model.from_file(str(MODELS / f"{stem}.mvi"))
    with open(MODELS / f"{stem}.json", encoding="utf-8") as f:
        return model, json.load(f)


def test_sbc_equals_the_cli_and_flags_laplace_on_a_skewed_posterior(cli):
    model, data = model_and_data("poisson_few_counts")
    result = mvi.sbc(model, data, method="laplace", sims=120)
    out = subprocess.run(
        [str(cli), "sbc", str(MODELS / "poisson_few_counts.mvi"), "--data", str(MODELS / "poisson_few_counts.json"),
         "--method", "laplace", "--sims", "120", "--json", "-q"],
        check=True, capture_output=True, text=True,
    )
    expected = json.loads(out.stdout)
    assert [p["p_value"] for p in result.result["parameters"]] == [p["p_value"] for p in expected["parameters"]]
    assert list(result.parameters["name"]) == ["a", "b", "log_lik"]
    flagged = result.parameters.set_index("name")
    assert not flagged.loc["a", "calibrated"] and flagged.loc["a", "shape"] == "biased high"
    assert not result.calibrated
    assert result.ranks.shape == (120, 3)
    assert result.ranks.to_numpy().min() >= 0 and result.ranks.to_numpy().max() <= 99


def test_sbc_on_an_executor_equals_sbc_in_process():
    model, data = model_and_data("normal_mean")
    here = mvi.sbc(model, data, method="laplace", sims=40, seed=3)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        there = mvi.sbc(model, data, method="laplace", sims=40, seed=3, client=pool, chunk=7)
    assert here.result == there.result
    assert here.simulations == there.simulations


def test_bad_arguments_are_errors():
    model, data = model_and_data("normal_mean")
    with pytest.raises(ValueError, match="nothing to calibrate"):
        mvi.sbc(model, data, sims=0)
    flat = mvi.Model(
        "data {\n  N: int\n  y: vector[N]\n}\nparam {\n  mu: real\n  sigma: real<lower=0>\n}\n"
        "model {\n  mu ~ normal(0, 1)\n  y ~ normal(mu, sigma)\n}\n",
        name="flat.mvi",
    )
    with pytest.raises(mvi.ModelError) as err:
        mvi.sbc(flat, data, sims=5)
    assert err.value.code == "mvi::sbc::not_generative"


def test_sbc_on_a_dask_cluster_equals_sbc_in_process():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install 'mvi[dask]')"
    )
    model, data = model_and_data("normal_mean")
    here = mvi.sbc(model, data, method="laplace", sims=24)
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        there = mvi.sbc(model, data, method="laplace", sims=24, client=client, chunk=5)
    assert here.result == there.result
    assert here.simulations == there.simulations
