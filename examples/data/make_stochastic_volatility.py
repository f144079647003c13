"""A synthetic series for examples/stochastic_volatility.mvi.

  python make_stochastic_volatility.py      # numpy only

T = 1000; mu = -1, phi = 0.95, sigma = 0.25; h_1 ~ N(mu, sigma / sqrt(1 - phi²)) (stationary),
h_t = mu + phi (h_{t-1} - mu) + sigma eta_t, y_t = exp(h_t / 2) eps_t; seed 20261121.
Writes stochastic_volatility.json (y only) and stochastic_volatility_truth.json
(the true parameters and the simulated h).

Why T = 1000: sigma is weakly identified in this model. With the earlier T = 100 the exact
posterior (NUTS, tests/fixtures/pmfvb_sv/make_fixture.py) had sigma = 0.46 ± 0.13 and
phi = 0.93 ± 0.05, so no method could be held to the true 0.25; with T = 500 it was
0.37 ± 0.07, with T = 1000 it is 0.32 ± 0.05, phi 0.937 ± 0.020, mu -0.99 ± 0.19 (the
reference is tests/fixtures/pmfvb_sv/nuts.json).
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261121
T = 1000
MU, PHI, SIGMA = -1.0, 0.95, 0.25

rng = np.random.default_rng(SEED)
h = np.empty(T)
h[0] = MU + SIGMA / np.sqrt(1 - PHI**2) * rng.standard_normal()
for t in range(1, T):
    h[t] = MU + PHI * (h[t - 1] - MU) + SIGMA * rng.standard_normal()
y = np.exp(h / 2) * rng.standard_normal(T)
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "stochastic_volatility.json"), {"y": y})
with open(os.path.join(here, "stochastic_volatility_truth.json"), "w") as f:
    json.dump({"mu": MU, "phi": PHI, "sigma": SIGMA, "h": h.tolist(), "seed": SEED}, f, indent=1)
    f.write("\n")
print("sd(y)", y.std(), "h range", h.min(), h.max())
