"""What the job store holds, as Python: a job's and a task's record, the short id users type, and
how a stored row is read back, whatever it holds."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from ..model import JobState, JobStatus, TaskRestart, TaskStatus


@dataclass
class JobRecord:
    """One row of the jobs table."""

    id: str
    backend: str
    name: str
    state: JobState
    spec: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    failed_task: str | None = None
    exit_code: int | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    ended: float | None = None
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    log_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_status(self, tasks: list[TaskStatus] | None = None) -> JobStatus:
        """The record as the backend-neutral :class:`JobStatus`."""
        extra = dict(self.extra)
        if self.log_dir:
            extra.setdefault("log_dir", self.log_dir)
        return JobStatus(
            id=self.id,
            backend=self.backend,
            name=self.name,
            state=self.state,
            message=self.message,
            created=self.created,
            started=self.started,
            ended=self.ended,
            failed_task=self.failed_task,
            tasks=tasks or [],
            extra=extra,
        )


@dataclass
class TaskRecord:
    """One row of the tasks table (a task of a local job)."""

    name: str
    role: str
    index: int
    state: JobState
    pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    started: float | None = None
    ended: float | None = None
    log_path: str | None = None
    #: The process' start time (see :func:`process_start_time`): tells it from a later pid.
    proc_start: int | None = None
    #: How many times the task was started again, and each time (see :class:`TaskRestart`).
    restarts: int = 0
    restart_history: list[TaskRestart] = field(default_factory=list)

    def to_status(self) -> TaskStatus:
        return TaskStatus(
            self.name,
            self.state,
            self.exit_code,
            self.signal,
            self.started,
            self.ended,
            self.log_path,
            restarts=self.restarts,
            restart_history=list(self.restart_history),
        )


JSON_COLUMNS = ("spec", "options", "extra")
_DATE_SUFFIX = re.compile(r"-\d{8}-\d{6}$")


def make_job_id(name: str, token: str | None = None) -> str:
    """A short id users can type: ``trainer-3fa9c1`` for job ``trainer-20261122-153000``.

    The job name's default date suffix is dropped (the store keeps the name and the
    time), the rest is reduced to 20 lower-case letters, digits and ``-``, and six
    random hex digits make it unique (the store refuses a duplicate; draw again).

    Args:
        name: the job's display name.
        token: the random part; drawn here when not given.
    """
    stem = _DATE_SUFFIX.sub("", name.lower())
    stem = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")[:20].strip("-") or "job"
    return f"{stem}-{token or os.urandom(3).hex()}"  # os.urandom: what secrets uses, without its 5 ms import


# A row is read whatever it holds: one written by a later version (a state this one does not
# know, say PREEMPTED) or damaged by hand (text where a time belongs, JSON cut short) is shown
# with what can be read — the state UNKNOWN (its stored word kept in the message), a time
# as not known — so `tfjob list`/`status` go on to the other rows instead of a traceback.
_TIME_COLUMNS = ("created", "started", "ended")
_INT_COLUMNS = ("exit_code", "supervisor_pid", "supervisor_start", "pid", "signal", "proc_start", "idx", "restarts")
_TEXT_COLUMNS = ("id", "backend", "name", "message", "failed_task", "log_dir", "log_path", "role", "job_id")
#: Times after this (the year 5138) are no time tfjob wrote; time.localtime cannot show them either.
_LATEST_TIME = 1e11


def read_time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < _LATEST_TIME else None


def read_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value) if abs(value) < 2**63 else None


def read_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def read_json(value: Any) -> dict[str, Any]:
    try:
        data = json.loads(read_text(value) or "{}")
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    for col in _TIME_COLUMNS:
        if col in data:
            data[col] = read_time(data[col])
    for col in _INT_COLUMNS:
        if col in data:
            data[col] = read_int(data[col])
    for col in _TEXT_COLUMNS:
        if col in data:
            data[col] = read_text(data[col])
    stored = data.get("state")
    data["state"] = JobState.read(stored)
    if data["state"] is JobState.UNKNOWN and stored != JobState.UNKNOWN.value:
        word = read_text(stored) or ""
        data["unknown_state"] = " ".join(word.split())[:40] or "(none)"
    return data


def row_to_job(row: sqlite3.Row) -> JobRecord:
    data = _read_row(row)
    for col in JSON_COLUMNS:
        data[col] = read_json(data.get(col))
    data["id"] = data.get("id") or "?"
    data["backend"] = data.get("backend") or "?"
    data["name"] = data.get("name") or ""
    data["message"] = data.get("message") or ""
    unknown = data.pop("unknown_state", None)
    if unknown is not None:
        data["message"] = f"state {unknown!r} is not one this version of tfjob knows" + (f"; {data['message']}" if data["message"] else "")
    if data["created"] is None:
        data["created"] = 0.0  # not known: shown as '-'
    return JobRecord(**data)


def row_to_task(row: sqlite3.Row) -> TaskRecord:
    data = _read_row(row)
    data.pop("unknown_state", None)
    data.pop("job_id")
    data["index"] = data.pop("idx") or 0
    data["name"] = data.get("name") or "?"
    data["role"] = data.get("role") or "?"
    data["restarts"] = data.get("restarts") or 0
    data["restart_history"] = _restart_history(read_text(data.get("restart_history")))
    return TaskRecord(**data)


def _restart_history(text: str | None) -> list[TaskRestart]:
    """A task's restart history as stored (an entry that cannot be read is left out)."""
    try:
        entries = json.loads(text or "[]")
    except (ValueError, RecursionError):
        return []
    names = set(TaskRestart.__dataclass_fields__)
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("time"), (int, float)):
            try:
                out.append(TaskRestart(**{k: v for k, v in entry.items() if k in names}))
            except TypeError:
                continue
    return out
