#!/usr/bin/env python3
"""Issue 46's scale table: time, peak memory and W1 of every method on many rows.

  PY=target/peer-venv/bin/python     # numpy; the NumPyro peer needs jax, numpyro, optax
  $PY benches/scale.py --python-peer $PY --json target/scale/scale.json
  $PY benches/scale.py --quick --python-peer $PY              # a reduced grid, a few minutes

Problems: logistic regression (`make_synth.py --task logistic`, column 0 of X a bias
column, prior w ~ N(0, 1)) at N in {10^4, 10^5, 10^6} x D in {10, 100}, and a hierarchical
logistic regression, J = 1000 groups, N = 10^5, D = 10 (made here, numpy seed 0):
g[n] uniform on 1..J, a_j ~ N(mu_a, tau), y ~ bernoulli_logit(a[g] + X w), fitted with
mu_a ~ N(0, 2), tau ~ half-normal(1), w ~ N(0, 1), non-centred (a = mu_a + tau z,
z ~ N(0, 1)): the centred form's joint density has no maximum, so laplace cannot start.

Methods: our laplace, mvi_lr (batch = auto), vi_diag --set batch=1000, pathfinder and nuts
(4 x (1000 + 1000)), all at their defaults otherwise; NumPyro NUTS (4 chains x
(1000 + 1000), run one after another, NumPyro's default on the CPU) and NumPyro SVI
(AutoDiagonalNormal, Adam 0.01 decaying to 1e-4 over 5000 steps, a subsampled plate of
1000 rows). The NumPyro fits run in the `--python-peer` interpreter as
`scale.py --peer-fit SPEC`, so numpyro is imported only there.

Per fit: the fit's time (mvi: fit.json's wall_time_s, the method only; NumPyro: the fit
call, JIT compilation included), the process wall time (loading, fit, report), the
process's peak RSS (os.wait4), W1 and the fresh-draw ELBO (mvi's fit.json elbo_fresh;
NumPyro SVI: Trace_ELBO on all rows, 1000 fresh draws). Each fit has a time budget; a fit
over it is killed and shown as "> budget".

W1: the mean over coordinates of the 1-D Wasserstein-1 distance (constrained scale, as
draws.csv reports it) between 1000 of the method's draws and the reference. The reference
is a long run of our nuts (4 chains x (1000 + 2000), another seed), on N <= 10^5 only: its
chains 1-2 are the reference draws and the floor is W1 between 1000 draws picked from its
chains 3-4 and chains 1-2 (mean +- sd over 20 picks), the W1 of a perfect sampler. Where
there is no reference (N = 10^6, or the reference over its budget) W1 is to 4000 draws of
laplace's own Gaussian (fit.json's mean and covariance), marked "vs laplace", with that
Gaussian's own floor.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = ("laplace", "mvi_lr", "vi_diag", "pathfinder", "nuts")
PEERS = ("numpyro_nuts", "numpyro_svi")
APPROX = ("laplace", "mvi_lr", "vi_diag", "pathfinder")
EXTRA_SET = {"vi_diag": ["batch=1000"]}
W1_DRAWS = 1000
FLOOR_PICKS = 20

LOGISTIC_MVI = """// Logistic regression (benches/scale.py)
data {
  X: matrix[N, D]
  y: ints[N]
}
param {
  w: vector[D]
}
model {
  w ~ normal(0, 1)
  y ~ bernoulli_logit(X * w)
}
"""

HIER_MVI = """// Hierarchical logistic regression, J groups (benches/scale.py)
data {
  J: int<lower=1>
  X: matrix[N, D]
  g: ints[N]
  y: ints[N]
}
param {
  mu_a: real
  tau: real<lower=0>
  z: vector[J]                    // non-centred: the centred form has no mode (a funnel)
  w: vector[D]
}
let a = mu_a + tau * z            // group intercepts, reported with the parameters
model {
  mu_a ~ normal(0, 2)
  tau ~ half_normal(1)
  z ~ normal(0, 1)
  w ~ normal(0, 1)
  y ~ bernoulli_logit(a[g] + X * w)
}
"""


# ---------------------------------------------------------------- problems and data

def grid(quick):
    """The problems as (name, kind, N, D)."""
    if quick:
        return [("logistic N=1e4 D=10", "logistic", 10**4, 10),
                ("logistic N=1e5 D=10", "logistic", 10**5, 10)]
    out = [("logistic N=1e%d D=%d" % (len(str(n)) - 1, d), "logistic", n, d)
           for n in (10**4, 10**5, 10**6) for d in (10, 100)]
    return out + [("hierarchical J=1000 N=1e5 D=10", "hier", 10**5, 10)]


def make_logistic(args, n, d, out):
    """X.csv, y.csv from make_synth.py (kept between runs)."""
    if not os.path.exists(os.path.join(out, "y.csv")):
        subprocess.run([sys.executable, args.make_synth, "--task", "logistic", "--N", str(n),
                        "--D", str(d), "--seed", "0", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)


def make_hier(n, d, out, groups=1000):
    """X.csv, g.csv, y.csv, J.csv: a_j ~ N(0.5, 1), w ~ N(0, 0.5^2), numpy seed 0."""
    import numpy as np
    if os.path.exists(os.path.join(out, "y.csv")):
        return
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d))
    g = rng.integers(1, groups + 1, size=n)
    a = rng.normal(0.5, 1.0, size=groups)
    w = rng.normal(0.0, 0.5, size=d)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(a[g - 1] + x @ w)))).astype(int)
    np.savetxt(os.path.join(out, "X.csv"), x, delimiter=",", fmt="%.17g")
    np.savetxt(os.path.join(out, "g.csv"), g, fmt="%d")
    np.savetxt(os.path.join(out, "y.csv"), y, fmt="%d")
    with open(os.path.join(out, "J.csv"), "w") as f:
        f.write("%d\n" % groups)


def data_args(kind, ddir):
    names = ("X", "y") if kind == "logistic" else ("J", "X", "g", "y")
    out = []
    for v in names:
        out += ["--data", "%s=%s" % (v, os.path.join(ddir, v + ".csv"))]
    return out


def param_names(kind, d, groups=1000):
    """Draw columns in mvi's order (draws.csv names)."""
    w = ["w.%d" % (i + 1) for i in range(d)]
    if kind == "logistic":
        return w
    return ["mu_a", "tau"] + ["a.%d" % (j + 1) for j in range(groups)] + w


