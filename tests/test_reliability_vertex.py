"""The Vertex AI path under storms of 429/503 and lost answers: one job, recorded, followed to its end.

The real client (google-cloud-aiplatform's REST transport) talks to the local Vertex AI
stand-in (``tests/fakes/vertex_api.py``), which queues the faults; the waits between
retries are recorded, not slept. Every job the stand-in created must be in the job
store and have ended there (the reliability recorder checks it: a job created but
unknown to tfjob would run, and bill, unseen).
"""

from __future__ import annotations

import random
import re
from typing import Iterator

import pytest
from reliability import Reliability

from fakes.vertex_api import FakeVertex
from tfjob.model import JobState
from tfjob.backends.vertex.options import VertexOptions
from tfjob.errors import BackendError
from tfjob.backends.vertex.client import VertexClient
from tfjob.backends.vertex.retry import Backoff
from tfjob.backends.vertex.backend import submit_job
from tfjob.backends.vertex.service import follow_job
from tfjob.description.request import build_spec
from tfjob.runtime.store import JobStore

CREATE = r"^POST /v1/projects/p/locations/us-central1/customJobs$"
LIST = r"^GET /v1/projects/p/locations/us-central1/customJobs$"
GET = r"^GET /v1/projects/p/locations/us-central1/customJobs/\d+$"
BACKOFF = Backoff(initial=1.0, multiplier=2.0, maximum=8.0, attempts=6, jitter=0.5)


@pytest.fixture
def fake() -> Iterator[FakeVertex]:
    with FakeVertex() as server:
        yield server


