"""The jobset backend: a job runs on Kubernetes as a JobSet (jobset.x-k8s.io/v1alpha2).

JobSet is the engine under Kubeflow Trainer v2 and on GKE, and needs no training operator:
the JobSet controller makes one Indexed Job per role, and the tfjob bootstrap in every pod
derives the ``TF_CONFIG`` the TFJob operator would have written (see
:mod:`tfjob.backends.kubeflow.render_jobset` and :mod:`tfjob.cluster.jobset`). Everything else — the job
store, waiting with the pods' reasons, logs, cancel, list — is the kubeflow backend's,
on a JobSet instead of a TFJob: the same lifecycle, the same ids (``NAMESPACE/NAME``).
"""

from __future__ import annotations

from .backend import KubeflowBackend
from .kinds import JOBSET_KIND
from .options import KubernetesOptions


class JobSetBackend(KubeflowBackend):
    """JobSets through the Kubernetes API: the kubeflow backend's lifecycle on
    :data:`~.kinds.JOBSET_KIND` (``JobSetBackend(api_client=…)`` as ``KubeflowBackend``)."""

    name = "jobset"
    options_class = KubernetesOptions
    kind = JOBSET_KIND
