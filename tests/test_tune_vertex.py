"""Vertex AI tuning: the HyperparameterTuningJob body (golden, strict protobuf), and the
real client end to end against a local stand-in of the service (tests/fakes/vertex_tuning.py)
and gcp-storage-emulator.

Golden files live in tests/golden/tuning/; after an intended change, regenerate them
with ``pytest --update-golden tests/test_tune_vertex.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from helpers import ROOT, golden_text
from reliability import Reliability
from click.testing import CliRunner

from fakes.vertex_tuning import FakeTuning
from tfjob.model import JobState
from tfjob.backends.vertex.options import VertexOptions
from tfjob.cli.main import app
from tfjob.backends.vertex.render import render_custom_job
from tfjob.description.request import build_spec
from tfjob.runtime.store import JobStore
from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec
from tfjob.tuning.hparams import parse_hparams
from tfjob.backends.vertex.render_tuning import render_hyperparameter_tuning_job, render_study_spec

from test_vertex_e2e import emulator  # noqa: F401  (the storage emulator fixture)

GOLDEN = ROOT / "tests" / "golden" / "tuning"
TUNE = ROOT / "tests" / "data" / "tune_trainers"
PKG = "gs://b/tfjob/packages/0123abcd/toy-0.0.0.tar.gz"
SUB_ID = "5f1b3c9e2d7a4e8f9a0b1c2d3e4f5a6b"
#: The tfjob-bootstrap wheel's staged place (its real digest changes with every bootstrap edit).
BOOT = "gs://b/tfjob/packages/b007b007/tfjob_bootstrap-0.1.0-py3-none-any.whl"

STUDY = StudySpec(
    MetricSpec("accuracy", "MAXIMIZE"),
    (
        ParameterSpec("learning_rate", "DOUBLE", 1e-4, 1e-1, scale="UNIT_LOG_SCALE"),
        ParameterSpec("layers", "INTEGER", 1, 8, scale="UNIT_LINEAR_SCALE"),
        ParameterSpec("optimizer", "CATEGORICAL", values=("adam", "sgd")),
        ParameterSpec("batch_size", "DISCRETE", values=(16, 32, 64), scale="UNIT_REVERSE_LOG_SCALE"),
    ),
    max_trials=12,
    parallel_trials=3,
    max_failed_trials=4,
    algorithm="RANDOM_SEARCH",
    measurement="BEST_MEASUREMENT",
    observation_noise="HIGH",
)


def strict_roundtrip(body: dict[str, Any]) -> dict[str, Any]:
    """Parse ``body`` strictly into the library's HyperparameterTuningJob and write it back."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    message = aiplatform_v1.types.HyperparameterTuningJob()._pb
    json_format.ParseDict(body, message)  # no ignore_unknown_fields: any stray key fails
    return json_format.MessageToDict(message)


def _spec() -> Any:
    return build_spec(
        dict(name="toy-tune", module="toy.task", workers=2, job_dir="gs://b/out", args=["--epochs", "3"], labels={"team": "ml"})
    )


# -- rendering ---------------------------------------------------------------------------------------
def test_golden_tuning_job() -> None:
    body = render_hyperparameter_tuning_job(
        STUDY, _spec(), VertexOptions(region="europe-west4"), [PKG], submission_id=SUB_ID, tf_version=(2, 15), version="0.1.0",
        bootstrap_uri=BOOT,
    )  # fmt: skip
    path = GOLDEN / "hptuning_job.json"
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    assert text == golden_text(path, text), "the tuning job changed; regenerate with `pytest --update-golden` and review the diff"


@pytest.mark.parametrize("study", [STUDY, parse_hparams(TUNE / "toy_vertex.yaml"), parse_hparams(TUNE / "toy_legacy.yaml")])
def test_strict_protobuf_contract_and_the_custom_job_renderer(study: StudySpec) -> None:
    spec, options = _spec(), VertexOptions()
    body = render_hyperparameter_tuning_job(study, spec, options, [PKG], submission_id=SUB_ID)
    assert strict_roundtrip(body) == body  # the API's own JSON mapping gives the same dict back
    custom = render_custom_job(spec, options, [PKG], submission_id=SUB_ID)
    assert body["trialJobSpec"] == custom["jobSpec"] and body["labels"] == custom["labels"]
    assert body["displayName"] == "toy-tune"
    assert (body["maxTrialCount"], body["parallelTrialCount"]) == (study.max_trials, study.parallel_trials)