class Waits(list):  # type: ignore[type-arg]
    """The injected sleep: remembers each wait, waits for nothing."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(fake: FakeVertex, waits: Waits, lines: list[str]) -> VertexClient:
    from google.auth.credentials import AnonymousCredentials

    return VertexClient(
        "p", "us-central1", api_endpoint=fake.endpoint, credentials=AnonymousCredentials(), backoff=BACKOFF,
        sleep=waits, rng=random.Random(3), on_retry=lambda exc, delay, attempt: lines.append(f"retry {attempt}: {exc}"),
    )  # fmt: skip


def storm(fake: FakeVertex, reliability: Reliability, pattern: str, *statuses: int | str) -> None:
    """Queue one fault per status for requests matching ``pattern``, and count them."""
    for status in statuses:
        fake.fail(pattern, status, message="the service is having a bad day")
        reliability.fault(f"vertex {status}")


SPEC = build_spec(dict(name="storm", module="trainer.task", image="gcr.io/p/trainer:1", workers=4, ps=2))
OPTIONS = VertexOptions(project="p", region="us-central1", poll_interval=1.0)


@pytest.mark.reliability
def test_a_storm_and_a_lost_create_end_in_one_recorded_job_followed_to_success(fake: FakeVertex, reliability: Reliability) -> None:
    storm(fake, reliability, CREATE, 429, 429, 503, "lost")
    storm(fake, reliability, LIST, 503, 503)  # the look-up after the 503 meets its own storm
    storm(fake, reliability, GET, 503, 429, "reset", 503)
    waits, lines = Waits(), []
    vertex = client(fake, waits, lines)

    job_id = submit_job(SPEC, OPTIONS, client=vertex, echo=lines.append, store=JobStore())
    final = follow_job(job_id, OPTIONS, client=vertex, echo=lines.append, sleep=waits, store=JobStore())

    assert list(fake.jobs) == [job_id]  # the lost create was found by its label, not sent again
    assert len(fake.created_bodies()) == 4  # 429, 429, 503, lost: each a try, one job
    assert final.state is JobState.SUCCEEDED
    with JobStore() as store:
        record = store.get(job_id)
    assert record is not None and record.state is JobState.SUCCEEDED
    assert record.extra["submission_id"] == fake.jobs[job_id]["labels"]["tfjob-submission-id"]
    assert fake.faults == []  # every queued fault was met
    assert sum(line.startswith("retry") for line in lines) == 9  # 3 creates, 2 look-ups, 4 reads tried again
    assert all(0 < w <= BACKOFF.maximum for w in waits)
    reliability.expect_recorded(fake.jobs)


@pytest.mark.reliability
def test_a_create_storm_longer_than_the_retries_fails_in_one_line_and_creates_nothing(fake: FakeVertex, reliability: Reliability) -> None:
    storm(fake, reliability, CREATE, *[503] * BACKOFF.attempts)
    waits, lines = Waits(), []
    with pytest.raises(BackendError, match=rf"Vertex AI answered 503 after {BACKOFF.attempts} attempts while trying to create") as caught:
        submit_job(SPEC, OPTIONS, client=client(fake, waits, lines), store=JobStore())
    assert "\n" not in str(caught.value)
    assert fake.jobs == {}
    # A 503 may hide a job that was created: each one was looked up before trying again.
    lookups = [path for method, path, _ in fake.requests if re.match(LIST, f"{method} {path}")]
    assert len(lookups) == BACKOFF.attempts
    assert len(waits) == BACKOFF.attempts - 1
    with JobStore() as store:
        assert store.list() == []


@pytest.mark.reliability
@pytest.mark.parametrize("status", [429, 503])
def test_a_storm_while_following_is_ridden_out(fake: FakeVertex, reliability: Reliability, status: int) -> None:
    waits, lines = Waits(), []
    vertex = client(fake, waits, lines)
    job_id = submit_job(SPEC, OPTIONS, client=vertex, store=JobStore())

    def on_state(line: str) -> None:
        # After each change of state, the next reads meet a storm one short of the retries' limit.
        if not line.endswith("SUCCEEDED"):
            storm(fake, reliability, GET, *[status] * (BACKOFF.attempts - 1))

    final = follow_job(job_id, OPTIONS, client=vertex, echo=on_state, sleep=waits, store=JobStore())
    assert final.state is JobState.SUCCEEDED
    assert list(fake.jobs) == [job_id]
    assert fake.faults == []
    assert sum(line.startswith("retry") for line in lines) == 3 * (BACKOFF.attempts - 1)  # QUEUED, PENDING, RUNNING
    reliability.expect_recorded(fake.jobs)


@pytest.mark.reliability
def test_a_lost_create_whose_look_up_fails_is_recorded_pending_then_found(fake: FakeVertex, reliability: Reliability) -> None:
    """The answer to the create is lost and the look-up by label meets a storm longer than its retries.

    Nothing is sent again (a second create could start a second job); the submission is
    in the store as pending, and `tfjob status` on it finds the job by its label.
    """
    from tfjob.errors import SubmissionUncertainError
    from tfjob.backends.vertex.creation import pending_id
    from tfjob.backends.vertex.service import fetch_status

    storm(fake, reliability, CREATE, "lost")
    storm(fake, reliability, LIST, *([503] * 7))
    waits, lines = Waits(), []
    vertex = client(fake, waits, lines)

    with pytest.raises(
        SubmissionUncertainError,
        match=r"do not submit it again: it carries the label tfjob-submission-id=\w+; `tfjob status pending-\w+` looks it up",
    ) as raised:
        submit_job(SPEC, OPTIONS, client=vertex, echo=lines.append, store=JobStore())
    assert len(fake.created_bodies()) == 1 and len(fake.jobs) == 1  # created once, never sent again
    pending = raised.value.pending_id
    assert pending == pending_id(raised.value.submission_id)
    with JobStore() as store:
        assert store.get(pending).extra["pending"] is True

    found = fetch_status(pending, client=vertex, store=JobStore())  # the service answers again
    (job_id,) = fake.jobs
    assert found.id == job_id
    with JobStore() as store:
        assert store.get(pending) is None and store.get(job_id).extra["submission_id"] == raised.value.submission_id
    assert fetch_status(pending, client=vertex, store=JobStore()).id == job_id  # the pending id still leads to the job
    final = follow_job(pending, OPTIONS, client=vertex, echo=lines.append, sleep=waits, store=JobStore())
    assert final.state is JobState.SUCCEEDED and list(fake.jobs) == [job_id]


def test_a_pending_submission_that_was_never_created_fails_and_says_submit_again(fake: FakeVertex) -> None:
    from tfjob.backends.vertex.creation import pending_id
    from tfjob.backends.vertex.service import fetch_status
    from tfjob.runtime.store import JobRecord

    record = JobRecord(
        id=pending_id("0" * 32), backend="vertex", name="storm", state=JobState.QUEUED,
        options={"project": "p", "region": "us-central1", "api_endpoint": fake.endpoint},
        extra={"submission_id": "0" * 32, "pending": True},
    )  # fmt: skip
    with JobStore() as store:
        store.add(record)
    status = fetch_status(record.id, client=client(fake, Waits(), []), store=JobStore())
    assert status.state is JobState.FAILED and "never created; submit it again" in status.message