# ---------------------------------------------------------------- running with a budget

def run_budget(cmd, budget, log):
    """Run cmd; kill its process group past `budget` s. Returns status, wall s, peak RSS MB."""
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.time() - t0 > budget:
                os.killpg(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
                return {"status": "over", "wall_s": time.time() - t0, "rss_mb": ru.ru_maxrss / 1024}
            time.sleep(0.2)
    code = os.waitstatus_to_exitcode(status)
    return {"status": "ok" if code == 0 else "failed (exit %d, see %s)" % (code, log),
            "wall_s": time.time() - t0, "rss_mb": ru.ru_maxrss / 1024}


def read_draws_csv(path, names):
    import numpy as np
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    header = lines[0].strip().split(",")
    cols = [header.index(n) for n in names]
    body = np.loadtxt(lines[1:], delimiter=",", ndmin=2)
    return body[:, cols]


def run_mvi(args, prob, method, out, model, extra_set, budget):
    name, kind, n, d = prob
    os.makedirs(out, exist_ok=True)
    cmd = [args.mvi, "run", model] + data_args(kind, prob_dir(args, prob)) + [
        "--method", method, "--output-dir", out, "-q"]
    for s in extra_set:
        cmd += ["--set", s]
    r = run_budget(cmd, budget, os.path.join(out, "log.txt"))
    r["command"] = " ".join(["mvi"] + cmd[1:])
    if r["status"] == "ok":
        fit = json.load(open(os.path.join(out, "fit.json")))
        r["fit_s"] = fit.get("wall_time_s")
        ef = fit.get("elbo_fresh")
        r["elbo"] = ef["value"] if ef else None
        r["elbo_se"] = ef["se"] if ef else None
        r["evals"] = fit.get("evals")
        r["notes"] = fit.get("notes")
        r["approximation"] = fit.get("approximation") if method == "laplace" else None
        r["draws"] = read_draws_csv(os.path.join(out, "draws.csv"), param_names(kind, d))
    return r


def run_peer(args, prob, method, out, budget):
    name, kind, n, d = prob
    os.makedirs(out, exist_ok=True)
    spec = {"kind": kind, "dir": prob_dir(args, prob), "method": method, "out": out,
            "names": param_names(kind, d), "seed": 0}
    sp = os.path.join(out, "spec.json")
    json.dump(spec, open(sp, "w"))
    cmd = [args.python_peer, os.path.abspath(__file__), "--peer-fit", sp]
    r = run_budget(cmd, budget, os.path.join(out, "log.txt"))
    r["command"] = "python scale.py --peer-fit %s" % sp
    if r["status"] == "ok":
        import numpy as np
        res = json.load(open(os.path.join(out, "result.json")))
        r.update({k: res.get(k) for k in ("fit_s", "load_s", "elbo", "elbo_se", "versions")})
        r["draws"] = np.load(os.path.join(out, "draws.npy"))
    return r


def prob_dir(args, prob):
    name, kind, n, d = prob
    return os.path.join(args.workdir, "data", "%s_N%d_D%d" % (kind, n, d))


# ---------------------------------------------------------------- W1

def w1_1d(a, b):
    """Exact 1-D Wasserstein-1 distance between two empirical distributions."""
    import numpy as np
    a, b = np.sort(a), np.sort(b)
    allv = np.concatenate([a, b])
    allv.sort()
    dx = np.diff(allv)
    fa = np.searchsorted(a, allv[:-1], side="right") / len(a)
    fb = np.searchsorted(b, allv[:-1], side="right") / len(b)
    return float(np.sum(np.abs(fa - fb) * dx))


def w1(draws, ref, rng):
    """Mean over coordinates of 1-D W1 between W1_DRAWS of `draws` and all of `ref`."""
    if len(draws) > W1_DRAWS:
        draws = draws[rng.choice(len(draws), W1_DRAWS, replace=False)]
    return sum(w1_1d(draws[:, j], ref[:, j]) for j in range(ref.shape[1])) / ref.shape[1]


def reference_from_nuts(draws, rng):
    """Chains 1-2 as the reference; the floor from picks of chains 3-4."""
    import numpy as np
    half = len(draws) // 2
    ref, other = draws[:half], draws[half:]
    fl = [w1(other, ref, rng) for _ in range(FLOOR_PICKS)]
    return ref, float(np.mean(fl)), float(np.std(fl, ddof=1))


def reported(kind, u, groups=1000):
    """Draws of the unconstrained parameters, in declaration order, as draws.csv reports them."""
    import numpy as np
    if kind == "logistic":
        return u
    mu, tau = u[:, :1], np.exp(u[:, 1:2])  # tau > 0 is unconstrained by log
    z, w = u[:, 2:2 + groups], u[:, 2 + groups:]
    return np.concatenate([mu, tau, mu + tau * z, w], axis=1)


def reference_from_laplace(approx, kind, rng):
    """4000 draws of laplace's Gaussian; its floor from independent sets of 1000."""
    import numpy as np
    mean, cov = approx["mean"], approx["cov"]
    draw = lambda n: reported(kind, rng.multivariate_normal(mean, cov, size=n))
    ref = draw(4000)
    fl = [w1(draw(W1_DRAWS), ref, rng) for _ in range(FLOOR_PICKS)]
    return ref, float(np.mean(fl)), float(np.std(fl, ddof=1))


# ---------------------------------------------------------------- the NumPyro peer

def peer_fit(spec_path):
    """Runs in the peer interpreter: one NumPyro fit, result.json and draws.npy in spec.out."""
    import numpy as np
    spec = json.load(open(spec_path))
    t0 = time.time()
    data = {}
    for v in ("X", "y", "g"):
        csv = os.path.join(spec["dir"], v + ".csv")
        npy = os.path.join(spec["dir"], v + ".npy")
        if not os.path.exists(csv):
            continue
        if not os.path.exists(npy):
            np.save(npy, np.loadtxt(csv, delimiter=",", ndmin=2 if v == "X" else 1))
        data[v] = np.load(npy)
        if v in ("g", "y"):
            data[v] = data[v].astype(np.int64)
    load_s = time.time() - t0
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    import optax
    from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoDiagonalNormal

    x = jnp.asarray(data["X"])
    y = jnp.asarray(data["y"])
    n, d = x.shape
    g = jnp.asarray(data["g"] - 1) if "g" in data else None
    hier = spec["kind"] == "hier"
    groups = 1000

    def model(batch=None):
        if hier:
            mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 2.0))
            tau = numpyro.sample("tau", dist.HalfNormal(1.0))
            z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([groups]).to_event(1))
            a = mu_a + tau * z
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
        with numpyro.plate("n", n, subsample_size=batch) as idx:
            eta = x[idx] @ w + (a[g[idx]] if hier else 0.0)
            numpyro.sample("y", dist.Bernoulli(logits=eta), obs=y[idx])

    def flatten(s):
        s = {k: np.asarray(v) for k, v in s.items()}
        if hier:
            s["a"] = s["mu_a"][:, None] + s["tau"][:, None] * s["z"]
        cols = []
        for name in (("mu_a", "tau", "a", "w") if hier else ("w",)):
            v = s[name]
            cols.append(v.reshape(v.shape[0], -1))
        return np.concatenate(cols, axis=1)

    key = jax.random.PRNGKey(spec["seed"])
    res = {"load_s": load_s, "versions": {"numpyro": numpyro.__version__, "jax": jax.__version__}}
    if spec["method"] == "numpyro_nuts":
        mc = MCMC(NUTS(model), num_warmup=1000, num_samples=1000, num_chains=4,
                  chain_method="sequential", progress_bar=False)
        t0 = time.time()
        mc.run(key)
        s = mc.get_samples()
        jax.block_until_ready(s)
        res["fit_s"] = time.time() - t0
        draws = flatten(s)
        res["elbo"] = res["elbo_se"] = None
    else:
        steps = 5000
        guide = AutoDiagonalNormal(model)
        svi = SVI(model, guide, optax.adam(optax.exponential_decay(0.01, steps, 0.01)), Trace_ELBO())
        t0 = time.time()
        r = svi.run(key, steps, 1000, progress_bar=False)
        jax.block_until_ready(r.params)
        res["fit_s"] = time.time() - t0
        draws = flatten(guide.sample_posterior(jax.random.PRNGKey(1), r.params, sample_shape=(1000,)))
        per = max(1, min(50, int(2e7 // n)))  # particles per call: bounds memory at big N
        loss = jax.jit(lambda k: Trace_ELBO(num_particles=per).loss(k, r.params, model, guide, None))
        keys = jax.random.split(jax.random.PRNGKey(2), max(1, 1000 // per))
        est = np.array([-float(loss(k)) for k in keys])
        res["elbo"] = float(est.mean())
        res["elbo_se"] = float(est.std(ddof=1) / np.sqrt(len(est))) if len(est) > 1 else None
    np.save(os.path.join(spec["out"], "draws.npy"), draws)
    json.dump(res, open(os.path.join(spec["out"], "result.json"), "w"))


# ---------------------------------------------------------------- the table

def fmt_t(r, key, budget):
    if r is None:
        return "not run"
    if r["status"] == "over":
        return "> %d" % budget
    if r["status"] != "ok":
        return "failed"
    v = r.get(key)
    return "—" if v is None else ("%.3g" % v if v < 100 else "%.0f" % v)


def fmt_w1(r):
    if r is None or r.get("w1") is None:
        return "—"
    return "%.3g" % r["w1"]


def fmt_elbo(r):
    if r is None or r.get("elbo") is None:
        return "—"
    se = r.get("elbo_se")
    return "%.2f" % r["elbo"] + (" ± %.2g" % se if se is not None else "")


def verdict(prob, rows, ref, budget):
    """For N >= 10^5: the best approximate method of ours against both NUTS."""
    name, kind, n, d = prob
    if n < 10**5:
        return None
    ok = {m: r for m, r in rows.items() if m in APPROX and r and r["status"] == "ok"
          and r.get("w1") is not None}
    if not ok:
        return "%s: no approximate fit of ours finished" % name
    lim = ref["floor"] + 2 * ref["floor_sd"]
    within = {m: r for m, r in ok.items() if r["w1"] <= lim}
    pool = within or ok
    best = min(pool, key=lambda m: pool[m]["fit_s"] if within else pool[m]["w1"])
    b = ok[best]
    parts = ["%s: best = %s (fit %.3g s, wall %.3g s, W1 %.3g %s floor + 2 sd = %.3g%s)" % (
        name, best, b["fit_s"], b["wall_s"], b["w1"], "≤" if b["w1"] <= lim else ">", lim,
        "" if ref["kind"] == "nuts" else ", vs laplace")]
    for peer, key in (("nuts", "fit_s"), ("numpyro_nuts", "fit_s")):
        r = rows.get(peer)
        target = 10 if peer == "nuts" else 50
        if r is None:
            parts.append("%s not run" % peer)
        elif r["status"] == "over":
            parts.append("vs %s: > %.0f× (it was over the %d s budget; target ≥ %d×)" % (
                peer, budget / b["fit_s"], budget, target))
        elif r["status"] == "ok":
            x = r[key] / b["fit_s"]
            parts.append("vs %s: %.0f× less fit time, %.1f× less wall (target ≥ %d×: %s)" % (
                peer, x, r["wall_s"] / b["wall_s"], target, "met" if x >= target else "not met"))
        else:
            parts.append("%s failed" % peer)
    return "; ".join(parts)


def render(header, results, budget):
    out = header + ["", "| problem | method | fit s | wall s | peak RSS MB | W1 | floor (ref) | ELBO (fresh) |",
                    "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for pr in results:
        ref = pr["ref"]
        fl = "%.3g ± %.2g (%s)" % (ref["floor"], ref["floor_sd"], ref["kind"]) if ref else "no reference"
        for m in OURS + PEERS:
            r = pr["rows"].get(m)
            if r is None:
                continue
            rss = "%.0f" % r["rss_mb"] if r.get("rss_mb") else "—"
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                pr["name"], m, fmt_t(r, "fit_s", budget), fmt_t(r, "wall_s", budget), rss,
                fmt_w1(r), fl, fmt_elbo(r)))
        if ref:
            v = verdict(pr["prob"], pr["rows"], ref, budget)
            if v:
                verdicts.append("- " + v)
        else:
            verdicts.append("- %s: no reference, no W1" % pr["name"])
    if verdicts:
        out += ["", "Target (issue 46): on every N ≥ 10⁵ row, the best approximate method of ours "
                "reaches W1 ≤ floor + 2 sd at ≥ 10× less time than our nuts and ≥ 50× less than "
                "NumPyro NUTS.", ""] + verdicts
    return "\n".join(out)


def run_problem(args, prob, budget, ref_budget):
    import numpy as np
    name, kind, n, d = prob
    ddir = prob_dir(args, prob)
    if kind == "logistic":
        make_logistic(args, n, d, ddir)
    else:
        make_hier(n, d, ddir)
    model = os.path.join(args.workdir, kind + ".mvi")
    with open(model, "w") as f:
        f.write(LOGISTIC_MVI if kind == "logistic" else HIER_MVI)
    odir = os.path.join(args.workdir, "fits", os.path.basename(ddir))
    rows, ref = {}, None
    rng = np.random.default_rng(0)
    if n <= 10**5 and "nuts" in args.methods:
        print("  reference nuts (4 x (1000 + %d))" % args.ref_draws, file=sys.stderr, flush=True)
        rr = run_mvi(args, prob, "nuts", os.path.join(odir, "reference"), model,
                     ["seed=12345", "draws=%d" % args.ref_draws], ref_budget)
        if rr["status"] == "ok":
            dr, f, fsd = reference_from_nuts(rr["draws"], rng)
            ref = {"kind": "nuts", "draws": dr, "floor": f, "floor_sd": fsd,
                   "fit_s": rr["fit_s"], "wall_s": rr["wall_s"], "command": rr["command"]}
        else:
            ref = None
            print("  reference: %s" % rr["status"], file=sys.stderr)
    for m in args.methods:
        print("  %s" % m, file=sys.stderr, flush=True)
        if m in OURS:
            rows[m] = run_mvi(args, prob, m, os.path.join(odir, m), model, EXTRA_SET.get(m, []),
                              budget)
        elif args.python_peer:
            rows[m] = run_peer(args, prob, m, os.path.join(odir, m), budget)
        if m == "laplace" and ref is None and rows[m]["status"] == "ok":
            dr, f, fsd = reference_from_laplace(rows[m]["approximation"], kind, rng)
            ref = {"kind": "laplace's Gaussian", "draws": dr, "floor": f, "floor_sd": fsd}
    for r in rows.values():
        if ref is not None and r.get("draws") is not None:
            r["w1"] = w1(r["draws"], ref["draws"], rng)
    return {"name": name, "prob": prob, "rows": rows, "ref": ref}


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_avg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mvi", default=os.path.join(ROOT, "target", "release", "mvi"),
                    help="the mvi binary (default target/release/mvi: cargo build --release)")
    ap.add_argument("--python-peer", help="a Python with jax, numpyro, optax for the NumPyro fits "
                    "(without it they are not run)")
    ap.add_argument("--make-synth", default=os.path.join(ROOT, "..", "shared", "peers", "make_synth.py"))
    ap.add_argument("--budget", type=float, default=600, help="seconds per fit (default 600)")
    ap.add_argument("--ref-budget", type=float, help="seconds for the reference nuts (default 3 x budget)")
    ap.add_argument("--ref-draws", type=int, help="reference draws per chain (default 2000, --quick 1000)")
    ap.add_argument("--quick", action="store_true", help="N in {1e4, 1e5}, D = 10, budget 120 s")
    ap.add_argument("--problems", help="comma-separated problem names to run, in this order, e.g. "
                    "'logistic N=1e5 D=10,hierarchical J=1000 N=1e5 D=10'")
    ap.add_argument("--methods", default=",".join(OURS + PEERS))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "target", "scale"))
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--peer-fit", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_fit:
        return peer_fit(args.peer_fit)
    if args.quick and "--budget" not in sys.argv:
        args.budget = 120
    args.ref_budget = args.ref_budget or 3 * args.budget
    args.ref_draws = args.ref_draws or (1000 if args.quick else 2000)
    args.methods = args.methods.split(",")
    args.mvi = os.path.abspath(args.mvi)
    if not shutil.which(args.mvi):
        sys.exit("no mvi binary at %s: cargo build --release, or pass --mvi" % args.mvi)
    os.makedirs(args.workdir, exist_ok=True)
    probs = grid(args.quick)
    if args.problems:
        by_name = {p[0]: p for p in probs}
        keys = [k.strip() for k in args.problems.split(",")]
        unknown = [k for k in keys if k not in by_name]
        if unknown:
            sys.exit("unknown problem %s; the problems are: %s" % (unknown, "; ".join(by_name)))
        probs = [by_name[k] for k in keys]
    started = datetime.datetime.now().astimezone()
    load0 = load_avg()
    results = []
    for prob in probs:
        print(prob[0], file=sys.stderr, flush=True)
        results.append(run_problem(args, prob, args.budget, args.ref_budget))
        report(args, started, load0, results, final=False)
    print(report(args, started, load0, results, final=True))


def report(args, started, load0, results, final):
    """The table as text; also written, with --json, after every problem (a stopped run keeps them)."""
    t_total = (datetime.datetime.now().astimezone() - started).total_seconds()
    header = ["## Scale: %s" % ("quick grid" if args.quick else "many rows"), "",
              "- command: `%s`" % " ".join(["benches/scale.py"] + sys.argv[1:]),
              "- date: %s; mvi commit %s; total %.0f s" % (started.strftime("%Y-%m-%d %H:%M %Z"),
                                                          git_commit(), t_total),
              "- load averages (1, 5, 15 min) at start: %s, at end: %s (2 cores)" % (load0, load_avg()),
              "- budget %.0f s per fit (reference nuts %.0f s); reference: our nuts, 4 × (1000 + %d), "
              "seed 12345, chains 1-2 as reference draws; floor = W1 of 1000 draws from its chains 3-4 "
              "(mean ± sd over %d picks); without a reference, W1 to laplace's Gaussian"
              % (args.budget, args.ref_budget, args.ref_draws, FLOOR_PICKS)]
    text = render(header + ([] if final else ["- (partial: the run is still going)"]),
                  results, args.budget)
    with open(os.path.join(args.workdir, "scale.md"), "w") as f:
        f.write(text + "\n")
    if args.json:
        strip = lambda r: {k: v for k, v in r.items() if k not in ("draws", "approximation")}
        js = {"header": header, "results": [
            {"name": p["name"], "problem": p["prob"],
             "ref": strip(p["ref"]) if p["ref"] else None,
             "rows": {m: strip(r) for m, r in p["rows"].items()}} for p in results]}
        with open(args.json, "w") as f:
            json.dump(js, f, indent=1)
    return text


if __name__ == "__main__":
    main()
