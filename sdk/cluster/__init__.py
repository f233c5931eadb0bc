"""The cluster contract: ``ClusterSpec``, ``TaskInfo``, and TF_CONFIG / CLUSTER_SPEC.

Stdlib only: the in-container bootstrap imports this before TensorFlow.

* :class:`ClusterSpec` behaves exactly like ``tf.train.ClusterSpec``.
* :func:`render_task_env` renders the variables a platform sets for one task
  (Vertex AI, AI Platform, Kubeflow, gcloud local train); :func:`device_filters`.
"""

from __future__ import annotations

from .render import (
    DIALECTS,
    GCLOUD_LOCAL_START_PORT,
    KUBEFLOW_DEFAULT_PORT,
    ROLES,
    device_filters,
    render_gcloud_local_cluster,
    render_kubeflow_cluster,
    render_task_env,
)
from .spec import ClusterSpec

__all__ = [
    "DIALECTS",
    "GCLOUD_LOCAL_START_PORT",
    "KUBEFLOW_DEFAULT_PORT",
    "ROLES",
    "ClusterSpec",
    "device_filters",
    "render_gcloud_local_cluster",
    "render_kubeflow_cluster",
    "render_task_env",
]
