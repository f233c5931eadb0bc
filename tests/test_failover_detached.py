"""Failover of a detached job (`tfjob submit --async`, `Job.submit()`): whoever follows it later —
`tfjob wait ID` in another process, `get_job(ID).result()` — makes its next attempt as the submitting
command would, exactly once however many follow it; `tfjob status ID` makes none and says what
`wait` would do; the trainer's own failure never fails over. Against the Vertex AI stand-in."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import test_vertex_e2e as e2e
from fakes.vertex_api import DEFAULT_SCRIPT, FakeVertex
from test_failover import STOCKOUT, creates, two_regions
from test_vertex_e2e import run
from tfjob.cli.main import app
from tfjob.model import JobState
from tfjob.runtime.store import JobStore

# The stand-ins of test_vertex_e2e: gcp-storage-emulator (bucket b, in US), the Vertex AI stand-in, a trainer.
emulator, fake, trainer = e2e.emulator, e2e.fake, e2e.trainer
ENDS_IN_A_STOCKOUT = (("JOB_STATE_QUEUED", "JOB_STATE_FAILED"), {"code": 8, "message": STOCKOUT})
TO_US_EAST4 = ["/v1/projects/p/locations/us-central1/customJobs", "/v1/projects/p/locations/us-east4/customJobs"]


def submitted(tfjob_exe: str, trainer: Path, fake: FakeVertex) -> str:
    """`tfjob submit --region us-central1,us-east4 --async`: the job's id (nothing follows it)."""
    out = run(two_regions(tfjob_exe, trainer, fake, "--async"))
    assert out.returncode == 0, out.stderr
    assert creates(fake) == TO_US_EAST4[:1]
    return out.stdout.strip()


def read_until_failed(job_id: str, fake: FakeVertex) -> dict[str, Any]:
    """`tfjob status ID --json` until the stand-in's first attempt has ended (each read moves it a step)."""
    for _ in range(10):
        out = CliRunner().invoke(app, ["status", job_id, "--json"])
        assert out.exit_code == 0, out.output
        if fake.jobs[job_id]["state"] == "JOB_STATE_FAILED":
            return dict(json.loads(out.stdout))
    raise AssertionError(f"the first attempt never ended: {fake.jobs[job_id]['state']}")


def test_tfjob_wait_in_another_process_fails_over_to_the_next_region(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str
) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.strip() == job_id
    assert f"job {job_id} attempt 1 ended with a stockout in us-central1: submitted in us-east4 as attempt 2" in waited.stderr
    assert creates(fake) == TO_US_EAST4
    first, second = fake.created_bodies()
    assert second["displayName"] == first["displayName"] + "-attempt2" and second["jobSpec"] == first["jobSpec"]

    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.SUCCEEDED and record.options["region"] == "us-east4"
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED"), ("us-east4", "SUCCEEDED")]
    assert record.extra["attempts"][0]["reason"] == "a stockout" and "next_attempt" not in record.extra
    status = CliRunner().invoke(app, ["status", job_id])
    assert re.search(r"  1  projects/p/locations/us-central1/customJobs/\d+  FAILED .* a stockout", status.stdout), status.output
    assert re.search(r"  2  projects/p/locations/us-east4/customJobs/\d+  SUCCEEDED", status.stdout)


