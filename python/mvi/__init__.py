"""mvi: fast approximate Bayesian inference for models written in ``.mvi``, from Python.

The package is a thin layer over the Rust library that the ``mvi`` command line runs:
checking, fitting and every number reported come from the same functions (the extension
module ``mvi._mvi``). This layer only reshapes results into NumPy arrays, pandas tables
and ArviZ data.

    >>> import mvi
    >>> model = mvi.Model.from_file("examples/logistic_rbf_banana.mvi")
    >>> fit = model.fit(data=data, method="mvi_lr", samples=500)
    >>> fit.summary()
    >>> fit.to_arviz()

``model.fit(data, predictive=True, loo=True)`` adds replicated data and pointwise
log-likelihoods (``fit.loo()``, ArviZ's ``posterior_predictive``, ``log_likelihood`` and
``observed_data``); :func:`compare_models` ranks models by PSIS-LOO.

Many fits (per-group fits, cross-validation folds, simulation studies) go through
:func:`fit_many`, on local threads or on a ``dask.distributed`` cluster; models and fits
pickle, so they travel to worker processes and back.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import warnings
from typing import Any, Iterable, Mapping

import numpy as np

from . import _mvi
from ._mvi import ModelError

__all__ = ["Model", "Fit", "ModelError", "Sbc", "compare", "compare_models", "fit_many", "sbc", "__version__"]
__version__ = _mvi.__version__

_METHODS_DEFAULT = ("laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full")


class Model:
    """A model written in the ``.mvi`` language.

    ``Model(source)`` takes the model's text; :meth:`Model.from_file` reads a file (imports
    and ``csv("…")`` paths are then looked up next to it). A syntax error raises
    :class:`ModelError` here; everything that needs the data is checked by :meth:`check`
    and :meth:`fit`.
    """

    def __init__(self, source: str, *, name: str = "<model>", model_dir: str | os.PathLike | None = None):
        if not isinstance(source, str):
            raise TypeError(f"a model's source is a str, not {type(source).__name__} (use Model.from_file for a path)")
        self.source = source
        self.name = name
        self.model_dir = os.fspath(model_dir) if model_dir is not None else os.getcwd()
        _mvi.parse(source, name)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Model":
        """Read a ``.mvi`` file, or a Stan program (``.stan``), which is translated to ``.mvi``
        (``mvi translate`` shows the text) and reported against the ``.stan`` file."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            # the diagnostic `mvi check` gives, with the attributes every ModelError has
            code = "mvi::check::unreadable_model"
            message = f"cannot read model file `{path}`: {e.strerror or e}"
            err = ModelError(f"{code}\n\n  × {message}\n  help: check the path; model files end in `.mvi`")
            err.code, err.line, err.column, err.file = code, None, None, path
            err.diagnostics = [(code, message)]
            raise err from e
        return cls(text, name=path, model_dir=os.path.dirname(os.path.abspath(path)))

    def __repr__(self) -> str:
        return f"mvi.Model({self.name!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Model):
            return NotImplemented
        return (self.source, self.name, self.model_dir) == (other.source, other.name, other.model_dir)

    def __hash__(self) -> int:
        return hash((self.source, self.name, self.model_dir))

    def __reduce__(self):
        # pickled as its text, name and directory; unpickling parses the text again
        return (_model, (self.source, self.name, self.model_dir))

    def check(self, data: Mapping[str, Any] | None = None) -> dict:
        """Check the model against its data and return the layout ``mvi check`` prints.

        A dict with ``model``, ``sizes`` (size variables bound from the data), ``data``
        (each declaration with its type and scalar value), ``dim`` (D), ``params`` (name,
        type, bounds, transform and 1-based ``slice`` of w), ``hyper_dim``, ``hypers``
        (with ``init``), ``method``, ``options`` (defaults filled in), ``ignored`` (data
        entries the model does not declare) and ``report`` (the text ``mvi check`` prints).
        """
        return _mvi.check_layout(self.source, self.name, self.model_dir, _data(data))

    def fit(self, data: Mapping[str, Any] | None = None, method: str | None = None, **infer_options: Any) -> "Fit":
        """Fit the model, as ``mvi run`` does.

        ``data`` maps each name of the ``data {}`` block to a number, a (nested) list, a
        NumPy array or a pandas Series/DataFrame; shapes and integer-ness are checked
        exactly as for a JSON data file (matrices are row by row). ``method`` overrides
        the model's ``infer { method = … }``; keyword arguments override other ``infer``
        options (``samples=500``, ``rank=2``, ``seed=3``), as ``--set`` does.
        ``predictive=True`` (``--predictive``) adds the replicates ``<name>_rep`` of the
        observed data to :attr:`Fit.draws`, and ``loo=True`` the pointwise
        log-likelihoods that :meth:`Fit.loo` and ArviZ's ``log_likelihood`` group use.

        The fit releases the GIL (other threads run meanwhile); Ctrl-C stops it and raises
        ``KeyboardInterrupt``.
        """
        raw = _mvi.fit(self.source, self.name, self.model_dir, _data(data), method, infer_options)
        return Fit(raw)


