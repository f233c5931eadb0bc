"""``tfjob submit --backend vertex --dry-run``: the CustomJob body, with no credentials and no network."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_trainer
from click.testing import CliRunner

from tfjob.cli.main import app
from tfjob.container import wheel
from tfjob.packaging import build_sdist

from test_render_vertex import strict_roundtrip

# Any attempt to reach a network or find credentials would fail loudly with these.
OFFLINE = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
    "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/credentials.json",
}


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "work")


def test_dry_run_subprocess_prints_a_strict_custom_job(trainer: Path, tfjob_exe: str) -> None:
    cmd = [
        tfjob_exe,
        "submit",
        "trainer/",
        "--module-name",
        "trainer.task",
        "--workers",
        "4",
        "--ps",
        "2",
        "--backend",
        "vertex",
        "--dry-run",
    ]
    out = subprocess.run(cmd, cwd=trainer.parent, capture_output=True, text=True, env={**os.environ, **OFFLINE}, timeout=120)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert strict_roundtrip(body) == body
    assert [p["replicaCount"] for p in body["jobSpec"]["workerPoolSpecs"]] == ["1", "4", "2"]
    uri = body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"][0]
    assert uri.startswith("gs://YOUR_STAGING_BUCKET/tfjob/packages/")
    assert "no staging bucket set: package URIs show gs://YOUR_STAGING_BUCKET" in out.stderr
    assert "Traceback" not in out.stderr


def test_dry_run_uri_carries_the_package_digest(trainer: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--region", "europe-west4",
         "--staging-bucket", "gs://my-bucket", "--dry-run", "--output", "yaml", "--", "--steps", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    import yaml

    body = yaml.safe_load(result.stdout)
    pool = body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    built = build_sdist(trainer, tmp_path / "expected", module="trainer.task")
    boot_name, boot = wheel.build_bytes()
    assert pool["packageUris"] == [
        f"gs://my-bucket/tfjob/packages/{built.sha256}/trainer-0.0.0.tar.gz",
        f"gs://my-bucket/tfjob/packages/{hashlib.sha256(boot).hexdigest()}/{boot_name}",  # the bootstrap, content-addressed too
    ]
    assert pool["pythonModule"] == "tfjob.container.bootstrap"
    assert pool["args"] == ["--module", "trainer.task", "--", "--steps", "5"]
    assert pool["executorImageUri"].startswith("europe-docker.pkg.dev/vertex-ai/training/tf-cpu.")
    assert "projects/p/locations/europe-west4" in result.stderr


def test_dry_run_warns_about_secrets(trainer: Path) -> None:
    (trainer / ".env").write_text("TOKEN=abc\n")
    result = CliRunner().invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "left out of the package because they look like secrets: .env" in result.stderr
    assert "TOKEN=abc" not in result.output


def test_dry_run_of_a_container_needs_no_bucket(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["submit", "--image", "gcr.io/p/t:1", "-m", "trainer.task", "--workers", "2", "--backend", "vertex", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] == ["tfjob-bootstrap", "--module", "trainer.task", "--"]
    assert "staging bucket" not in result.stderr


@pytest.mark.parametrize(
    "args, match",
    [
        (["--job-dir", "/tmp/out"], r"error: --job-dir '/tmp/out': Vertex AI writes its output to Cloud Storage"),
        (["--region", "central"], r"error: --region 'central' is not a Google Cloud region"),
        (["--staging-bucket", "gs://Bad Bucket"], r"error: --staging-bucket 'gs://Bad Bucket' is not a Cloud Storage location"),
        (["--packages", "missing.whl"], r"error: --packages 'missing.whl' does not exist"),
    ],
)
def test_dry_run_usage_errors(trainer: Path, args: list[str], match: str) -> None:
    result = CliRunner().invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--dry-run", *args])
    assert result.exit_code == 2, result.output
    import re

    assert re.search(match, result.stderr), result.stderr
    assert "Traceback" not in result.output


def test_dry_run_path_imports_no_google_client(trainer: Path) -> None:
    code = (
        "import sys; before = set(sys.modules)\n"
        "from tfjob.backends import get_backend\n"
        "from tfjob.backends.vertex.options import VertexOptions\n"
        "from tfjob.description.request import build_spec\n"
        f"spec = build_spec(dict(name='x', module='trainer.task', package={str(trainer)!r}, workers=1))\n"
        "get_backend('vertex').render(spec, VertexOptions(staging_bucket='gs://b'))\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('google.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **OFFLINE}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_extra_packages_are_content_addressed(trainer: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "helpers-1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel, but bytes to hash")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    result = CliRunner().invoke(
        app,
        ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--staging-bucket", "gs://b/team",
         "--packages", f"{wheel},gs://other/lib-2.0.tar.gz", "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    uris = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"]
    assert uris[0].startswith("gs://b/team/tfjob/packages/") and uris[0].endswith("/trainer-0.0.0.tar.gz")
    assert uris[1:3] == [f"gs://b/team/tfjob/packages/{digest}/{wheel.name}", "gs://other/lib-2.0.tar.gz"]
    assert len(uris) == 4 and uris[3].startswith("gs://b/team/tfjob/packages/") and "/tfjob_bootstrap-" in uris[3]


def test_a_trainer_directory_with_an_image_runs_on_that_image(trainer: Path) -> None:
    # As on Kubernetes (shipped in a ConfigMap) and locally (mounted into the containers):
    # on Vertex AI the image is the package job's executor image, never dropped silently.
    base = ["submit", str(trainer), "-m", "trainer.task", "--workers", "1", "--backend", "vertex", "--dry-run",
            "--staging-bucket", "gs://b"]  # fmt: skip
    result = CliRunner().invoke(app, [*base, "--image", "registry.example/tfjob:0.1.0"])
    assert result.exit_code == 0, result.output
    pools = json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"]
    for pool in pools:
        assert "containerSpec" not in pool
        package = pool["pythonPackageSpec"]
        assert package["executorImageUri"] == "registry.example/tfjob:0.1.0"
        assert package["packageUris"][0].endswith(".tar.gz") and "/trainer-" in package["packageUris"][0]
    for extra, message in (
        (["--image", "a:1", "--worker-image", "b:1"], "different images per pool"),
        (["--image", "a:1", "--executor-image", "b:1"], "leave out --executor-image"),
    ):
        refused = CliRunner().invoke(app, [*base, *extra])
        assert refused.exit_code == 2 and message in refused.stderr, refused.output
