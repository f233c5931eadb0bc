"""The suite's own rules, checked through pytest runs of their own: a golden file is
rewritten only when the run asks (``--update-golden``), never by an exported variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

INNER = """
import os
from pathlib import Path

from helpers import golden_text


def test_golden(tmp_path):
    golden = Path(os.environ["GOLDEN_FILE"])
    assert "TFJOB_REGEN_GOLDEN" not in os.environ
    print("golden now:", golden_text(golden, "rendered now\\n").strip())
"""


def _inner(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # This suite's conftest.py as a plugin of a run in another directory (its option, its clearing).
    (tmp_path / "test_inner.py").write_text(INNER)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "conftest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0",
         *args, "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip


@pytest.mark.parametrize("exported", ["TFJOB_UPDATE_GOLDEN", "TFJOB_REGEN_GOLDEN"])
def test_an_exported_variable_does_not_rewrite_goldens(tmp_path: Path, exported: str) -> None:
    golden = tmp_path / "golden.txt"
    golden.write_text("as reviewed\n")
    done = _inner(tmp_path, env={exported: "1", "GOLDEN_FILE": str(golden)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden now: as reviewed" in done.stdout
    assert golden.read_text() == "as reviewed\n"


def test_update_golden_rewrites_them(tmp_path: Path) -> None:
    golden = tmp_path / "golden.txt"
    golden.write_text("as reviewed\n")
    done = _inner(tmp_path, "--update-golden", env={"TFJOB_REGEN_GOLDEN": "1", "GOLDEN_FILE": str(golden)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden now: rendered now" in done.stdout
    assert golden.read_text() == "rendered now\n"
