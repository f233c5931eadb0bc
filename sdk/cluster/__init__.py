"""The cluster contract: ``ClusterSpec``, ``TaskInfo``, and TF_CONFIG / CLUSTER_SPEC.

Stdlib only: the in-container bootstrap imports this before TensorFlow.

* :class:`ClusterSpec` behaves exactly like ``tf.train.ClusterSpec``.
* :class:`TaskInfo` / :func:`task_info_from_env` read which task this process is,
  in every platform's dialect; :func:`render_tf2_env` is what the bootstrap exports.
* :func:`render_task_env` renders the variables a platform sets for one task
  (Vertex AI, AI Platform, Kubeflow, gcloud local train); :func:`device_filters`.

Names are loaded on first use (:mod:`tfjob.lazy`): a task's bootstrap, which reads its
cluster (:mod:`.task`) and renders none, does not import :mod:`.render`.
"""

from __future__ import annotations

from ..lazy import lazy_names

_LAZY = {
    **{
        name: "tfjob.cluster.render"
        for name in (
            "DIALECTS",
            "GCLOUD_LOCAL_START_PORT",
            "KUBEFLOW_DEFAULT_PORT",
            "device_filters",
            "render_gcloud_local_cluster",
            "render_kubeflow_cluster",
            "render_task_env",
        )
    },
    "ROLES": "tfjob.cluster.spec",
    "ClusterSpec": "tfjob.cluster.spec",
    **{
        name: "tfjob.cluster.task"
        for name in (
            "PARSED_DIALECTS",
            "TaskInfo",
            "local_task",
            "parse_cluster_spec",
            "parse_tf_config",
            "TF_CONFIG_MODES",
            "render_bootstrap_env",
            "render_tf2_env",
            "task_info_from_env",
        )
    },
}

# What a type checker reads (the names above are loaded on first use at run time).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .render import DIALECTS as DIALECTS, GCLOUD_LOCAL_START_PORT as GCLOUD_LOCAL_START_PORT
    from .render import KUBEFLOW_DEFAULT_PORT as KUBEFLOW_DEFAULT_PORT, device_filters as device_filters
    from .render import render_gcloud_local_cluster as render_gcloud_local_cluster
    from .render import render_kubeflow_cluster as render_kubeflow_cluster, render_task_env as render_task_env
    from .spec import ROLES as ROLES, ClusterSpec as ClusterSpec
    from .task import PARSED_DIALECTS as PARSED_DIALECTS, TF_CONFIG_MODES as TF_CONFIG_MODES, TaskInfo as TaskInfo
    from .task import local_task as local_task, parse_cluster_spec as parse_cluster_spec, parse_tf_config as parse_tf_config
    from .task import render_bootstrap_env as render_bootstrap_env, render_tf2_env as render_tf2_env
    from .task import task_info_from_env as task_info_from_env

__getattr__, __all__ = lazy_names(__name__, _LAZY)
