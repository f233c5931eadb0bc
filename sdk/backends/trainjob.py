"""``--backend trainjob``: a Kubeflow Trainer v2 ``TrainJob`` and its TensorFlow runtime,
rendered for ``kubectl apply -f`` (see :mod:`tfjob.render.trainjob`).

Submitting and following TrainJobs from tfjob is not built: every call that would reach
the cluster says so in one line and points at ``--backend jobset``, which runs the very
JobSet the runtime expands to (the same pods, the same ``TF_CONFIG``).
"""

from __future__ import annotations

from typing import Any, Iterator, NoReturn

from ..errors import UsageError
from ..render.trainjob import render_trainjob_list
from ..spec import JobSpec
from .base import JobStatus, SubmitOptions


def _render_only(what: str) -> NoReturn:
    raise UsageError(
        f"cannot {what}: --backend trainjob renders the TrainJob and its runtime (tfjob render --backend trainjob | "
        "kubectl apply -f -); to submit and follow the job from tfjob use --backend jobset, the JobSet it expands to"
    )


class TrainJobBackend:
    """Render-only: the ClusterTrainingRuntime and the TrainJob, as a ``List``."""

    name = "trainjob"

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """A ``List`` of the runtime and the TrainJob (pure)."""
        return render_trainjob_list(spec, options)

    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        _render_only(f"submit job {spec.name!r}")

    def status(self, job_id: str) -> JobStatus:
        _render_only(f"look up job {job_id!r}")

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        _render_only(f"read the logs of job {job_id!r}")

    def cancel(self, job_id: str) -> None:
        _render_only(f"cancel job {job_id!r}")

    def list(self, limit: int | None = None) -> list[JobStatus]:
        _render_only("list jobs")


BACKEND = TrainJobBackend()
