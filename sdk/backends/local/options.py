"""What ``--backend local`` takes beyond the job description (typed, with defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

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
    #: ``Never``/``OnFailure``/``ExitCode``/``Always`` (:mod:`tfjob.restarts`), or ``ROLE=POLICY``
    #: entries; default: what the ``dialect``'s platform does.
    restart_policy: Any = None
    #: Restarts of tasks (all together) before the job fails (default 3, as Kubeflow's).
    backoff_limit: int | None = None
    #: Seconds before a task's first restart, doubled for each further one (default 1).
    restart_delay: float | None = None
    #: Restarts of the whole job after it failed from a lost task (a preemption, a signal).
    max_restarts: int | None = None
    #: Preemptions to rehearse: ``TASK@TIME`` (``worker-1@30s``) or ``random@MEAN``.
    preempt: Any = None
    #: Seconds between a preemption's SIGTERM and its SIGKILL (default 30, as Spot VMs).
    preempt_grace: float | None = None
    #: Seed of ``--preempt random@…`` (the same seed, the same tasks at the same times).
    preempt_seed: int = 0

    #: The platform versions a local run imitates (checked against the trainer's needs).
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset({"runtime_version", "python_version"})
