"""ruff and mypy, as configured in pyproject.toml, report nothing on what they check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import ROOT


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_public_api(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.startswith("Success: no issues found"), done.stdout + done.stderr
