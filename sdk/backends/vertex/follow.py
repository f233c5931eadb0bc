"""Vertex AI job states → tfjob's, and how often to look at a job.

:func:`parse_state` and :func:`job_status` are pure; waiting is
:func:`tfjob.runtime.lifecycle.poll`, with these states and intervals.
"""

from __future__ import annotations

import re
from typing import Any

from ...model import JobState, JobStatus, parse_time

#: Vertex AI ``JobState`` names → tfjob's states.
VERTEX_STATES: dict[str, JobState] = {
    "JOB_STATE_UNSPECIFIED": JobState.QUEUED,
    "JOB_STATE_QUEUED": JobState.QUEUED,
    "JOB_STATE_PENDING": JobState.PENDING,
    "JOB_STATE_RUNNING": JobState.RUNNING,
    "JOB_STATE_SUCCEEDED": JobState.SUCCEEDED,
    "JOB_STATE_FAILED": JobState.FAILED,
    "JOB_STATE_CANCELLING": JobState.CANCELLING,
    "JOB_STATE_CANCELLED": JobState.CANCELLED,
    "JOB_STATE_PAUSED": JobState.PENDING,
    "JOB_STATE_EXPIRED": JobState.FAILED,
    "JOB_STATE_UPDATING": JobState.RUNNING,
    "JOB_STATE_PARTIALLY_SUCCEEDED": JobState.FAILED,
}
# The enum's numbers, for a response written with integer enums.
_BY_NUMBER = {i: name for i, name in enumerate(VERTEX_STATES)}

#: First and longest pause between two polls of a job, seconds.
POLL_INTERVAL = 5.0
MAX_POLL_INTERVAL = 60.0


def parse_state(value: str | int | None) -> JobState:
    """A Vertex AI state (``JOB_STATE_RUNNING``, or its number) as a :class:`JobState`."""
    if isinstance(value, int):
        value = _BY_NUMBER.get(value, "JOB_STATE_UNSPECIFIED")
    return VERTEX_STATES.get(value or "JOB_STATE_UNSPECIFIED", JobState.QUEUED)


def console_url(project: str, region: str, job_id: str) -> str:
    """Where the job is shown in the Google Cloud console."""
    return f"https://console.cloud.google.com/vertex-ai/locations/{region}/training/{job_id}/cpu?project={project}"


#: Worker pool index → the task name tfjob gives its replicas (``workerpool1-2`` → ``worker-2``).
POOL_ROLES = ("chief", "worker", "ps", "evaluator")
_REPLICA = re.compile(r"\breplica workerpool([0-3])-(\d{1,6})\b.*?\bnon-zero status of (-?\d{1,4})\b", re.S)


def failed_replica(message: str) -> tuple[str, int] | None:
    """``(task, exit code)`` of the replica a Vertex AI error message blames, e.g. "The replica
    workerpool1-0 exited with a non-zero status of 3. …" → ``("worker-0", 3)``."""
    found = _REPLICA.search(message[:4096])
    if found is None:
        return None
    pool, index, code = found.groups()
    return f"{POOL_ROLES[int(pool)]}-{int(index)}", int(code)


#: ``google.rpc.Code`` values of a job's ``error`` that the platform, not the trainer, caused
#: and that a new attempt may not meet: ABORTED (10) and UNAVAILABLE (14).
RETRYABLE_CODES = frozenset({10, 14})
_PREEMPTED = re.compile(r"\bpreempt(?:ed|ion|ible)?\b", re.I)


def retryable_failure(job: dict[str, Any]) -> str | None:
    """Why a FAILED ``CustomJob`` may be submitted again (``max_restarts``), or None.

    Conservative: a replica's own non-zero exit (the trainer's failure, named by
    :func:`failed_replica`) is never retried; otherwise the job's ``error`` must carry
    ``google.rpc.Code`` ABORTED or UNAVAILABLE, or its message speak of a preemption.
    """
    if parse_state(job.get("state")) is not JobState.FAILED:
        return None
    error = job.get("error") or {}
    message = str(error.get("message", ""))[:4096]
    if failed_replica(message) is not None:
        return None
    code = error.get("code")
    if isinstance(code, int) and code in RETRYABLE_CODES:
        return f"retryable platform error (code {code})"
    if _PREEMPTED.search(message):
        return "preempted"
    return None


def job_status(job: dict[str, Any], job_id: str) -> JobStatus:
    """A ``CustomJob`` dict as a :class:`JobStatus` (the error message in ``message``; the
    replica it blames in ``failed_task`` and its exit code in ``extra["task_exit_code"]``)."""
    state = parse_state(job.get("state"))
    error = job.get("error") or {}
    message = str(error.get("message", "")) if error else ""
    extra: dict[str, Any] = {"resource_name": job.get("name", ""), "vertex_state": job.get("state", "")}
    blamed = failed_replica(message) if state is JobState.FAILED else None
    if blamed is not None:
        extra["task_exit_code"] = blamed[1]
    if job.get("webAccessUris"):
        extra["web_access_uris"] = dict(job["webAccessUris"])
    return JobStatus(
        id=job_id,
        backend="vertex",
        name=job.get("displayName", ""),
        state=state,
        message=message,
        created=parse_time(job.get("createTime")),
        started=parse_time(job.get("startTime")),
        ended=parse_time(job.get("endTime")),
        failed_task=blamed[0] if blamed else None,
        extra=extra,
    )
