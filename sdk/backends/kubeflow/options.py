"""What the Kubernetes backends take beyond the job description: their knobs, typed, with defaults.

``jobset`` and ``trainjob`` take :class:`KubernetesOptions`; ``kubeflow`` (a TFJob)
takes :class:`TFJobOptions`, which adds what only the training operator has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...knobs import knob
from ...model import SubmitOptions

_NOT_TUNED = {"tune": False}


@dataclass
class KubernetesOptions(SubmitOptions):
    """Where the job goes in a cluster, and what every pod gets."""

    namespace: str | None = knob("The Kubernetes namespace.", **_NOT_TUNED)
    #: The kubeconfig file (default: ``$KUBECONFIG``, ``~/.kube/config``, or in-cluster).
    kubeconfig: str | None = knob("The kubeconfig file (default: $KUBECONFIG, ~/.kube/config).", **_NOT_TUNED)
    #: The kubeconfig context (default: its current one).
    context: str | None = knob("The kubeconfig context.", **_NOT_TUNED)
    #: Explicit resources: ``VALUE`` for every role, ``ROLE=VALUE`` entries, or ``{role: value}``.
    cpu: Any = knob("CPUs of every pod (2, 500m), or ROLE=CPUS (repeat); replaces the machine type's.", kind="list", **_NOT_TUNED)
    memory: Any = knob("Memory of every pod (8Gi), or ROLE=MEMORY (repeat).", kind="list", **_NOT_TUNED)
    gpu: Any = knob("nvidia.com/gpu of every pod, or ROLE=COUNT (repeat).", kind="list", **_NOT_TUNED)
    #: A YAML pod template (or role → pod template) merged into every replica.
    pod_template: str | None = knob(
        "YAML pod template (or role: template) merged into every replica: nodeSelector, tolerations, volumes, sidecars, labels…", **_NOT_TUNED
    )
    #: ``Never``/``OnFailure``/``ExitCode``/``Always`` (:mod:`tfjob.restarts`), or a list with
    #: ``ROLE=POLICY`` entries: a TFJob's ``restartPolicy`` per replica; a JobSet's Job pods
    #: (Never, OnFailure, ExitCode through a ``podFailurePolicy``).
    restart_policy: Any = knob(
        "Never, OnFailure, ExitCode or Always (default: the platform's, see README Preemption); ROLE=POLICY for one role (repeat).",
        kind="list", **_NOT_TUNED,
    )
    backoff_limit: int | None = knob("Task restarts before the job fails (default 3).", **_NOT_TUNED)
    #: Restarts of the whole job (a JobSet's or TrainJob's ``failurePolicy.maxRestarts``;
    #: default: ``backoff_limit``). A TFJob restarts replicas, not the whole job.
    max_restarts: int | None = knob("Restarts of the whole job (a JobSet's or TrainJob's failurePolicy.maxRestarts).", **_NOT_TUNED)
    ttl_seconds_after_finished: int | None = knob("Seconds a finished job is kept (default a week).", flags=("--ttl",), **_NOT_TUNED)
    #: Create the job suspended (a queue admits it).
    suspend: bool = knob("Create the job suspended (a queue admits it later).", default=False, **_NOT_TUNED)
    #: Kueue's LocalQueue (label and, for a TFJob, runPolicy.schedulingPolicy.queue).
    queue: str | None = knob("Kueue LocalQueue / scheduler queue (label and schedulingPolicy.queue).", **_NOT_TUNED)


@dataclass
class TFJobOptions(KubernetesOptions):
    """A Kubeflow ``TFJob``: the training operator's restart, cleanup and gang-scheduling policies."""

    clean_pod_policy: str | None = knob("Running (default), All or None.", **_NOT_TUNED)
    priority_class: str | None = knob("PriorityClass of the job's pods.", **_NOT_TUNED)
    min_available: int | None = knob("Gang scheduling: tasks that must start together.", **_NOT_TUNED)
