"""The typed values of the public API: a role's :class:`Replicas` and each platform's settings.

``Job(..., workers=Replicas(4, machine_type="n2-standard-8"), backend=Vertex(project="p",
region="us-central1", spot=True))``: every field is a keyword-only, annotated dataclass
field, so a misspelt setting, a setting of another platform (``Kubernetes(spot=True)``)
or a value of the wrong type (``workers="3"``) is an error a type checker reports before
anything runs. Each settings class names the backend it selects (``BACKEND``); the values
are checked when the :class:`tfjob.Job` is built, as the CLI's flags are.

Plain values; the backend-only knobs of a settings class are declared once, in that backend's
folder (``Vertex`` takes :class:`tfjob.backends.vertex.options.VertexKnobs`, light: no client
library), and listed in the class's help from those declarations.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence, Union

from .backends.vertex.options import VertexKnobs
from .knobs import described_fields

if TYPE_CHECKING:
    from .spec import Accelerator

#: A file or directory: text or a path object.
StrPath = Union[str, "PathLike[str]"]


@dataclass(frozen=True)
class Replicas:
    """One role's replicas: how many, on what, running what.

    ``Replicas(4, machine_type="n2-standard-8", accelerator="NVIDIA_L4:1")``; a plain
    ``int`` where a :class:`Replicas` is taken means ``Replicas(n)``.

    Args:
        count: how many replicas (the chief is always 1).
        machine_type: the machine each replica runs on (Vertex AI, AI Platform), e.g.
            ``n1-standard-8``; default ``n1-standard-4``.
        accelerator: the accelerator each replica gets: ``NVIDIA_L4:1``,
            ``type=NVIDIA_TESLA_T4,count=1`` or an :class:`tfjob.spec.Accelerator`.
        image: the container image this role runs (instead of the job's ``image``).
        args: arguments this role's trainer gets after the job's ``args``.
        env: environment variables of this role's tasks (over the job's ``env``).
        boot_disk_type: Vertex AI only: ``pd-ssd``, ``pd-standard``, ``hyperdisk-balanced``.
        boot_disk_size: Vertex AI only: the boot disk's size in GB (100 to 64000).
    """

    count: int = 1
    _: dataclasses.KW_ONLY
    machine_type: str | None = None
    accelerator: str | Accelerator | None = None
    image: str | None = None
    args: Sequence[str] | None = None
    env: Mapping[str, str] | None = None
    boot_disk_type: str | None = None
    boot_disk_size: int | None = None

    def keywords(self, role: str) -> dict[str, Any]:
        """This role's values as the job description's keywords (``worker_machine_type``…), unset ones left out."""
        out = {f"{role}_{f.name}": getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "count"}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(kw_only=True)
class Platform:
    """The settings of one backend (a base class; use :class:`Local`, :class:`Vertex`…)."""

    #: The backend these settings select (``tfjob.backends.BACKENDS``).
    BACKEND: ClassVar[str] = ""

    def keywords(self) -> dict[str, Any]:
        """The settings that differ from their defaults, as the job's keywords."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}


