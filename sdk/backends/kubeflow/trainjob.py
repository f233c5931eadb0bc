"""``--backend trainjob``: a Kubeflow Trainer v2 ``TrainJob`` on the TensorFlow runtime
tfjob renders for it (see :mod:`tfjob.backends.kubeflow.render_trainjob`).

Submitting creates (or reuses, when unchanged) the job's ``ClusterTrainingRuntime`` and
then the ``TrainJob`` naming it; Trainer expands them into a JobSet of the TrainJob's
name, whose pods get the same ``TF_CONFIG`` as under ``--backend jobset``. The rest —
the job store, waiting with the pods' reasons, logs, cancel (the TrainJob and its
runtime), list — is the kubeflow backend's lifecycle on a TrainJob.
"""

from __future__ import annotations

from .backend import KubeflowBackend
from .kinds import TRAINJOB_KIND
from .options import KubernetesOptions


class TrainJobBackend(KubeflowBackend):
    """TrainJobs (Kubeflow Trainer v2) through the Kubernetes API: the kubeflow backend's
    lifecycle on :data:`~.kinds.TRAINJOB_KIND` (the runtime made first, deleted after)."""

    name = "trainjob"
    options_class = KubernetesOptions
    kind = TRAINJOB_KIND