def _model(source: str, name: str, model_dir: str) -> Model:
    """A model from its pickled state (:meth:`Model.__reduce__`)."""
    return Model(source, name=name, model_dir=model_dir)


def _data(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if data is None:
        return {}
    # a DataFrame as the whole data set: one entry per column
    if hasattr(data, "columns") and hasattr(data, "to_numpy") and not isinstance(data, Mapping):
        return {str(c): data[c] for c in data.columns}
    return data


def _column_major(block: np.ndarray, shape) -> np.ndarray:
    """Columns ``(draws, entries)`` in CmdStan's order (column-major: ``W.1.1, W.2.1, …``) as
    an array ``(draws, *shape)`` indexed ``[draw, row, column]``."""
    arr = block.reshape((block.shape[0], *reversed(shape)))
    if len(shape) > 1:
        arr = arr.transpose((0, *range(len(shape), 0, -1)))
    return np.ascontiguousarray(arr)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN equal to NaN (an entry no ``~`` observes)."""
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def _model_error(info: dict) -> ModelError:
    """A :class:`ModelError` from its parts (the extension's ``message``, ``code``, ``line``,
    ``column``, ``file``, ``diagnostics``; or a ``code``, ``message`` and ``help``)."""
    message = info.get("message", "")
    if "help" in info:
        text = f"{info['code']}\n\n  × {message}\n  help: {info['help']}"
        info = {"code": info["code"], "diagnostics": [(info["code"], message)]}
    else:
        text = message
    err = ModelError(text)
    err.code = info.get("code")
    err.line, err.column, err.file = info.get("line"), info.get("column"), info.get("file")
    err.diagnostics = list(info.get("diagnostics", []))
    return err


# NUTS's per-draw numbers: mvi's name (draws.csv's without the `__`), ArviZ's name, type.
_SAMPLER_STATS = [
    ("accept_stat", "acceptance_rate", np.float64),
    ("stepsize", "step_size", np.float64),
    ("treedepth", "tree_depth", np.int64),
    ("n_leapfrog", "n_steps", np.int64),
    ("divergent", "diverging", bool),
    ("energy", "energy", np.float64),
]


class Fit:
    """The result of :meth:`Model.fit`: draws, the summary table and the fit's numbers.

    Every number is the one ``mvi run`` writes to ``fit.json`` for the same model, data,
    method and seed (:meth:`to_json` gives that text).

    A fit pickles (as the extension's result: the draws and per-draw numbers as bytes, and
    the text of ``fit.json``), and two fits are equal when they hold the same result to the
    bit, the wall time in ``fit.json`` included: a fit and its unpickled copy are equal,
    two runs of the same fit are not (compare their numbers instead).
    """

    def __init__(self, raw: dict):
        self._raw = raw
        self._json = json.loads(raw["json"])
        n = raw["n_draws"]
        columns = raw["columns"]
        flat = np.frombuffer(raw["draws"], dtype="<f8").reshape(len(columns), n).T
        draws: dict[str, np.ndarray] = {}
        c0 = 0
        for name, shape in raw["blocks"]:
            size = int(np.prod(shape)) if shape else 1
            draws[name] = _column_major(flat[:, c0 : c0 + size], shape)
            c0 += size
        #: Draws of every parameter, reported ``let``, output of ``generated`` and (with
        #: ``predictive=True``) replicate ``<name>_rep``, shaped ``(draws, *declared shape)``.
        self.draws: dict[str, np.ndarray] = draws
        #: The outputs of the ``generated`` block (entries of :attr:`draws`).
        self.generated: list[str] = list(raw.get("generated", []))
        #: With ``predictive=True``: each replicate in :attr:`draws` and the data it
        #: replicates (``{"y_rep": "y"}``).
        self.replicates: dict[str, str] = dict(raw.get("replicates", []))
        #: The data that replicates and log-likelihoods refer to, by name, with its declared
        #: shape (integers for ``int`` and ``ints``); empty without ``predictive``/``loo``.
        self.observed_data: dict[str, np.ndarray] = {
            name: _column_major(np.frombuffer(values, dtype="<f8")[None, :], dims)[0].astype(
                np.int64 if integer else np.float64
            )
            for name, (dims, values, integer) in raw.get("observed", {}).items()
        }
        ll = raw.get("log_lik")
        #: With ``loo=True``: per observed data variable, its pointwise log-likelihood
        #: ``(draws, observations)``; ``None`` otherwise.
        self.log_lik: dict[str, np.ndarray] | None = None
        #: With ``loo=True`` and draws of an approximation q: per draw log p̃ − log q, the
        #: correction :meth:`loo` applies (Magnusson et al. 2019); ``None`` otherwise.
        self.log_correction: np.ndarray | None = None
        if ll is not None:
            total = sum(k for _, k in ll["vars"])
            values = np.frombuffer(ll["values"], dtype="<f8").reshape(total, n).T
            self.log_lik, c0 = {}, 0
            for name, k in ll["vars"]:
                self.log_lik[name] = np.ascontiguousarray(values[:, c0 : c0 + k])
                c0 += k
            if ll["correction"] is not None:
                self.log_correction = np.frombuffer(ll["correction"], dtype="<f8").copy()
        #: The names of the parameters (the other entries of :attr:`draws` are reported ``let``s).
        self.params: list[str] = list(raw["params"])
        #: Per draw: log p̃ on the unconstrained scale with the log-Jacobian (CmdStan's ``lp__``).
        self.lp = np.frombuffer(raw["lp"], dtype="<f8").copy()
        #: Per draw: the log density used in the importance ratio (``log_p__``).
        self.log_p = np.frombuffer(raw["log_p"], dtype="<f8").copy()
        #: Per draw: log q (``log_q__``); ``None`` where q has no density (particles).
        self.log_q = None if raw["log_q"] is None else np.frombuffer(raw["log_q"], dtype="<f8").copy()
        #: Per draw, for ``nuts``: the sampler's numbers under ArviZ's names (``acceptance_rate``,
        #: ``step_size``, ``tree_depth``, ``n_steps``, ``diverging``, ``energy``; draws.csv's
        #: ``accept_stat__`` … ``energy__``); empty for the other methods.
        self.sampler_stats: dict[str, np.ndarray] = {
            arviz_name: np.frombuffer(raw["sampler"][name], dtype="<f8").astype(dtype)
            for name, arviz_name, dtype in _SAMPLER_STATS
            if name in raw["sampler"]
        }

    def __reduce__(self):
        # the extension's result holds everything once; the arrays are rebuilt from it
        return (Fit, (self._raw,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fit):
            return NotImplemented
        return self._raw == other._raw

    def __hash__(self) -> int:
        return hash((self._raw["json"], self._raw["draws"]))

    # -- the fit's numbers ------------------------------------------------------------

    @property
    def method(self) -> str:
        """The method that made the fit."""
        return self._json["method"]

    @property
    def options(self) -> dict[str, str]:
        """Every ``infer`` option of the run, defaults filled in, as text."""
        return dict(self._json["options"])

    @property
    def elbo(self) -> float | None:
        """The ELBO estimated on fresh draws of q (``None`` where q has no density)."""
        e = self._json["elbo_fresh"]
        return None if e is None else e["value"]

    @property
    def elbo_se(self) -> float | None:
        """The standard error of :attr:`elbo`."""
        e = self._json["elbo_fresh"]
        return None if e is None else e["se"]

    @property
    def elbo_train(self) -> float | None:
        """The objective on the fixed training samples, where the method has one."""
        return self._json["elbo_train"]

    @property
    def log_evidence(self) -> float | None:
        """The Laplace log evidence, where computed."""
        return self._json["log_evidence"]

    @property
    def khat(self) -> float | None:
        """PSIS Pareto k̂ of log p̃ − log q over the draws (≤ 0.7: usable)."""
        return self._json["khat"]

    @property
    def theta(self) -> dict[str, float]:
        """The hyperparameters θ (constrained values), by CmdStan name."""
        return dict(self._json["theta"])

    @property
    def predict(self) -> dict | None:
        """The ``predict`` block's results (test LPD, lppd, error rate or MSE), or ``None``."""
        return self._json["predict"]

    @property
    def converged(self) -> bool:
        """Whether the method's stopping rule was met."""
        return self._json["converged"]

    @property
    def iterations(self) -> int:
        """Iterations of the main optimisation."""
        return self._json["iterations"]

    @property
    def notes(self) -> list[str]:
        """Warnings and remarks about the fit."""
        return list(self._json["notes"])

    @property
    def approximation(self) -> dict:
        """q on the unconstrained scale (kind, mean, covariance or components)."""
        return self._json["approximation"]

    @property
    def wall_time_s(self) -> float:
        """Wall time of the fit in seconds."""
        return self._json["wall_time_s"]

    def summary(self):
        """The CLI's parameter table as a pandas DataFrame: mean, sd, 5 %, 50 %, 95 % per column."""
        import pandas as pd

        params = self._json["parameters"]
        rows = [params[c] for c in self._raw["columns"]]
        frame = pd.DataFrame(
            {
                "mean": [r["mean"] for r in rows],
                "sd": [r["sd"] for r in rows],
                "5%": [r["q5"] for r in rows],
                "50%": [r["q50"] for r in rows],
                "95%": [r["q95"] for r in rows],
            },
            index=pd.Index(self._raw["columns"], name="parameter"),
            dtype=float,
        )
        return frame

    def loo(self) -> dict:
        """PSIS-LOO of a fit made with ``loo=True``: the numbers ``mvi loo --json`` prints.

        A dict with ``elpd_loo``, ``se``, ``p_loo``, ``lppd``, ``looic``, ``n_draws``,
        ``n_obs``, ``n_high_k`` (observations with k̂ above ``good_k``), ``good_k``,
        ``corrected`` (draws of an approximation, importance-corrected as Magnusson et
        al. 2019), ``khat_correction``, and per observation as NumPy arrays ``elpd_i``,
        ``p_loo_i`` and ``pareto_k``. Non-finite numbers are NaN. r_eff is 1.

        Raises :class:`ModelError` for a fit made without ``loo=True``, or when a ``~``
        scores a whole data vector as one observation (the diagnostic says how to split it).
        """
        if self._raw.get("loo_error") is not None:
            raise _model_error(self._raw["loo_error"])
        if self._raw.get("loo") is None:
            raise _model_error(
                {
                    "code": "mvi::run::no_log_lik",
                    "message": "the fit has no pointwise log-likelihood",
                    "help": "fit with `loo=True`: `model.fit(data, loo=True)` (as `mvi loo` does)",
                }
            )
        value = json.loads(self._raw["loo"])
        pointwise = value.pop("pointwise")
        out: dict[str, Any] = {}
        for key, v in value.items():
            floats = ("elpd_loo", "se", "p_loo", "lppd", "looic", "good_k")
            out[key] = (np.nan if v is None else float(v)) if key in floats else v
        for key, name in (("elpd", "elpd_i"), ("p_loo", "p_loo_i"), ("khat", "pareto_k")):
            out[name] = np.array([np.nan if p[key] is None else p[key] for p in pointwise], dtype=float)
        return out

    def to_json(self) -> str:
        """The text of ``fit.json`` as ``mvi run --output-dir`` writes it."""
        return self._raw["json"]

    def __str__(self) -> str:
        return self._raw["summary"]

    def __repr__(self) -> str:
        return f"<mvi.Fit {self.method}: {len(self.lp)} draws of {', '.join(self.draws)}>"

    def to_arviz(self):
        """The fit as ArviZ data (``xarray.DataTree``, arviz-base).

        Groups: ``posterior`` (each parameter, reported ``let`` and output of
        ``generated``; one chain, or the sampler's chains for ``nuts``), and
        ``sample_stats`` with ``lp`` (log p̃ with the log-Jacobian), ``log_p``, where q has
        a density ``log_q``, and for ``nuts`` the sampler's numbers (:attr:`sampler_stats`:
        ``diverging``, ``energy``, ``tree_depth``, … as ArviZ names them). A fit made with
        ``predictive=True`` adds ``posterior_predictive`` (each replicate ``y_rep`` under
        its data's name ``y``, as PyMC and NumPyro name it); with ``loo=True``,
        ``log_likelihood`` (per observed variable, ``(chain, draw, *observations)``); with
        either, ``observed_data``. The fit's method, options and numbers are attributes of
        the tree and of the sampled groups.

        ``arviz_stats.loo(tree)`` estimates r_eff from the chains where ``mvi`` takes 1
        (``arviz_stats.loo(tree, reff=1.0)`` gives :meth:`loo`'s numbers for ``nuts``); for
        draws of an approximation, only :meth:`loo` applies the importance correction.
        """
        from arviz_base import from_dict

        # MCMC draws are chain 1's, then chain 2's, …: one ArviZ chain per sampler chain (so
        # R-hat and ESS are defined); the draws of other methods are one chain.
        lengths = (self._json.get("mcmc") or {}).get("draws_per_chain") or [len(self.lp)]
        chains = len(lengths) if len(set(lengths)) == 1 and sum(lengths) == len(self.lp) else 1

        def by_chain(arr):
            return arr.reshape((chains, arr.shape[0] // chains, *arr.shape[1:]))

        posterior = {name: by_chain(arr) for name, arr in self.draws.items() if name not in self.replicates}
        stats = {"lp": by_chain(self.lp), "log_p": by_chain(self.log_p)}
        if self.log_q is not None:
            stats["log_q"] = by_chain(self.log_q)
        stats.update({name: by_chain(arr) for name, arr in self.sampler_stats.items()})
        dims = {name: [f"{name}_dim_{i}" for i in range(arr.ndim - 1)] for name, arr in self.draws.items()}
        attrs = {
            "inference_library": "mvi",
            "inference_library_version": self._json["mvi_version"],
            "method": self.method,
            "seed": self._json["seed"],
            "iterations": self.iterations,
            "converged": int(self.converged),
            "options": json.dumps(self.options, sort_keys=True),
        }
        for key in ("elbo", "elbo_se", "elbo_train", "log_evidence", "khat"):
            value = getattr(self, key)
            if value is not None:
                attrs[key] = value
        for name, value in self.theta.items():
            attrs[f"theta.{name}"] = value
        groups = {"posterior": posterior, "sample_stats": stats}
        if self.replicates:
            groups["posterior_predictive"] = {
                obs: by_chain(self._replicate(rep, obs)) for rep, obs in self.replicates.items()
            }
        if self.observed_data:
            groups["observed_data"] = dict(self.observed_data)
        for name, arr in self.observed_data.items():
            dims[name] = [f"{name}_dim_{i}" for i in range(arr.ndim)]
        group_attrs = {g: attrs for g in groups if g != "observed_data"}
        tree = from_dict(groups, dims=dims, index_origin=1, attrs=group_attrs)
        if self.log_lik is not None:
            log_lik, ll_dims = self._log_lik_arrays()
            group = {name: by_chain(arr) for name, arr in log_lik.items()}
            ll_tree = from_dict({"log_likelihood": group}, dims=ll_dims, index_origin=1, attrs={"log_likelihood": attrs})
            tree["log_likelihood"] = ll_tree["log_likelihood"]
        tree.attrs.update(attrs)
        return tree

    def _replicate(self, rep: str, obs: str) -> np.ndarray:
        """A replicate's draws, as integers when its data are (and every entry is observed)."""
        arr = self.draws[rep]
        data = self.observed_data.get(obs)
        if data is not None and data.dtype.kind == "i" and np.all(np.isfinite(arr)):
            return arr.astype(np.int64)
        return arr

    def _log_lik_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
        """The pointwise log-likelihoods shaped and named as ArviZ wants them: in the shape of
        the observed data when there is one term per entry (the dims of ``observed_data``,
        so ``loo_pit`` pairs them), with the data's first dim when one per row, else a dim
        ``<name>_obs``."""
        observed = np.frombuffer(self._raw["log_lik"]["observed"], dtype="<f8")
        arrays, dims, c0 = {}, {}, 0
        for name, arr in self.log_lik.items():
            k = arr.shape[1]
            scored, c0 = observed[c0 : c0 + k], c0 + k
            data = self.observed_data.get(name)
            if data is not None and data.size == k and _same(data.flatten(order="F"), scored):
                arrays[name] = _column_major(arr, data.shape)
                dims[name] = [f"{name}_dim_{i}" for i in range(data.ndim)]
            elif data is not None and data.ndim == 2 and data.shape[0] == k:
                arrays[name] = arr
                dims[name] = [f"{name}_dim_0"]
            else:
                arrays[name] = arr
                dims[name] = [f"{name}_obs"]
        return arrays, dims


def compare(model: Model, data: Mapping[str, Any] | None = None, methods: Iterable[str] | None = None, **infer_options: Any):
    """Fit several methods as ``mvi compare`` does and return its table as a DataFrame.

    One row per method that ran: fresh ELBO and its se, Laplace log evidence, k̂, the
    ``predict`` block's test LPD (per point) and error rate or MSE, wall time, iterations
    and whether it converged. A method that fails on the model (no mode, diverged) is a
    finding of the comparison: a warning carries its diagnostic and it has no row. Keyword
    arguments go to the methods that take them (``samples`` is not given to ``laplace``).
    """
    import pandas as pd

    methods = list(_METHODS_DEFAULT if methods is None else methods)
    raw = _mvi.compare(model.source, model.name, model.model_dir, _data(data), methods, infer_options)
    for method, message in raw["failed"]:
        warnings.warn(f"{method} failed:\n{message}", RuntimeWarning, stacklevel=2)
    rows = []
    for m in json.loads(raw["json"])["methods"]:
        p = m["predict"] or {}
        e = m["elbo_fresh"] or {}
        rows.append(
            {
                "method": m["method"],
                "elbo": e.get("value"),
                "elbo_se": e.get("se"),
                "log_evidence": m["log_evidence"],
                "khat": m["khat"],
                "test_lpd": p.get("test_lpd_per_point"),
                "error_rate": p.get("error_rate"),
                "mse": p.get("mse"),
                "wall_time_s": m["wall_time_s"],
                "iterations": m["iterations"],
                "converged": m["converged"],
            }
        )
    frame = pd.DataFrame(rows).set_index("method")
    num = ["elbo", "elbo_se", "log_evidence", "khat", "test_lpd", "error_rate", "mse", "wall_time_s"]
    frame[num] = frame[num].astype(float)
    frame.attrs["table"] = raw["table"]
    return frame


def compare_models(
    models: Mapping[str, "Model | Fit"] | Iterable["Model | Fit"],
    data: Mapping[str, Any] | None = None,
    method: str | None = None,
    **infer_options: Any,
):
    """Rank models by PSIS-LOO, as ``mvi compare-models`` does; ArviZ's ``compare`` table.

    ``models`` is a mapping of names to models (or to fits made with ``loo=True``), or a
    list of them, named by their files (``model.name``; for a fit, its ``fit.json``'s
    model). Each model is fitted to ``data`` with ``loo=True``, ``method`` and the
    ``infer`` options, as :meth:`Model.fit` takes them. Returns a DataFrame indexed by
    model name, best first, with ArviZ's columns ``rank`` (0 for the best), ``elpd_loo``,
    ``p_loo``, ``elpd_diff``, ``weight`` (stacking), ``se``, ``dse`` and ``warning``
    (some k̂ too high); ``frame.attrs["table"]`` is the text the CLI prints.

    Raises :class:`ModelError` when a fit fails, has no LOO, or the models observe
    different data.
    """
    import pandas as pd

    if isinstance(models, Mapping):
        named = list(models.items())
    else:
        named = [(m.name if isinstance(m, Model) else m._json["model"], m) for m in models]
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise ValueError(f"models must have different names, but they are {names}: pass a dict of name → model")
    if not named:
        raise ValueError("compare_models needs at least one model")
    options = dict(infer_options, loo=True)
    inputs = []
    for name, m in named:
        if isinstance(m, Model):
            fit = m.fit(data=data, method=method, **options)
        elif isinstance(m, Fit):
            fit = m
        else:
            raise TypeError(f"compare_models compares mvi.Model or mvi.Fit objects, not {type(m).__name__}")
        fit.loo()  # a fit without LOO, or with a `~` that is not pointwise, raises here
        ll = fit._raw["log_lik"]
        inputs.append((str(name), fit.method, len(fit.lp), ll["values"], ll["observed"], ll["correction"]))
    text_json, table = _mvi.compare_models(inputs)
    rows = json.loads(text_json)["models"]
    columns = ["rank", "elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse", "warning"]
    frame = pd.DataFrame([{c: r[c] for c in columns} for r in rows], index=[r["model"] for r in rows], columns=columns)
    floats = ["elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse"]
    frame[floats] = frame[floats].astype(float)
    frame["rank"] = frame["rank"].astype(int)
    frame["warning"] = frame["warning"].astype(bool)
    frame.attrs["table"] = table
    return frame


def fit_many(
    model: Model,
    datasets: Iterable[Mapping[str, Any] | None],
    client: Any = None,
    **fit_options: Any,
) -> list[Fit]:
    """Fit one model to each of several data sets; return the fits in the data sets' order.

    For per-group fits, cross-validation folds and simulation studies. ``fit_options`` are
    :meth:`Model.fit`'s (``method="laplace"``, ``seed=3``, ``samples=500``), the same for
    every data set. Each data set is what :meth:`Model.fit` takes as ``data``.

    ``client`` says where the fits run:

    - ``None``: threads of this process (a fit releases the GIL, so they run side by side),
      as many as there are cores (or data sets, if fewer);
    - a ``dask.distributed.Client``: its cluster's workers, which need ``mvi`` installed
      (``pip install 'mvi[dask]'`` installs Dask). The model and each data set are
      pickled to the worker that fits them and the fit comes back pickled; data sets may
      also be futures of data already on the cluster (``client.scatter(datasets)``);
    - any ``concurrent.futures.Executor``. A ``ProcessPoolExecutor`` must start its
      processes with ``mp_context=multiprocessing.get_context("spawn")`` (or
      ``"forkserver"``): a process forked after a fit has run here inherits the library's
      thread pool without its threads, and its first fit never ends.

    A fit is the same to the bit wherever it runs. The call returns every fit or raises:

    - a data set whose fit fails (bad data, a fit that fails) raises :class:`ModelError`
      naming the data set by its index (``err.index``), with the fit's own diagnostic
      (``code``, ``line``, ``column``, ``file``, ``diagnostics`` as for :meth:`Model.fit`)
      and the original error as ``__cause__``; when several fail, the first in order among
      those finished when the first failure was seen. Other errors in a fit are raised as
      they are, with a note naming the data set;
    - a client that is closed or whose cluster is gone raises the client's own error
      (``distributed.client.ClosedClientError``, for instance).

    Either way the fits not yet finished are cancelled (one already running on a thread
    runs to its end; its result is dropped) and no fit is returned.
    """
    if not isinstance(model, Model):
        raise TypeError(f"fit_many fits an mvi.Model, not {type(model).__name__}")
    if "data" in fit_options:
        raise TypeError("fit_many takes the data as `datasets`, one fit per data set, not `data=`")
    datasets = list(datasets)
    if client is None:
        workers = max(1, min(len(datasets), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mvi-fit") as pool:
            return _fit_all(pool, model, datasets, fit_options)
    if not hasattr(client, "submit"):
        raise TypeError(
            f"client is a dask.distributed.Client or a concurrent.futures.Executor, not {type(client).__name__}"
        )
    return _fit_all(client, model, datasets, fit_options)


def _fit_one(model: Model, data: Mapping[str, Any] | None, fit_options: dict[str, Any]) -> Fit:
    """One task of :func:`fit_many` (a module-level function, so workers find it by name)."""
    return model.fit(data=data, **fit_options)


def _is_dask(client: Any) -> bool:
    return type(client).__module__.split(".")[0] == "distributed" and hasattr(client, "gather")


def _fit_all(client: Any, model: Model, datasets: list, fit_options: dict[str, Any]) -> list[Fit]:
    dask = _is_dask(client)
    # dask: a random key per task (a pure task with equal arguments would be computed once
    # and shared), and the options as one argument so none is taken for `submit`'s own
    extra = {"pure": False} if dask else {}
    futures: list = []
    try:
        for data in datasets:
            futures.append(client.submit(_fit_one, model, data, fit_options, **extra))
        failure = _first_failure(futures, dask)
        if failure is None:
            return list(client.gather(futures)) if dask else [f.result() for f in futures]
    except BaseException:
        _cancel(client, futures, dask)
        raise
    _cancel(client, futures, dask)
    index, error = failure
    if isinstance(error, (ModelError, TypeError)):
        raise _data_set_error(index, len(datasets), error) from error
    error.add_note(f"(fitting data set {index} of {len(datasets)} in mvi.fit_many)")
    raise error


def _first_failure(futures: list, dask: bool) -> tuple[int, BaseException] | None:
    """Wait until every fit is done or one has failed; the failed fit first in order, if any."""
    if dask:
        from distributed import as_completed

        for future in as_completed(futures):
            if future.status == "error":
                break
        failed = [i for i, f in enumerate(futures) if f.status == "error"]
    else:
        concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        failed = [i for i, f in enumerate(futures) if f.done() and not f.cancelled() and f.exception() is not None]
    if not failed:
        return None
    return failed[0], futures[failed[0]].exception()


def _cancel(client: Any, futures: list, dask: bool) -> None:
    # Best effort: the error that stopped the fits is the one to raise, not a failure to
    # cancel the rest (a closed client refuses to cancel as well).
    try:
        if dask:
            client.cancel(futures)
        else:
            for f in futures:
                f.cancel()
    except Exception:
        pass


def _data_set_error(index: int, n: int, error: BaseException) -> ModelError:
    err = ModelError(f"data set {index} (of {n}, counting from 0) failed:\n{error}")
    err.index = index
    for name in ("code", "line", "column", "file", "diagnostics"):
        setattr(err, name, getattr(error, name, [] if name == "diagnostics" else None))
    return err


class Sbc:
    """The result of :func:`sbc`: the summary ``mvi sbc --json`` prints, and the ranks.

    ``result`` is that JSON object as a dict (``parameters`` a list of ``{name, calibrated,
    p_value, shape, …}``, ``method``, ``done``, ``failed``, ``notes``); ``parameters`` the
    same per column as a pandas DataFrame; ``ranks`` a DataFrame with one row per simulation
    whose fit succeeded (in simulation order) and one column per ranked quantity;
    ``simulations`` every simulation as computed (index, ranks, VSBC's p's, failure).
    """

    def __init__(self, result: dict[str, Any], simulations: list[dict[str, Any]]):
        import pandas as pd

        self.result = result
        self.simulations = simulations
        self.parameters = pd.DataFrame(
            [{k: p[k] for k in ("name", "calibrated", "p_value", "shape")} for p in result["parameters"]]
        )
        names = [p["name"] for p in result["parameters"]]
        ok = [s for s in simulations if s["failure"] is None]
        self.ranks = pd.DataFrame([s["ranks"] for s in ok], columns=names, index=[s["index"] + 1 for s in ok])
        self.ranks.index.name = "sim"

    @property
    def calibrated(self) -> bool:
        """Whether every ranked quantity passed its test."""
        return all(p["calibrated"] for p in self.result["parameters"])

    def __repr__(self) -> str:
        flagged = [p["name"] for p in self.result["parameters"] if not p["calibrated"]]
        return (
            f"<mvi.Sbc {self.result['method']}: {self.result['done']} simulations, "
            f"{len(flagged)} of {len(self.result['parameters'])} miscalibrated {flagged}>"
        )


def sbc(
    model: Model,
    data: Mapping[str, Any] | None = None,
    method: str | None = None,
    sims: int = 100,
    rank_draws: int = 99,
    client: Any = None,
    chunk: int | None = None,
    **infer_options: Any,
) -> Sbc:
    """Simulation-based calibration of ``method`` on ``model``, as ``mvi sbc`` does.

    Each simulation draws the parameters from the prior and the data from the model (sizes
    and covariates from ``data``; the values of every variable on the left of a ``~`` are
    replaced), fits them with ``method`` (``infer_options`` as for :meth:`Model.fit`) and
    ranks each true value among ``rank_draws`` draws of the fit. Simulation i depends only
    on the seed and i: the result is the same to the bit wherever the simulations run.

    ``client`` says where: ``None`` runs every simulation on this process's cores; a
    ``dask.distributed.Client`` (or any ``concurrent.futures.Executor``) gets the
    simulations in chunks of ``chunk`` (default ``sims // 16``, at least 1), each chunk run on its worker's cores.
    """
    if not isinstance(model, Model):
        raise TypeError(f"sbc calibrates an mvi.Model, not {type(model).__name__}")
    if sims < 1:
        raise ValueError(f"sims={sims}: there is nothing to calibrate; give the number of simulations, e.g. 200")
    data = _data(data)
    args = (model.source, model.name, model.model_dir, data)
    if client is None:
        simulations = list(_mvi.sbc_simulations(*args, list(range(sims)), rank_draws, method, infer_options))
    else:
        if not hasattr(client, "submit"):
            raise TypeError(
                f"client is a dask.distributed.Client or a concurrent.futures.Executor, not {type(client).__name__}"
            )
        size = chunk or max(1, sims // 16)
        chunks = [list(range(i, min(sims, i + size))) for i in range(0, sims, size)]
        dask = _is_dask(client)
        extra = {"pure": False} if dask else {}
        futures = [
            client.submit(_sbc_chunk, args, c, rank_draws, method, infer_options, **extra) for c in chunks
        ]
        try:
            parts = client.gather(futures) if dask else [f.result() for f in futures]
        except BaseException:
            _cancel(client, futures, dask)
            raise
        simulations = [s for part in parts for s in part]
    summary = _mvi.sbc_summary(*args, simulations, sims, rank_draws, method, infer_options)
    return Sbc(json.loads(summary), simulations)


def _sbc_chunk(args: tuple, indices: list[int], rank_draws: int, method: str | None, options: dict) -> list:
    """One task of :func:`sbc` (module level, so workers find it by name)."""
    return list(_mvi.sbc_simulations(*args, indices, rank_draws, method, options))