def test_study_spec_fields() -> None:
    spec = render_study_spec(STUDY)
    assert spec["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    assert spec["parameters"][1] == {
        "parameterId": "layers",
        "integerValueSpec": {"minValue": "1", "maxValue": "8"},
        "scaleType": "UNIT_LINEAR_SCALE",
    }
    assert spec["parameters"][3]["discreteValueSpec"] == {"values": [16.0, 32.0, 64.0]}
    assert (spec["algorithm"], spec["measurementSelectionType"], spec["observationNoise"]) == ("RANDOM_SEARCH", "BEST_MEASUREMENT", "HIGH")
    plain = render_study_spec(parse_hparams(TUNE / "toy_vertex.yaml"))
    assert set(plain) == {"metrics", "parameters"}  # the defaults are left out


def test_dry_run_needs_no_credentials(tmp_path: Path) -> None:
    toy = tmp_path / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text("")
    (toy / "task.py").write_text("print('toy')\n")
    result = CliRunner().invoke(
        app,
        [
            "tune",
            str(tmp_path),
            "-m",
            "toy.task",
            "--hparams",
            str(TUNE / "toy_legacy.yaml"),
            "--backend",
            "vertex",
            "--dry-run",
            "--workers",
            "1",
        ],
    )
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert strict_roundtrip(body) == body
    assert body["trialJobSpec"]["workerPoolSpecs"][1]["pythonPackageSpec"]["packageUris"][0].startswith("gs://YOUR_STAGING_BUCKET/")
    assert "dry run: would create this HyperparameterTuningJob in projects/YOUR_PROJECT/locations/us-central1" in result.stderr


# -- the real client against the stand-in --------------------------------------------------------------
@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeTuning]:
    with FakeTuning() as server:
        server.use_as_google(monkeypatch, tmp_path_factory.mktemp("adc"), poll_interval="0.01")
        yield server


def _tune(fake: FakeTuning, *extra: str, package: str = str(TUNE / "toy")) -> list[str]:
    return ["tune", package, "-m", "toy.task", "--hparams", str(TUNE / "toy_vertex.yaml"), "--backend", "vertex",
            "--project", "p", "--region", "us-central1", "--staging-bucket", "gs://b", "--api-endpoint", fake.endpoint,
            "--workers", "1", *extra]  # fmt: skip


