"""Review of the Model Registry (issue 37.4) and tuning on Kubernetes (issue 37.5) as a careless
or hostile user would drive them: a model name with control characters or a backslash (it goes
into the registry's ``display_name="…"`` filter), and the model of a job that FAILED — each
refused in one line before anything is uploaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.vertex_api import FakeVertex
from test_register_model import _leave_outputs, _submit, emulator, fake, trainer  # noqa: F401 - fixtures
from tfjob.errors import UsageError

FAILS = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED")


@pytest.mark.parametrize("name", ["a\tb", "x\r", "a\\", "ctl\x1b[31m"])
def test_a_model_name_with_control_characters_or_a_backslash_is_refused(
    emulator: Any,  # noqa: F811
    fake: FakeVertex,  # noqa: F811
    trainer: Path,  # noqa: F811
    name: str,
) -> None:
    done = _submit(trainer, fake, "gs://b/runs/n", "--register-model", name)
    (line,) = done.stderr.strip().splitlines()
    assert done.exit_code == 2 and line.startswith("error: --register-model ") and "is not a model name" in line
    assert not fake.created_bodies() and not getattr(fake, "uploads", [])


def test_the_model_of_a_job_that_failed_is_not_registered(emulator: Any, fake: FakeVertex, trainer: Path) -> None:  # noqa: F811
    from tfjob import get_job, list_jobs

    _leave_outputs(emulator, "gs://b/runs/f")  # a SavedModel it left before failing
    fake.next_jobs = [(FAILS, {"code": 3, "message": "boom"})]
    done = _submit(trainer, fake, "gs://b/runs/f", "--register-model", "census")
    assert done.exit_code == 1 and done.stderr.strip().splitlines()[-1] == "error: job 7000000000000000001 FAILED: boom"
    (job,) = list_jobs()
    with pytest.raises(UsageError, match=r"is FAILED: only the model of a job that SUCCEEDED is registered"):
        get_job(job.id).register_model("census")
    assert not getattr(fake, "uploads", [])


@pytest.mark.parametrize("value", ['x"y', "a\\b", "${trialParameters.z}", "$(CLOUD_ML_TRIAL_ID)", "tab\there"])
def test_a_categorical_value_katib_cannot_substitute_is_one_line(tmp_path: Path, value: str) -> None:
    # Katib replaces ${trialParameters.NAME} in the trial job's JSON text: a quote broke the
    # JSON of every trial, ${…} was another placeholder, $(…) Kubernetes expands in args.
    import json

    import yaml
    from click.testing import CliRunner

    from tfjob.cli.main import app

    hparams = tmp_path / "hparams.yaml"
    study = {
        "maxTrialCount": 4,
        "parallelTrialCount": 2,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", value]}}],
        },
    }
    hparams.write_text(yaml.safe_dump(study))
    argv = [
        "tune",
        "--backend",
        "jobset",
        "--image",
        "us-docker.pkg.dev/p/t/toy:1",
        "-m",
        "trainer.task",
        "--hparams",
        str(hparams),
        "--dry-run",
    ]
    done = CliRunner().invoke(app, argv)
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert "is a value of parameter opt that Katib cannot pass into the trial's job" in line
    study["studySpec"]["parameters"][0]["categoricalValueSpec"]["values"] = ["adam", "sgd w/ momentum"]  # type: ignore[index]
    hparams.write_text(yaml.safe_dump(study))
    fine = CliRunner().invoke(app, argv)
    assert fine.exit_code == 0, fine.output
    assert json.loads(fine.stdout)["spec"]["parameters"][0]["feasibleSpace"]["list"] == ["adam", "sgd w/ momentum"]


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from fakes.kube_api import kube_fixture
    from helpers import CRDS

    yield from kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def test_more_parallel_trials_than_tfjob_follows_without_katib_is_one_line(kube: Any, tmp_path: Path) -> None:
    # Each trial running at once is a thread here: --parallel-trials 100000 started as many.
    from click.testing import CliRunner

    from tfjob.backends.kubeflow.tuning import MAX_PARALLEL_TRIALS
    from tfjob.cli.main import app

    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    argv = ["tune", "--backend", "jobset", "--kubeconfig", kubeconfig, "--image", "us-docker.pkg.dev/p/t/toy:1",
            "-m", "trainer.task", "--hparams", str(Path(__file__).parent / "data" / "tune_trainers" / "toy_vertex.yaml"),
            "--display-name", "toy", "--max-trials", "100000", "--parallel-trials", str(MAX_PARALLEL_TRIALS + 1)]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert f"tfjob runs at most {MAX_PARALLEL_TRIALS} trials at once on jobset without Katib" in line
    assert not kube.jobsets


def test_a_refused_upload_says_the_job_succeeded_and_how_to_register_later(emulator: Any, fake: FakeVertex, trainer: Path) -> None:  # noqa: F811
    _leave_outputs(emulator, "gs://b/runs/r")
    fake.fail(r"POST .*/models:upload", 403, "Permission 'aiplatform.models.upload' denied on resource", reason="IAM_PERMISSION_DENIED")
    done = _submit(trainer, fake, "gs://b/runs/r", "--register-model", "census")
    lines = done.stderr.strip().splitlines()
    assert done.exit_code == 1 and "Traceback" not in done.output
    assert lines[-1].startswith("error: ") and "aiplatform.models.upload" in lines[-1]
    assert lines[-2] == (
        "tfjob: job 7000000000000000001 SUCCEEDED but its model was not registered as census; "
        "once fixed, register it from Python: tfjob.get_job('7000000000000000001').register_model('census')"
    )
