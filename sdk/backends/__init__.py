"""Backends, picked by name from a plain registry.

Each backend lives in its own module and exposes ``BACKEND``, an object that follows
:class:`~tfjob.backends.base.Backend`. Modules are imported only when asked for, so
``tfjob --help`` never pays for a cloud client library.
"""

from __future__ import annotations

import importlib

from ..errors import UsageError
from ..machines import did_you_mean
from .base import Backend, JobState, JobStatus, SubmitOptions, TaskStatus

#: Backend name → module that implements it.
BACKENDS: dict[str, str] = {
    "local": "tfjob.backends.local",
    "vertex": "tfjob.backends.vertex",
    "kubeflow": "tfjob.backends.kubeflow",
    # A JobSet (jobset.x-k8s.io), the engine under Kubeflow Trainer v2: no training operator needed.
    "jobset": "tfjob.backends.jobset",
    # A Kubeflow Trainer v2 TrainJob with the TensorFlow runtime tfjob renders for it: render only.
    "trainjob": "tfjob.backends.trainjob",
    # Vertex AI hyperparameter tuning jobs, which `tfjob tune --backend vertex` creates (status, logs, cancel).
    "vertex-tuning": "tfjob.tuning.vertex",
    # Legacy AI Platform Training (shut down 2025-01-31): render only, for migration and review.
    "ai-platform": "tfjob.backends.aiplatform",
}


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (``local``, ``vertex``, ``kubeflow``)."""
    module = BACKENDS.get(name)
    if module is None:
        raise UsageError(
            f"--backend {name!r} is not a backend{did_you_mean(name, BACKENDS)}; choose one of {', '.join(BACKENDS)}"
        )
    return importlib.import_module(module).BACKEND


__all__ = ["BACKENDS", "Backend", "JobState", "JobStatus", "SubmitOptions", "TaskStatus", "get_backend"]