def test_a_study_on_vertex_end_to_end_as_a_real_process(emulator: Any, fake: FakeTuning, tfjob_exe: str) -> None:  # noqa: F811
    proc = subprocess.run([tfjob_exe, *_tune(fake)], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip()
    assert re.fullmatch(r"\d+", job_id)
    # The trainer was packaged and staged, and the body the service got parses strictly.
    # The trainer and tfjob's bootstrap wheel (every trial replica starts through it) were staged.
    blobs = sorted(emulator.list_blobs("b"), key=lambda b: b.name.rsplit("/", 1)[1], reverse=True)
    assert [b.name.rsplit("/", 1)[1] for b in blobs] == ["toy-0.0.0.tar.gz", "tfjob_bootstrap-0.1.0-py3-none-any.whl"]
    (sent,) = fake.created_bodies()
    body = strict_roundtrip(sent)  # the client may write enums as numbers: compare what they mean
    assert body["studySpec"] == render_study_spec(parse_hparams(TUNE / "toy_vertex.yaml"))
    pools = body["trialJobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == ["1", "1"] and pools[0]["pythonPackageSpec"]["packageUris"] == [
        f"gs://b/{b.name}" for b in blobs
    ]
    assert (body["maxTrialCount"], body["parallelTrialCount"], body["maxFailedTrialCount"]) == (6, 2, 2)
    # The live table showed the trials, and the best one is named.
    losses = {t["id"]: t["finalMeasurement"]["metrics"][0]["value"] for t in fake.jobs[job_id]["trials"]}
    best_id = min(losses, key=losses.get)  # type: ignore[arg-type]
    assert f"tfjob: submitted Vertex AI hyperparameter tuning job {job_id}" in proc.stderr
    assert f"tuning job {job_id} SUCCEEDED: 6 trials; best trial {best_id}: loss=" in proc.stderr
    assert re.search(rf"^\*{best_id}\s+SUCCEEDED", proc.stderr, re.M)

    with JobStore() as store:
        record = store.get(job_id)
    assert record is not None and record.backend == "vertex-tuning" and record.state is JobState.SUCCEEDED
    assert record.options == {"project": "p", "region": "us-central1", "api_endpoint": fake.endpoint}
    assert record.extra["best"]["id"] == best_id and len(record.extra["trials"]) == 6
    status = CliRunner().invoke(app, ["status", job_id])
    assert status.exit_code == 0 and "backend   vertex-tuning" in status.stdout
    assert "6 of 6 trials, 6 succeeded, 0 failed of 2 allowed; 2 at a time; goal MINIMIZE loss" in status.stdout
    assert f"best trial {best_id}: loss=" in status.stdout
    listed = CliRunner().invoke(app, ["list", "--backend", "vertex-tuning"])
    assert job_id in listed.stdout


def test_trials_are_read_as_the_study_types_them(fake: FakeTuning) -> None:
    from tfjob.backends.vertex.tuning import parse_trials, study_of

    study = StudySpec(
        MetricSpec("loss", "MINIMIZE"),
        (ParameterSpec("layers", "INTEGER", 1, 8), ParameterSpec("optimizer", "CATEGORICAL", values=("adam", "sgd"))),
        max_trials=2,
        parallel_trials=2,
    )
    job = {
        "studySpec": render_study_spec(study), "maxTrialCount": 2, "parallelTrialCount": 2,
        "trials": [
            {"id": "1", "state": "SUCCEEDED", "parameters": [{"parameterId": "layers", "value": 3.0}, {"parameterId": "optimizer", "value": "adam"}],
             "finalMeasurement": {"stepCount": "40", "metrics": [{"metricId": "loss", "value": 0.5}]}, "customJob": "projects/p/locations/r/customJobs/77"},
            {"id": "2", "state": "SUCCEEDED", "parameters": [{"parameterId": "layers", "value": 5.0}, {"parameterId": "optimizer", "value": "sgd"}]},
            {"id": "3", "state": "INFEASIBLE", "parameters": [], "infeasibleReason": "exited with status 3"},
        ],
    }  # fmt: skip
    assert study_of(job) == study
    one, two, three = parse_trials(job, study)
    assert one.params == {"layers": 3, "optimizer": "adam"} and isinstance(one.params["layers"], int)
    assert (one.metric, one.step, one.job_id, one.state) == (0.5, 40, "77", "SUCCEEDED")
    assert two.state == "INFEASIBLE"  # succeeded without the metric
    assert (three.state, three.message) == ("INFEASIBLE", "exited with status 3")


def test_failed_trials_fail_the_study_with_the_service_message(emulator: Any, fake: FakeTuning) -> None:  # noqa: F811  (the bootstrap wheel is staged)
    fake.infeasible = {"1", "2"}
    result = CliRunner().invoke(app, _tune(fake, package="gs://b/toy-0.0.0.tar.gz"))
    assert result.exit_code == 1, result.stderr
    job_id = result.stdout.strip()
    last = result.stderr.strip().splitlines()[-1]
    # Trial 3 had started when trial 2 failed, as on the service.
    assert last == f"error: study {job_id} FAILED: 2 of 3 trials failed; the job reached maxFailedTrialCount 2."
    assert "exited with a non-zero status of 3" in result.stderr  # the failed trials' reasons in the table
    status = CliRunner().invoke(app, ["status", job_id]).stdout
    assert "state     FAILED" in status and "INFEASIBLE" in status


def test_async_then_status_and_cancel(emulator: Any, fake: FakeTuning) -> None:  # noqa: F811  (the bootstrap wheel is staged)
    runner = CliRunner()
    created = runner.invoke(app, _tune(fake, "--async", package="gs://b/toy-0.0.0.tar.gz"))
    assert created.exit_code == 0, created.stderr
    job_id = created.stdout.strip()
    assert fake.jobs[job_id]["state"] == "JOB_STATE_PENDING"
    running = runner.invoke(app, ["status", job_id, "--json"])
    assert json.loads(running.stdout)["state"] == "RUNNING"
    started = json.loads(runner.invoke(app, ["status", job_id, "--json"]).stdout)
    assert [t["state"] for t in started["extra"]["trials"]] == ["RUNNING", "RUNNING"]
    more = json.loads(runner.invoke(app, ["status", job_id, "--json"]).stdout)
    assert [t["state"] for t in more["extra"]["trials"]] == ["SUCCEEDED", "RUNNING", "RUNNING"]
    cancelled = runner.invoke(app, ["cancel", job_id])
    assert cancelled.exit_code == 0
    assert fake.requests[-1][:2] == ("POST", f"/v1/projects/p/locations/us-central1/hyperparameterTuningJobs/{job_id}:cancel")
    waited = runner.invoke(app, ["wait", job_id])
    assert waited.exit_code == 130 and f"job {job_id} CANCELLED" in waited.stderr


def test_logs_of_a_trial_are_its_custom_job_s(emulator: Any, fake: FakeTuning) -> None:  # noqa: F811  (the bootstrap wheel is staged)
    runner = CliRunner()
    job_id = runner.invoke(app, _tune(fake, "--async", package="gs://b/toy-0.0.0.tar.gz")).stdout.strip()
    for _ in range(3):
        runner.invoke(app, ["status", job_id])
    trial_job = fake.jobs[job_id]["trials"][0]["customJob"].rsplit("/", 1)[-1]
    fake.add_log(trial_job, "workerpool0-0", "toy: trial 1 chief-0 loss 0.25", 1)
    fake.add_log("someone-else", "workerpool0-0", "not this one", 2)
    logs = runner.invoke(app, ["logs", job_id, "--task", "trial-1"])
    assert logs.exit_code == 0, logs.stderr
    assert logs.stdout.splitlines() == ["[chief-0] toy: trial 1 chief-0 loss 0.25"]
    bad = runner.invoke(app, ["logs", job_id])
    assert bad.exit_code == 2 and f"name a trial: `tfjob logs {job_id} --task trial-N`" in bad.stderr
    missing = runner.invoke(app, ["logs", job_id, "--task", "trial-9"])
    assert missing.exit_code == 2 and "has no such trial with a job yet" in missing.stderr


@pytest.mark.reliability
def test_a_lost_create_is_found_by_its_label_not_created_twice(fake: FakeTuning, reliability: Reliability) -> None:
    from google.auth.credentials import AnonymousCredentials

    from tfjob.backends.vertex.render_tuning import wrap_tuning_job
    from tfjob.backends.vertex.tuning import TuningClient

    client = TuningClient("p", "us-central1", api_endpoint=fake.endpoint, credentials=AnonymousCredentials(), sleep=lambda s: None)
    body = wrap_tuning_job(STUDY, render_custom_job(_spec(), None, [PKG], submission_id=SUB_ID))
    fake.fail(r"^POST .*/hyperparameterTuningJobs$", "lost")
    reliability.fault("vertex lost create (tuning job)")
    job = client.create_tuning_job(body, SUB_ID)
    assert len(fake.jobs) == 1 and job["name"].endswith(next(iter(fake.jobs)))
    assert [m for m, p, _ in fake.requests] == ["POST", "GET"]  # the create, then the lookup by label


def test_service_errors_are_translated(emulator: Any, fake: FakeTuning) -> None:  # noqa: F811  (the bootstrap wheel is staged)
    fake.fail(r"^POST", 400)
    result = CliRunner().invoke(app, _tune(fake, package="gs://b/toy-0.0.0.tar.gz"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "error: Vertex AI refused the request: injected"
    fake.fail(r"^POST", 403)
    denied = CliRunner().invoke(app, _tune(fake, package="gs://b/toy-0.0.0.tar.gz"))
    assert denied.exit_code == 1, denied.stderr
    assert "the caller lacks aiplatform.hyperparameterTuningJobs.create (grant it, e.g. with role roles/aiplatform.user" in denied.stderr
    assert fake.jobs == {}
