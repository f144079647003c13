"""The 12 posteriordb posteriors in NumPyro, fitted with its autoguides (benches/posteriordb_w1.py).

Imported by `benches/posteriordb_w1.py` (methods `numpyro_laplace`, `numpyro_lowrank`,
`numpyro_diag`); needs the benches' virtualenv (benches/peers/setup.sh).

Each posterior is written as its log density over the constrained parameters, exactly as in
the Stan model (and in benches/posteriordb/<posterior>/model.mvi): the parameters are
declared in Stan's order as `ImproperUniform` sites on their support (the real line, or
sigma > 0), and the whole log density is one `numpyro.factor`. NumPyro's autoguides then work
on the unconstrained vector of those sites in declaration order, with sigma > 0 mapped by
exp, which is Stan's unconstrained coordinate vector; the 100 draws for W1 are drawn from the
guide's posterior on that scale directly.

Methods (as benches/peers/numpyro_fit.py sets them up):
  laplace  AutoLaplaceApproximation: MAP by BFGS (numpyro.optim.Minimize, gtol 1e-8),
           restarted from where it stopped while the loss still falls by more than 1e-9
           (jax's line search often stops early), then the Hessian at the MAP;
  lowrank  AutoLowRankMultivariateNormal (NumPyro's default rank round(sqrt(D)));
  diag     AutoDiagonalNormal;
the VI guides by SVI, Trace_ELBO with 4 particles, 10 000 Adam steps from 0.01 decaying to
1e-4, init_scale 0.1. Every fit starts at the unconstrained origin (coefficients 0,
sigma = 1), as mvi's mode search does; `lowrank_map` and `diag_map` start the guide's mean
at NumPyro's own Laplace MAP instead (as mvi's VI methods start from the Laplace mode):
Adam's decaying steps move a coordinate by at most about 20 in all, so from the origin the
guides cannot reach kidiq's intercepts (26-88) or kilpisjarvi's alpha (-61).
"""
import json
import os
import time

import numpy as np

STEPS = 10_000
LR = 0.01
PARTICLES = 4
METHODS = ["laplace", "lowrank", "diag", "lowrank_map", "diag_map"]


def _data(folder):
    with open(os.path.join(folder, "data.json")) as f:
        return {k: np.asarray(v, dtype=float) for k, v in json.load(f).items()}


def _sd(x):
    return x.std(ddof=1)


def build(posterior, folder):
    """(sites, logp): sites = [(name, size or None, positive)], logp(dict of jnp) -> scalar."""
    import jax.numpy as jnp
    import numpyro.distributions as dist

    d = _data(folder)
    normal = dist.Normal
    base = posterior.split("-", 1)[1]

    def regression(design, y, prior_beta=None, prior_sigma=None):
        X = jnp.asarray(design)
        k = design.shape[1]

        def logp(v):
            lp = normal(X @ v["beta"], v["sigma"]).log_prob(jnp.asarray(y)).sum()
            if prior_beta is not None:
                lp += prior_beta(v["beta"])
            if prior_sigma is not None:
                lp += prior_sigma(v["sigma"])
            return lp

        return [("beta", k, False), ("sigma", None, True)], logp

    ones = lambda n: np.ones(int(n))  # noqa: E731
    half_cauchy = lambda s: (lambda x: dist.HalfCauchy(s).log_prob(x))  # noqa: E731

    if base == "eight_schools_noncentered":
        y, sigma = jnp.asarray(d["y"]), jnp.asarray(d["sigma"])

        def logp(v):
            theta = v["theta_trans"] * v["tau"] + v["mu"]
            return (normal(0, 1).log_prob(v["theta_trans"]).sum() + normal(theta, sigma).log_prob(y).sum()
                    + normal(0, 5).log_prob(v["mu"]) + dist.HalfCauchy(5).log_prob(v["tau"]))

        return [("theta_trans", int(d["J"]), False), ("mu", None, False), ("tau", None, True)], logp
    if base == "blr":
        return regression(d["X"], d["y"], lambda b: normal(0, 10).log_prob(b).sum(),
                          lambda s: normal(0, 10).log_prob(s))
    if base == "kidscore_momiq":
        n = d["N"]
        return regression(np.column_stack([ones(n), d["mom_iq"]]), d["kid_score"], None, half_cauchy(2.5))
    if base == "kidscore_interaction":
        n, hs, iq = d["N"], d["mom_hs"], d["mom_iq"]
        return regression(np.column_stack([ones(n), hs, iq, hs * iq]), d["kid_score"], None, half_cauchy(2.5))
    if base == "kidscore_interaction_z":
        hs = (d["mom_hs"] - d["mom_hs"].mean()) / (2 * _sd(d["mom_hs"]))
        iq = (d["mom_iq"] - d["mom_iq"].mean()) / (2 * _sd(d["mom_iq"]))
        return regression(np.column_stack([ones(d["N"]), hs, iq, hs * iq]), d["kid_score"])
    if base == "logearn_interaction_z":
        z = (d["height"] - d["height"].mean()) / _sd(d["height"])
        return regression(np.column_stack([ones(d["N"]), z, d["male"], z * d["male"]]), np.log(d["earn"]))
    if base == "logmesquite_logvas":
        d1, d2 = d["diam1"], d["diam2"]
        design = np.column_stack([ones(d["N"]), np.log(d1 * d2 * d["canopy_height"]), np.log(d1 * d2),
                                  np.log(d1 / d2), np.log(d["total_height"]), np.log(d["density"]), d["group"]])
        return regression(design, np.log(d["weight"]))
    if base == "nes":
        age = d["age_discrete"]
        design = np.column_stack([ones(d["N"]), d["real_ideo"], d["race_adj"], age == 2, age == 3, age == 4,
                                  d["educ1"], d["gender"], d["income"]]).astype(float)
        return regression(design, d["partyid7"])
    if base == "kilpisjarvi":
        x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"])

        def logp(v):
            return (normal(float(d["pmualpha"]), float(d["psalpha"])).log_prob(v["alpha"])
                    + normal(float(d["pmubeta"]), float(d["psbeta"])).log_prob(v["beta"])
                    + normal(v["alpha"] + v["beta"] * x, v["sigma"]).log_prob(y).sum())

        return [("alpha", None, False), ("beta", None, False), ("sigma", None, True)], logp
    if base == "arK":
        K, T, y = int(d["K"]), int(d["T"]), d["y"]
        lags = jnp.asarray(np.column_stack([y[K - k:T - k] for k in range(1, K + 1)]))
        target = jnp.asarray(y[K:])

        def logp(v):
            mu = v["alpha"] + lags @ v["beta"]
            return (normal(0, 10).log_prob(v["alpha"]) + normal(0, 10).log_prob(v["beta"]).sum()
                    + dist.HalfCauchy(2.5).log_prob(v["sigma"]) + normal(mu, v["sigma"]).log_prob(target).sum())

        return [("alpha", None, False), ("beta", K, False), ("sigma", None, True)], logp
    if base == "diamonds":
        X = d["X"][:, 1:]
        Xc = jnp.asarray(X - X.mean(axis=0))
        Y = jnp.asarray(d["Y"])
        t = dist.StudentT(3, 0, 10)

        def logp(v):
            lp = (normal(0, 1).log_prob(v["b"]).sum() + dist.StudentT(3, 8, 10).log_prob(v["Intercept"])
                  + t.log_prob(v["sigma"]) - jnp.log(0.5))
            return lp + normal(v["Intercept"] + Xc @ v["b"], v["sigma"]).log_prob(Y).sum()

        return [("b", X.shape[1], False), ("Intercept", None, False), ("sigma", None, True)], logp
    raise ValueError(f"no NumPyro model for {posterior}")


