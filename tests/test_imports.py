"""``tfjob --help`` stays fast: the CLI imports no cloud client, TensorFlow, Kubernetes or Optuna.

Each check runs in a fresh interpreter and compares ``sys.modules`` with that of a bare
interpreter (the google-cloud packages install a ``.pth`` file that pre-imports the empty
``google`` / ``google.cloud`` namespaces at start-up: those do not count).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Top-level packages the CLI must not import before a command needs them.
HEAVY = ("tensorflow", "keras", "tf_keras", "kubernetes", "optuna", "google", "kfp")

_REPORT = """
import json, sys
code = 0
try:
    {statement}
except SystemExit as e:
    code = e.code or 0
with open({out!r}, "w") as f:
    json.dump({{"code": code, "modules": sorted(sys.modules)}}, f)
"""


def modules_after(statement: str, tmp_path: Path) -> tuple[int, set[str]]:
    """Run ``statement`` in a fresh interpreter; its exit code and the modules it had loaded."""
    out = tmp_path / "modules.json"
    code = _REPORT.format(statement=statement, out=str(out))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=dict(os.environ), capture_output=True)
    data = json.loads(out.read_text())
    return data["code"], set(data["modules"])


_BASELINE: set[str] = set()


def heavy_modules(statement: str, tmp_path: Path) -> tuple[int, list[str]]:
    if not _BASELINE:
        _BASELINE.update(modules_after("pass", tmp_path)[1])
    code, loaded = modules_after(statement, tmp_path)
    return code, sorted(m for m in loaded - _BASELINE if m.split(".")[0] in HEAVY)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["submit", "--help"],
        ["render", "--help"],
        ["machines", "--json"],
        ["--version"],
        ["render", "gs://b/trainer-0.1.tar.gz", "-m", "trainer.task", "--workers", "2", "--backend", "ai-platform"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_cli_commands_that_need_no_cloud_import_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    code, heavy = heavy_modules(f"from tfjob.cli.main import main; main({argv!r})", tmp_path)
    assert code == 0
    assert heavy == [], f"tfjob {' '.join(argv)} imported {heavy}"


def test_importing_the_cli_and_the_sdk_imports_nothing_heavy(tmp_path: Path) -> None:
    statement = "import tfjob.cli.main, tfjob.description.spec, tfjob.job, tfjob.config.job, tfjob.backends.aiplatform.render, tfjob.backends.aiplatform.backend, tfjob.pipelines.step"
    code, heavy = heavy_modules(statement, tmp_path)
    assert (code, heavy) == (0, [])


def test_the_bootstrap_help_imports_nothing_heavy(tmp_path: Path) -> None:
    code, heavy = heavy_modules("from tfjob.container.bootstrap import main; main(['--help'])", tmp_path)
    assert (code, heavy) == (0, [])


def test_the_check_itself_sees_a_heavy_import(tmp_path: Path) -> None:
    # Guard against a check that cannot fail: a real Google client import is reported.
    code, heavy = heavy_modules("import google.protobuf", tmp_path)
    assert code == 0 and "google.protobuf" in heavy
