"""Shared test fixtures: every test runs with its own TFJOB_HOME and no cloud settings."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# ParameterServerStrategy with Keras fit needs Keras 2 (tf-keras); set before anything imports TF.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The reliability suite's recorder (`reliability` fixture) and its one-line summary.
pytest_plugins = ["reliability"]

ROOT = Path(__file__).resolve().parents[1]
#: The CustomResourceDefinitions the Kubernetes manifests are validated against (vendored; see its README.md).
CRDS = ROOT / "tests" / "data" / "crds"
#: The console scripts of the interpreter running the tests.
BIN = Path(sys.executable).parent

_CLOUD_VARS = (
    "TFJOB_PROJECT",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
    "TFJOB_REGION",
    "CLOUDSDK_AI_REGION",
    "GOOGLE_CLOUD_REGION",
    "TFJOB_STAGING_BUCKET",
    "TFJOB_API_ENDPOINT",
    "TFJOB_BACKEND",
    "TFJOB_NAMESPACE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "KUBECONFIG",
)


def has_tensorflow() -> bool:
    """True when TensorFlow can be imported (the ``tf`` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None


#: Skip a test cleanly when TensorFlow is absent; under CI (CI=true) TF must be there.
requires_tf = pytest.mark.skipif(
    not has_tensorflow() and os.environ.get("CI") != "true", reason="TensorFlow is not installed (pip install -e '.[tf]')"
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TFJOB_HOME and an environment without cloud settings or TF_CONFIG."""
    home = tmp_path / "tfjob-home"
    monkeypatch.setenv("TFJOB_HOME", str(home))
    for var in _CLOUD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    return home


@pytest.fixture
def tfjob_exe() -> str:
    """Path of the installed ``tfjob`` console script."""
    exe = BIN / "tfjob"
    return str(exe) if exe.exists() else shutil.which("tfjob") or "tfjob"
