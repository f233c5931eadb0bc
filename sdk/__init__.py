"""tfjob: package, submit and run distributed TensorFlow training jobs.

``from tfjob import Job`` is the Python entry point. The names here are the public API, each
documented (``help(tfjob.Job)``); everything else is reached through its module (the error
tree is :mod:`tfjob.errors`; the layout is docs/architecture.md). Names are loaded on first
use, so importing :mod:`tfjob` (which the in-container bootstrap does) costs nothing beyond
the standard library.
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .lazy import lazy_names

_LAZY = {
    # The job: what to run, its handle, the jobs known; a Python function as a job.
    "Job": "tfjob.job",
    "JobHandle": "tfjob.job",
    "get_job": "tfjob.job",
    "list_jobs": "tfjob.job",
    "remote": "tfjob.job",
    # What a job is made of: a role's replicas and resources, and each platform's settings.
    "Replicas": "tfjob.platforms",
    "Resources": "tfjob.description.spec",
    "Local": "tfjob.platforms",
    "Vertex": "tfjob.platforms",
    "AIPlatform": "tfjob.platforms",
    "Kubernetes": "tfjob.platforms",
    "TFJob": "tfjob.platforms",
    "JobSet": "tfjob.platforms",
    "TrainJob": "tfjob.platforms",
    # What a handle says.
    "JobState": "tfjob.model",
    "JobStatus": "tfjob.model",
    # Tuning.
    "Tuning": "tfjob.tune",
    "StudyResult": "tfjob.tuning.trials",
    # Inside a task.
    "task": "tfjob.cluster.current",
    "cluster_resolver": "tfjob.cluster.current",
    "report_metric": "tfjob.hypertune",
    # An image for a trainer.
    "build_image": "tfjob.images",
    # The errors a program catches (the whole tree: tfjob.errors), every one a TfjobError.
    **{
        name: "tfjob.errors"
        for name in (
            "TfjobError",
            "UsageError",
            "SpecError",
            "JobNotFoundError",
            "BackendError",
            "CapacityError",
            "JobFailedError",
            "JobCancelledError",
            "JobTimeoutError",
        )
    },
}

# What a type checker reads (the names above are loaded on first use at run time).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .cluster.current import cluster_resolver as cluster_resolver, task as task
    from .description.spec import Resources as Resources
    from .errors import BackendError as BackendError, CapacityError as CapacityError, JobCancelledError as JobCancelledError
    from .errors import JobFailedError as JobFailedError, JobNotFoundError as JobNotFoundError, JobTimeoutError as JobTimeoutError
    from .errors import SpecError as SpecError, TfjobError as TfjobError, UsageError as UsageError
    from .hypertune import report_metric as report_metric
    from .images import build_image as build_image
    from .job import Job as Job, JobHandle as JobHandle, get_job as get_job, list_jobs as list_jobs, remote as remote
    from .model import JobState as JobState, JobStatus as JobStatus
    from .platforms import AIPlatform as AIPlatform, JobSet as JobSet, Kubernetes as Kubernetes, Local as Local
    from .platforms import Replicas as Replicas, TFJob as TFJob, TrainJob as TrainJob, Vertex as Vertex
    from .tune import Tuning as Tuning
    from .tuning.trials import StudyResult as StudyResult


__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted([*_NAMES, "__version__"])


def __dir__() -> list[str]:
    return __all__
