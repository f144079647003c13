"""What a fit adds after its draws: `generated` outputs, replicates (`predictive=True`),
pointwise log-likelihoods and PSIS-LOO (`loo=True`), their ArviZ groups, and
`mvi.compare_models`; each against the CLI and ArviZ."""

import csv
import json
import pickle
import subprocess

import numpy as np
import pytest

import mvi
from conftest import EXAMPLES, ROOT, example_data

LINEAR = EXAMPLES / "linear_regression.mvi"
LINEAR_DATA = EXAMPLES / "data" / "linear_regression.json"
FIRST_COLUMN = ROOT / "tests" / "data" / "loo_models" / "first_column.mvi"
N = 50  # observations in linear_regression.json

# linear_regression.mvi with a `generated` block: a vector, a scalar and a matrix output.
GENERATED = LINEAR.read_text() + """
generated {
  let mu = X * w
  let mu_max = max(mu)
  let pair = to_matrix(head(mu, 6), 3, 2)   // column-major: pair[r, c] = mu[r + 3 (c - 1)]
}
"""

# |Δ| between our PSIS-LOO and arviz_stats' on the same draws (both in double precision;
# the Pareto fits differ only in rounding).
LOO_TOL = 1e-6


def cli_draws(cli, model, out, *args):
    subprocess.run(
        [str(cli), "run", str(model), "--data", str(LINEAR_DATA), "--quiet", "--output-dir", str(out), *args],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with open(out / "draws.csv", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    return rows[0], np.array([[float(x) for x in r] for r in rows[1:]])


def column(draws, header, name):
    return draws[:, header.index(name)]


@pytest.fixture(scope="module")
def nuts_fit():
    """NUTS on linear_regression with replicates and pointwise log-likelihoods."""
    model = mvi.Model.from_file(LINEAR)
    return model.fit(data=example_data("linear_regression"), method="nuts", predictive=True, loo=True, seed=3)


def test_generated_outputs_are_draws_with_their_shapes(cli, tmp_path):
    path = tmp_path / "generated.mvi"
    path.write_text(GENERATED)
    fit = mvi.Model.from_file(path).fit(data=example_data("linear_regression"), draws=200)
    assert fit.generated == ["mu", "mu_max", "pair"]
    assert fit.params == ["w"]
    assert fit.draws["mu"].shape == (200, N)
    assert fit.draws["mu_max"].shape == (200,)
    assert fit.draws["pair"].shape == (200, 3, 2)
    np.testing.assert_array_equal(fit.draws["mu_max"], fit.draws["mu"].max(axis=1))
    np.testing.assert_array_equal(fit.draws["pair"][:, 2, 1], fit.draws["mu"][:, 5])
    header, draws = cli_draws(cli, path, tmp_path / "out", "--set", "draws=200")
    np.testing.assert_array_equal(fit.draws["mu"][:, 6], column(draws, header, "mu.7"))
    np.testing.assert_array_equal(fit.draws["pair"][:, 1, 0], column(draws, header, "pair.2.1"))
    tree = fit.to_arviz()
    assert tree.posterior["pair"].shape == (1, 200, 3, 2)
    assert set(tree.children) == {"posterior", "sample_stats"}


def test_predictive_gives_posterior_predictive_and_observed_data(cli, tmp_path):
    data = example_data("linear_regression")
    fit = mvi.Model.from_file(LINEAR).fit(data=data, predictive=True, draws=300)
    assert fit.replicates == {"y_rep": "y"}
    assert fit.draws["y_rep"].shape == (300, N)
    np.testing.assert_array_equal(fit.observed_data["y"], np.array(data["y"]))
    header, draws = cli_draws(cli, LINEAR, tmp_path / "out", "--predictive", "--set", "draws=300")
    for i in (0, 17, N - 1):
        np.testing.assert_array_equal(fit.draws["y_rep"][:, i], column(draws, header, f"y_rep.{i + 1}"))
    tree = fit.to_arviz()
    assert set(tree.children) == {"posterior", "sample_stats", "posterior_predictive", "observed_data"}
    assert "y_rep" not in tree.posterior
    assert tree.posterior_predictive["y"].dims == ("chain", "draw", "y_dim_0")
    assert tree.posterior_predictive["y"].shape == (1, 300, N)
    assert tree.observed_data["y"].dims == ("y_dim_0",)
    np.testing.assert_array_equal(tree.observed_data["y"].values, np.array(data["y"]))


def test_loo_equals_arviz_stats_for_nuts(nuts_fit):
    import arviz_stats

    ours = nuts_fit.loo()
    assert not ours["corrected"]
    tree = nuts_fit.to_arviz()
    assert tree.log_likelihood["y"].dims == ("chain", "draw", "y_dim_0")
    assert tree.log_likelihood["y"].shape == (4, len(nuts_fit.lp) // 4, N)
    theirs = arviz_stats.loo(tree, pointwise=True, reff=1.0)
    assert abs(ours["elpd_loo"] - theirs.elpd) < LOO_TOL
    assert abs(ours["se"] - theirs.se) < LOO_TOL
    assert abs(ours["p_loo"] - theirs.p) < LOO_TOL
    np.testing.assert_allclose(ours["pareto_k"], np.asarray(theirs.pareto_k), atol=LOO_TOL)
    np.testing.assert_allclose(ours["elpd_i"], np.asarray(theirs.elpd_i), atol=LOO_TOL)


def test_loo_equals_the_cli(cli, nuts_fit):
    out = subprocess.run(
        [str(cli), "loo", str(LINEAR), "--data", str(LINEAR_DATA), "--method", "nuts", "--set", "seed=3",
         "--set", "predictive=true", "--quiet", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    expected = json.loads(out.stdout)["loo"]
    ours = nuts_fit.loo()
    for key in ("elpd_loo", "se", "p_loo", "lppd", "looic", "n_draws", "n_obs", "n_high_k", "good_k"):
        assert ours[key] == expected[key], key
    np.testing.assert_array_equal(ours["pareto_k"], [p["khat"] for p in expected["pointwise"]])


def test_loo_of_an_approximation_is_corrected():
    fit = mvi.Model.from_file(LINEAR).fit(data=example_data("linear_regression"), method="vi_full", loo=True)
    loo = fit.loo()
    assert loo["corrected"]
    assert fit.log_correction.shape == fit.lp.shape
    assert fit.log_lik["y"].shape == (len(fit.lp), N)
    assert loo["pareto_k"].shape == (N,)


def test_arviz_works_on_predictive_and_loo(nuts_fit):
    import arviz_plots
    import arviz_stats
    import matplotlib

    matplotlib.use("Agg")
    tree = nuts_fit.to_arviz()
    assert {"posterior_predictive", "observed_data", "log_likelihood"} <= set(tree.children)
    arviz_plots.plot_ppc_dist(tree)
    arviz_plots.plot_loo_pit(tree)
    other = mvi.Model.from_file(FIRST_COLUMN).fit(
        data=example_data("linear_regression"), method="nuts", predictive=True, loo=True, seed=3
    )
    table = arviz_stats.compare({"linear": tree, "first_column": other.to_arviz()})
    assert list(table.index) == ["linear", "first_column"]


def test_loo_without_loo_says_how():
    fit = mvi.Model.from_file(LINEAR).fit(data=example_data("linear_regression"))
    assert fit.log_lik is None
    with pytest.raises(mvi.ModelError, match="loo=True") as err:
        fit.loo()
    assert err.value.code == "mvi::run::no_log_lik"
    assert set(fit.to_arviz().children) == {"posterior", "sample_stats"}


def test_fit_with_loo_and_predictive_pickles(nuts_fit):
    again = pickle.loads(pickle.dumps(nuts_fit))
    assert again == nuts_fit
    np.testing.assert_array_equal(again.log_lik["y"], nuts_fit.log_lik["y"])
    assert again.loo()["elpd_loo"] == nuts_fit.loo()["elpd_loo"]


def test_compare_models_ranks_the_full_model_first(cli):
    data = example_data("linear_regression")
    models = {"linear": mvi.Model.from_file(LINEAR), "first_column": mvi.Model.from_file(FIRST_COLUMN)}
    table = mvi.compare_models(models, data, method="laplace")
    assert list(table.columns) == ["rank", "elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse", "warning"]
    assert list(table.index) == ["linear", "first_column"]
    assert list(table["rank"]) == [0, 1]
    assert table.loc["linear", "elpd_diff"] == 0.0
    assert table.loc["first_column", "elpd_diff"] > 0
    assert abs(table["weight"].sum() - 1) < 1e-9
    # the CLI's numbers, for the same data and method
    out = subprocess.run(
        [str(cli), "compare-models", str(LINEAR), str(FIRST_COLUMN), "--data", str(LINEAR_DATA),
         "--method", "laplace", "--quiet", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    expected = json.loads(out.stdout)["models"]
    for row, name in zip(expected, ["linear", "first_column"]):
        for key in ("elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse"):
            assert table.loc[name, key] == row[key], (name, key)
    # fits made with loo=True compare the same
    fits = [m.fit(data=data, method="laplace", loo=True) for m in models.values()]
    again = mvi.compare_models(dict(zip(models, fits)))
    assert again.equals(table)


def test_compare_models_refuses_other_data():
    data = example_data("linear_regression")
    other = dict(data, y=list(np.array(data["y"]) + 1.0))
    fits = {
        "a": mvi.Model.from_file(LINEAR).fit(data=data, loo=True),
        "b": mvi.Model.from_file(LINEAR).fit(data=other, loo=True),
    }
    with pytest.raises(mvi.ModelError, match="observe different data") as err:
        mvi.compare_models(fits)
    assert err.value.code == "mvi::run::different_data"


def test_integer_data_stays_integer_in_arviz():
    model = mvi.Model(
        """
        data { X: matrix[N, 2]; y: ints[N] }
        param { a: real; b: vector[2] }
        model {
          a ~ normal(0, 2)
          b ~ normal(0, 1)
          y ~ bernoulli_logit(a + X * b)
        }
        infer { method = laplace; seed = 1 }
        """
    )
    rng = np.random.default_rng(0)
    data = {"X": rng.normal(size=(40, 2)), "y": (rng.random(40) < 0.5).astype(int)}
    fit = model.fit(data=data, predictive=True, loo=True)
    assert fit.observed_data["y"].dtype == np.int64
    np.testing.assert_array_equal(fit.observed_data["y"], data["y"])
    tree = fit.to_arviz()
    assert tree.posterior_predictive["y"].dtype == np.int64
    assert tree.log_likelihood["y"].shape == (1, 1000, 40)
    assert fit.loo()["n_obs"] == 40


def test_loo_of_a_whole_vector_term_raises_its_diagnostic():
    model = mvi.Model(
        """
        data { N: int; y: vector[N] }
        param { mu: vector[N] }
        model {
          mu ~ normal(0, 1)
          y ~ multi_normal(mu, diag_matrix(rep_vector(1.0, N)))
        }
        infer { method = laplace; seed = 1 }
        """
    )
    fit = model.fit(data={"N": 3, "y": np.array([0.1, 0.2, 0.3])}, loo=True)
    assert fit.log_lik["y"].shape == (1000, 1)
    with pytest.raises(mvi.ModelError, match="one term for all of it") as err:
        fit.loo()
    assert (err.value.code, err.value.line) == ("mvi::run::loo_not_pointwise", 6)
    assert fit.to_arviz().log_likelihood["y"].dims == ("chain", "draw", "y_obs")
