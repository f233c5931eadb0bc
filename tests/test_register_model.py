"""The model registered, the run recorded (issue 37.4): ``--register-model NAME`` uploads a
finished Vertex AI job's SavedModel to the Model Registry — one ``models.upload`` whose request
the stand-in parses strictly as ``aiplatform_v1.UploadModelRequest``, a new model the first
time and a new version of it (``parent_model``) the next — labelled with the tfjob job and
served by the prebuilt prediction image of the TensorFlow the job trained with; with
``--experiment`` the job's final metrics land in its Experiment run's context. The real CLI and
the real google-cloud-aiplatform clients against the Vertex stand-in and a storage emulator."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import test_vertex_e2e
from fakes.vertex_api import FakeVertex
from tfjob.cli.main import app
from tfjob.errors import SpecError, UsageError

CTX = "projects/p/locations/us-central1/metadataStores/default/contexts"


#: test_vertex_e2e's fixtures: gcp-storage-emulator (bucket ``b``), the Vertex AI stand-in, a trainer package.
emulator, fake, trainer = test_vertex_e2e.emulator, test_vertex_e2e.fake, test_vertex_e2e.trainer


def _leave_outputs(emulator: Any, job_dir: str, metrics: dict[str, float] | None = None) -> None:
    """What the trainer leaves under its job dir: a SavedModel in model/ (AIP_MODEL_DIR), a
    checkpoint, and its final metrics in eval/metrics.json."""
    bucket = emulator.bucket("b")
    prefix = job_dir.removeprefix("gs://b/")
    for name, data in {
        "model/saved_model.pb": b"\x08\x01",
        "model/variables/variables.index": b"i",
        "model/variables/variables.data-00000-of-00001": b"d",
        "ckpt/ckpt-1.index": b"i",
        "eval/metrics.json": json.dumps(metrics or {}).encode(),
    }.items():
        bucket.blob(f"{prefix}/{name}").upload_from_string(data)


def _submit(trainer: Path, fake: FakeVertex, job_dir: str, *more: str) -> Any:
    argv = ["submit", str(trainer), "--module-name", "trainer.task", "--backend", "vertex", "--project", "p",
            "--region", "us-central1", "--staging-bucket", "gs://b", "--job-dir", job_dir, "--api-endpoint", fake.endpoint, *more]  # fmt: skip
    return CliRunner().invoke(app, argv)


def test_register_model_uploads_a_new_model_then_a_new_version_of_it(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    _leave_outputs(emulator, "gs://b/runs/1")
    first = _submit(trainer, fake, "gs://b/runs/1", "--register-model", "census")
    assert first.exit_code == 0, first.output
    job_1 = first.stdout.strip()
    _leave_outputs(emulator, "gs://b/runs/2")
    second = _submit(trainer, fake, "gs://b/runs/2", "--register-model", "census")
    assert second.exit_code == 0, second.output
    job_2 = second.stdout.strip()

    uploads = [(m, p) for m, p, _ in fake.requests if p.endswith("/models:upload")]
    assert [m for m, _ in uploads] == ["POST", "POST"]  # one upload per job
    first_request, second_request = fake.uploads  # each parsed strictly as aiplatform_v1.UploadModelRequest
    assert "parentModel" not in first_request
    (model_name,) = fake.models
    assert second_request["parentModel"] == model_name
    assert fake.models[model_name]["versionId"] == "2" and len(fake.models[model_name]["versions"]) == 2

    # The serving image is the prebuilt prediction image of the TensorFlow of the job's training image.
    executor = fake.created_bodies()[0]["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["executorImageUri"]
    major, minor = re.search(r"/tf-cpu\.(\d+)-(\d+)\.", executor).groups()  # type: ignore[union-attr]
    for request, job_id, run in ((first_request, job_1, "1"), (second_request, job_2, "2")):
        model = request["model"]
        assert request["parent"] == "projects/p/locations/us-central1"
        assert model["displayName"] == "census"
        assert model["artifactUri"] == f"gs://b/runs/{run}/model"
        assert model["containerSpec"]["imageUri"] == f"us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.{major}-{minor}:latest"
        assert model["labels"]["tfjob-job-id"] == job_id
        submission = next(b for b in fake.created_bodies() if fake.jobs[job_id]["labels"] == b["labels"])["labels"]["tfjob-submission-id"]
        assert model["labels"]["tfjob-submission-id"] == submission
    assert f"model census version 2: {model_name} (a new version)" in second.stderr
    shown = json.loads(CliRunner().invoke(app, ["status", job_2, "--json"]).stdout)
    assert shown["extra"]["registered_model"] == {
        "model": model_name, "version_id": "2", "parent_model": model_name,
        "serving_image": second_request["model"]["containerSpec"]["imageUri"], "artifact_uri": "gs://b/runs/2/model",
    }  # fmt: skip


def test_the_final_metrics_are_logged_to_the_experiment_run(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    _leave_outputs(emulator, "gs://b/runs/3", {"accuracy": 0.84, "auc": 0.9, "note": "text is not a metric"})  # type: ignore[dict-item]
    done = _submit(trainer, fake, "gs://b/runs/3", "--experiment", "census", "--experiment-run", "lr-0-01")
    assert done.exit_code == 0, done.output
    run = fake.contexts[f"{CTX}/census-lr-0-01"]
    assert run["metadata"]["metrics"] == {"accuracy": 0.84, "auc": 0.9}
    assert run["schemaTitle"] == "system.ExperimentRun" and run["displayName"] == "lr-0-01"
    # A later job of the same run adds its metrics to the run's (the SDK's log_metrics merges too).
    _leave_outputs(emulator, "gs://b/runs/4", {"auc": 0.95, "loss": 0.3})
    again = _submit(trainer, fake, "gs://b/runs/4", "--experiment", "census", "--experiment-run", "lr-0-01")
    assert again.exit_code == 0, again.output
    assert fake.contexts[f"{CTX}/census-lr-0-01"]["metadata"]["metrics"] == {"accuracy": 0.84, "auc": 0.95, "loss": 0.3}
    assert "3 metrics logged to experiment run census-lr-0-01" in again.stderr


def test_register_model_from_the_api_and_its_mistakes(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    from tfjob import get_job

    done = _submit(trainer, fake, "gs://b/runs/5")
    assert done.exit_code == 0, done.output
    handle = get_job(done.stdout.strip())
    with pytest.raises(UsageError, match=r"left no SavedModel \(a directory with saved_model.pb\) under its job dir gs://b/runs/5"):
        handle.register_model("census")
    assert not getattr(fake, "uploads", [])
    _leave_outputs(emulator, "gs://b/runs/5")
    own = handle.register_model("census", serving_image="us-docker.pkg.dev/p/serving/tf:1")
    assert (
        own["parent_model"] is None
        and own["version_id"] == "1"
        and fake.uploads[-1]["model"]["containerSpec"]["imageUri"] == own["serving_image"]
    )
    with pytest.raises(SpecError, match="is not a model name"):
        handle.register_model('a"b')
    bad = _submit(trainer, fake, "gs://b/runs/6", "--register-model", "x" * 129)
    (line,) = bad.stderr.strip().splitlines()
    assert bad.exit_code == 2 and line.startswith("error: --register-model 'xxx")
    assert line.endswith(" is not a model name; give 1-128 printable characters without quotes or backslashes, e.g. census")
    unwaited = _submit(trainer, fake, "gs://b/runs/6", "--register-model", "census", "--async")
    assert unwaited.exit_code == 2 and unwaited.stderr.startswith("error: --register-model registers the job's SavedModel once")
    local = CliRunner().invoke(app, ["render", "-m", "trainer.task", "--register-model", "census"])
    assert local.exit_code == 2 and "--register-model is for the vertex backend" in local.output
