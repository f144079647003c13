#!/usr/bin/env python3
"""Posterior predictive replicates of `mvi run --predictive` against NumPyro's `Predictive`
on the same posterior draws, for three likelihood families.

  cargo build --release
  python3 -m venv target/np-venv && target/np-venv/bin/pip install numpyro jax
  target/np-venv/bin/python benches/predictive_vs_numpyro.py

For each model (normal: examples/linear_regression.mvi; negative binomial:
examples/negbin_regression.mvi; Bernoulli: benches/predictive/logistic.mvi) this runs

  mvi run MODEL --data DATA --method laplace --predictive --set draws=4000 --output-dir TMP

reads the parameter draws and y_rep from draws.csv, hands the same parameter draws to
NumPyro's `Predictive` on the model written in NumPyro, and compares every y_rep element's
mean and sd: z = (mean_mvi − mean_numpyro) / √(var_mvi/S + var_numpyro/S), and the sd
ratio against its Monte Carlo error. Prints the largest |z| and how many elements are
beyond 3 (about 0.3 % by chance).
"""

import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
S = 4000


def mvi_draws(model, data):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(ROOT / "target/release/mvi"), "run", str(model), "--data", str(data), "--method", "laplace",
               "--predictive", "--set", f"draws={S}", "--output-dir", tmp, "-q"]
        subprocess.run(cmd, check=True, capture_output=True)
        lines = [l for l in open(pathlib.Path(tmp) / "draws.csv") if not l.startswith("#")]
    names = lines[0].strip().split(",")
    values = np.array([[float(v) for v in l.split(",")] for l in lines[1:]])
    return {n: values[:, i] for i, n in enumerate(names)}


def block(cols, name, n):
    return np.stack([cols[f"{name}.{i}"] for i in range(1, n + 1)], axis=1)


def compare(label, y_mvi, y_np):
    m1, m2 = y_mvi.mean(0), y_np.mean(0)
    v1, v2 = y_mvi.var(0, ddof=1), y_np.var(0, ddof=1)
    z = (m1 - m2) / np.sqrt(v1 / S + v2 / S)
    # sd ratio: the sd of a sample sd is about sd·√((κ − 1)/(4S)), κ the kurtosis; use the
    # two samples' spread of log sd by batches instead (20 batches)
    def log_sd_batches(y):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.array([np.log(b.std(0, ddof=1)) for b in np.array_split(y, 20)])
    b1, b2 = log_sd_batches(y_mvi), log_sd_batches(y_np)
    se = np.sqrt(b1.var(0, ddof=1) / 20 + b2.var(0, ddof=1) / 20)
    ok = (v1 > 0) & (v2 > 0) & np.isfinite(se) & (se > 0)
    zsd = (np.log(np.sqrt(v1[ok])) - np.log(np.sqrt(v2[ok]))) / np.where(se[ok] > 0, se[ok], 1)
    print(f"{label:26} n={y_mvi.shape[1]:4d}  mean: max|z| {np.abs(z).max():.2f}, beyond 3: {int((np.abs(z) > 3).sum())}"
          f"   sd: max|z| {np.abs(zsd).max():.2f}, beyond 3: {int((np.abs(zsd) > 3).sum())}")


def main():
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import Predictive

    key = jax.random.PRNGKey(0)
    # normal
    d = json.load(open(ROOT / "examples/data/linear_regression.json"))
    X, y = np.array(d["X"]), np.array(d["y"])
    c = mvi_draws(ROOT / "examples/linear_regression.mvi", ROOT / "examples/data/linear_regression.json")
    w = block(c, "w", X.shape[1])

    def normal_model(X, sigma):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]))
        numpyro.sample("y", dist.Normal(X @ w, sigma))

    pred = Predictive(normal_model, posterior_samples={"w": jnp.array(w)})(key, jnp.array(X), d["sigma"])
    compare("normal (linear_regression)", block(c, "y_rep", len(y)), np.array(pred["y"]))

    # negative binomial
    d = json.load(open(ROOT / "examples/data/negbin_regression.json"))
    X, y = np.array(d["X"]), np.array(d["y"])
    c = mvi_draws(ROOT / "examples/negbin_regression.mvi", ROOT / "examples/data/negbin_regression.json")

    def negbin_model(X):
        a = numpyro.sample("a", dist.Normal(0, 2.5))
        b = numpyro.sample("b", dist.Normal(0, 1).expand([X.shape[1]]))
        phi = numpyro.sample("phi", dist.Gamma(2, 0.1))
        numpyro.sample("y", dist.NegativeBinomial2(jnp.exp(a + X @ b), phi))

    samples = {"a": jnp.array(c["a"]), "b": jnp.array(block(c, "b", X.shape[1])), "phi": jnp.array(c["phi"])}
    pred = Predictive(negbin_model, posterior_samples=samples)(key, jnp.array(X))
    compare("neg_binomial_2_log", block(c, "y_rep", len(y)), np.array(pred["y"]))

    # Bernoulli
    d = json.load(open(ROOT / "examples/data/linear_regression.json"))
    X = np.array(d["X"])
    z = (np.array(d["y"]) > 0).astype(int)
    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(tmp) / "logistic.json"
        data.write_text(json.dumps({"X": X.tolist(), "z": z.tolist()}))
        c = mvi_draws(ROOT / "benches/predictive/logistic.mvi", data)

    def bern_model(X):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]))
        numpyro.sample("z", dist.BernoulliLogits(X @ w))

    pred = Predictive(bern_model, posterior_samples={"w": jnp.array(block(c, "w", X.shape[1]))})(key, jnp.array(X))
    compare("bernoulli_logit", block(c, "z_rep", len(z)), np.array(pred["z"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