@dataclass(kw_only=True)
class Local(Platform):
    """Run the cluster on this machine: one process (or container, with ``image``) per task.

    Args:
        dialect: whose ``TF_CONFIG`` / ``CLUSTER_SPEC`` the tasks see: ``vertex``
            (default), ``ai-platform``, ``kubeflow`` or ``gcloud-local``.
        use_chief: with ``dialect="ai-platform"``: name the primary task ``chief``
            (True) or ``master`` (False); default: as the runtime version does.
        runtime_version: the AI Platform runtime version imitated (checked against the trainer).
        python_version: the Python version imitated (checked against the interpreter).
        python: the interpreter the tasks run (default: this one).
        install: install the trainer's sdist in a throw-away venv first, as the platforms do.
        grace: seconds between SIGTERM and SIGKILL when the cluster is torn down.
        detach: return at once; a supervisor process runs the job.
        restart_policy: ``Never``, ``OnFailure``, ``ExitCode`` or ``Always``, or ``ROLE=POLICY``
            entries; default: what the ``dialect``'s platform does.
        backoff_limit: restarts of tasks (all together) before the job fails (default 3).
        restart_delay: seconds before a task's first restart, doubled for each further one (default 1).
        max_restarts: restarts of the whole job after it failed from a lost task (a preemption, a signal).
        preempt: preemptions to rehearse: ``TASK@TIME`` (``worker-1@30s``) or ``random@MEAN``, or a list of them.
        preempt_grace: seconds between a preemption's SIGTERM and its SIGKILL (default 30, as Spot VMs).
        preempt_seed: the seed of ``random@…`` preemptions (the same seed, the same tasks at the same times).
    """

    BACKEND: ClassVar[str] = "local"
    dialect: str = "vertex"
    use_chief: bool | None = None
    runtime_version: str | None = None
    python_version: str | None = None
    python: StrPath | None = None
    install: bool = False
    grace: float = 5.0
    detach: bool = False
    restart_policy: str | Sequence[str] | None = None
    backoff_limit: int | None = None
    restart_delay: float | None = None
    max_restarts: int | None = None
    preempt: str | Sequence[str] | None = None
    preempt_grace: float | None = None
    preempt_seed: int = 0


@dataclass(kw_only=True)
class Vertex(Platform, VertexKnobs):
    """A Vertex AI ``CustomJob``: pool 0 the chief, then workers, parameter servers, evaluators.

    Its Vertex AI knobs are declared once, in the Vertex backend's folder
    (:class:`tfjob.backends.vertex.options.VertexKnobs`); they are listed after these.

    Args:
        project: the Google Cloud project (default: ``TFJOB_PROJECT``, gcloud's, the config file's).
        region: the region (default: ``TFJOB_REGION``, gcloud's ``ai/region``, the config file's).
        staging_bucket: ``gs://BUCKET[/PATH]`` for the trainer's packages (default: the
            ``job_dir`` bucket, then the configured one).
        credentials: ``google.auth`` credentials every call of the job's life uses
            (default: application-default credentials).
        network: the VPC network to peer with (``projects/N/global/networks/NET``).
        enable_web_access: interactive shell access to the tasks.
        runtime_version, python_version: the legacy AI Platform runtime a migrated job names.
    """

    BACKEND: ClassVar[str] = "vertex"
    project: str | None = None
    region: str | None = None
    staging_bucket: str | None = None
    credentials: Any = None
    network: str | None = None
    enable_web_access: bool = False
    runtime_version: str | None = None
    python_version: str | None = None

    def keywords(self) -> dict[str, Any]:
        out = super().keywords()
        out.pop("credentials", None)  # given to the backend object, not to the job
        if "reserved_ip_ranges" in out:
            out["reserved_ip_ranges"] = tuple(out["reserved_ip_ranges"])
        return out


Vertex.__doc__ = (Vertex.__doc__ or "").rstrip() + described_fields(VertexKnobs)


@dataclass(kw_only=True)
class AIPlatform(Platform):
    """Legacy AI Platform Training (shut down 2025-01-31): render only, for migration and review.

    Args:
        project, region, staging_bucket: as for :class:`Vertex`.
        network: the VPC network to peer with.
        enable_web_access: interactive shell access to the tasks.
        runtime_version, python_version: the runtime the job runs on.
        use_chief: name the primary task ``chief`` (True) or ``master`` (False) in TF_CONFIG.
    """

    BACKEND: ClassVar[str] = "ai-platform"
    project: str | None = None
    region: str | None = None
    staging_bucket: str | None = None
    network: str | None = None
    enable_web_access: bool = False
    runtime_version: str | None = None
    python_version: str | None = None
    use_chief: bool | None = None


