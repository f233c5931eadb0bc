"""``--backend ai-platform``: legacy AI Platform Training, rendered but never submitted.

AI Platform Training shut down on 2025-01-31 and Vertex AI custom jobs replaced it.
This backend renders the legacy ``Job`` body (``tfjob render --backend ai-platform``,
``tfjob submit … --dry-run``), so old configurations can be reviewed and compared while
migrating; every call that would reach the service explains that and points at
``--backend vertex``.
"""

from __future__ import annotations

from typing import Any, Iterator, NoReturn

from ...errors import BackendError
from .render import render_job
from ...description.spec import JobSpec
from ...runtime.lifecycle import Lifecycle
from ..base import GoogleCloudOptions
from ...model import JobStatus, SubmitOptions

#: The day the legacy service stopped running training jobs.
SHUTDOWN_DATE = "2025-01-31"


def _shut_down(what: str) -> NoReturn:
    raise BackendError(
        f"cannot {what}: legacy AI Platform Training shut down on {SHUTDOWN_DATE}; --backend ai-platform only renders "
        "the request (--dry-run, `tfjob render`). Use --backend vertex, its successor, to run the job"
    )


class AIPlatformBackend(Lifecycle[GoogleCloudOptions, NoReturn]):
    """Render-only backend for legacy AI Platform Training (``ml.googleapis.com`` v1)."""

    name = "ai-platform"
    platform = "AI Platform Training"
    options_class = GoogleCloudOptions

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The legacy ``Job`` body ``{"jobId", "trainingInput", "labels"}`` (pure)."""
        return render_job(spec, options)

    def _prepare(self, spec: JobSpec, options: GoogleCloudOptions) -> NoReturn:
        _shut_down(f"submit job {spec.name!r}")

    def _lookup(self, job_id: str) -> NoReturn:
        _shut_down(f"look up job {job_id!r}")

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        _shut_down(f"read the logs of job {job_id!r}")

    def cancel(self, job_id: str) -> None:
        _shut_down(f"cancel job {job_id!r}")

    def _cancel(self, job_id: str, record: Any) -> NoReturn:
        _shut_down(f"cancel job {job_id!r}")

    def list(self, limit: int | None = None) -> list[JobStatus]:
        _shut_down("list jobs")
