#!/usr/bin/env bash
# Create benches/peers/.venv-peers/ with the pinned NumPyro stack from PyPI.
#   benches/peers/setup.sh            # uses python3 from PATH
#   PYTHON=python3.11 benches/peers/setup.sh
# Re-running is safe: an existing virtualenv is reused and brought to the pinned versions.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-peers"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$venv/bin/python" -c 'import jax, numpyro, numpy; print("jax", jax.__version__, "numpyro", numpyro.__version__, "numpy", numpy.__version__)'
echo "ready: $venv/bin/python"
