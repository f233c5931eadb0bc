"""What ``--backend local`` takes beyond the job description: its knobs, typed, with defaults,
declared once (:func:`tfjob.description.knobs.knob`) for both :class:`LocalOptions` and :class:`tfjob.Local`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence, TypedDict

from ...description.knobs import PYTHON_VERSION, RUNTIME_VERSION, Knob, StrPath, knob
from ...model import SubmitOptions


class _Tune(TypedDict):
    tune: bool


_NOT_TUNED: _Tune = {"tune": False}


@dataclass(kw_only=True, init=False, repr=False, eq=False)  # declarations only: what derives from it is made
class LocalKnobs:
    """Every knob only a local run takes, declared once: the fields of both the
    :class:`LocalOptions` the backend reads and the :class:`tfjob.Local` settings users write."""

    #: Whose ``TF_CONFIG`` / ``CLUSTER_SPEC`` the tasks see: ``vertex``, ``ai-platform``,
    #: ``kubeflow`` or ``gcloud-local``.
    dialect: str = knob(
        "Whose TF_CONFIG/CLUSTER_SPEC the tasks see: vertex (default), ai-platform, kubeflow or gcloud-local.",
        default="vertex",
        kind="text",
    )
    #: The interpreter the tasks run (default: this one).
    python: StrPath | None = knob("The Python interpreter the tasks run (default: this one).", kind="text")
    #: Install the trainer's sdist in a throw-away venv first, as the platforms do.
    install: bool = knob(
        "Pip-install the built sdist in a throw-away venv, as the cloud does.",
        default=False,
        kind="switch",
        flags=("--install/--no-install",),
    )
    #: Seconds between SIGTERM and SIGKILL when the cluster is torn down.
    grace: float = knob("Seconds between SIGTERM and SIGKILL at teardown (default 5).", default=5.0)
    #: Return at once; a supervisor process runs the job.
    detach: bool = knob("Run in the background and print the job id at once.", default=False, flags=("--detach", "-d"), **_NOT_TUNED)
    #: ``Never``/``OnFailure``/``ExitCode``/``Always`` (:mod:`tfjob.description.restarts`), or ``ROLE=POLICY``
    #: entries; default: what the ``dialect``'s platform does.
    restart_policy: str | Sequence[str] | None = knob(
        "Never, OnFailure, ExitCode or Always (default: the platform's, see README Preemption); ROLE=POLICY for one role (repeat).",
        kind="list", **_NOT_TUNED,
    )  # fmt: skip
    #: Restarts of tasks (all together) before the job fails (default 3, as Kubeflow's).
    backoff_limit: int | None = knob("Task restarts before the job fails (default 3).", **_NOT_TUNED)
    #: Seconds before a task's first restart, doubled for each further one (default 1).
    restart_delay: float | None = knob(
        "The pause before a task's first restart (1s), doubled for each further one.", kind="text", **_NOT_TUNED
    )
    #: Restarts of the whole job after it failed from a lost task (a preemption, a signal).
    max_restarts: int | None = knob(
        "Start the whole job again, up to N times, when it failed from a lost task (a preemption, a signal).", **_NOT_TUNED
    )
    #: Preemptions to rehearse: ``TASK@TIME`` (``worker-1@30s``) or ``random@MEAN``.
    preempt: str | Sequence[str] | None = knob(
        "Rehearse a preemption: TASK@TIME (worker-1@30s) or random@MEAN (random:worker@2m) (repeat).", kind="list", **_NOT_TUNED
    )
    #: Seconds between a preemption's SIGTERM and its SIGKILL (default 30, as Spot VMs).
    preempt_grace: float | None = knob(
        "Seconds between a preemption's SIGTERM and SIGKILL (default 30s, as Spot VMs and Kubernetes).", kind="text", **_NOT_TUNED
    )
    #: Seed of ``--preempt random@…`` (the same seed, the same tasks at the same times).
    preempt_seed: int = knob("Seed of --preempt random@… (the same seed, the same preemptions).", default=0, kind="int", **_NOT_TUNED)


@dataclass
class LocalOptions(SubmitOptions, LocalKnobs):
    """Options of a local run (processes, or containers of ``--image``): every local knob
    (:class:`LocalKnobs`), and ``stream_logs``, taken for the Vertex AI command line's sake."""

    #: Local tasks always stream their logs; accepted for the same command line as Vertex AI.
    stream_logs: bool = knob("Accepted for the same command line as Vertex AI (local tasks always stream).", default=False, **_NOT_TUNED)

    #: The platform versions a local run imitates (checked against the trainer's needs).
    SPEC_KNOBS: ClassVar[tuple[Knob, ...]] = (RUNTIME_VERSION, PYTHON_VERSION)
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset(k.name for k in SPEC_KNOBS)
