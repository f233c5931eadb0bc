"""The face a pipeline or an orchestrator reads (docs/orchestration.md): ``tfjob status -o json``
and the handle's status follow docs/status.schema.json — for real local jobs that succeed and
fail — and the schema follows the code (its states, backends and fields)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from local_helpers import PROBE, no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test

from tfjob import Job
from tfjob.backends import BACKENDS
from tfjob.cli.main import app
from tfjob.errors import JobFailedError
from tfjob.model import JobState, JobStatus, TaskStatus

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "status.schema.json").read_text())


def status_json(job_id: str, *flags: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["status", job_id, *(flags or ("-o", "json"))])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def test_a_succeeded_job_reads_as_the_schema_says(tmp_path: Path) -> None:
    handle = Job(str(PROBE), "probe.task", workers=2, job_dir=str(tmp_path / "job"), args=["--wait-tasks", "3"], quiet=True).run()
    data = status_json(handle.id)
    assert (data["id"], data["backend"], data["state"], data["failure"]) == (handle.id, "local", "SUCCEEDED", None)
    assert sorted(t["name"] for t in data["tasks"]) == ["chief-0", "worker-0", "worker-1"]
    assert [e["state"] for e in data["events"]][-1] == "SUCCEEDED"
    assert status_json(handle.id, "--json") == data  # the older flag prints the same document
    # Once ended: where its outputs are and its final metrics (issue 27's JobHandle.outputs/metrics).
    assert data["outputs"]["root"] == str(tmp_path / "job") and data["outputs"]["reachable"] is True
    assert data["metrics"] == {}  # the probe logs no TensorBoard scalars
    # The handle's own status is the same document, less what only the command adds.
    own = handle.status().to_dict()
    added = ("events", "diagnoses", "failure", "estimated_cost", "outputs", "outputs_note", "metrics", "metrics_note")
    assert {k: v for k, v in data.items() if k not in added} == json.loads(json.dumps(own))


def test_a_failed_job_names_its_task_exit_code_and_last_lines(tmp_path: Path) -> None:
    with pytest.raises(JobFailedError, match="worker-1") as failed:
        Job(str(PROBE), "probe.task", workers=2, args=["--exit", "worker-1=3", "--hang", "chief"], quiet=True).run()
    data = status_json(failed.value.job_id)
    assert data["state"] == "FAILED" and data["failed_task"] == "worker-1"
    assert data["failure"]["task"] == "worker-1" and data["failure"]["exit_code"] == 3
    assert data["failure"]["log_tail"] == failed.value.log_tail


def test_the_schema_follows_the_code() -> None:
    job_states = {s.value for s in JobState if s is not JobState.STOPPED}  # STOPPED is a task's end only
    assert set(SCHEMA["$defs"]["jobState"]["enum"]) == job_states
    assert set(SCHEMA["$defs"]["taskState"]["enum"]) == {s.value for s in JobState}
    assert set(SCHEMA["properties"]["backend"]["enum"]) == set(BACKENDS)
    assert {f.name for f in dataclasses.fields(JobStatus)} | {"events", "diagnoses", "failure"} == set(SCHEMA["required"])
    from tfjob.results import Diagnosis

    assert {f.name for f in dataclasses.fields(Diagnosis)} == set(SCHEMA["properties"]["diagnoses"]["items"]["required"])
    from tfjob.results import JobOutputs

    outputs_schema = SCHEMA["properties"]["outputs"]["oneOf"][1]
    assert {f.name for f in dataclasses.fields(JobOutputs)} - {"files"} | {"total_size"} == set(outputs_schema["required"])
    task_schema = SCHEMA["properties"]["tasks"]["items"]
    assert {f.name for f in dataclasses.fields(TaskStatus)} == set(task_schema["required"])
    from tfjob.model import TaskRestart

    assert {f.name for f in dataclasses.fields(TaskRestart)} == set(task_schema["properties"]["restart_history"]["items"]["required"])


def test_the_schema_refuses_what_it_must(tmp_path: Path) -> None:
    good = JobStatus(id="j", backend="local", name="n", state=JobState.RUNNING, tasks=[TaskStatus("worker-0", JobState.RUNNING)]).to_dict()
    good.update(events=[], diagnoses=[], failure=None)
    jsonschema.validate(good, SCHEMA)
    for broken in (
        {**good, "state": "DONE"},
        {**good, "tasks": [{**good["tasks"][0], "name": "gpu-0"}]},
        {k: v for k, v in good.items() if k != "failure"},
    ):
        with pytest.raises(jsonschema.ValidationError, match="DONE|gpu-0|'failure' is a required property"):
            jsonschema.validate(broken, SCHEMA)
