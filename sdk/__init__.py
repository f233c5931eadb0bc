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
}

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted([*_NAMES, "__version__"])


def __dir__() -> list[str]:
    return __all__