def test_two_waiters_at_once_make_one_next_attempt(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    # Both waiters are answered "FAILED (a stockout)" together: both go for the next attempt at once.
    meeting, met = threading.Barrier(2, timeout=100), []
    advance = fake.advance

    def together(vertex_id: str) -> dict[str, Any]:
        job = advance(vertex_id)
        if vertex_id == job_id and job["state"] == "JOB_STATE_FAILED" and len(met) < 2:
            met.append(vertex_id)
            meeting.wait()
        return job

    fake.advance = together  # type: ignore[method-assign]
    waiters = [subprocess.Popen([tfjob_exe, "wait", job_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ)) for _ in range(2)]  # fmt: skip
    try:
        outs = [w.communicate(timeout=120) for w in waiters]
    finally:
        for w in waiters:
            w.kill()
    assert len(met) == 2  # both read the first attempt's end
    assert [w.returncode for w in waiters] == [0, 0], [err for _, err in outs]
    assert [out.strip() for out, _ in outs] == [job_id, job_id]
    assert creates(fake) == TO_US_EAST4  # exactly one attempt 2
    made = [err for _, err in outs if "submitted in us-east4 as attempt 2" in err]
    assert len(made) == 1, [err for _, err in outs]
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.SUCCEEDED
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED"), ("us-east4", "SUCCEEDED")]


def test_status_makes_no_attempt_and_says_what_wait_does(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    data = read_until_failed(job_id, fake)
    said = f"a stockout ended attempt 1 in us-central1; `tfjob wait {job_id}` tries the next candidate (us-east4)"
    assert data["state"] == "RUNNING" and data["message"] == said
    for _ in range(3):  # in another process too, as often as asked
        out = run([tfjob_exe, "status", job_id])
        assert out.returncode == 0, out.stderr
        assert f"message   {said}" in out.stdout
    assert creates(fake) == TO_US_EAST4[:1]
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is not JobState.FAILED and "next_attempt" not in record.extra and len(fake.jobs) == 1


def test_the_trainers_own_failure_never_fails_over_from_wait(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    own = "The replica workerpool1-0 exited with a non-zero status of 1. Resources are insufficient in region: us-central1."
    fake.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED"), {"code": 3, "message": own}))
    job_id = submitted(tfjob_exe, trainer, fake)
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 1, waited.stderr
    errors = [line for line in waited.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: job {job_id} FAILED: The replica workerpool1-0 exited"), waited.stderr
    assert "Traceback" not in waited.stderr and "attempt 2" not in waited.stderr
    assert creates(fake) == TO_US_EAST4[:1]
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.FAILED and record.failed_task == "worker-0"


def test_candidates_used_up_end_the_job_failed(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs += [ENDS_IN_A_STOCKOUT, ENDS_IN_A_STOCKOUT]
    job_id = submitted(tfjob_exe, trainer, fake)
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 1, waited.stderr
    assert "submitted in us-east4 as attempt 2" in waited.stderr and "attempt 3" not in waited.stderr
    errors = [line for line in waited.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: job {job_id} FAILED: Resources are insufficient"), waited.stderr
    assert creates(fake) == TO_US_EAST4
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.FAILED
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED"), ("us-east4", "FAILED")]


def test_a_claim_left_by_a_dead_waiter_is_taken_over_without_a_second_create(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str
) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    read_until_failed(job_id, fake)
    # A waiter claimed attempt 2, created it in us-east4 and died before recording it.
    gone = subprocess.Popen(["true"])
    gone.wait()
    label = "0123456789abcdef0123456789abcdef"
    with JobStore() as store:
        record = store.get(job_id)
        claim = {"after": job_id, "submission_id": label, "look_first": False, "pid": gone.pid, "start": 1,
                 "host": socket.gethostname(), "at": time.time()}  # fmt: skip
        store.update(job_id, extra={**record.extra, "next_attempt": claim})
    body = {k: v for k, v in fake.created_bodies()[0].items() if k in ("jobSpec", "labels")}
    made = fake.create("p", "us-east4", {**body, "displayName": "x-attempt2", "labels": {**body["labels"], "tfjob-submission-id": label}})

    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 0, waited.stderr
    assert creates(fake) == TO_US_EAST4[:1]  # the job the dead waiter made is found by its label, not made again
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.SUCCEEDED and record.extra["current_job"] == made["name"].rsplit("/", 1)[1]
    assert [a["region"] for a in record.extra["attempts"]] == ["us-central1", "us-east4"] and "next_attempt" not in record.extra


def test_a_restart_is_made_by_a_handle_in_another_process_too(emulator: object, fake: FakeVertex, trainer: Path) -> None:
    """`max_restarts` goes the same way: `get_job(ID).result()` from a fresh handle submits the preempted job again."""
    from test_vertex_restarts import FAILS, PREEMPTED, vertex_job

    import tfjob

    fake.next_jobs = [(FAILS, PREEMPTED), (DEFAULT_SCRIPT, None)]
    job_id = vertex_job(trainer, fake, max_restarts=1).submit().id
    status = tfjob.get_job(job_id).result()
    assert status.state is JobState.SUCCEEDED
    assert [b["displayName"].rsplit("-", 1)[-1] for b in fake.created_bodies()][1:] == ["attempt2"]
    with JobStore() as store:
        assert [a["state"] for a in store.get(job_id).extra["attempts"]] == ["FAILED", "SUCCEEDED"]


def test_logs_follow_makes_the_next_attempt_and_goes_on_with_its_lines(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str
) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    fake.add_log(job_id, "workerpool0-0", "attempt 1 starts", 1)
    fake.add_log(str(int(job_id) + 1), "workerpool0-0", "attempt 2 trains", 100)  # the stand-in's next id
    out = run([tfjob_exe, "logs", job_id, "--follow"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[chief-0] attempt 1 starts", "[chief-0] attempt 2 trains"]
    assert f"job {job_id} attempt 1 ended with a stockout in us-central1: submitted in us-east4 as attempt 2" in out.stderr
    assert creates(fake) == TO_US_EAST4
    with JobStore() as store:
        assert store.get(job_id).state is JobState.SUCCEEDED


def test_a_next_region_refusing_the_create_ends_the_job_failed_with_every_attempt(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str
) -> None:
    from test_failover import L4

    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    fake.fail(r"^POST /v1/projects/p/locations/us-east4/customJobs$", 429, f"The following quota metrics exceed quota limits: {L4}")
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 1, waited.stderr
    errors = [line for line in waited.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "every candidate of --region / the fallback lists was tried: us-central1; us-east4" in errors[0]
    assert "custom_model_training_nvidia_l4_gpus" in errors[0] and "Traceback" not in waited.stderr
    assert creates(fake) == TO_US_EAST4 and len(fake.jobs) == 1  # the refused create made nothing
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.FAILED and "next_attempt" not in record.extra and record.extra["failover"] == []
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED"), ("us-east4", "REFUSED")]
    again = run([tfjob_exe, "wait", job_id])  # an ended job: answered from its record, nothing made
    assert again.returncode == 1 and creates(fake) == TO_US_EAST4


def test_a_cancel_between_attempts_ends_the_job_cancelled(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    read_until_failed(job_id, fake)  # attempt 1 ended with a stockout: `tfjob wait` would try us-east4
    cancel = run([tfjob_exe, "cancel", job_id])
    assert cancel.returncode == 0, cancel.stderr
    with JobStore() as store:  # nothing was running: CANCELLED at once, as Vertex AI ends a job it cancels
        record, events = store.get(job_id), store.events(job_id)
    assert record.state is JobState.CANCELLED and "next_attempt" not in record.extra
    assert [(a["region"], a["state"], a["reason"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED", "a stockout")]
    assert STOCKOUT in record.extra["attempts"][0]["message"]
    said = "cancelled between attempts: attempt 1 ended with a stockout in us-central1"
    assert events[-1][1] is JobState.CANCELLED and said in events[-1][2] and "no attempt 2 was made" in events[-1][2]
    assert record.message == events[-1][2]
    status = run([tfjob_exe, "status", job_id])
    assert status.returncode == 0 and "CANCELLED" in status.stdout and said in status.stdout, status.stdout
    data = json.loads(run([tfjob_exe, "status", job_id, "--json"]).stdout)
    assert data["state"] == "CANCELLED" and [(a["state"], a["reason"]) for a in data["extra"]["attempts"]] == [("FAILED", "a stockout")]
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 130, waited.stderr  # as `tfjob wait` ends for every cancelled job
    assert f"job {job_id} CANCELLED: {said}" in waited.stderr and "Traceback" not in waited.stderr
    assert creates(fake) == TO_US_EAST4[:1] and "attempt 2" not in waited.stderr.replace("no attempt 2 was made", "")
    with JobStore() as store:
        assert store.get(job_id).state is JobState.CANCELLED


@pytest.mark.parametrize("reader", ["wait", "list --remote"])
def test_a_follower_ends_cancelled_a_job_asked_to_stop_between_attempts(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel recorded (CANCELLING) once attempt 1 had ended with a stockout, before tfjob read that
    end: whoever reads it next (`tfjob wait`, `tfjob list --remote`) makes no attempt and ends it
    CANCELLED, the stockout among its attempts."""
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    while fake.jobs[job_id]["state"] != "JOB_STATE_FAILED":  # the stand-in moves a step at each read
        fake.advance(job_id)
    with JobStore() as store:
        assert store.set_state(job_id, JobState.CANCELLING, "cancel requested")
    if reader == "list --remote":
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
        monkeypatch.setenv("TFJOB_API_ENDPOINT", fake.endpoint)
        listed = run([tfjob_exe, "list", "--remote", "--backend", "vertex", "--json"])
        assert listed.returncode == 0, listed.stderr
        assert [(j["id"], j["state"]) for j in json.loads(listed.stdout)] == [(job_id, "CANCELLED")]
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 130, waited.stderr
    assert creates(fake) == TO_US_EAST4[:1]
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.CANCELLED and record.message.startswith("cancelled between attempts: attempt 1 ended with a stockout")
    assert [(a["state"], a["reason"]) for a in record.extra["attempts"]] == [("FAILED", "a stockout")]


def test_an_attempt_made_as_a_cancel_came_is_cancelled(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    """The cancel recorded while a follower, under its claim, creates attempt 2: that attempt is
    cancelled as soon as it is created, and the job ends CANCELLED, nothing left running."""
    fake.next_jobs.append(ENDS_IN_A_STOCKOUT)
    job_id = submitted(tfjob_exe, trainer, fake)
    create = fake.create

    def cancelled_meanwhile(project: str, region: str, body: dict[str, Any]) -> dict[str, Any]:
        if region == "us-east4":
            with JobStore() as store:
                assert store.set_state(job_id, JobState.CANCELLING, "cancel requested")
        return create(project, region, body)

    fake.create = cancelled_meanwhile  # type: ignore[method-assign]
    waited = run([tfjob_exe, "wait", job_id])
    assert waited.returncode == 130, waited.stderr
    assert creates(fake) == TO_US_EAST4
    [second] = [v for k, v in fake.jobs.items() if k != job_id]
    assert second["state"] == "JOB_STATE_CANCELLED"
    assert any(m == "POST" and p.endswith(":cancel") and second["name"] in p for m, p, _ in fake.requests)
    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.CANCELLED
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "FAILED"), ("us-east4", "CANCELLED")]
