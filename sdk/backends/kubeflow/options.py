"""What the Kubernetes backends take beyond the job description: their knobs, typed, with
defaults, declared once (:func:`tfjob.description.knobs.knob`) for both the options the backends read and
the settings users write (:class:`tfjob.Kubernetes`, :class:`tfjob.TFJob`…).

``jobset`` and ``trainjob`` take :class:`KubernetesOptions`; ``kubeflow`` (a TFJob)
takes :class:`TFJobOptions`, which adds what only the training operator has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...description.knobs import StrPath, knob
from ...model import SubmitOptions


@dataclass(kw_only=True, init=False, repr=False, eq=False)  # declarations only: what derives from it is made
class KubernetesKnobs:
    """Where the job goes in a cluster, and what every pod gets: every Kubernetes backend's knobs."""

    #: The namespace (default: ``TFJOB_NAMESPACE``, the kubeconfig context's, ``default``).
    namespace: str | None = knob("The Kubernetes namespace.", lands="settings.namespace")
    #: The kubeconfig file (default: ``$KUBECONFIG``, ``~/.kube/config``, or in-cluster).
    kubeconfig: StrPath | None = knob("The kubeconfig file (default: $KUBECONFIG, ~/.kube/config).", kind="text")
    #: The kubeconfig context (default: its current one).
    context: str | None = knob("The kubeconfig context.")
    #: Explicit resources: ``VALUE`` for every role, ``ROLE=VALUE`` entries, or ``{role: value}``.
    cpu: str | Sequence[str] | Mapping[str, str] | None = knob(
        "CPUs of every pod (2, 500m), or ROLE=CPUS (repeat); replaces the machine type's.",
        kind="list",
    )
    memory: str | Sequence[str] | Mapping[str, str] | None = knob(
        "Memory of every pod (8Gi), or ROLE=MEMORY (repeat).",
        kind="list",
    )
    gpu: str | int | Sequence[str] | Mapping[str, Any] | None = knob(
        "nvidia.com/gpu of every pod, or ROLE=COUNT (repeat).",
        kind="list",
    )
    #: ``gke`` (the default: an accelerator's nodes are picked by GKE's node labels) or
    #: ``generic`` (the accelerator's extended resource alone places the pod).
    cluster_kind: str | None = knob(
        "gke (default: a GPU or TPU pod gets GKE's node selector for its accelerator) or generic (the nvidia.com/gpu or "
        "google.com/tpu resource alone).",
    )
    #: A YAML pod template (or role → pod template) merged into every replica.
    pod_template: StrPath | Mapping[str, StrPath] | None = knob(
        "YAML pod template (or role: template) merged into every replica: nodeSelector, tolerations, volumes, sidecars, labels…",
        kind="text",
    )  # fmt: skip
    #: ``Never``/``OnFailure``/``ExitCode``/``Always`` (:mod:`tfjob.description.restarts`), or ``ROLE=POLICY``
    #: entries, or ``{role: policy}``: a TFJob's ``restartPolicy`` per replica; a JobSet's Job pods
    #: (Never, OnFailure, ExitCode through a ``podFailurePolicy``).
    restart_policy: str | Sequence[str] | Mapping[str, str] | None = knob(
        "Never, OnFailure, ExitCode or Always (default: the platform's, see README Preemption); ROLE=POLICY for one role (repeat).",
        kind="list",
    )  # fmt: skip
    #: Retries before the job is failed.
    backoff_limit: int | None = knob("Task restarts before the job fails (default 3).")
    #: Restarts of the whole job (a JobSet's or TrainJob's ``failurePolicy.maxRestarts``;
    #: default: ``backoff_limit``). A TFJob restarts replicas, not the whole job.
    max_restarts: int | None = knob("Restarts of the whole job (a JobSet's or TrainJob's failurePolicy.maxRestarts).")
    #: Seconds after which the finished job is deleted.
    ttl_seconds_after_finished: int | None = knob("Seconds a finished job is kept (default a week).", flags=("--ttl",))
    #: Create the job suspended (a queue admits it).
    suspend: bool = knob("Create the job suspended (a queue admits it later).", default=False)
    #: Kueue's LocalQueue (label and, for a TFJob, runPolicy.schedulingPolicy.queue).
    queue: str | None = knob("Kueue LocalQueue / scheduler queue (label and schedulingPolicy.queue).")


@dataclass(kw_only=True, init=False, repr=False, eq=False)  # declarations only: what derives from it is made
class TFJobKnobs:
    """What only the training operator's ``TFJob`` has: its cleanup and gang-scheduling policies."""

    #: ``None``, ``Running`` or ``All``.
    clean_pod_policy: str | None = knob("Running (default), All or None.")
    #: The gang's PriorityClass.
    priority_class: str | None = knob("PriorityClass of the job's pods.")
    #: The gang's minimum size.
    min_available: int | None = knob("Gang scheduling: tasks that must start together.")


@dataclass
class KubernetesOptions(SubmitOptions, KubernetesKnobs):
    """Where the job goes in a cluster, and what every pod gets (:class:`KubernetesKnobs`)."""


@dataclass
class TFJobOptions(KubernetesOptions, TFJobKnobs):
    """A Kubeflow ``TFJob``: the training operator's restart, cleanup and gang-scheduling policies."""
