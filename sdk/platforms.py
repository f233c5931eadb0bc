"""The typed values of the public API: a role's :class:`Replicas` and each platform's settings.

``Job(..., workers=Replicas(4, machine_type="n2-standard-8"), backend=Vertex(project="p",
region="us-central1", spot=True))``: every field is a keyword-only, annotated dataclass
field, so a misspelt setting, a setting of another platform (``Kubernetes(spot=True)``)
or a value of the wrong type (``workers="3"``) is an error a type checker reports before
anything runs. Each settings class names the backend it selects (``BACKEND``); the values
are checked when the :class:`tfjob.Job` is built, as the CLI's flags are.

Plain values; the backend-only knobs of a settings class are declared once, in that backend's
folder (``Local`` takes :class:`tfjob.backends.local.options.LocalKnobs`, ``Vertex``
:class:`tfjob.backends.vertex.options.VertexKnobs`, ``Kubernetes`` and its kinds
:class:`tfjob.backends.kubeflow.options.KubernetesKnobs`: light modules, no client library),
which the backend's options class derives from too; each class's help lists them from their
declarations.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from .backends.base import GoogleCloudKnobs
from .backends.kubeflow.options import KubernetesKnobs, TFJobKnobs
from .backends.local.options import LocalKnobs
from .backends.vertex.options import VertexKnobs
from .description.knobs import StrPath, described_fields

if TYPE_CHECKING:
    from .description.spec import Accelerator, Resources


@dataclass(frozen=True)
class Replicas:
    """One role's replicas: how many, on what, running what.

    ``Replicas(2, resources=Resources(cpu=4, memory="16Gi", accelerator="NVIDIA_L4:1"))`` asks
    in terms every platform reads; ``Replicas(4, machine_type="n2-standard-8",
    accelerator="NVIDIA_L4:1")`` names a Compute Engine machine. A plain ``int`` where a
    :class:`Replicas` is taken means ``Replicas(n)``.

    Args:
        count: how many replicas (the chief is always 1).
        resources: CPUs, memory and an accelerator each replica asks for
            (:class:`tfjob.Resources`; instead of ``machine_type`` and ``accelerator``).
        machine_type: the Compute Engine machine each replica runs on, e.g. ``n1-standard-8``;
            default ``n1-standard-4``.
        accelerator: the accelerator each replica gets: ``NVIDIA_L4:1``,
            ``type=NVIDIA_TESLA_T4,count=1`` or an :class:`tfjob.description.spec.Accelerator`.
        image: the container image this role runs (instead of the job's ``image``).
        args: arguments this role's trainer gets after the job's ``args``.
        env: environment variables of this role's tasks (over the job's ``env``).
        boot_disk_type, boot_disk_size: deprecated: Vertex AI's, given as
            ``Vertex(<role>_boot_disk_type=…, <role>_boot_disk_size=…)`` now.
    """

    count: int = 1
    _: dataclasses.KW_ONLY
    resources: Resources | None = None
    machine_type: str | None = None
    accelerator: str | Accelerator | None = None
    image: str | None = None
    args: Sequence[str] | None = None
    env: Mapping[str, str] | None = None
    boot_disk_type: str | None = None
    boot_disk_size: int | None = None

    def __post_init__(self) -> None:
        if self.boot_disk_type is not None or self.boot_disk_size is not None:
            import warnings

            warnings.warn(
                "Replicas(boot_disk_type=…, boot_disk_size=…) is deprecated: a boot disk is Vertex AI's, "
                "give it as Vertex(<role>_boot_disk_type=…, <role>_boot_disk_size=…)",
                FutureWarning,
                stacklevel=3,
            )


@dataclass(kw_only=True)
class Platform:
    """The settings of one backend (a base class; use :class:`Local`, :class:`Vertex`…)."""

    #: The backend these settings select (``tfjob.backends.BACKENDS``).
    BACKEND: ClassVar[str] = ""

    def keywords(self) -> dict[str, Any]:
        """The settings that differ from their defaults, as the job's keywords."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}


