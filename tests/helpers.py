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
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator

import pytest

#: The project's root (the repository).
ROOT = Path(__file__).resolve().parents[1]
#: The CustomResourceDefinitions the Kubernetes manifests are validated against (vendored; see its README.md).
CRDS = ROOT / "tests" / "data" / "crds"
#: The console scripts of the interpreter running the tests.
BIN = Path(sys.executable).parent
#: The machine's home directory, before any test pinned its own (conftest.py gives each test one).
REAL_HOME = Path.home()


def has_tensorflow() -> bool:
    """True when TensorFlow can be imported (the ``tf`` extra is installed)."""
    return importlib.util.find_spec("tensorflow") is not None


def in_ci() -> bool:
    """True under CI: ``CI`` set to anything but empty, ``0``, ``false``, ``no`` or ``off``
    (CI services say ``true``, ``True`` or ``1``; ``.ci/run`` says ``true``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


#: Skip a test cleanly when TensorFlow is absent; under CI TF must be there (the test runs, and fails).
requires_tf = pytest.mark.skipif(not has_tensorflow() and not in_ci(), reason="TensorFlow is not installed (pip install -e '.[tf]')")


def need_in_ci(condition: bool, reason: str) -> None:
    """Skip when ``condition`` fails, except under CI (:func:`in_ci`), where it is a failure.

    Every skip in the suite goes through here, so CI never skips silently. It may be called
    at a module's top level too (it then skips, or fails, the whole module).
    """
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI must run this test: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str, install: str) -> ModuleType:
    """The module ``name`` imported, or a skip (a failure under CI) saying ``install``
    (how to get it, e.g. ``pip install -e '.[tf]'``): :func:`pytest.importorskip` through
    :func:`need_in_ci`."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        need_in_ci(False, f"{name} cannot be imported ({e}): {install}")
        raise  # pragma: no cover - need_in_ci raised


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


def apt_install(*packages: str, timeout: float = 900) -> str:
    """``apt-get install`` Debian ``packages`` (as root, under CI); return "" on success, else
    the end of apt's output, for the caller's :func:`need_in_ci` message (the caller then
    checks that what it needs is there). Test workers running side by side (``pytest -n``)
    may install at the same time: each waits for dpkg's lock instead of failing on it. A
    package apt's lists do not know yet is looked up again after ``apt-get update``."""
    import subprocess

    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    argv = ["apt-get", "install", "-y", "-q", "-o", f"DPkg::Lock::Timeout={int(timeout)}", *packages]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * 2, env=env)
        if done.returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, timeout=timeout, env=env)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * 2, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"apt-get install {' '.join(packages)}: {e}"
    if done.returncode == 0:
        return ""
    return f"apt-get install {' '.join(packages)} exited {done.returncode}: {(done.stdout + done.stderr)[-1500:]}"


#: The one switch that rewrites golden files: set by conftest.py from ``pytest --update-golden``
#: only (it clears this and the old TFJOB_REGEN_GOLDEN from the environment otherwise).
UPDATE_GOLDEN = "TFJOB_UPDATE_GOLDEN"


def golden_text(path: Path, text: str) -> str:
    """The golden file ``path``'s text, first rewritten as ``text`` under ``pytest
    --update-golden`` (then review the diff); the caller compares. A missing file fails."""
    if os.environ.get(UPDATE_GOLDEN) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} is missing; create it with `pytest --update-golden` and review it"
    return path.read_text()


def write_trainer(root: Path, task: str = "print('training')\n") -> Path:
    """A trainer package at ``root/trainer`` (``trainer.task`` holding ``task``); its folder."""
    package = root / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(task)
    return package


_SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def readme_section_blocks(heading: str) -> list[str]:
    """The shell blocks of the README's section ``heading`` (its ``### …`` line), in order, to
    the next heading of its level or above (blocks the whole-README test may skip too)."""
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    end = min(i for i in (text.find("\n## ", start), text.find("\n### ", start + 1), len(text)) if i != -1)
    return _SH_BLOCK.findall(text[start:end])


def run_shell_blocks(blocks: Iterable[str], cwd: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Each block run as written (``bash -euo pipefail``), in order, in ``cwd``; each asserted to succeed."""
    done = []
    for code in blocks:
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"README example failed:\n{code}\n--- stdout\n{out.stdout[-4000:]}\n--- stderr\n{out.stderr[-4000:]}"
        done.append(out)
    return done


def one_error(out: Any, code: int, *needles: str) -> str:
    """The one ``error:`` line a refused command printed, ``out`` a finished process or a
    ``CliRunner`` result: asserted exit ``code``, no traceback, each of ``needles`` in the line."""
    exit_code = out.returncode if isinstance(out, subprocess.CompletedProcess) else out.exit_code
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert exit_code == code and len(errors) == 1, (exit_code, out.stderr[-3000:])
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]
