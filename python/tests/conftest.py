"""Shared fixtures: the repository's examples and the `mvi` command-line binary."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `mvi` binary: $MVI_CLI, else target/debug/mvi (built with cargo when missing)."""
    given = os.environ.get("MVI_CLI")
    if given:
        return Path(given)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = target / "debug" / "mvi"
    if not binary.exists():
        cargo = shutil.which("cargo")
        assert cargo, "the CLI comparison needs the `mvi` binary: set MVI_CLI or install cargo"
        subprocess.run([cargo, "build", "--quiet", "--bin", "mvi"], cwd=ROOT, check=True)
    return binary


def example_data(name: str) -> dict:
    with open(EXAMPLES / "data" / f"{name}.json", encoding="utf-8") as f:
        return json.load(f)
