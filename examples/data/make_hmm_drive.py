"""A synthetic two-state series for examples/hmm_drive.mvi, the posteriordb hmm_drive_0
model (basketball drives: 1/speed u and hoop distance v, exponential in each state).

  python make_hmm_drive.py      # numpy only

N = 200 steps of a Markov chain on states 1, 2 started from (0.5, 0.5), transition
matrix theta = [[0.9, 0.1], [0.2, 0.8]] (row j: from state j); u_t ~ exponential(phi[z_t])
and v_t ~ exponential(lambda[z_t]) (rates) with phi = (1, 4), lambda = (0.5, 3); Dirichlet
prior counts alpha = [[4, 2], [2, 4]] as in posteriordb's data; seed 20261125.
Writes hmm_drive.json (K, N, u, v, alpha) and hmm_drive_truth.json (the true values and
the simulated states).
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261125
K, N = 2, 200
THETA = np.array([[0.9, 0.1], [0.2, 0.8]])
PHI = np.array([1.0, 4.0])
LAMBDA = np.array([0.5, 3.0])
ALPHA = np.array([[4.0, 2.0], [2.0, 4.0]])

rng = np.random.default_rng(SEED)
z = np.empty(N, dtype=int)
z[0] = rng.choice(K)
for t in range(1, N):
    z[t] = rng.choice(K, p=THETA[z[t - 1]])
u = rng.exponential(1.0 / PHI[z])
v = rng.exponential(1.0 / LAMBDA[z])
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "hmm_drive.json"), {"K": K, "N": N, "u": u, "v": v, "alpha": ALPHA})
with open(os.path.join(here, "hmm_drive_truth.json"), "w") as f:
    json.dump({"theta": THETA.tolist(), "phi": PHI.tolist(), "lambda": LAMBDA.tolist(),
               "z": (z + 1).tolist(), "seed": SEED}, f, indent=1)
    f.write("\n")
print("time in state 2", z.mean())
