"""The steps of submitting a Vertex AI job (``Lifecycle.submit``, through
:class:`~.backend.VertexBackend`'s hooks): plan and stage it, keep a pending record, create it
once, and record it under Vertex AI's id — or keep the pending record when the create's answer
was lost."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...model import JobState
from ...errors import SubmissionUncertainError
from ...description.spec import JobSpec
from ...runtime.store import JobRecord, JobStore
from .follow import console_url, job_status
from .options import VertexOptions

from .connect import Echo, client_credentials, make_client, quiet


@dataclass
class Submission:
    """A job ready to create: its plan (the request, the packages staged), the client to create it
    with, and what its record keeps."""

    spec: JobSpec
    plan: Any
    client: Any
    location: dict[str, Any]
    extra: dict[str, Any]


def prepare_submission(
    spec: JobSpec, options: VertexOptions, *, echo: Echo = quiet, client: Any = None, credentials: Any = None
) -> Submission:
    """Plan the job's request and stage its packages (content-addressed: unchanged code uploads
    nothing); nothing is created yet."""
    from .staging import stage_packages, storage_client
    from .submission import plan_submission

    from ...description.restarts import _count

    max_restarts = _count(options.max_restarts or 0, "--max-restarts", 0)
    plan = plan_submission(spec, options, dry_run=False)
    for note in plan.notes:
        echo(note)
    assert plan.project is not None  # a real submission has one (plan_submission checks)
    client = client or make_client(plan.project, plan.region, options.api_endpoint, echo, credentials)
    report = None
    if plan.uploads:
        storage = storage_client(plan.project, client_credentials(client))
        report = stage_packages(plan.uploads, region=plan.region, client=storage, echo=echo, also=plan.regions[1:])
    location = {"project": plan.project, "region": plan.region, "api_endpoint": options.api_endpoint}
    extra = {
        "submission_id": plan.submission_id,
        "package_uris": [u.uri for u in plan.uploads],
        "bytes_uploaded": report.bytes_uploaded if report else 0,
    }
    if max_restarts:
        extra["max_restarts"] = max_restarts
    if plan.estimate is not None and plan.estimate.pools:
        from ...pricing import price_record

        import os

        extra["price"] = price_record(plan.estimate, options.price_table or os.environ.get("TFJOB_PRICE_TABLE") or None)
    return Submission(spec, plan, client, location, extra)


def pending_record(submission: Submission) -> JobRecord:
    """The record kept before the create: if its answer is lost, the job is still known here
    (and `tfjob status` finds it by its label) rather than running unseen."""
    return JobRecord(
        id=pending_id(submission.plan.submission_id),
        backend="vertex",
        name=submission.spec.name,
        state=JobState.QUEUED,
        spec=submission.spec.to_dict(),
        options=submission.location,
        message="being created on Vertex AI",
        extra={**submission.extra, "pending": True},
    )


def create_submission(submission: Submission, pending: JobRecord, *, echo: Echo = quiet) -> JobRecord:
    """Create the job once; return its record (under Vertex AI's id)."""
    plan = submission.plan
    job = submission.client.create_custom_job(plan.body, plan.submission_id)
    record = created_record(pending, job, submission.extra)
    echo(f"submitted Vertex AI job {record.id} ({submission.spec.name}): {console_url(plan.project, plan.region, record.id)}")
    return record


def not_created(store: JobStore, pending: JobRecord, error: BaseException) -> None:
    """The create failed: a lost answer keeps the pending record (`tfjob status` looks the job up
    by its label); any other answer means no job was created, and the record goes."""
    if isinstance(error, SubmissionUncertainError):
        store.update(pending.id, message=f"unknown: the create's answer was lost; `tfjob status {pending.id}` looks it up")
        error.pending_id = pending.id
        error.args = (f"{error}; `tfjob status {pending.id}` looks it up",)
        return
    store.remove(pending.id)  # the service answered: no job was created


def pending_id(submission_id: str) -> str:
    """The job store id of a submission whose job id is not known yet."""
    return f"pending-{submission_id}"


def created_record(pending: JobRecord, job: dict[str, Any], extra: dict[str, Any]) -> JobRecord:
    """The record of the job ``pending`` became (Vertex AI's answer ``job``)."""
    from .client import job_id_of

    job_id = job_id_of(job["name"])
    status = job_status(job, job_id)
    opts = pending.options
    return JobRecord(
        id=job_id,
        backend="vertex",
        name=pending.name,
        state=status.state,
        spec=pending.spec,
        options=opts,
        created=status.created or time.time(),
        extra={
            **{k: v for k, v in extra.items() if k != "pending"},
            "resource_name": job["name"],
            "console_url": console_url(opts["project"], opts["region"], job_id),
        },
    )
