"""Write data in Stan's JSON format, compactly: one matrix row per line.

Shared by the make_*.py scripts in this folder (numpy only). Reals are written with
repr(), which round-trips float64 exactly, so values computed from the arrays in a
script (e.g. exact posteriors) match what a reader of the file sees.
"""
import json

import numpy as np


def _value(v):
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    a = np.asarray(v)
    if a.ndim == 1:
        return "[" + ", ".join(_value(x) for x in a.tolist()) + "]"
    if a.ndim == 2:
        rows = ",\n    ".join(_value(row) for row in a)
        return "[\n    " + rows + "\n  ]"
    raise ValueError(f"unsupported rank {a.ndim}")


def dump(path, entries):
    """Write {name: int | float | 1-D or 2-D array} to `path` as Stan-style JSON."""
    body = ",\n".join(f"  {json.dumps(k)}: {_value(v)}" for k, v in entries.items())
    with open(path, "w") as f:
        f.write("{\n" + body + "\n}\n")
    with open(path) as f:  # make sure what we wrote is valid JSON
        json.load(f)
