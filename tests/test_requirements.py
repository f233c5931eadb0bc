"""A trainer's requirements.txt (or --requirements) is honoured on every backend (issue 16.6):
declared in the sdist the cloud pip-installs, checked against the local interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfjob.cli.main import app
from tfjob.errors import UsageError
from tfjob.packaging import build_sdist
from tfjob.description.requirements import read_requirements, unmet_requirements


def _trainer(tmp_path: Path, requirements: str | None) -> Path:
    root = tmp_path / "src"
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text("print('trained')\n")
    if requirements is not None:
        (root / "requirements.txt").write_text(requirements)
    return root


def test_the_sdist_declares_the_requirements_and_pip_reads_them(tmp_path: Path) -> None:
    root = _trainer(tmp_path, "# data\npyyaml>=6\nrequests[socks] >= 2.0 ; python_version >= '3.8'  # http\n\nnumpy\\\n  >=1.20\n")
    built = build_sdist(root, tmp_path / "out", module="trainer.task")
    with tarfile.open(built.path) as tar:
        info = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/PKG-INFO"))).read().decode()  # type: ignore[union-attr]
    assert "Requires-Dist: pyyaml>=6\n" in info and "Requires-Dist: numpy >=1.20\n" in info
    # What Vertex AI's pip install sees: the wheel's metadata, built by setuptools from the sdist.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(tmp_path / "whl"), str(built.path)],
        check=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "whl").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = sorted(line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: "))
    assert requires == ["numpy>=1.20", "pyyaml>=6", 'requests[socks]>=2.0; python_version >= "3.8"']


def test_an_explicit_file_replaces_requirements_txt_and_a_trainer_without_one_declares_nothing(tmp_path: Path) -> None:
    root = _trainer(tmp_path, "pyyaml>=6\n")
    other = tmp_path / "deps.txt"
    other.write_text("optuna>=3\n")
    built = build_sdist(root, tmp_path / "a", module="trainer.task", requirements=str(other))
    with tarfile.open(built.path) as tar:
        setup = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/setup.py"))).read().decode()  # type: ignore[union-attr]
    assert 'install_requires=["optuna>=3"]' in setup
    bare = build_sdist(_trainer(tmp_path / "b", None), tmp_path / "c", module="trainer.task")
    with tarfile.open(bare.path) as tar:
        setup = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/setup.py"))).read().decode()  # type: ignore[union-attr]
    assert "install_requires" not in setup


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pyyaml\n-r other.txt\n", r"requirements.txt:2: -r is a pip option"),
        ("--index-url https://x\n", r"requirements.txt:1: --index-url is a pip option"),
        ("-e .\n", r"-e is a pip option"),
        ("pyyaml >== 6\n", r"requirements.txt:1: 'pyyaml >== 6' is not a requirement"),
        ("x" * (300 * 1024), r"is larger than 256 KiB"),
        (b"\xff\xfe\x00".decode("latin-1"), r"not UTF-8 text"),
    ],
)
def test_what_a_package_cannot_declare_is_one_error_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "requirements.txt"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    with pytest.raises(UsageError, match=message):
        read_requirements(path)


def test_a_fifo_or_a_link_is_not_read(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UsageError, match="not a regular file"):
        read_requirements(tmp_path / "fifo")
    (tmp_path / "link").symlink_to("/etc/passwd")
    with pytest.raises(UsageError, match="cannot read it: Too many levels of symbolic links"):
        read_requirements(tmp_path / "link")


def test_unmet_requirements_are_asked_of_the_task_interpreter() -> None:
    lines = ["pyyaml>=6", "pyyaml<1", "no-such-dist-xyz", "no-such-dist-xyz; python_version < '3'"]
    here = unmet_requirements(lines)
    other = unmet_requirements(lines, python=str(Path(sys.executable).resolve().parent / "python3"))
    assert [line for line, _ in here] == ["pyyaml<1", "no-such-dist-xyz"]
    assert here[1][1] is None and here[0][1] is not None
    assert other == here


def test_locally_an_unmet_requirement_stops_the_job_before_any_task_starts(tmp_path: Path) -> None:
    root = _trainer(tmp_path, "pyyaml>=6\nno-such-dist-xyz>=1\n")
    result = CliRunner().invoke(app, ["submit", str(root), "-m", "trainer.task", "--job-dir", str(tmp_path / "jd")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no-such-dist-xyz>=1 is not installed in" in result.stderr
    assert "pip install -r" in result.stderr
    (root / "requirements.txt").write_text("pyyaml>=6\n")
    result = CliRunner().invoke(app, ["submit", str(root), "-m", "trainer.task", "-q"])
    assert result.exit_code == 0, result.stderr


def test_requirements_go_with_trainer_directories_only(tmp_path: Path) -> None:
    root = _trainer(tmp_path, None)
    (root / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "1"\n')
    deps = tmp_path / "deps.txt"
    deps.write_text("pyyaml\n")
    project = CliRunner().invoke(app, ["submit", str(root), "-m", "trainer.task", "--requirements", str(deps)])
    assert project.exit_code == 2 and "a project declares its dependencies in pyproject.toml" in project.stderr
    image = CliRunner().invoke(
        app, ["submit", "-m", "trainer.task", "--image", "i", "--requirements", str(deps), "--backend", "kubeflow", "--dry-run"]
    )
    assert image.exit_code == 2 and "an --image brings its own" in image.stderr


def test_the_vertex_dry_run_stages_a_package_that_declares_them(tmp_path: Path) -> None:
    root = _trainer(tmp_path, "pyyaml>=6\n")
    result = CliRunner().invoke(
        app,
        ["submit", str(root), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--region", "us-central1",
         "--staging-bucket", "gs://b", "--dry-run"],
        env={"TFJOB_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    uri = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"][0]
    (sdist,) = (tmp_path / "home").rglob(uri.rsplit("/", 1)[1])
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        info = tar.extractfile(next(n for n in names if n.endswith("/PKG-INFO"))).read().decode()  # type: ignore[union-attr]
    assert "Requires-Dist: pyyaml>=6" in info
