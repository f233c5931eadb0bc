"""What test modules share: the project's paths and the TensorFlow marker.

Test modules import these from here (``from helpers import ROOT``), never from
``conftest``: pytest loads conftest.py itself, and importing it again under another name
(``tests.conftest``) would run it twice. Fixtures stay in conftest.py (and the local
backend's in local_helpers.py).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

#: The project's root (the repository).
ROOT = Path(__file__).resolve().parents[1]
#: The CustomResourceDefinitions the Kubernetes manifests are validated against (vendored; see its README.md).
CRDS = ROOT / "tests" / "data" / "crds"
#: The console scripts of the interpreter running the tests.
BIN = Path(sys.executable).parent


def has_tensorflow() -> bool:
    """True when TensorFlow can be imported (the ``tf`` extra is installed)."""
    return importlib.util.find_spec("tensorflow") is not None


#: Skip a test cleanly when TensorFlow is absent; under CI (CI=true) TF must be there.
requires_tf = pytest.mark.skipif(
    not has_tensorflow() and os.environ.get("CI") != "true", reason="TensorFlow is not installed (pip install -e '.[tf]')"
)


def need_in_ci(condition: bool, reason: str) -> None:
    """Skip when ``condition`` fails, except under CI=true, where it is a failure."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the container tests: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def cli_words() -> Iterator[None]:
    """A :class:`~tfjob.errors.UsageError` (a SpecError…) raised inside, in the words the CLI
    prints (flags): for matching a message as ``tfjob`` says it, without going through the CLI."""
    from tfjob.backends import flag_words
    from tfjob.errors import UsageError

    try:
        yield
    except UsageError as e:
        raise type(e)(e.worded("cli", flag_words)) from e


def apt_install(*packages: str, timeout: float = 900) -> None:
    """``apt-get install`` Debian ``packages`` (as root, under CI=true; the caller checks the
    result). Test workers running side by side (``pytest -n``) may install at the same time:
    each waits for dpkg's lock instead of failing on it."""
    import subprocess

    subprocess.run(
        ["apt-get", "install", "-y", "-q", "-o", f"DPkg::Lock::Timeout={int(timeout)}", *packages],
        capture_output=True,
        timeout=timeout * 2,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
