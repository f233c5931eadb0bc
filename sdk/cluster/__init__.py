"""The cluster contract: ``ClusterSpec``, ``TaskInfo``, and TF_CONFIG / CLUSTER_SPEC.

Stdlib only: the in-container bootstrap imports this before TensorFlow.

* :class:`ClusterSpec` behaves exactly like ``tf.train.ClusterSpec``.
* :class:`TaskInfo` / :func:`task_info_from_env` read which task this process is,
  in every platform's dialect; :func:`render_tf2_env` is what the bootstrap exports.
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
from .task import (
    PARSED_DIALECTS,
    TaskInfo,
    local_task,
    parse_cluster_spec,
    parse_tf_config,
    TF_CONFIG_MODES,
    render_bootstrap_env,
    render_tf2_env,
    task_info_from_env,
)

__all__ = [
    "DIALECTS",
    "GCLOUD_LOCAL_START_PORT",
    "KUBEFLOW_DEFAULT_PORT",
    "PARSED_DIALECTS",
    "ROLES",
    "ClusterSpec",
    "TaskInfo",
    "device_filters",
    "local_task",
    "parse_cluster_spec",
    "parse_tf_config",
    "render_gcloud_local_cluster",
    "render_kubeflow_cluster",
    "render_task_env",
    "render_bootstrap_env",
    "render_tf2_env",
    "TF_CONFIG_MODES",
    "task_info_from_env",
]
