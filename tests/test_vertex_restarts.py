"""``max_restarts`` on Vertex AI: a job that ended preempted (or with a retryable platform
error) is submitted again, as attempts of one tfjob job; the trainer's own failure is not.

The real google-cloud-aiplatform client talks to the local stand-in (tests/fakes/vertex_api.py),
which ends the scripted attempts as told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import test_vertex_e2e
from fakes.vertex_api import DEFAULT_SCRIPT, FakeVertex
from tfjob.model import JobState
from tfjob.backends.vertex.follow import retryable_failure
from tfjob.cli.main import app
from tfjob.runtime.store import JobStore

FAILS = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED")
pytestmark = pytest.mark.usefixtures("emulator")


#: test_vertex_e2e's fixtures: gcp-storage-emulator (bucket ``b``), the Vertex AI stand-in, a trainer package.
emulator, fake, trainer = test_vertex_e2e.emulator, test_vertex_e2e.fake, test_vertex_e2e.trainer


PREEMPTED = {"code": 14, "message": "The job was preempted: a Spot VM of workerpool0 was reclaimed."}


def vertex_job(trainer: Path, fake: FakeVertex, **settings: Any) -> Any:
    from tfjob import Job, Vertex

    return Job(str(trainer), "trainer.task", workers=1, job_dir="gs://b/runs/r1",
               backend=Vertex(project="p", region="us-central1", staging_bucket="gs://b", api_endpoint=fake.endpoint, **settings))  # fmt: skip


def test_retryable_failures_are_chosen_conservatively() -> None:
    def failed(code: int, message: str) -> dict[str, Any]:
        return {"state": "JOB_STATE_FAILED", "error": {"code": code, "message": message}}

    assert retryable_failure(failed(14, "Internal error: the service is unavailable")) == "retryable platform error (code 14)"
    assert retryable_failure(failed(10, "aborted")) == "retryable platform error (code 10)"
    assert retryable_failure(failed(13, "The VM of workerpool1-0 was preempted.")) == "preempted"
    # The trainer's own exit is never retried, whatever the code; nor an error of the job's spec.
    assert retryable_failure(failed(14, "The replica workerpool0-0 exited with a non-zero status of 1.")) is None
    assert retryable_failure(failed(3, "Invalid machine type n1-nope")) is None
    assert retryable_failure({"state": "JOB_STATE_SUCCEEDED"}) is None
    assert retryable_failure({"state": "JOB_STATE_CANCELLED", "error": {"code": 1, "message": "preempted"}}) is None


def test_a_preempted_job_is_submitted_again_as_attempt_2(fake: FakeVertex, trainer: Path) -> None:
    fake.next_jobs = [(FAILS, PREEMPTED), (DEFAULT_SCRIPT, None)]
    handle = vertex_job(trainer, fake, max_restarts=1).run()
    assert handle.state is JobState.SUCCEEDED

    first, second = fake.created_bodies()
    assert second["displayName"] == first["displayName"] + "-attempt2"
    assert second["jobSpec"] == first["jobSpec"]  # the same spec, the same job dir to resume from
    assert first["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/runs/r1"}
    assert second["labels"]["tfjob-submission-id"] != first["labels"]["tfjob-submission-id"]
    assert {k: v for k, v in second["labels"].items() if k != "tfjob-submission-id"} == {
        k: v for k, v in first["labels"].items() if k != "tfjob-submission-id"
    }

    ids = sorted(fake.jobs)
    with JobStore() as store:
        record = store.get(handle.id)
        history = [message for _, _, message in store.events(handle.id)]
    assert handle.id == ids[0]  # one tfjob job: the first attempt's id stays
    assert record.state is JobState.SUCCEEDED
    attempts = record.extra["attempts"]
    assert [a["resource_name"] for a in attempts] == [fake.jobs[i]["name"] for i in ids]
    assert [a["state"] for a in attempts] == ["FAILED", "SUCCEEDED"]
    assert attempts[0]["reason"] == "retryable platform error (code 14)" and all(a["ended"] for a in attempts)
    assert any(m.startswith("attempt 1 ended retryable platform error (code 14): submitted again as attempt 2") for m in history)

    status = CliRunner().invoke(app, ["status", handle.id])
    assert status.exit_code == 0, status.output
    lines = status.stdout.splitlines()
    shown = lines[lines.index("attempts") + 1 :][:2]
    assert shown[0].startswith(f"  1  {fake.jobs[ids[0]]['name']}  FAILED ") and shown[0].endswith("retryable platform error (code 14)")
    assert shown[1].startswith(f"  2  {fake.jobs[ids[1]]['name']}  SUCCEEDED ")


def test_the_trainers_failure_is_not_retried(fake: FakeVertex, trainer: Path) -> None:
    from tfjob.errors import JobFailedError

    fake.next_jobs = [
        (FAILS, {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 1."}),
        (DEFAULT_SCRIPT, None),
    ]
    with pytest.raises(JobFailedError, match=r"non-zero status of 1"):
        vertex_job(trainer, fake, max_restarts=2).run()
    assert len(fake.created_bodies()) == 1


def test_restarts_stop_at_max_restarts_and_not_without_it(fake: FakeVertex, trainer: Path) -> None:
    from tfjob.errors import JobFailedError

    fake.next_jobs = [(FAILS, PREEMPTED), (FAILS, {"code": 13, "message": "Spot VM preempted"}), (DEFAULT_SCRIPT, None)]
    with pytest.raises(JobFailedError, match=r"FAILED: Spot VM preempted"):
        vertex_job(trainer, fake, max_restarts=1).run()
    assert [b["displayName"].rsplit("-", 1)[-1] for b in fake.created_bodies()][1:] == ["attempt2"]

    fake.next_jobs = [(FAILS, PREEMPTED), (DEFAULT_SCRIPT, None)]
    with pytest.raises(JobFailedError, match=r"preempted"):
        vertex_job(trainer, fake).run()
    assert len(fake.created_bodies()) == 3


def test_cancel_cancels_the_current_attempt(fake: FakeVertex, trainer: Path) -> None:
    from tfjob.backends.vertex.service import follow_job

    fake.next_jobs = [(FAILS, PREEMPTED), (("JOB_STATE_QUEUED", "JOB_STATE_RUNNING"), None)]
    job_id = vertex_job(trainer, fake, max_restarts=1).submit().id

    class Stop(Exception):
        pass

    def sleep(_: float) -> None:
        if len(fake.jobs) == 2 and fake.jobs[max(fake.jobs)]["state"] == "JOB_STATE_RUNNING":
            raise Stop("the second attempt runs")

    with pytest.raises(Stop, match="the second attempt runs"):
        follow_job(job_id, None, sleep=sleep, store=JobStore())  # type: ignore[arg-type]
    second = max(fake.jobs)
    cancel = CliRunner().invoke(app, ["cancel", job_id])
    assert cancel.exit_code == 0, cancel.output
    assert fake.jobs[second]["state"] == "JOB_STATE_CANCELLING"
    assert [p for _, p, _ in fake.requests if p.endswith(":cancel")] == [f"/v1/{fake.jobs[second]['name']}:cancel"]
    with JobStore() as store:
        assert store.get(job_id).state is JobState.CANCELLING


def test_max_restarts_is_bounded(fake: FakeVertex, trainer: Path) -> None:
    from tfjob.errors import UsageError

    with pytest.raises(UsageError, match=r"--max-restarts -1 must be a whole number"):
        vertex_job(trainer, fake, max_restarts=-1).submit()
    assert fake.created_bodies() == []


def test_the_cli_flag_on_vertex(fake: FakeVertex, trainer: Path) -> None:
    fake.next_jobs = [(FAILS, {"code": 10, "message": "aborted by the platform"}), (DEFAULT_SCRIPT, None)]
    result = CliRunner().invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--project", "p",
                                      "--staging-bucket", "gs://b", "--api-endpoint", fake.endpoint, "--max-restarts", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    job_id = result.stdout.strip()
    assert f"job {job_id} attempt 1 ended retryable platform error (code 10): submitted again as attempt 2" in result.stderr
    assert len(fake.created_bodies()) == 2 and job_id == min(fake.jobs)


def test_status_and_list_before_the_follow_loop_submits_again(fake: FakeVertex, trainer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob.backends.vertex.service import fetch_status, follow_job, list_jobs

    fake.next_jobs = [(FAILS, PREEMPTED), (DEFAULT_SCRIPT, None)]
    job_id = vertex_job(trainer, fake, max_restarts=1).submit().id
    for _ in range(4):  # another process reads the first attempt to its (retryable) end
        status = fetch_status(job_id, store=JobStore())
    assert fake.jobs[job_id]["state"] == "JOB_STATE_FAILED"
    assert status.state is JobState.RUNNING and f"(`tfjob wait {job_id}`) submits it again" in status.message
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("TFJOB_API_ENDPOINT", fake.endpoint)
    with JobStore() as store:
        assert store.get(job_id).state is JobState.RUNNING
    assert follow_job(job_id, None, store=JobStore()).state is JobState.SUCCEEDED  # type: ignore[arg-type]
    assert len(fake.jobs) == 2
    with JobStore() as store:
        assert store.get(job_id).state is JobState.SUCCEEDED
    from tfjob.runtime.settings import load_settings

    listed = [s for s in list_jobs(store=JobStore(), settings=load_settings()) if s.id in fake.jobs]
    assert [(s.id, s.state) for s in listed] == [(job_id, JobState.SUCCEEDED)]  # one row: the job, its current attempt's state
