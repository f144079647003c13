"""Read mvi's draws.csv with ArviZ's `az.from_cmdstan` and compare with fit.json.

Usage: python check_from_cmdstan.py DRAWS_CSV FIT_JSON

Checks that every parameter column of fit.json appears in the posterior group with the
same mean (relative 1e-9), that the number of draws matches, and that lp__, log_p__ and
log_q__ land in sample_stats. Prints one line per failure and exits 1, or prints "ok ..."
and exits 0. Called by tests/it/arviz.rs.
"""

import json
import sys

import arviz as az
import numpy as np


def column_means(posterior):
    """CmdStan-style column name -> mean over chains and draws."""
    means = {}
    for var in posterior.data_vars:
        values = posterior[var].values  # (chain, draw, *shape)
        if values.ndim == 2:
            means[var] = float(values.mean())
            continue
        for index in np.ndindex(*values.shape[2:]):
            name = var + "." + ".".join(str(i + 1) for i in index)
            means[name] = float(values[(slice(None), slice(None)) + index].mean())
    return means


def main(csv_path, json_path):
    with open(json_path, encoding="utf-8") as f:
        fit = json.load(f)
    data = az.from_cmdstan(posterior=csv_path)
    posterior = data.posterior
    failures = []
    if posterior.sizes["chain"] != 1 or posterior.sizes["draw"] != fit["draws"]:
        failures.append(f"shape {dict(posterior.sizes)} != 1 chain x {fit['draws']} draws")
    means = column_means(posterior)
    for name, summary in fit["parameters"].items():
        if name not in means:
            failures.append(f"column {name} missing from the posterior group")
            continue
        expected = summary["mean"]
        if not np.isclose(means[name], expected, rtol=1e-9, atol=1e-12):
            failures.append(f"{name}: arviz mean {means[name]!r} != fit.json {expected!r}")
    extra = set(means) - set(fit["parameters"])
    if extra:
        failures.append(f"unexpected posterior columns {sorted(extra)}")
    stats = set(data.sample_stats.data_vars)
    for stat in ("lp", "log_p", "log_q"):
        if stat not in stats:
            failures.append(f"sample_stats lacks {stat} (has {sorted(stats)})")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"ok {len(means)} columns, {posterior.sizes['draw']} draws, arviz {az.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