@dataclass(kw_only=True)
class Kubernetes(Platform):
    """A job in a Kubernetes cluster; by itself a Kubeflow ``TFJob`` (see :class:`TFJob`,
    :class:`JobSet`, :class:`TrainJob` for the other resources).

    Args:
        namespace: the namespace (default: ``TFJOB_NAMESPACE``, the kubeconfig context's, ``default``).
        kubeconfig: the kubeconfig file (default: ``$KUBECONFIG``, ``~/.kube/config``, or in-cluster).
        context: the kubeconfig context (default: its current one).
        api_client: a ``kubernetes.client.ApiClient`` to use instead of the kubeconfig.
        cpu, memory, gpu: explicit resources: one value for every role, ``ROLE=VALUE``
            entries, or ``{role: value}``.
        pod_template: a YAML pod template (or role → pod template) merged into every replica.
        restart_policy: ``Never``, ``OnFailure``, ``ExitCode`` or ``Always``, or ``ROLE=POLICY``
            entries, or ``{role: policy}``: a TFJob's ``restartPolicy`` per replica, a JobSet's
            Job pods (through a ``podFailurePolicy``).
        backoff_limit: retries before the job is failed.
        max_restarts: restarts of the whole job (a JobSet's or TrainJob's ``failurePolicy.maxRestarts``;
            default: ``backoff_limit``); a TFJob restarts replicas, not the whole job.
        ttl_seconds_after_finished: seconds after which the finished job is deleted.
        suspend: create the job suspended (a queue admits it).
        queue: Kueue's LocalQueue.
    """

    BACKEND: ClassVar[str] = "kubeflow"
    namespace: str | None = None
    kubeconfig: StrPath | None = None
    context: str | None = None
    api_client: Any = None
    cpu: str | Sequence[str] | Mapping[str, str] | None = None
    memory: str | Sequence[str] | Mapping[str, str] | None = None
    gpu: str | int | Sequence[str] | Mapping[str, Any] | None = None
    pod_template: StrPath | Mapping[str, StrPath] | None = None
    restart_policy: str | Sequence[str] | Mapping[str, str] | None = None
    backoff_limit: int | None = None
    max_restarts: int | None = None
    ttl_seconds_after_finished: int | None = None
    suspend: bool = False
    queue: str | None = None

    def keywords(self) -> dict[str, Any]:
        out = super().keywords()
        out.pop("api_client", None)  # given to the backend object, not to the job
        return out


@dataclass(kw_only=True)
class TFJob(Kubernetes):
    """A Kubeflow ``TFJob`` (the training operator), with the operator's own policies.

    Args:
        clean_pod_policy: ``None``, ``Running`` or ``All``.
        priority_class: the gang's PriorityClass.
        min_available: the gang's minimum size.
        (and every :class:`Kubernetes` setting)
    """

    BACKEND: ClassVar[str] = "kubeflow"
    clean_pod_policy: str | None = None
    priority_class: str | None = None
    min_available: int | None = None


@dataclass(kw_only=True)
class JobSet(Kubernetes):
    """A ``JobSet`` (jobset.x-k8s.io), the engine under Kubeflow Trainer v2: no training operator needed."""

    BACKEND: ClassVar[str] = "jobset"


@dataclass(kw_only=True)
class TrainJob(Kubernetes):
    """A Kubeflow Trainer v2 ``TrainJob`` with the TensorFlow runtime tfjob renders for it."""

    BACKEND: ClassVar[str] = "trainjob"


#: Every settings class a :class:`tfjob.Job` takes as ``backend=``.
PLATFORMS: tuple[type[Platform], ...] = (Local, Vertex, AIPlatform, Kubernetes, TFJob, JobSet, TrainJob)

__all__ = ["AIPlatform", "JobSet", "Kubernetes", "Local", "PLATFORMS", "Platform", "Replicas", "TFJob", "TrainJob", "Vertex"]
