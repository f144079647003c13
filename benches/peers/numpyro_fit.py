#!/usr/bin/env python3
"""NumPyro side of mvi's speed and accuracy comparisons (issues 4 and 7).

  benches/peers/setup.sh                                   # once: .venv-peers/ with pinned NumPyro
  PY=benches/peers/.venv-peers/bin/python
  $PY benches/peers/numpyro_fit.py --problem banana_rbf --method laplace       # one fit, JSON on stdout
  $PY benches/peers/numpyro_fit.py --problem all --method all --json out.json  # every pair, fresh process each

Problems (the same models and data as the mvi side, hyperparameters fixed at the mvi
models' initial values, so run mvi with `--set learn_hyper=false` to compare like with like):

  banana_rbf     examples/logistic_rbf_banana.mvi on examples/data/logistic_rbf_banana.json:
                 N = 400, RBF features with the 30 centres of the file, r = 1, plus a bias
                 column last (D = 31); w ~ N(0, 1/alpha), alpha = 1; Bernoulli-logit.
  logistic_synth synthetic logistic regression N = 1000, D = 20 (X standard normal,
                 w_true ~ N(0, 1), seed 20261121; 1000 test rows); w ~ N(0, 1). The data are
                 written to benches/peers/out/data/logistic_synth.json (Stan JSON) for the
                 mvi side, whose model is benches/peers/models/logistic.mvi.
  softmax_iris   examples/softmax_iris.mvi on examples/data/softmax_iris.json: inputs
                 standardised with the training means/sds (sd with n − 1), W (4 × 3) and
                 b (3) ~ N(0, 1), categorical logits Xs W + 1 bᵀ (D = 15).
  cauchy_rbf     examples/cauchy_rbf.mvi on examples/data/cauchy_rbf.json: 15 RBFs r = 1.5
                 plus the bias, w ~ N(0, 1), y ~ Cauchy(Phi w, gamma = 0.1) (D = 16).

Methods: laplace = AutoLaplaceApproximation (MAP by BFGS, gtol 1e-8, restarted from where it
stopped until ‖∇‖∞ < 1e-5, since jax's BFGS line search often stops early; then jax.hessian);
lowrank = AutoLowRankMultivariateNormal (rank --rank, NumPyro's default round(sqrt(D)) if not
given); diag = AutoDiagonalNormal. The VI guides are fitted by SVI with Trace_ELBO
(--particles per step), Adam with a step size decaying exponentially from --lr to --lr/100
over --steps steps, from loc 0 and init_scale 0.1. Everything is float64 on the CPU.

Timing (wall clock, time.perf_counter):
  cold_s     model and guide set-up, svi.init and the first fit, JIT compilation included;
  warm_s     the same compiled fit again from the same initial state;
  process_s  (only with --problem all or --method all) the whole child process, from
             interpreter start to the result, as measured by the parent: the figure to set
             against the whole `mvi run` process.
Evaluation (ELBO, LPD) is not timed in.

Reported per fit: elbo_fresh ± elbo_se = mean ± se of log p(y, w) − log q(w) over --S fresh
draws from q (all constants included, so comparable with mvi's fresh-draw ELBO); the test
LPD of the MVI paper's eq. 13, log (1/S) Σ_s exp(Σ_n log p(y_n | w_s)), and the pointwise
lppd Σ_n log (1/S) Σ_s p(y_n | w_s), each also per test point; error rate (classifiers,
from the draw-averaged probabilities) or MSE (of the draw-averaged mean, Cauchy); q's mean.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

T_START = time.perf_counter()

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE_DATA = os.path.join(ROOT, "examples", "data")
OUT = os.path.join(HERE, "out")
PROBLEMS = ["banana_rbf", "logistic_synth", "softmax_iris", "cauchy_rbf"]
METHODS = ["laplace", "lowrank", "diag"]
SYNTH_SEED = 20261121


# ------------------------------------------------------------------------------ data
def rbf_features(X, C, r):
    """Gaussian RBFs exp(-|x_n - c_m|^2 / (2 r^2)) with a bias column of ones LAST (stdlib/rbf.mvi)."""
    d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    return np.hstack([np.exp(-d2 / (2 * r * r)), np.ones((X.shape[0], 1))])


def standardize_like(X, ref):
    """Columns of X standardised with the means and sds (ddof 1) of ref; constant columns centred only."""
    m, s = ref.mean(0), ref.std(0, ddof=1)
    return (X - m) / np.where(s > 1e-12, s, 1.0)


def make_logistic_synth(path):
    """Synthetic logistic regression, N = 1000 train + 1000 test, D = 20; writes Stan JSON."""
    rng = np.random.default_rng(SYNTH_SEED)
    n, d = 1000, 20
    w = rng.standard_normal(d)
    X, Xt = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w))).astype(int)
    yt = (rng.uniform(size=n) < 1 / (1 + np.exp(-Xt @ w))).astype(int)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"X": X.tolist(), "y": y.tolist(), "X_test": Xt.tolist(), "y_test": yt.tolist()}, f)
    return X, y, Xt, yt


def load_json(name):
    with open(os.path.join(EXAMPLE_DATA, name)) as f:
        return {k: np.asarray(v) for k, v in json.load(f).items()}


def load_problem(name):
    """Returns (kind, Phi, y, Phi_test, y_test, shape of the weights, prior sd, extra)."""
    if name == "banana_rbf":
        d = load_json("logistic_rbf_banana.json")
        return ("logistic", rbf_features(d["X"], d["C"], 1.0), d["y"],
                rbf_features(d["X_test"], d["C"], 1.0), d["y_test"], (d["C"].shape[0] + 1,), 1.0, {})
    if name == "logistic_synth":
        X, y, Xt, yt = make_logistic_synth(os.path.join(OUT, "data", "logistic_synth.json"))
        return ("logistic", X, y, Xt, yt, (X.shape[1],), 1.0, {})
    if name == "softmax_iris":
        d = load_json("softmax_iris.json")
        K = int(d["K"])
        add1 = lambda A: np.hstack([A, np.ones((A.shape[0], 1))])  # noqa: E731  the b row of W
        return ("softmax", add1(standardize_like(d["X"], d["X"])), d["y"] - 1,
                add1(standardize_like(d["X_test"], d["X"])), d["y_test"] - 1,
                (d["X"].shape[1] + 1, K), 1.0, {})
    if name == "cauchy_rbf":
        d = load_json("cauchy_rbf.json")
        r, gamma = float(d["r"]), float(d["gamma"])
        return ("cauchy", rbf_features(d["X"], d["C"], r), d["y"], rbf_features(d["X_test"], d["C"], r),
                d["y_test"], (d["C"].shape[0] + 1,), 1.0, {"gamma": gamma})
    raise ValueError(name)


# ------------------------------------------------------------------------------ one fit
def fit_one(problem, method, a):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO, autoguide, init_to_value

    t_imported = time.perf_counter()
    kind, Phi, y, Phit, yt, shape, prior_sd, extra = load_problem(problem)
    X, Y = jnp.asarray(Phi), jnp.asarray(y)
    Xt, Yt = jnp.asarray(Phit), jnp.asarray(yt)
    P = int(np.prod(shape))

    def lik(f):
        if kind == "logistic":
            return dist.Bernoulli(logits=f)
        if kind == "softmax":
            return dist.Categorical(logits=f)
        return dist.Cauchy(f, extra["gamma"])

    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, prior_sd).expand(shape).to_event(len(shape)))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("y", lik(X @ w), obs=y)

    def log_joint(wflat):  # exact log p(y, w), all constants included
        w = wflat.reshape(shape)
        return dist.Normal(0.0, prior_sd).log_prob(w).sum() + lik(X @ w).log_prob(Y).sum()

    def pointwise_test(wflat):  # log p(y_n | w) for each test point
        return lik(Xt @ wflat.reshape(shape)).log_prob(Yt)

    t0 = time.perf_counter()
    init = init_to_value(values={"w": jnp.zeros(shape)})
    info = {}
    if method == "laplace":
        guide = autoguide.AutoLaplaceApproximation(model, init_loc_fn=init)
        svi = SVI(model, guide, numpyro.optim.Minimize(method="BFGS", options=dict(gtol=1e-8, maxiter=1000)),
                  Trace_ELBO())

        @jax.jit
        def bfgs(state):
            state, _ = svi.update(state, X, Y)
            loc = svi.get_params(state)["auto_loc"]
            grad = jax.grad(lambda z: -log_joint(z))(loc)
            return state, jnp.max(jnp.abs(grad))

        @jax.jit
        def posterior(state):
            q = guide.get_posterior(svi.get_params(state))  # Hessian of −log joint at the MAP
            return q.loc, q.scale_tril

        def run(state):
            # jax's BFGS line search often stops after a step or two from w = 0 (status 3), so
            # restart it from where it stopped until the gradient is small, as a user would.
            state, gmax = bfgs(state)
            restarts = 0
            while float(gmax) >= 1e-5 and restarts < 20:
                state, gmax = bfgs(state)
                restarts += 1
            info.update(restarts=restarts, grad_inf_norm=float(gmax), converged=bool(float(gmax) < 1e-5))
            return posterior(state)

        def to_q(out):
            return dist.MultivariateNormal(out[0], scale_tril=out[1])

        info["optimizer"] = "numpyro.optim.Minimize(BFGS, gtol=1e-8, maxiter=1000), restarted while |grad|_inf >= 1e-5"
    else:
        Guide = autoguide.AutoLowRankMultivariateNormal if method == "lowrank" else autoguide.AutoDiagonalNormal
        kw = {"rank": a.rank} if (method == "lowrank" and a.rank) else {}
        guide = Guide(model, init_loc_fn=init, init_scale=0.1, **kw)
        steps, lr = a.steps, a.lr
        opt = numpyro.optim.Adam(lambda i: lr * 0.01 ** (i / steps))
        svi = SVI(model, guide, opt, Trace_ELBO(num_particles=a.particles))

        @jax.jit
        def run(state):
            state, losses = jax.lax.scan(lambda s, _: svi.update(s, X, Y), state, None, length=steps)
            params = svi.get_params(state)
            q = guide.get_posterior(params)
            if method == "diag":
                return q.loc, q.scale, losses
            return q.loc, q.cov_factor, q.cov_diag, losses

        def to_q(out):
            if method == "diag":
                return dist.Normal(out[0], out[1]).to_event(1)
            return dist.LowRankMultivariateNormal(out[0], out[1], out[2])

        info.update(steps=steps, lr=lr, particles=a.particles,
                    rank=(getattr(guide, "rank", None) or round(math.sqrt(P))) if method == "lowrank" else None)

    state0 = svi.init(jax.random.PRNGKey(a.seed), X, Y)
    out = jax.block_until_ready(run(state0))
    cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    out = jax.block_until_ready(run(state0))
    warm = time.perf_counter() - t1
    q = to_q(out)
    if method != "laplace":
        losses = np.asarray(out[-1])
        m = max(len(losses) // 10, 1)
        info["loss_last10pct"] = float(losses[-m:].mean())
        info["loss_prev10pct"] = float(losses[-2 * m:-m].mean())

    # Evaluation: fresh draws from q.
    W = q.sample(jax.random.PRNGKey(a.seed + 1), (a.S,))
    lj = jax.jit(jax.vmap(log_joint))(W)
    lq = q.log_prob(W)
    e = np.asarray(lj - lq)
    ll = np.asarray(jax.jit(jax.vmap(pointwise_test))(W))  # S × T
    S = ll.shape[0]
    lpd_joint = float(logsumexp(ll.sum(1)) - math.log(S))
    lppd_points = np.asarray(logsumexp(ll, axis=0) - math.log(S))
    res = {
        "problem": problem, "method": method, "tool": "numpyro " + numpyro.__version__,
        "jax": jax.__version__, "D": P, "N": int(Phi.shape[0]), "N_test": int(Phit.shape[0]),
        "cold_s": cold, "warm_s": warm, "import_s": t_imported - T_START,
        "elbo_fresh": float(e.mean()), "elbo_se": float(e.std(ddof=1) / math.sqrt(len(e))), "S": int(S),
        "test": {"lpd_eq13": lpd_joint, "lpd_eq13_per_point": lpd_joint / ll.shape[1],
                 "lppd": float(lppd_points.sum()), "lppd_per_point": float(lppd_points.mean())},
        "mean": np.asarray(q.mean).reshape(-1).tolist(),
        "settings": info, "seed": a.seed,
    }
    Wn = np.asarray(W)
    if kind == "logistic":
        p = (1 / (1 + np.exp(-(Wn @ Phit.T)))).mean(0)
        res["test"]["error_rate"] = float(np.mean((p > 0.5).astype(int) != yt))
    elif kind == "softmax":
        f = np.einsum("td,sdk->stk", Phit, Wn.reshape((S,) + shape))
        pr = np.exp(f - f.max(-1, keepdims=True))
        pr = (pr / pr.sum(-1, keepdims=True)).mean(0)
        res["test"]["error_rate"] = float(np.mean(pr.argmax(-1) != yt))
    else:
        res["test"]["mse"] = float(np.mean(((Wn @ Phit.T).mean(0) - yt) ** 2))
    return res


# ------------------------------------------------------------------------------ driver
def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", default="all", choices=PROBLEMS + ["all"])
    p.add_argument("--method", default="all", choices=METHODS + ["all"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=10000, help="SVI steps (lowrank, diag)")
    p.add_argument("--lr", type=float, default=0.01, help="initial Adam step size (decays to lr/100)")
    p.add_argument("--particles", type=int, default=4, help="Trace_ELBO particles per step")
    p.add_argument("--rank", type=int, help="lowrank rank (default NumPyro's round(sqrt(D)))")
    p.add_argument("--S", type=int, default=10000, help="fresh draws for the ELBO and test LPD")
    p.add_argument("--json", help="also write the results (a list) to this file")
    a = p.parse_args()

    pairs = [(pr, m) for pr in (PROBLEMS if a.problem == "all" else [a.problem])
             for m in (METHODS if a.method == "all" else [a.method])]
    results = []
    if len(pairs) == 1:
        results.append(fit_one(pairs[0][0], pairs[0][1], a))
    else:  # each pair in a fresh process, so that every cold time is really cold
        passthrough = ["--seed", str(a.seed), "--steps", str(a.steps), "--lr", str(a.lr),
                       "--particles", str(a.particles), "--S", str(a.S)] + (["--rank", str(a.rank)] if a.rank else [])
        for pr, m in pairs:
            t = time.perf_counter()
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--problem", pr, "--method", m]
                                  + passthrough, capture_output=True, text=True)
            wall = time.perf_counter() - t
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                results.append({"problem": pr, "method": m, "error": done.stderr.strip().splitlines()[-1:]})
                continue
            r = json.loads(done.stdout)[0]
            r["process_s"] = wall
            results.append(r)
            print(f"{pr:15s} {m:8s} D={r['D']:3d} cold {r['cold_s']:7.3f}s warm {r['warm_s']:7.3f}s "
                  f"process {wall:6.2f}s  ELBO {r['elbo_fresh']:10.3f} ± {r['elbo_se']:.3f}  "
                  f"test LPD/pt {r['test']['lpd_eq13_per_point']:.4f}", file=sys.stderr)
    text = json.dumps(results, indent=1)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
