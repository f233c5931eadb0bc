"""What the Kubernetes backends take beyond the job description (typed, with defaults).

``jobset`` and ``trainjob`` take :class:`KubernetesOptions`; ``kubeflow`` (a TFJob)
takes :class:`TFJobOptions`, which adds what only the training operator has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...model import SubmitOptions


@dataclass
class KubernetesOptions(SubmitOptions):
    """Where the job goes in a cluster, and what every pod gets."""

    namespace: str | None = None
    #: The kubeconfig file (default: ``$KUBECONFIG``, ``~/.kube/config``, or in-cluster).
    kubeconfig: str | None = None
    #: The kubeconfig context (default: its current one).
    context: str | None = None
    #: Explicit resources: ``VALUE`` for every role, ``ROLE=VALUE`` entries, or ``{role: value}``.
    cpu: Any = None
    memory: Any = None
    gpu: Any = None
    #: A YAML pod template (or role → pod template) merged into every replica.
    pod_template: str | None = None
    #: ``Never``/``OnFailure``/``ExitCode``/``Always`` (:mod:`tfjob.restarts`), or a list with
    #: ``ROLE=POLICY`` entries: a TFJob's ``restartPolicy`` per replica; a JobSet's Job pods
    #: (Never, OnFailure, ExitCode through a ``podFailurePolicy``).
    restart_policy: Any = None
    backoff_limit: int | None = None
    #: Restarts of the whole job (a JobSet's or TrainJob's ``failurePolicy.maxRestarts``;
    #: default: ``backoff_limit``). A TFJob restarts replicas, not the whole job.
    max_restarts: int | None = None
    ttl_seconds_after_finished: int | None = None
    #: Create the job suspended (a queue admits it).
    suspend: bool = False
    #: Kueue's LocalQueue (label and, for a TFJob, runPolicy.schedulingPolicy.queue).
    queue: str | None = None


@dataclass
class TFJobOptions(KubernetesOptions):
    """A Kubeflow ``TFJob``: the training operator's restart, cleanup and gang-scheduling policies."""

    clean_pod_policy: str | None = None
    priority_class: str | None = None
    min_available: int | None = None
