"""Packaging errors that were tracebacks (issue 24): one line naming the path, exit 2.

Permissions are real: as root the tfjob process runs without CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH (``setpriv``), so a mode-000 directory is as unreadable to it as to a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import need_in_ci

from reliability import Reliability
from tfjob.errors import PackagingError
from tfjob.packaging import build_sdist


def make_trainer(root: Path) -> Path:
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("print('ran')\n")
    return pkg


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    need_in_ci(shutil.which("setpriv") is not None, "needs setpriv (util-linux) to drop root's file-permission override")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _submit(tfjob_exe: str, pkg: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_unprivileged(), tfjob_exe, "submit", str(pkg), "-m", "trainer.task", "--backend", "vertex", "--dry-run"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.reliability
def test_an_unreadable_subdirectory_is_one_line(tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    pkg = make_trainer(tmp_path)
    (pkg / "private").mkdir()
    (pkg / "private" / "x.py").write_text("")
    os.chmod(pkg / "private", 0)
    try:
        done = _submit(tfjob_exe, pkg)
        reliability.output(done.stderr)
        reliability.tried()
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
        assert "'private' cannot be read (Permission denied)" in done.stderr and "private/" in done.stderr
        # The fix it names works: an ignored directory is never opened.
        (pkg / ".tfjobignore").write_text("private/\n")
        done = _submit(tfjob_exe, pkg)
        assert done.returncode == 0, done.stderr
    finally:
        os.chmod(pkg / "private", 0o755)


@pytest.mark.reliability
def test_a_read_only_tfjob_home_is_one_line(tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    pkg = make_trainer(tmp_path / "src")
    home = Path(os.environ["TFJOB_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "build").mkdir(exist_ok=True)
    os.chmod(home / "build", 0o555)
    try:
        done = _submit(tfjob_exe, pkg)
    finally:
        os.chmod(home / "build", 0o755)
    reliability.output(done.stderr)
    reliability.tried()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "cannot write the trainer package to" in done.stderr and str(home / "build") in done.stderr
    assert "Permission denied; make it writable, or point TFJOB_HOME" in done.stderr


def test_a_full_disk_is_one_line(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    out = tmp_path / "out"
    (out / ".partial").mkdir(parents=True)
    # The archive's temporary file lands on /dev/full: every write is ENOSPC, as on a full disk.
    os.symlink("/dev/full", out / ".partial" / "trainer-0.0.0.tar.gz.part")
    with pytest.raises(
        PackagingError, match=r"^cannot write the trainer package to '.*/out': No space left on device; free some space"
    ) as caught:
        build_sdist(pkg, out, module="trainer.task")
    assert "\n" not in str(caught.value)


def test_too_many_files_names_the_entries_with_the_most_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfjob.packaging.tree

    pkg = make_trainer(tmp_path / "src")
    (pkg / "data").mkdir()
    (pkg / "big.bin").write_bytes(b"x" * 4096)
    for i in range(8):
        (pkg / "data" / f"{i}.csv").write_text("1\n")
    monkeypatch.setattr(tfjob.packaging.tree, "MAX_PACKAGE_FILES", 6)
    with pytest.raises(PackagingError, match=r"has more than 6 files to package \(most files: data/ \d files \d+ B, ") as caught:
        build_sdist(pkg, tmp_path / "out", module="trainer.task")
    # Ranked by count, not by bytes: the one large file is not what is named first.
    assert str(caught.value).index("data/") < str(caught.value).index("big.bin") if "big.bin" in str(caught.value) else True
