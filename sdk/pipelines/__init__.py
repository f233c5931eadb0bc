"""tfjob as a pipeline step: Kubeflow Pipelines / Vertex AI Pipelines (KFP v2), Airflow.

- :func:`tfjob.pipelines.step.run_step` — run a job to its end from a pipeline step's process:
  stream its logs, cancel it when the step is terminated (SIGTERM), fail naming the failing
  task, and return the model URI, the final metrics, the job id and backend. No KFP needed.
- :mod:`tfjob.pipelines.components` (the ``kfp`` extra, ``pip install 'tfjob[kfp]'``) — the
  KFP v2 component around it, with typed ``Model`` and ``Metrics`` outputs.
- :mod:`tfjob.pipelines.vertex` — from a :class:`tfjob.Job`, the arguments of
  google-cloud-pipeline-components' ``CustomTrainingJobOp`` (heterogeneous worker pools,
  the bootstrap as every pool's entry point, the staged packages, the base output dir).

Names load on first use: importing this package imports neither KFP nor any cloud client.
"""

from __future__ import annotations

from ..lazy import lazy_names

_LAZY = {
    "run_step": "tfjob.pipelines.step",
    "StepResult": "tfjob.pipelines.step",
    "StepCancelled": "tfjob.pipelines.step",
    "custom_training_job_args": "tfjob.pipelines.vertex",
}

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted(_NAMES)


def __dir__() -> list[str]:
    return __all__
