"""The Vertex AI backend: a thin object over :mod:`tfjob.gcp`.

``render`` (what ``--dry-run`` prints) needs no credentials and no network: it builds
the trainer sdist locally to know its digest, and shows a marked placeholder where a
project or bucket is missing. ``submit`` stages the packages (content-addressed, so
unchanged code uploads nothing), creates the ``CustomJob`` and records it in the job
store under Vertex AI's own job id; ``run`` also follows it to its end. ``status``,
``logs``, ``cancel`` and ``list`` ask Vertex AI and keep the store up to date.

Google libraries are imported inside the methods that talk to Google.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterator

from ..spec import JobSpec
from .base import JobStatus, SubmitOptions


def _say(message: str) -> None:
    print(f"tfjob: {message}", file=sys.stderr, flush=True)


class VertexBackend:
    """Vertex AI custom jobs (see :mod:`tfjob.gcp`).

    Args:
        echo: where progress lines go (default: stderr, prefixed ``tfjob:``).
    """

    name = "vertex"

    def __init__(self, echo: Callable[[str], None] = _say) -> None:
        self.echo = echo

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The ``CustomJob`` body ``submit`` would send (no credentials, no network)."""
        from ..gcp.submission import plan_submission

        plan = plan_submission(spec, options, dry_run=True)
        for note in plan.notes:
            self.echo(note)
        self.echo(f"dry run: would create this CustomJob in {plan.parent}")
        return plan.body

    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Stage the packages and create the job; return Vertex AI's job id."""
        from ..gcp.service import submit_job

        return submit_job(spec, options, echo=self.echo)

    def run(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Submit, then follow the job to its end (or until Ctrl-C); return its id.

        With ``options.wait`` false this is :meth:`submit`. The caller learns the
        outcome from :meth:`status` (``JobHandle.result()`` raises on failure).
        """
        from ..gcp.service import follow_job, stream_job, submit_job

        job_id = submit_job(spec, options, echo=self.echo)
        if options.wait and options.stream_logs:
            stream_job(job_id, options, echo=self.echo, out=lambda line: print(line, flush=True))
        elif options.wait:
            follow_job(job_id, options, echo=self.echo)
        return job_id

    def status(self, job_id: str) -> JobStatus:
        """The job as Vertex AI sees it now (the store is updated)."""
        from ..gcp.service import fetch_status

        return fetch_status(job_id)

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's Cloud Logging lines, ``[worker-1] …``; ``follow`` until the job ends."""
        from ..gcp.service import fetch_logs

        return fetch_logs(job_id, task=task, follow=follow, tail=tail)

    def cancel(self, job_id: str) -> None:
        """Ask Vertex AI to cancel the job (a job that has ended is left as it is)."""
        from ..gcp.service import cancel_job

        if self.status(job_id).state.is_terminal:
            return

        cancel_job(job_id, echo=self.echo)

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """Jobs tfjob submitted (the ``tfjob`` label) in the configured project and region, newest first."""
        from ..gcp.service import list_jobs

        return list_jobs(limit)


BACKEND = VertexBackend()
