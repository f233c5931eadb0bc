"""Backends, picked by name from a plain registry.

Each backend is a folder here — ``local/``, ``vertex/``, ``kubeflow/`` (TFJob, JobSet,
TrainJob), ``aiplatform/`` — holding its render, its client, its status parsing, its logs
and its tuning. Its ``backend`` module exposes ``BACKEND``, an object that follows
:class:`~tfjob.backends.base.Backend` and derives from :class:`tfjob.lifecycle.Lifecycle`.
A backend imports the layers below it (the job model, the spec, ``tfjob.cluster``, the
store), never another backend's folder nor anything above it (``tfjob.job``, the CLI).
Modules are imported only when asked for, so ``tfjob --help`` never pays for a cloud
client library.
"""

from __future__ import annotations

import importlib

from ..errors import UsageError
from ..machines import did_you_mean
from .base import Backend, JobState, JobStatus, SubmitOptions, TaskStatus

#: Backend name → module that implements it.
BACKENDS: dict[str, str] = {
    "local": "tfjob.backends.local.backend",
    "vertex": "tfjob.backends.vertex.backend",
    "kubeflow": "tfjob.backends.kubeflow.backend",
    # A JobSet (jobset.x-k8s.io), the engine under Kubeflow Trainer v2: no training operator needed.
    "jobset": "tfjob.backends.kubeflow.jobset",
    # A Kubeflow Trainer v2 TrainJob with the TensorFlow runtime tfjob renders for it: render only.
    "trainjob": "tfjob.backends.kubeflow.trainjob",
    # Vertex AI hyperparameter tuning jobs, which `tfjob tune --backend vertex` creates (status, logs, cancel).
    "vertex-tuning": "tfjob.backends.vertex.tuning",
    # Legacy AI Platform Training (shut down 2025-01-31): render only, for migration and review.
    "ai-platform": "tfjob.backends.aiplatform.backend",
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
