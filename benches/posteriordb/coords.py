"""Stan's unconstrained coordinates of the posteriordb reference draws and of mvi's draws.

Shared by `make_reference.py` (this folder) and `benches/posteriordb_w1.py`; numpy only.

A posterior's `info.json` (in the shared posteriordb folder, see its README) lists the
unconstrained coordinates in Stan's order, each with a transform:

  identity            x
  log        lower=a  log(x - a)
  log_upper  upper=b  log(b - x)
  logit      a, b     logit((x - a) / (b - a))

and, for eight schools' theta_trans[j], a `derive` rule: the reference holds the transformed
parameter theta[j], and theta_trans[j] = (theta[j] - mu) / tau.

mvi's draws.csv names entries as CmdStan does (`beta.1`); Stan's reference names them
`beta[1]`. `mvi_name` maps one to the other.
"""
import csv
import json
import os
import re

import numpy as np


def load_info(folder):
    """The posterior's info.json as a dict."""
    with open(os.path.join(folder, "info.json")) as f:
        return json.load(f)


def read_columns(path):
    """A CSV with a header row (`#` comment lines skipped) as {column name: float array}."""
    with open(path) as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    header, body = rows[0], rows[1:]
    values = np.array(body, dtype=float)
    return {name: values[:, i] for i, name in enumerate(header)}


def mvi_name(stan_name):
    """`beta[1]` -> `beta.1`, `W[2,3]` -> `W.2.3`, `sigma` -> `sigma` (CmdStan's naming)."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9, ]+)\])?", stan_name)
    if m is None:
        raise ValueError(f"unexpected parameter name {stan_name!r}")
    if m.group(2) is None:
        return m.group(1)
    return m.group(1) + "." + ".".join(i.strip() for i in m.group(2).split(","))


def unconstrain(x, transform):
    """Apply one coordinate's transform (a dict from info.json) to constrained values x."""
    kind = transform["type"]
    if kind == "identity":
        return x
    if kind == "log":
        return np.log(x - transform["lower"])
    if kind == "log_upper":
        return np.log(transform["upper"] - x)
    if kind == "logit":
        a, b = transform["lower"], transform["upper"]
        p = (x - a) / (b - a)
        return np.log(p) - np.log1p(-p)
    raise ValueError(f"unknown transform {kind!r}")


def unconstrained_draws(info, columns, rename=lambda n: n):
    """The draws as an (n, D) array of Stan's unconstrained coordinates.

    `columns` maps names to constrained draws; `rename` maps a Stan name to the key used in
    `columns` (identity for reference.csv, `mvi_name` for mvi's draws.csv). A coordinate
    with a `derive` rule is taken directly when its own column is present (mvi writes
    theta_trans), and otherwise derived (the reference has only theta).
    """
    out = []
    for coord in info["coordinates"]:
        name = rename(coord["name"])
        if name in columns:
            x = columns[name]
        elif "derive" in coord:
            rule = coord["derive"]
            if rule["kind"] != "affine_inverse":
                raise ValueError(f"unknown derive rule {rule['kind']!r}")
            x = (columns[rename(rule["value"])] - columns[rename(rule["loc"])]) / columns[
                rename(rule["scale"])
            ]
        else:
            raise KeyError(f"no column for coordinate {coord['name']!r} ({name!r})")
        out.append(unconstrain(np.asarray(x, dtype=float), coord["transform"]))
    return np.column_stack(out)


def reference_draws(folder):
    """(info, (10000, D) unconstrained reference draws) of one posterior folder."""
    info = load_info(folder)
    cols = read_columns(os.path.join(folder, "reference.csv"))
    return info, unconstrained_draws(info, cols)
