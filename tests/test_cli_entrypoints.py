"""``python -m tfjob`` and ``python -m tfjob.cli`` are the ``tfjob`` command."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["tfjob", "tfjob.cli"])
def test_python_dash_m_runs_the_cli(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "tfjob 0.1.0\n", "")
    bad = subprocess.run([sys.executable, "-m", module, "submit", "--workers", "x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and len(bad.stderr.splitlines()) == 1
