"""Stan's unconstrained coordinates of the posteriordb reference draws and of mvi's draws.

Shared by `make_reference.py` (this folder) and `benches/posteriordb_w1.py`; numpy only.

A posterior's `info.json` (in the shared posteriordb folder, see its README) lists the
unconstrained coordinates in Stan's order, each with a transform:

  identity            x
  log        lower=a  log(x - a)
  log_upper  upper=b  log(b - x)
  logit      a, b     logit((x - a) / (b - a))

and a `derive` rule where the reference holds a constrained or transformed value rather
than the coordinate itself (the rule computes the coordinate, on the unconstrained scale):

  affine_inverse       eight schools' theta_trans[j] = (theta[j] - mu) / tau
  simplex              Stan's stick-breaking coordinate k of simplex[K] x:
                       logit(x[k] / (1 - x[1] - ... - x[k-1])) - log(1 / (K - k))
  positive_ordered     log x[1] for k = 1, log(x[k] - x[k-1]) after
  ordered              x[1] for k = 1, log(x[k] - x[k-1]) after
  gp_exp_quad_whiten   gp_pois_regr's f_tilde = L^-1 f, L the Cholesky factor of
                       gp_exp_quad_cov(x, alpha, rho) + jitter I

The 12 posteriors of the calibrated suite take their info.json from the shared folder; the
further ones (shared `more/`) take it from there where posteriordb's parameters are plain
reals and vectors, and otherwise from this folder's `<posterior>/coordinates.json`, in the
same format, written from the Stan model (the hmm_drive and gp_pois_regr posteriors).

mvi's draws.csv names entries as CmdStan does (`beta.1`); Stan's reference names them
`beta[1]`. `mvi_name` maps one to the other.
"""
import csv
import json
import os
import re
import subprocess
import tempfile
import time

import numpy as np


HERE = os.path.dirname(os.path.abspath(__file__))


def shared_folder(shared, posterior):
    """The posterior's folder in the shared posteriordb extract: `shared/P` or `shared/more/P`."""
    for folder in (os.path.join(shared, posterior), os.path.join(shared, "more", posterior)):
        if os.path.isfile(os.path.join(folder, "reference.csv")):
            return folder
    raise FileNotFoundError(f"no reference.csv for {posterior} under {shared} or {shared}/more")


def load_info(folder):
    """The posterior's info.json as a dict: the shared folder's, else this folder's
    `<posterior>/coordinates.json` (see the module doc)."""
    path = os.path.join(folder, "info.json")
    if not os.path.isfile(path):
        path = os.path.join(HERE, os.path.basename(os.path.normpath(folder)), "coordinates.json")
    with open(path) as f:
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
            x = derive(coord["derive"], columns, rename)
        else:
            raise KeyError(f"no column for coordinate {coord['name']!r} ({name!r})")
        out.append(unconstrain(np.asarray(x, dtype=float), coord["transform"]))
    return np.column_stack(out)


def derive(rule, columns, rename):
    """One coordinate computed from other columns by a `derive` rule (module doc)."""
    kind = rule["kind"]
    if kind == "affine_inverse":
        return (columns[rename(rule["value"])] - columns[rename(rule["loc"])]) / columns[
            rename(rule["scale"])
        ]
    if kind in ("simplex", "positive_ordered", "ordered"):
        k, size = rule["index"], rule["size"]
        x = [np.asarray(columns[rename(f"{rule['value']}[{i}]")], dtype=float) for i in range(1, size + 1)]
        if kind == "simplex":
            rest = 1.0 - sum(x[: k - 1]) if k > 1 else np.ones_like(x[0])
            z = x[k - 1] / rest
            return np.log(z) - np.log1p(-z) - np.log(1.0 / (size - k))
        if k > 1:
            return np.log(x[k - 1] - x[k - 2])
        return np.log(x[0]) if kind == "positive_ordered" else x[0]
    if kind == "gp_exp_quad_whiten":
        xs = np.asarray(rule["x"], dtype=float)
        alpha = np.asarray(columns[rename(rule["alpha"])], dtype=float)
        rho = np.asarray(columns[rename(rule["rho"])], dtype=float)
        f = np.column_stack([columns[rename(f"{rule['value']}[{i}]")] for i in range(1, len(xs) + 1)])
        d2 = (xs[:, None] - xs[None, :]) ** 2
        cov = alpha[:, None, None] ** 2 * np.exp(-0.5 * d2[None] / rho[:, None, None] ** 2)
        cov += rule["jitter"] * np.eye(len(xs))
        chol = np.linalg.cholesky(cov)
        return np.linalg.solve(chol, f[:, :, None])[:, rule["index"] - 1, 0]
    raise ValueError(f"unknown derive rule {kind!r}")


def reference_draws(folder):
    """(info, (10000, D) unconstrained reference draws) of one posterior folder."""
    info = load_info(folder)
    cols = read_columns(os.path.join(folder, "reference.csv"))
    return info, unconstrained_draws(info, cols)


def run_fit(mvi, folder, method, sets, timeout):
    """One `mvi run` of the posterior in `folder` with `--set` options `sets` ("k=v"), into a
    temporary output directory: {"fit": fit.json, "cols": draws.csv's columns, "process_s":
    the process's seconds}, or {"error": the first line of stderr, or the timeout}."""
    with tempfile.TemporaryDirectory(prefix="pdb-fit-") as out:
        cmd = [mvi, "run", os.path.join(folder, "model.mvi"), "--data",
               os.path.join(folder, "data.json"), "--method", method,
               "--output-dir", out, "--quiet", "--json"]
        for kv in sets:
            cmd += ["--set", kv]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if ln.strip()), "")
            return {"error": f"exit {proc.returncode}: {first.strip()}"}
        with open(os.path.join(out, "fit.json")) as f:
            fit = json.load(f)
        cols = read_columns(os.path.join(out, "draws.csv"))
    return {"fit": fit, "cols": cols, "process_s": elapsed}
