"""What ``--backend local`` takes beyond the job description (typed, with defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...model import SubmitOptions


@dataclass
class LocalOptions(SubmitOptions):
    """Options of a local run (processes, or containers of ``--image``)."""

    #: Whose ``TF_CONFIG`` / ``CLUSTER_SPEC`` the tasks see: ``vertex``, ``ai-platform``,
    #: ``kubeflow`` or ``gcloud-local``.
    dialect: str = "vertex"
    #: The interpreter the tasks run (default: this one).
    python: str | None = None
    #: Install the trainer's sdist in a throw-away venv first, as the platforms do.
    install: bool = False
    #: Seconds between SIGTERM and SIGKILL when the cluster is torn down.
    grace: float = 5.0
    #: Return at once; a supervisor process runs the job.
    detach: bool = False
    #: Local tasks always stream their logs; accepted for the same command line as Vertex AI.
    stream_logs: bool = False

    #: The platform versions a local run imitates (checked against the trainer's needs).
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset({"runtime_version", "python_version"})
