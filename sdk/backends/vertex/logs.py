"""A Vertex AI job's Cloud Logging entries as ``[worker-1] …`` lines, like local logs.

Vertex AI writes each task's output to Cloud Logging under the monitored resource
``ml_job`` with labels ``job_id`` and ``task_name`` (``workerpool1-0``: pool 1,
replica 0). Pool positions are roles (0 chief, 1 worker, 2 ps, 3 evaluator), so
``workerpool1-0`` is printed ``[worker-0]``, as the local backend names the task.

Entries are read with google-cloud-logging's HTTP (JSON) API; ``api_endpoint`` may be
a local test server.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable

from ...errors import UsageError, missing_extra
from ...runtime.lifecycle import LineFeed
from ...model import normalize_task
from ...description.spec import ROLES

_POOL_TASK = re.compile(r"^workerpool(\d)-(\d+)\Z")
_LEGACY_TASK = re.compile(r"^(master|chief|worker|ps|evaluator)-replica-(\d+)\Z")
_OUR_TASK = re.compile(r"^(chief|worker|ps|evaluator)-(\d+)\Z")


def task_label(task_name: str) -> str:
    """``workerpool1-2`` → ``worker-2``; ``master-replica-0`` → ``chief-0``; others unchanged."""
    m = _POOL_TASK.match(task_name)
    if m and int(m.group(1)) < len(ROLES):
        return f"{ROLES[int(m.group(1))]}-{m.group(2)}"
    m = _LEGACY_TASK.match(task_name)
    if m:
        role = "chief" if m.group(1) == "master" else m.group(1)
        return f"{role}-{m.group(2)}"
    return task_name or "job"


def vertex_task_name(task: str) -> str:
    """``worker-2`` → ``workerpool1-2`` (what the log entries carry)."""
    m = _OUR_TASK.match(normalize_task(task))
    if not m:
        raise UsageError(field="task", value=task, problem="is not a task name", fix="write it like chief-0, worker-1, ps-0 or evaluator-0")
    return f"workerpool{ROLES.index(m.group(1))}-{m.group(2)}"


def build_filter(job_id: str, task: str | None = None, since: str | None = None) -> str:
    """The Cloud Logging filter for a job's entries (of one task, after a timestamp)."""
    parts = ['resource.type="ml_job"', f'resource.labels.job_id="{job_id}"']
    if task:
        parts.append(f'resource.labels.task_name="{vertex_task_name(task)}"')
    if since:
        parts.append(f'timestamp>="{since}"')
    return " AND ".join(parts)


def entry_line(entry: Any) -> str:
    """One log entry as ``[worker-1] text``."""
    resource = getattr(entry, "resource", None)
    labels = dict(getattr(resource, "labels", None) or {})
    task = task_label(labels.get("task_name", "") or (getattr(entry, "labels", None) or {}).get("task_name", ""))
    payload = getattr(entry, "payload", "")
    if isinstance(payload, dict):
        payload = payload.get("message", payload)
    text = str(payload if payload is not None else "").rstrip("\n")
    return f"[{task}] {text}"


def logging_client(project: str, credentials: Any, api_endpoint: str | None) -> Any:
    """A google-cloud-logging client over HTTP (``api_endpoint``: a test server, or Google's)."""
    try:
        from google.cloud import logging as cloud_logging
    except ImportError as e:
        raise missing_extra("vertex", "vertex", e) from e

    options = {"api_endpoint": api_endpoint} if api_endpoint else None
    return cloud_logging.Client(project=project, credentials=credentials, _use_grpc=False, client_options=options)  # type: ignore[no-untyped-call]


def _stamp(entry: Any) -> str:
    ts = getattr(entry, "timestamp", None)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if ts is not None else ""


def format_time(epoch: float | None) -> str:
    """Epoch seconds as the RFC 3339 text Cloud Logging filters take (UTC, microseconds)."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch or 0.0, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def read_entries(
    client: Any, project: str, job_id: str, task: str | None = None, tail: int | None = None, since: str | None = None
) -> list[Any]:
    """The job's entries at or after ``since``, oldest first (the last ``tail`` only, when given).

    ``since`` should always be given (e.g. the job's creation time): without a
    timestamp in the filter the client library reads the last 24 hours only.
    """
    from google.cloud import logging as cloud_logging

    filter_ = build_filter(job_id, task, since or format_time(0))
    resource = [f"projects/{project}"]
    if tail is not None:
        newest = list(
            client.list_entries(
                resource_names=resource, filter_=filter_, order_by=cloud_logging.DESCENDING, max_results=tail, page_size=tail
            )
        )
        return newest[::-1]
    return list(client.list_entries(resource_names=resource, filter_=filter_, order_by=cloud_logging.ASCENDING, page_size=1000))


class EntryFeed(LineFeed):
    """A job's Cloud Logging entries as ``[worker-1] …`` lines: read again since the last one
    each time (an entry of the same second is read twice and given once)."""

    def __init__(self, read: Callable[[str | None], list[Any]], *, first: list[Any], sleep: Callable[[float], None] = time.sleep) -> None:
        """``read``: entries at or after a timestamp (None: from the start), oldest first;
        ``first``: entries already read (e.g. a ``tail``), given first."""
        self._read, self._sleep = read, sleep
        self._first: list[Any] | None = first
        self.seen: set[str] = set()
        self.since: str | None = None

    def read(self, look: bool, final: bool) -> list[str]:
        first, self._first = self._first, None
        lines = self._new(first if first is not None else self._read(self.since))
        if first is not None and final:
            # The job has ended: what it wrote last may still be arriving, read once more.
            lines += self._new(self._read(self.since))
        return lines

    def _new(self, batch: list[Any]) -> list[str]:
        lines = []
        for entry in batch:
            key = getattr(entry, "insert_id", None) or f"{_stamp(entry)}|{entry_line(entry)}"
            if key in self.seen:
                continue  # the same second is read again: entries at the boundary repeat
            self.seen.add(key)
            self.since = _stamp(entry) or self.since
            lines.append(entry_line(entry))
        return lines

    def wait(self, seconds: float) -> bool:
        self._sleep(seconds)
        return True
