"""What the Kubernetes backends run a job as, described as data: a TFJob, a JobSet, a TrainJob.

A :class:`Resource` is an object kind the client creates, reads, lists and deletes — its
API group, version, plural and kind, whether it lives in a namespace, and the check a
manifest must pass before it is sent (:class:`~.client.KubeClient`'s generic calls take
one). A :class:`JobKind` is what the one Kubernetes lifecycle
(:class:`~.backend.KubeflowBackend`) needs to run a job as such a resource: how to render
it, how to read its state, which pods are its, and the cluster-scoped objects it needs
first (a TrainJob's ``ClusterTrainingRuntime``). A kind of job is a value here, not a
subclass overriding hooks; the ``jobset`` and ``trainjob`` backends name theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...model import JobState
from ...description.spec import JobSpec
from .render import GROUP, PLURAL, VERSION, render_tfjob, validate_tfjob
from .render_jobset import render_jobset
from .render_trainjob import NODE, render_trainjob_list, runtime_name, trainer_role
from .status import build_jobset_selector, build_pod_selector, parse_jobset_state, parse_tfjob_state, parse_trainjob_state


@dataclass(frozen=True)
class Resource:
    """An object kind tfjob creates: its API group, version, plural and kind."""

    group: str
    version: str
    plural: str
    kind: str
    #: How to get the resource served when the cluster does not know it (one line).
    install_hint: str
    #: Cluster-scoped (a ``ClusterTrainingRuntime``), not in a namespace.
    cluster_scoped: bool = False
    #: Checked before a create is sent (raises :class:`~tfjob.errors.SpecError`): the
    #: admission rules a controller would refuse the manifest with.
    check: Callable[[Mapping[str, Any]], None] | None = None


INSTALL_HINT = (
    "install the Kubeflow training operator (kubectl apply --server-side -k "
    '"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.0")'
)
JOBSET_INSTALL_HINT = (
    "install JobSet (kubectl apply --server-side -f https://github.com/kubernetes-sigs/jobset/releases/download/v0.12.0/manifests.yaml)"
)
TRAINER_INSTALL_HINT = (
    'install Kubeflow Trainer v2 (kubectl apply --server-side -k "github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.3.0")'
)

TFJOB = Resource(GROUP, VERSION, PLURAL, "TFJob", INSTALL_HINT, check=validate_tfjob)
JOBSET = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", JOBSET_INSTALL_HINT)
TRAINJOB = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", TRAINER_INSTALL_HINT)
RUNTIME = Resource(
    "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime", TRAINER_INSTALL_HINT, cluster_scoped=True
)
#: The core ConfigMap a job's shipped packages travel in (every cluster serves it).
CONFIGMAP = Resource("", "v1", "configmaps", "ConfigMap", "")


@dataclass(frozen=True)
class Companion:
    """A cluster-scoped object a job needs (a TrainJob's runtime): made before the job unless
    the same one is there (another one of that name is refused), deleted after it."""

    resource: Resource
    #: Its name, from the job's.
    name_of: Callable[[str], str]


@dataclass(frozen=True)
class JobKind:
    """A job as one Kubernetes resource: everything the Kubernetes lifecycle knows of it."""

    resource: Resource
    #: Who acts on a new job, in messages (``waiting for the training operator``).
    controller: str
    #: The job's manifest from its spec and options (pure): the job, or a ``List`` of the
    #: cluster-scoped objects it needs (its :attr:`companions`) and then the job.
    render: Callable[[JobSpec, Any], dict[str, Any]]
    #: The job object's state and message (its conditions).
    state: Callable[[Mapping[str, Any]], tuple[JobState, str]]
    #: The label selector of the job's pods, or of one task's (``worker-1``) or role's; the
    #: job's spec (when known) for a kind that runs a role under another name.
    pods: Callable[[str, str | None, JobSpec | None], str]
    companions: tuple[Companion, ...] = ()

    @property
    def name(self) -> str:
        """The kind, as messages name the job (``TFJob``)."""
        return self.resource.kind


def _trainjob_pods(name: str, task: str | None, spec: JobSpec | None) -> str:
    # Trainer's JobSet has the TrainJob's name; the trainer role's pods are its `node` job.
    selector = build_jobset_selector(name, task)
    if task is not None and spec is not None:
        selector = selector.replace(f"replicatedjob-name={trainer_role(spec)}", f"replicatedjob-name={NODE}")
    return selector


#: A Kubeflow ``TFJob`` (the training operator).
TFJOB_KIND = JobKind(
    TFJOB, "the training operator", render_tfjob, parse_tfjob_state, lambda name, task, spec: build_pod_selector(name, task)
)
#: A ``JobSet`` (jobset.x-k8s.io): no training operator; the bootstrap derives ``TF_CONFIG``.
JOBSET_KIND = JobKind(
    JOBSET,
    "the JobSet controller",
    render_jobset,
    lambda obj: parse_jobset_state(obj),
    lambda name, task, spec: build_jobset_selector(name, task),
)
#: A Kubeflow Trainer v2 ``TrainJob`` on the TensorFlow ``ClusterTrainingRuntime`` tfjob renders.
TRAINJOB_KIND = JobKind(
    TRAINJOB, "Kubeflow Trainer", render_trainjob_list, lambda obj: parse_trainjob_state(obj), _trainjob_pods,
    companions=(Companion(RUNTIME, runtime_name),),
)  # fmt: skip
