"""Fit the banana example from Python, print its summary and plot the marginals with ArviZ.

    pip install ./python
    python examples/python/quickstart.py          # writes banana_marginals.png

Bayesian logistic regression with RBF features on the banana data (the MVI paper's §V-C):
the model file fixes the method (mvi_lr) and the seed, so the numbers are those of
`mvi run examples/logistic_rbf_banana.mvi --data examples/data/logistic_rbf_banana.json`.
"""

import json
import sys
from pathlib import Path

import arviz_plots as azp
import matplotlib

matplotlib.use("Agg")  # write a file; no window needed

import mvi

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent

model = mvi.Model.from_file(EXAMPLES / "logistic_rbf_banana.mvi")
with open(EXAMPLES / "data" / "logistic_rbf_banana.json", encoding="utf-8") as f:
    data = json.load(f)

fit = model.fit(data=data)  # method and seed from the model's `infer` block
print(fit.summary().head())
print(f"ELBO {fit.elbo:.3f} ± {fit.elbo_se:.3f}, k̂ = {fit.khat:.2f}, θ = {fit.theta}")
print(f"test error rate {fit.predict['error_rate']:.3f}")

tree = fit.to_arviz()
plot = azp.plot_dist(tree, var_names=["w"], coords={"w_dim_0": [1, 2, 3, 4, 31]}, backend="matplotlib")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("banana_marginals.png")
plot.savefig(out)
print(f"wrote {out}")
