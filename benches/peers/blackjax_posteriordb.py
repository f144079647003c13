"""BlackJAX's Pathfinder on the 12 posteriordb posteriors (benches/posteriordb_w1.py,
method `blackjax_pathfinder`), with its log-density and gradient evaluations counted.

Needs the benches' virtualenv plus BlackJAX (benches/peers/setup.sh, then
`benches/peers/.venv-peers/bin/pip install blackjax`; measured with blackjax 1.7.1,
jax 0.10.2).

The log density is NumPyro's translation of each Stan model (numpyro_posteriordb.build,
over the constrained parameters in Stan's order) moved to Stan's unconstrained vector:
sigma > 0 as exp(x) with its log-Jacobian x. BlackJAX's Pathfinder is single-path; it runs
with Stan's settings where BlackJAX has them: history (maxcor) 5, 25 ELBO draws per
iterate, at most 1000 L-BFGS iterations, gtol 1e-8, ftol 2.2e-12 (BlackJAX's relative
test, as CmdStan's tol_rel_obj), from U(-2, 2) per coordinate (Stan's initialisation).
BlackJAX's defaults (maxiter 30, maxcor 10, ftol 1e-5, 200 ELBO draws) would stop far
earlier.

Gradients are counted inside the compiled computation by a host callback in the backward
pass of the log density (one per point; a callback in every forward pass made a fit take
200 s instead of 10). Density values are then counted, not measured: one with every
gradient (value_and_grad) plus the ELBO draws, which BlackJAX evaluates at every slot of
its padded path (maxiter + 1 of them) and masks afterwards, so (maxiter + 1) x 25 is what
it computes; `elbo_needed` is the count at the iterates it reached (iterations x draws).
The wall time is one call, JIT compilation included (cold), as for the NumPyro peers.
"""
import time

import numpy as np

import numpyro_posteriordb

MAXCOR = 5
ELBO_DRAWS = 25
MAXITER = 1000
GTOL = 1e-8
FTOL = 1e4 * 2.220446049250313e-16


def fit(posterior, folder, seed, n_draws):
    """(n_draws x D unconstrained draws, mean, covariance, seconds, evaluation counts)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import blackjax

    sites, logp = numpyro_posteriordb.build(posterior, folder)
    sizes = [1 if size is None else size for _, size, _ in sites]
    dim = sum(sizes)

    def logp_flat(x):
        v, start, jac = {}, 0, 0.0
        for (name, size, positive), n in zip(sites, sizes):
            block = x[start:start + n]
            start += n
            if positive:
                jac = jac + block.sum()
                block = jnp.exp(block)
            v[name] = block[0] if size is None else block
        return logp(v) + jac

    counts = {"density": 0, "gradient": 0}

    def bump(key):
        def f(x):
            counts[key] += int(np.prod(np.shape(x)[:-1])) if np.ndim(x) > 1 else 1
        return f

    @jax.custom_vjp
    def counted(x):
        return logp_flat(x)

    def fwd(x):
        value, vjp = jax.vjp(logp_flat, x)
        return value, (vjp, x)

    def bwd(res, g):
        vjp, x = res
        jax.debug.callback(bump("gradient"), x)
        return vjp(g)

    counted.defvjp(fwd, bwd)

    rng = np.random.default_rng(seed)
    x0 = jnp.asarray(rng.uniform(-2.0, 2.0, size=dim))
    t0 = time.perf_counter()
    key = jax.random.PRNGKey(seed)
    k1, k2 = jax.random.split(key)
    state, info = blackjax.vi.pathfinder.approximate(
        k1, counted, x0, num_samples=ELBO_DRAWS, maxiter=MAXITER, maxcor=MAXCOR, gtol=GTOL, ftol=FTOL)
    draws, _ = blackjax.vi.pathfinder.sample(k2, state, n_draws)
    draws = np.asarray(jax.block_until_ready(draws))
    seconds = time.perf_counter() - t0
    reached = int(np.sum(np.isfinite(np.asarray(info.path.elbo))))
    counts["iterations_with_elbo"] = reached
    # value_and_grad: one density value with every gradient; the ELBO draws at every padded
    # slot of the path; the output draws are not evaluated.
    counts["density"] = counts["gradient"] + (MAXITER + 1) * ELBO_DRAWS
    counts["elbo_needed"] = reached * ELBO_DRAWS
    big = blackjax.vi.pathfinder.sample(jax.random.PRNGKey(seed + 7), state, 20_000)[0]
    big = np.asarray(big)
    return draws.reshape(n_draws, -1), big.mean(axis=0), np.atleast_2d(np.cov(big, rowvar=False)), seconds, counts
