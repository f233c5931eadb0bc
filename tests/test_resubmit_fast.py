"""The unchanged re-submit's fast path (issue 25.7): what a build-cache hit does not pay for.

The figure is bench's ``resubmit.unchanged`` (≤ 6× ``python -c pass``); these tests hold the
reasons it is fast: a dry run of an unchanged census trainer imports neither the ``build``
library nor ``importlib.metadata``, ``tarfile`` or a Google client; versions are read from
dist-info names (and agree with ``importlib.metadata``); the bootstrap wheel is not made
again from unchanged sources, and a damaged one is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfjob.description.requirements import installed_version

HEAVY = ("build", "pyproject_hooks", "importlib.metadata", "tarfile", "zipfile", "google.cloud", "google.auth", "kubernetes")


def test_an_unchanged_resubmit_imports_no_build_machinery(tmp_path: Path, tfjob_exe: str) -> None:
    project = tmp_path / "census"
    subprocess.run([tfjob_exe, "init", str(project), "--template", "census-ps"], check=True, capture_output=True, timeout=120)
    argv = ["submit", str(project), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--region", "us-central1", "--dry-run"]
    first = subprocess.run([tfjob_exe, *argv], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    code = (
        "import json, sys\n"
        "before = set(sys.modules)  # what the interpreter itself loads (.pth namespace packages)\n"
        f"sys.argv = ['tfjob', *{argv!r}]\n"
        "from tfjob.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules and m not in before)))\n"
    )
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert "reused" in again.stderr and "from the build cache" in again.stderr, again.stderr
    assert json.loads(again.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize(
    "dist, module", [("setuptools", None), ("build", None), ("click", None), ("PyYAML", "yaml"), ("typing-extensions", "typing_extensions")]
)
def test_installed_versions_agree_with_importlib_metadata(dist: str, module: str | None) -> None:
    from importlib import metadata

    assert installed_version(dist, module) == metadata.version(dist)


def test_a_missing_distribution_has_no_version() -> None:
    assert installed_version("no-such-dist-tfjob", fallback=False) is None
    assert installed_version("no-such-dist-tfjob") is None


def test_the_bootstrap_wheel_is_made_once_and_again_when_damaged(tmp_path: Path) -> None:
    import zipfile

    from tfjob.container.wheel import build

    path = Path(build(str(tmp_path)))
    stamp = path.stat().st_mtime_ns
    assert Path(build(str(tmp_path))) == path and path.stat().st_mtime_ns == stamp  # not written again
    with open(path, "ab") as f:
        f.write(b"damage")
    assert Path(build(str(tmp_path))) == path
    assert zipfile.ZipFile(path).testzip() is None and not path.read_bytes().endswith(b"damage")


def test_a_site_directory_is_listed_once_until_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from tfjob.description import requirements

    (tmp_path / "Foo.Bar-1.0.dist-info").mkdir()
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(requirements.os, "scandir", lambda p: (listed.append(p), real(p))[1])
    assert requirements._dist_infos(str(tmp_path)) == {"foo_bar": "1.0"}
    assert requirements._dist_infos(str(tmp_path)) == {"foo_bar": "1.0"} and len(listed) == 1
    time.sleep(0.05)  # past the file system's clock tick
    (tmp_path / "baz-2.0.dist-info").mkdir()
    assert requirements._dist_infos(str(tmp_path)) == {"foo_bar": "1.0", "baz": "2.0"} and len(listed) == 2
    assert requirements._dist_infos(str(tmp_path / "absent")) == {}
