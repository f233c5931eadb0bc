"""The backend protocol (the job model it speaks is :mod:`tfjob.model`, re-exported here).

A backend renders a :class:`~tfjob.spec.JobSpec` into its native request (a pure
function), submits it and answers for a job id: ``status``, ``logs``, ``cancel`` and
``list``. Each backend maps its native states to :class:`JobState` in one pure function.

What must be the same on every backend — waiting with a timeout, following a job after
submit, Ctrl-C, cancelling a job that has already ended — is
:class:`tfjob.lifecycle.Lifecycle`, which every backend object derives from;
``tests/test_contract.py`` runs the same tests over every backend.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, runtime_checkable

from ..model import JobState, JobStatus, SubmitOptions, TaskStatus
from ..spec import JobSpec

__all__ = ["Backend", "JobState", "JobStatus", "SubmitOptions", "TaskStatus"]


@runtime_checkable
class Backend(Protocol):
    """What every backend module provides (as module-level functions or an object)."""

    name: str

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The request the backend would send for ``spec`` (pure; no I/O)."""

    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Start the job; return its id."""

    def status(self, job_id: str) -> JobStatus:
        """The job's current status."""

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines, each prefixed ``[worker-1]``; follow until the job ends."""

    def cancel(self, job_id: str) -> None:
        """Ask the job to stop."""

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """Known jobs, newest first."""
