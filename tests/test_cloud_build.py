"""`--cloud-build`: the image built by Cloud Build, through the real google-cloud-build client
(REST) pointed at a local stand-in of the Cloud Build API (tests/fakes/cloudbuild_api.py), the
context staged in gcp-storage-emulator, credentials from a service-account key whose token
endpoint is the stand-in. No engine is used. The stand-in also answers the registry's manifest
HEAD for what its builds pushed, so a second build of unchanged code is seen there and skipped.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from fakes.cloudbuild_api import FakeCloudBuild
from fakes.vertex_api import write_service_account
from helpers import need_module, write_trainer
from fakes.gcs import storage_emulator
from tfjob.cli.main import app

need_module("google.cloud.devtools.cloudbuild_v1", "pip install -e '.[test]'")
BASE_DIGEST = "sha256:" + "b" * 64


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeCloudBuild, Any]]:
    with storage_emulator(monkeypatch) as client, FakeCloudBuild() as fake:
        bucket = client.create_bucket("builds")
        key = write_service_account(tmp_path / "adc.json", f"{fake.endpoint}/token", "p")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
        yield fake, bucket


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    root = write_trainer(tmp_path / "census", "print('train')\n").parent
    (root / "requirements.txt").write_text("pandas==2.2.2\n")
    (root / ".env").write_text("TOKEN=do-not-ship\n")
    return root


def _argv(fake: FakeCloudBuild, trainer: Path, *more: str) -> list[str]:
    return ["build", str(trainer), "-m", "trainer.task", "--cloud-build", "--project", "p", "--staging-bucket", "gs://builds",
            "--api-endpoint", fake.endpoint, "--image-repo", f"{fake.host}/p/census", "--base", f"{fake.host}/p/tfjob@{BASE_DIGEST}", *more]  # fmt: skip


def test_dry_run_shows_a_request_the_api_types_take_and_sends_nothing(cloud: tuple[FakeCloudBuild, Any], trainer: Path) -> None:
    from google.cloud.devtools import cloudbuild_v1
    from google.protobuf import json_format

    fake, bucket = cloud
    result = CliRunner().invoke(app, _argv(fake, trainer, "--dry-run"))
    assert result.exit_code == 0, result.output
    request = json.loads(result.stdout)
    message = cloudbuild_v1.types.Build()._pb
    json_format.ParseDict(request, message)  # strict: an unknown field fails
    assert json_format.MessageToDict(message) == request
    (step,) = request["steps"]
    tag = request["images"][0]
    assert step["name"] == "gcr.io/cloud-builders/docker" and step["args"][-3:] == ["-t", tag, "."]
    assert tag.startswith(f"{fake.host}/p/census:") and len(tag.rsplit(":", 1)[1]) == 32
    assert request["source"]["storageSource"]["bucket"] == "builds"
    assert fake.created == [] and list(bucket.list_blobs()) == []


def test_a_build_stages_the_filtered_context_once_and_returns_the_pushed_digest(cloud: tuple[FakeCloudBuild, Any], trainer: Path) -> None:
    fake, bucket = cloud
    result = CliRunner().invoke(app, _argv(fake, trainer, "-o", "json"))
    assert result.exit_code == 0, result.output
    built = json.loads(result.stdout)
    (created,) = fake.created
    digest = fake.pushed[("p/census", created["images"][0].rsplit(":", 1)[1])]
    assert built["reference"] == f"{fake.host}/p/census@{digest}" and built["pushed"] is True
    (blob,) = list(bucket.list_blobs())
    assert blob.name == created["source"]["storageSource"]["object"] and blob.name.startswith("tfjob/build/")
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob.download_as_bytes()))) as tar:
        names = sorted(tar.getnames())
        dockerfile = tar.extractfile("Dockerfile").read().decode()  # type: ignore[union-attr]
    assert ".env" not in " ".join(names) and any(n.startswith("package/") and n.endswith(".tar.gz") for n in names)
    assert any(n.startswith("requirements/") for n in names) and any(n.startswith("bootstrap/") for n in names)
    assert f"FROM {fake.host}/p/tfjob@{BASE_DIGEST}" in dockerfile
    # Unchanged: the registry has it; nothing is staged or built again.
    again = CliRunner().invoke(app, _argv(fake, trainer, "-o", "json"))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["reference"] == built["reference"] and json.loads(again.stdout)["pushed"] is False
    assert len(fake.created) == 1 and len(list(bucket.list_blobs())) == 1


def test_a_failed_build_is_one_line_naming_the_step(cloud: tuple[FakeCloudBuild, Any], trainer: Path) -> None:
    fake, _ = cloud
    fake.fail_detail = 'Step #0 - "build": ERROR: No matching distribution found for pandas==2.2.2'
    result = CliRunner().invoke(app, _argv(fake, trainer, "-o", "json"))
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1
    assert "Cloud Build b0001 failed at step build (build --label" in result.stderr and "No matching distribution" in result.stderr


@pytest.mark.parametrize(("change", "message"), [
    (["--base", "tfjob:0.1.0"], "--cloud-build pulls the base image from a registry"),
    (["--staging-bucket", "builds"], "must be gs://BUCKET"),
])  # fmt: skip
def test_cloud_build_mistakes_are_one_line(cloud: tuple[FakeCloudBuild, Any], trainer: Path, change: list[str], message: str) -> None:
    fake, _ = cloud
    result = CliRunner().invoke(app, [*_argv(fake, trainer, "--dry-run"), *change])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.output


def test_a_submitted_job_runs_the_cloud_built_digest(
    cloud: tuple[FakeCloudBuild, Any], trainer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tfjob render --build --cloud-build`: the job's request names REPO:KEY (not pushed yet) and
    the build request is shown; once built, the Kubernetes render names the digest. The project
    and bucket of the build come from the settings (a Kubernetes job takes no --project)."""
    fake, _ = cloud
    monkeypatch.setenv("TFJOB_PROJECT", "p")
    monkeypatch.setenv("TFJOB_STAGING_BUCKET", "gs://builds")
    monkeypatch.setenv("TFJOB_API_ENDPOINT", fake.endpoint)
    common = [str(trainer), "-m", "trainer.task", "--build", "--cloud-build", "--image-repo", f"{fake.host}/p/census",
              "--base", f"{fake.host}/p/tfjob@{BASE_DIGEST}", "--backend", "kubeflow", "--workers", "1", "-o", "yaml", "--display-name", "cb"]  # fmt: skip
    import yaml

    first = CliRunner().invoke(app, ["render", *common])
    assert first.exit_code == 0, first.output
    images = {
        c["image"] for r in yaml.safe_load(first.stdout)["spec"]["tfReplicaSpecs"].values() for c in r["template"]["spec"]["containers"]
    }
    (image,) = images
    assert image.startswith(f"{fake.host}/p/census:") and "Cloud Build request" in first.stderr and fake.created == []
    built = CliRunner().invoke(app, _argv(fake, trainer, "-o", "json"))
    assert built.exit_code == 0, built.output
    after = CliRunner().invoke(app, ["render", *common])
    assert after.exit_code == 0, after.output
    assert json.loads(built.stdout)["reference"] in after.stdout
