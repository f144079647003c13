"""The Python package against the CLI: same numbers bit for bit, errors, shapes, ArviZ,
threads and Ctrl-C."""

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pandas as pd
import pytest

import mvi
from conftest import EXAMPLES, example_data

BANANA = EXAMPLES / "logistic_rbf_banana.mvi"
SCHOOLS = EXAMPLES / "eight_schools.mvi"

# Keys of fit.json that name the run's inputs or time it rather than give its results.
NOT_RESULTS = {"wall_time_s", "model", "data_files"}

# A small model with a scalar, a vector and a matrix parameter and a reported `let`.
SHAPES = textwrap.dedent(
    """
    data {
      N: int
      y: vector[N]
    }
    param {
      mu: real
      v: vector[3]
      W: matrix[2, 3]
      s: real<lower=0>
    }
    let m = mu + 1
    model {
      mu ~ normal(0, 1)
      v ~ normal(0, 1)
      W ~ normal(0, 1)
      s ~ half_normal(1)
      y ~ normal(mu, s)
    }
    infer { method = vi_diag; samples = 50; seed = 2; draws = 40 }
    """
)


def run_cli(cli, model, data_file, out, *args):
    subprocess.run(
        [str(cli), "run", str(model), "--data", str(data_file), "--quiet", "--output-dir", str(out), *args],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with open(out / "fit.json", encoding="utf-8") as f:
        fit_json = json.load(f)
    with open(out / "draws.csv", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    return fit_json, rows[0], np.array([[float(x) for x in r] for r in rows[1:]])


def results(fit_json):
    return {k: v for k, v in fit_json.items() if k not in NOT_RESULTS}


@pytest.mark.parametrize(
    "model, data, method, options, sets",
    [
        (
            BANANA,
            "logistic_rbf_banana",
            "mvi_lr",
            {"samples": 100, "draws": 200, "test_draws": 500, "learn_hyper": False},
            ["samples=100", "draws=200", "test_draws=500", "learn_hyper=false"],
        ),
        (SCHOOLS, "eight_schools", "laplace", {"draws": 300}, ["draws=300"]),
        (SCHOOLS, "eight_schools", None, {"samples": 100, "seed": 7}, ["samples=100", "seed=7"]),
    ],
)
def test_fit_equals_cli_fit_json_bit_for_bit(cli, tmp_path, model, data, method, options, sets):
    args = [a for s in sets for a in ("--set", s)] + (["--method", method] if method else [])
    cli_json, header, cli_draws = run_cli(cli, model, EXAMPLES / "data" / f"{data}.json", tmp_path, *args)
    fit = mvi.Model.from_file(model).fit(data=example_data(data), method=method, **options)
    # every number of fit.json, compared exactly (JSON numbers round-trip through float)
    assert results(json.loads(fit.to_json())) == results(cli_json)
    assert fit.elbo == (cli_json["elbo_fresh"] or {}).get("value")
    assert fit.log_evidence == cli_json["log_evidence"]
    assert fit.khat == cli_json["khat"]
    assert fit.theta == cli_json["theta"]
    assert fit.predict == cli_json["predict"]
    # the draws, against draws.csv (written in shortest round-trip form)
    assert np.array_equal(fit.lp, cli_draws[:, 0])
    for j, column in enumerate(header[3:], start=3):
        name, *index = column.split(".")
        value = fit.draws[name][(slice(None), *[int(i) - 1 for i in index])]
        assert np.array_equal(value, cli_draws[:, j]), column
    # the summary table is the CLI's
    table = fit.summary()
    for column in header[3:]:
        p = cli_json["parameters"][column]
        assert list(table.loc[column]) == [p["mean"], p["sd"], p["q5"], p["q50"], p["q95"]]


def test_draws_have_the_declared_shapes_draws_first():
    fit = mvi.Model(SHAPES).fit(data={"N": 3, "y": [0.1, -0.3, 0.5]})
    assert fit.draws["mu"].shape == (40,)
    assert fit.draws["v"].shape == (40, 3)
    assert fit.draws["W"].shape == (40, 2, 3)
    assert fit.draws["s"].shape == (40,)
    assert fit.draws["m"].shape == (40,)
    assert (fit.draws["s"] > 0).all()
    assert np.array_equal(fit.draws["m"], fit.draws["mu"] + 1)
    assert fit.params == ["mu", "v", "W", "s"]
    # the matrix is indexed as declared: W.2.1 is row 2, column 1
    table = fit.summary()
    assert table.loc["W.2.1", "mean"] == pytest.approx(fit.draws["W"][:, 1, 0].mean(), rel=1e-12)
    assert table.loc["W.1.3", "mean"] == pytest.approx(fit.draws["W"][:, 0, 2].mean(), rel=1e-12)
    assert list(table.columns) == ["mean", "sd", "5%", "50%", "95%"]
    assert len(fit.lp) == 40 and len(fit.log_q) == 40


def test_numpy_pandas_and_lists_give_the_same_fit():
    raw = example_data("logistic_rbf_banana")
    model = mvi.Model.from_file(BANANA)
    base = model.fit(data=raw, method="laplace", draws=50, test_draws=100, learn_hyper=False)
    frame = pd.DataFrame(raw["X"], columns=["a", "b"])
    forms = {
        "X": frame,
        "y": pd.Series(raw["y"], dtype="int64"),
        "C": np.array(raw["C"]),
        "X_test": np.asfortranarray(raw["X_test"]),
        "y_test": np.array(raw["y_test"], dtype=bool),
    }
    other = model.fit(data=forms, method="laplace", draws=50, test_draws=100, learn_hyper=False)
    assert results(json.loads(other.to_json())) == results(json.loads(base.to_json()))


def test_check_returns_the_layout():
    layout = mvi.Model.from_file(BANANA).check(example_data("logistic_rbf_banana"))
    assert layout["dim"] == 31
    assert layout["sizes"] == {"N": 400, "Q": 2, "M": 30, "T": 1000}
    assert layout["params"][0]["name"] == "w" and layout["params"][0]["slice"] == (1, 31)
    assert [h["name"] for h in layout["hypers"]] == ["alpha", "r"]
    assert layout["hypers"][0]["lower"] == 0 and layout["hypers"][0]["init"] == [1.0]
    assert layout["method"] == "mvi_lr" and layout["options"]["rank"] == "1"
    assert layout["report"].startswith("model ")


def test_syntax_error_raises_model_error_with_place():
    with pytest.raises(mvi.ModelError) as e:
        mvi.Model("param {\n  mu: real\n}\nmodel {\n  mu ~ normal(0, \n}\n")
    err = e.value
    assert err.code.startswith("mvi::syntax")
    assert (err.line, err.column) == (6, 1)
    assert "help" in str(err).lower() or "expected" in str(err)


def test_unknown_name_raises_model_error_with_help():
    model = mvi.Model("param { mu: real }\nmodel {\n  mu ~ normal(0, sigma)\n}\n")
    with pytest.raises(mvi.ModelError) as e:
        model.fit()
    assert e.value.code == "mvi::check::unknown_name"
    assert e.value.line == 3
    assert "sigma" in str(e.value)


def test_bad_data_shape_is_checked_as_json_is():
    data = example_data("eight_schools")
    data["sigma"] = data["sigma"][:5]
    with pytest.raises(mvi.ModelError) as e:
        mvi.Model.from_file(SCHOOLS).fit(data=data)
    assert e.value.code.startswith("mvi::data")
    assert e.value.file == "<data>"
    assert "sigma" in str(e.value)
    # a ragged list and a missing entry are diagnostics too, never a crash
    with pytest.raises(mvi.ModelError):
        mvi.Model.from_file(BANANA).check({**example_data("logistic_rbf_banana"), "X": [[1.0, 2.0], [3.0]]})
    with pytest.raises(mvi.ModelError):
        mvi.Model.from_file(SCHOOLS).fit(data={"J": 8})
    with pytest.raises(TypeError):
        mvi.Model.from_file(SCHOOLS).fit(data={"J": "eight"})


def test_bad_options_raise_model_error():
    model = mvi.Model.from_file(SCHOOLS)
    with pytest.raises(mvi.ModelError) as e:
        model.fit(data=example_data("eight_schools"), method="mvi_xx")
    assert "mvi_lr" in str(e.value) or "did you mean" in str(e.value)
    with pytest.raises(mvi.ModelError):
        model.fit(data=example_data("eight_schools"), samples=-3)
    with pytest.raises(mvi.ModelError):
        model.fit(data=example_data("eight_schools"), no_such_key=1)


def test_to_arviz_round_trips():
    fit = mvi.Model(SHAPES).fit(data={"N": 3, "y": [0.1, -0.3, 0.5]})
    tree = fit.to_arviz()
    post = tree["posterior"]
    for name, arr in fit.draws.items():
        assert post[name].shape == (1, *arr.shape)
        assert np.array_equal(post[name].values[0], arr)
    assert post["W"].dims == ("chain", "draw", "W_dim_0", "W_dim_1")
    stats = tree["sample_stats"]
    assert np.array_equal(stats["lp"].values[0], fit.lp)
    assert np.array_equal(stats["log_q"].values[0], fit.log_q)
    assert post.attrs["method"] == tree.attrs["method"] == "vi_diag"
    assert post.attrs["elbo"] == fit.elbo
    assert json.loads(post.attrs["options"])["samples"] == "50"
    # the tree converts to plain xarray data and back without loss
    import xarray as xr

    ds = post.to_dataset()
    again = xr.DataTree(ds)
    assert np.array_equal(again["W"].values[0], fit.draws["W"])


def test_compare_returns_the_cli_table(cli):
    args = ["--methods", "laplace,vi_diag", "--set", "samples=100", "--json", "--quiet"]
    out = subprocess.run(
        [str(cli), "compare", str(SCHOOLS), "--data", str(EXAMPLES / "data" / "eight_schools.json"), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = {m["method"]: m for m in json.loads(out)["methods"]}
    frame = mvi.compare(
        mvi.Model.from_file(SCHOOLS), example_data("eight_schools"), methods=["laplace", "vi_diag"], samples=100
    )
    assert list(frame.index) == ["laplace", "vi_diag"]
    for method, row in frame.iterrows():
        e = expected[method]
        assert row["elbo"] == e["elbo_fresh"]["value"] and row["elbo_se"] == e["elbo_fresh"]["se"]
        assert row["khat"] == e["khat"]
        assert row["iterations"] == e["iterations"]
    assert frame.loc["laplace", "log_evidence"] == expected["laplace"]["log_evidence"]
    assert "laplace" in frame.attrs["table"]


def test_two_fits_in_threads_match_fits_in_turn_and_release_the_gil():
    model = mvi.Model.from_file(BANANA)
    data = example_data("logistic_rbf_banana")
    cheap = {"method": "mvi_lr", "samples": 100, "draws": 100, "test_draws": 200, "learn_hyper": False}
    alone = [model.fit(data=data, seed=s, **cheap) for s in (1, 2)]
    out = [None, None]

    def work(i):
        out[i] = model.fit(data=data, seed=i + 1, **cheap)

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    # the main thread keeps running Python while the fits run
    spins = 0
    while any(t.is_alive() for t in threads):
        spins += 1
    elapsed = time.perf_counter() - start
    for t in threads:
        t.join()
    for a, b in zip(alone, out):
        assert results(json.loads(a.to_json())) == results(json.loads(b.to_json()))
    assert elapsed > 0.05
    assert spins > 1000, f"the main thread ran {spins} loops in {elapsed:.2f} s: the fits held the GIL"


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import mvi
    model = mvi.Model.from_file(sys.argv[1])
    data = json.load(open(sys.argv[2]))
    print("fitting", flush=True)
    t = time.perf_counter()
    try:
        model.fit(data=data, method="vi_full", samples=2000, max_iters=100000, tol=1e-300, test_draws=100)
    except KeyboardInterrupt:
        print(f"interrupted {time.perf_counter() - t:.3f}", flush=True)
        sys.exit(0)
    print("finished", flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_raises_keyboard_interrupt_promptly(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(CTRL_C_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(BANANA), str(EXAMPLES / "data" / "logistic_rbf_banana.json")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "fitting"
    time.sleep(1.5)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    waited = time.perf_counter() - sent
    assert proc.returncode == 0, out
    assert out.startswith("interrupted"), out
    # stopped at the next iteration (plus the report of the partial fit), not at the end
    assert waited < 5, f"{waited:.1f} s from SIGINT to KeyboardInterrupt"
    print(f"SIGINT to KeyboardInterrupt: {waited:.2f} s ({out.strip()})")


def test_python_module_version_matches_the_library():
    assert mvi.__version__ == json.loads(mvi.Model(SHAPES).fit(data={"N": 1, "y": [0.0]}).to_json())["mvi_version"]


def test_model_from_file_of_a_missing_file_raises_model_error(tmp_path):
    with pytest.raises(mvi.ModelError) as e:
        mvi.Model.from_file(tmp_path / "missing.mvi")
    # the attributes every ModelError has (a handler reading `err.code` must not fail)
    assert e.value.code == "mvi::check::unreadable_model"
    assert (e.value.line, e.value.column) == (None, None)
    assert e.value.file == str(tmp_path / "missing.mvi")
    assert "missing.mvi" in str(e.value) and "help:" in str(e.value)
    assert os.path.exists(BANANA)


def test_to_arviz_keeps_the_chains_of_a_nuts_fit():
    model = mvi.Model(
        "param { a: real\n b: real }\nmodel { a ~ normal(0, 1)\n b ~ normal(a, 1) }\n"
        "infer { method = nuts; chains = 3; draws = 60; warmup = 40; seed = 3 }\n"
    )
    fit = model.fit()
    mcmc = json.loads(fit.to_json())["mcmc"]
    assert mcmc["draws_per_chain"] == [60, 60, 60]
    tree = fit.to_arviz()
    post = tree["posterior"]
    # draws are chain 1's, then chain 2's, ...: one ArviZ chain per sampler chain
    assert post["a"].dims == ("chain", "draw") and post["a"].shape == (3, 60)
    assert np.array_equal(post["b"].values.reshape(-1), fit.draws["b"])
    assert np.array_equal(tree["sample_stats"]["lp"].values.reshape(-1), fit.lp)
    # so ArviZ's R-hat is defined (it is NaN for a single chain) and is the fit's own
    from arviz_stats import rhat

    r = rhat(tree)
    for name in ("a", "b"):
        assert float(r[name]) == pytest.approx(mcmc["convergence"][name]["rhat"], rel=1e-6)


def test_to_arviz_has_the_nuts_sampler_stats_of_draws_csv(cli, tmp_path):
    source = (
        "param { a: real\n b: real<lower=0> }\nmodel { a ~ normal(0, 1)\n b ~ exponential(1) }\n"
        "infer { method = nuts; chains = 2; draws = 50; warmup = 50; seed = 4 }\n"
    )
    fit = mvi.Model(source).fit()
    stats = fit.sampler_stats
    assert set(stats) == {"acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"}
    assert stats["diverging"].dtype == bool and stats["tree_depth"].dtype == np.int64
    # the same numbers as the CLI's draws.csv for the same model and seed
    (tmp_path / "m.mvi").write_text(source)
    out = tmp_path / "out"
    subprocess.run([str(cli), "run", str(tmp_path / "m.mvi"), "--quiet", "--output-dir", str(out)], check=True)
    rows = [r for r in (out / "draws.csv").read_text().splitlines() if not r.startswith("#")]
    header, body = rows[0].split(","), [[float(x) for x in r.split(",")] for r in rows[1:]]
    column = {name: np.array([r[header.index(name)] for r in body]) for name in header}
    assert np.array_equal(stats["acceptance_rate"], column["accept_stat__"])
    assert np.array_equal(stats["n_steps"], column["n_leapfrog__"].astype(np.int64))
    assert np.array_equal(stats["diverging"], column["divergent__"] == 1)
    tree = fit.to_arviz()
    assert tree["sample_stats"]["diverging"].shape == (2, 50)
    assert np.array_equal(tree["sample_stats"]["energy"].values.reshape(-1), stats["energy"])
    # the other methods have none
    assert mvi.Model(source).fit(method="laplace").sampler_stats == {}


def test_from_file_reads_a_stan_program(tmp_path):
    """A `.stan` file is translated and fitted; a syntax error in it is a ModelError."""
    root = EXAMPLES.parent
    stan = root / "tests" / "stan" / "kidiq-kidscore_momiq.stan"
    with open(root / "benches" / "posteriordb" / "kidiq-kidscore_momiq" / "data.json") as f:
        data = json.load(f)
    fit = mvi.Model.from_file(stan).fit(data=data, method="laplace")
    summary = fit.summary()
    assert "beta.1" in summary.index and "sigma" in summary.index
    bad = tmp_path / "bad.stan"
    bad.write_text("parameters {\n  real mu\n}\n")
    with pytest.raises(mvi.ModelError) as e:
        mvi.Model.from_file(bad)
    assert e.value.code == "mvi::stan::syntax"