@dataclass(kw_only=True)
class Local(Platform, LocalKnobs):
    """Run the cluster on this machine: one process (or container, with ``image``) per task.

    Its own knobs are declared once, in the local backend's folder
    (:class:`tfjob.backends.local.options.LocalKnobs`); they are listed after these.

    Args:
        use_chief: with ``dialect="ai-platform"``: name the primary task ``chief``
            (True) or ``master`` (False); default: as the runtime version does.
        runtime_version: the AI Platform runtime version imitated (checked against the trainer).
        python_version: the Python version imitated (checked against the interpreter).
    """

    BACKEND: ClassVar[str] = "local"
    use_chief: bool | None = None
    runtime_version: str | None = None
    python_version: str | None = None


Local.__doc__ = (Local.__doc__ or "").rstrip() + described_fields(LocalKnobs)


@dataclass(kw_only=True)
class Vertex(Platform, GoogleCloudKnobs, VertexKnobs):
    """A Vertex AI ``CustomJob``: pool 0 the chief, then workers, parameter servers, evaluators.

    Its knobs are declared once, in the backends' folders (Google Cloud's,
    :class:`tfjob.backends.base.GoogleCloudKnobs`, and Vertex AI's,
    :class:`tfjob.backends.vertex.options.VertexKnobs`); they are listed after these.

    Args:
        credentials: ``google.auth`` credentials every call of the job's life uses
            (default: application-default credentials).
        runtime_version, python_version: the legacy AI Platform runtime a migrated job names.
    """

    BACKEND: ClassVar[str] = "vertex"
    credentials: Any = None
    runtime_version: str | None = None
    python_version: str | None = None

    def keywords(self) -> dict[str, Any]:
        out = super().keywords()
        out.pop("credentials", None)  # given to the backend object, not to the job
        if "reserved_ip_ranges" in out:
            out["reserved_ip_ranges"] = tuple(out["reserved_ip_ranges"])
        return out


Vertex.__doc__ = (Vertex.__doc__ or "").rstrip() + described_fields(GoogleCloudKnobs) + described_fields(VertexKnobs)


@dataclass(kw_only=True)
class AIPlatform(Platform, GoogleCloudKnobs):
    """Legacy AI Platform Training (shut down 2025-01-31): render only, for migration and review.

    Its Google Cloud knobs (:class:`tfjob.backends.base.GoogleCloudKnobs`) are listed after these.

    Args:
        runtime_version, python_version: the runtime the job runs on.
        use_chief: name the primary task ``chief`` (True) or ``master`` (False) in TF_CONFIG.
    """

    BACKEND: ClassVar[str] = "ai-platform"
    runtime_version: str | None = None
    python_version: str | None = None
    use_chief: bool | None = None


AIPlatform.__doc__ = (AIPlatform.__doc__ or "").rstrip() + described_fields(GoogleCloudKnobs)


@dataclass(kw_only=True)
class Kubernetes(Platform, KubernetesKnobs):
    """A job in a Kubernetes cluster; by itself a Kubeflow ``TFJob`` (see :class:`TFJob`,
    :class:`JobSet`, :class:`TrainJob` for the other resources).

    Its knobs are declared once, in the Kubernetes backends' folder
    (:class:`tfjob.backends.kubeflow.options.KubernetesKnobs`); they are listed after this one.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` to use instead of the kubeconfig.
    """

    BACKEND: ClassVar[str] = "kubeflow"
    api_client: Any = None

    def keywords(self) -> dict[str, Any]:
        out = super().keywords()
        out.pop("api_client", None)  # given to the backend object, not to the job
        return out


Kubernetes.__doc__ = (Kubernetes.__doc__ or "").rstrip() + described_fields(KubernetesKnobs)


@dataclass(kw_only=True)
class TFJob(Kubernetes, TFJobKnobs):
    """A Kubeflow ``TFJob`` (the training operator), with the operator's own policies
    (:class:`tfjob.backends.kubeflow.options.TFJobKnobs`, listed below) and every
    :class:`Kubernetes` setting.

    Args:
    """

    BACKEND: ClassVar[str] = "kubeflow"


TFJob.__doc__ = (TFJob.__doc__ or "").rstrip() + described_fields(TFJobKnobs)


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

__all__ = ["AIPlatform", "JobSet", "Kubernetes", "Local", "PLATFORMS", "Platform", "Replicas", "StrPath", "TFJob", "TrainJob", "Vertex"]
