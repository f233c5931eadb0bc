"""tfjob: package, submit and run distributed TensorFlow training jobs.

``from tfjob import Job`` is the Python entry point; see :class:`tfjob.job.Job`.
Names are loaded on first use, so importing :mod:`tfjob` (which the in-container
bootstrap does) costs nothing beyond the standard library.
"""

from __future__ import annotations

# The bootstrap imports this package first: keep `typing` (≈3 ms) out of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tfjob' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
