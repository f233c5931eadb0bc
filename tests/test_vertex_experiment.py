"""Vertex AI Experiments (issue 27.4): --experiment NAME [--experiment-run RUN] rendered into
CustomJobSpec's experiment / experiment_run (checked strictly against the pinned client's
protobuf), refused in one line where wrong, and read from a config file's keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_render_vertex import strict_roundtrip
from tfjob.cli.main import app
from tfjob.errors import SpecError
from tfjob.job import Job
from tfjob.platforms import Vertex

CTX = "projects/my-project/locations/us-central1/metadataStores/default/contexts"
WHERE = dict(project="my-project", region="us-central1")


def job(**vertex: str) -> Job:
    return Job(module="trainer.task", image="r/x:1", backend=Vertex(**WHERE, **vertex))


def test_names_become_the_contexts_the_vertex_sdk_makes() -> None:
    body = job(experiment="census", experiment_run="lr-0-01").render()
    assert body["jobSpec"]["experiment"] == f"{CTX}/census"
    assert body["jobSpec"]["experimentRun"] == f"{CTX}/census-lr-0-01"
    parsed = strict_roundtrip(body)
    assert (parsed["jobSpec"]["experiment"], parsed["jobSpec"]["experimentRun"]) == (f"{CTX}/census", f"{CTX}/census-lr-0-01")
    full = job(experiment=f"{CTX}/census").render()["jobSpec"]
    assert full["experiment"] == f"{CTX}/census" and "experimentRun" not in full


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"experiment_run": "r1"}, "experiment_run needs experiment: a run belongs to an experiment"),
        ({"experiment": "Census"}, "Vertex AI Experiments take lower-case letters"),
        ({"experiment": "projects/p/experiments/x"}, "is not an experiment context"),
    ],
)
def test_a_wrong_experiment_is_one_error(given: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        job(**given).render()


def test_the_cli_flags_and_their_mistakes() -> None:
    runner = CliRunner()
    args = [
        "render",
        "-m",
        "trainer.task",
        "--image",
        "r/x:1",
        "--backend",
        "vertex",
        "--project",
        "my-project",
        "--region",
        "us-central1",
        "-o",
        "json",
    ]
    done = runner.invoke(app, [*args, "--experiment", "census", "--experiment-run", "run-1"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["jobSpec"]["experimentRun"] == f"{CTX}/census-run-1"
    bad = runner.invoke(app, [*args, "--experiment-run", "run-1"])
    assert bad.exit_code == 2 and bad.stderr.strip().splitlines() == [
        "error: --experiment-run needs --experiment: a run belongs to an experiment"
    ]
    local = runner.invoke(app, ["render", "-m", "trainer.task", "--experiment", "census"])
    assert local.exit_code == 2 and "--experiment is for the vertex backend" in local.output
    legacy = runner.invoke(
        app,
        ["render", "-m", "trainer.task", "--backend", "ai-platform", "--project", "p", "--region", "us-central1", "--experiment", "census"],
    )
    assert legacy.exit_code == 2 and "--experiment" in legacy.output


def test_a_config_files_experiment_keys_are_taken(tmp_path: Path) -> None:
    config = tmp_path / "job.json"
    config.write_text(json.dumps({
        "workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
                             "containerSpec": {"imageUri": "r/x:1"}}],
        "experiment": f"{CTX}/census", "experimentRun": f"{CTX}/census-run-2",
    }))  # fmt: skip
    read = Job(config=str(config), backend=Vertex(**WHERE))
    assert (read.options.experiment, read.options.experiment_run) == (f"{CTX}/census", f"{CTX}/census-run-2")
    assert strict_roundtrip(read.render())["jobSpec"]["experimentRun"] == f"{CTX}/census-run-2"