def fit(posterior, folder, method, seed, n_draws):
    """One fit: (n_draws x D unconstrained draws in Stan's order, q's mean, q's covariance,
    seconds from building the model to the draws, JIT compilation included)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints
    from numpyro.infer import SVI, Trace_ELBO, autoguide, init_to_value

    sites, logp = build(posterior, folder)

    def model():
        v = {}
        for name, size, positive in sites:
            support = constraints.positive if positive else constraints.real
            shape = () if size is None else (size,)
            v[name] = numpyro.sample(name, dist.ImproperUniform(support, (), shape))
        numpyro.factor("log_density", logp(v))

    origin = {name: (jnp.ones(()) if pos else (jnp.zeros(()) if size is None else jnp.zeros(size)))
              for name, size, pos in sites}
    t0 = time.perf_counter()

    def laplace(init):
        guide = autoguide.AutoLaplaceApproximation(model, init_loc_fn=init)
        svi = SVI(model, guide, numpyro.optim.Minimize(method="BFGS", options=dict(gtol=1e-8, maxiter=1000)),
                  Trace_ELBO())
        state = svi.init(jax.random.PRNGKey(seed))
        update = jax.jit(svi.update)
        state, loss = update(state)
        for _ in range(20):
            state, new = update(state)
            if not float(loss) - float(new) > 1e-9:
                break
            loss = new
        return guide, svi, state

    if method == "laplace":
        guide, svi, state = laplace(init_to_value(values=origin))
    else:
        init = init_to_value(values=origin)
        if method.endswith("_map"):
            g, s, st = laplace(init)
            init = init_to_value(values=g.median(s.get_params(st)))
        Guide = autoguide.AutoLowRankMultivariateNormal if method.startswith("lowrank") else autoguide.AutoDiagonalNormal
        guide = Guide(model, init_loc_fn=init, init_scale=0.1)
        opt = numpyro.optim.Adam(lambda i: LR * 0.01 ** (i / STEPS))
        svi = SVI(model, guide, opt, Trace_ELBO(num_particles=PARTICLES))
        state = svi.init(jax.random.PRNGKey(seed))

        @jax.jit
        def run(s):
            s, _ = jax.lax.scan(lambda c, _: svi.update(c), s, None, length=STEPS)
            return s

        state = run(state)
    q = guide.get_posterior(svi.get_params(state))
    draws = np.asarray(jax.block_until_ready(q.sample(jax.random.PRNGKey(seed + 1), (n_draws,))))
    seconds = time.perf_counter() - t0
    mean = np.asarray(q.mean).reshape(-1)
    cov = np.diag(np.asarray(q.variance)) if method.startswith("diag") else np.asarray(q.covariance_matrix)
    return draws.reshape(n_draws, -1), mean, cov, seconds
