"""tfjob: package, submit and run distributed TensorFlow training jobs.

``from tfjob import Job`` is the Python entry point; see :class:`tfjob.job.Job`.
Names are loaded on first use, so importing :mod:`tfjob` (which the in-container
bootstrap does) costs nothing beyond the standard library.
"""

from __future__ import annotations

from .lazy import lazy_names

__version__ = "0.1.0"

_LAZY = {
    "Job": "tfjob.job",
    "JobHandle": "tfjob.job",
    "get_job": "tfjob.job",
    "JobSpec": "tfjob.spec",
    "ScaleTier": "tfjob.spec",
    "ClusterSpec": "tfjob.cluster",
    "TaskInfo": "tfjob.cluster",
    "report_metric": "tfjob.hypertune",
    "Tuning": "tfjob.tune",
    "StudySpec": "tfjob.study",
    "StudyResult": "tfjob.tuning.trials",
    "Replicas": "tfjob.platforms",
    "Local": "tfjob.platforms",
    "Vertex": "tfjob.platforms",
    "AIPlatform": "tfjob.platforms",
    "Kubernetes": "tfjob.platforms",
    "TFJob": "tfjob.platforms",
    "JobSet": "tfjob.platforms",
    "TrainJob": "tfjob.platforms",
}

# What a type checker reads (the names above are loaded on first use at run time).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .cluster import ClusterSpec as ClusterSpec, TaskInfo as TaskInfo
    from .hypertune import report_metric as report_metric
    from .job import Job as Job, JobHandle as JobHandle, get_job as get_job
    from .platforms import AIPlatform as AIPlatform, JobSet as JobSet, Kubernetes as Kubernetes, Local as Local
    from .platforms import Replicas as Replicas, TFJob as TFJob, TrainJob as TrainJob, Vertex as Vertex
    from .spec import JobSpec as JobSpec, ScaleTier as ScaleTier
    from .study import StudySpec as StudySpec
    from .tuning.trials import StudyResult as StudyResult
    from .tune import Tuning as Tuning

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted([*_NAMES, "__version__"])


def __dir__() -> list[str]:
    return __all__
