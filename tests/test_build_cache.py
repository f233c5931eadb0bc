"""The content-addressed build cache (issue 17): an unchanged project reuses its sdist without
running the build backend; any change that reaches the package builds again; the bytes are
the same either way, and the secrets and link rules still decide what goes in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfjob.packaging import cache
from tfjob.packaging import build_sdist

PYPROJECT = (
    '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n[project]\nname = "proj"\nversion = "1.0"\n'
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "trainer").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text("print('train')\n")
    return root


def test_an_unchanged_tree_reuses_its_sdist_byte_for_byte(project: Path, tmp_path: Path) -> None:
    first = build_sdist(project, tmp_path / "out1", module="trainer.task")
    again = build_sdist(project, tmp_path / "out2", module="trainer.task")
    assert not first.cached and again.cached  # the backend ran once
    assert again.sha256 == first.sha256 and again.path.read_bytes() == first.path.read_bytes()
    assert again.files == first.files


@pytest.mark.parametrize(
    "change",
    ["edit a module", "edit pyproject", "add a file", "chmod +x", "ignore a file"],
)
def test_any_change_that_reaches_the_package_builds_again(project: Path, tmp_path: Path, change: str) -> None:
    (project / "trainer" / "extra.py").write_text("X = 1\n")
    before = build_sdist(project, tmp_path / "out", module="trainer.task")
    if change == "edit a module":
        (project / "trainer" / "task.py").write_text("print('train more')\n")
    elif change == "edit pyproject":
        (project / "pyproject.toml").write_text(PYPROJECT.replace('"1.0"', '"1.1"'))
    elif change == "add a file":
        (project / "trainer" / "new.py").write_text("")
    elif change == "chmod +x":
        os.chmod(project / "trainer" / "task.py", 0o755)
    else:
        (project / ".tfjobignore").write_text("trainer/extra.py\n")
    after = build_sdist(project, tmp_path / "out", module="trainer.task")
    assert before.cached is False and not after.cached and after.sha256 != before.sha256


def test_a_new_secret_is_still_left_out_and_named(project: Path, tmp_path: Path) -> None:
    first = build_sdist(project, tmp_path / "out", module="trainer.task")
    (project / "trainer" / "prod.env").write_text("TOKEN=x\n")
    again = build_sdist(project, tmp_path / "out", module="trainer.task")
    assert again.cached and again.sha256 == first.sha256  # the secret never reaches the package
    assert again.excluded_secrets == ("trainer/prod.env",) and any("prod.env" in w for w in again.warnings)


def test_a_damaged_cache_entry_is_rebuilt(project: Path, tmp_path: Path) -> None:
    first = build_sdist(project, tmp_path / "out", module="trainer.task")
    for archive in cache.cache_dir().glob("*/*.tar.gz"):
        archive.write_bytes(b"garbage")
    again = build_sdist(project, tmp_path / "out2", module="trainer.task")
    assert not again.cached and again.sha256 == first.sha256


def test_the_cache_is_bounded(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "CACHE_ENTRIES", 2)
    for i in range(3):
        (project / "trainer" / "task.py").write_text(f"print({i})\n")
        build_sdist(project, tmp_path / "out", module="trainer.task")
    assert len([p for p in cache.cache_dir().iterdir() if not p.name.startswith(".")]) == 2


def test_the_submit_output_says_when_the_cache_was_used(project: Path) -> None:
    from click.testing import CliRunner

    from tfjob.cli.main import app

    args = ["submit", str(project), "-m", "trainer.task", "--backend", "vertex", "--dry-run"]
    first = CliRunner().invoke(app, args)
    second = CliRunner().invoke(app, args)
    assert first.exit_code == 0 and second.exit_code == 0, first.output
    assert "build cache" not in first.stderr and "reused proj-1.0.tar.gz from the build cache" in second.stderr
