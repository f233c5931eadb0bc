"""This task, from inside it: ``tfjob.task()`` and ``tfjob.cluster_resolver()``.

What the bootstrap read (:func:`tfjob.cluster.task.task_info_from_env`), offered to the code a
task runs — a function run by :func:`tfjob.remote` or any trainer. Stdlib only until
:func:`cluster_resolver` is called, which imports TensorFlow (it returns TensorFlow's object).
"""

from __future__ import annotations

from .task import TaskInfo, task_info_from_env

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def task() -> TaskInfo:
    """This task: its role (``chief``, ``worker``, ``ps``, ``evaluator``), index, whether it is
    the chief, and its cluster, read from ``TF_CONFIG`` / ``CLUSTER_SPEC`` in the platform's
    dialect (outside a job: a single process that is the chief).

    Raises:
        ClusterConfigError: the variables are malformed (quoting the part).
    """
    return task_info_from_env()


def cluster_resolver() -> Any:
    """This task's ``tf.distribute.cluster_resolver.ClusterResolver``, for a strategy:
    ``tf.distribute.experimental.ParameterServerStrategy(tfjob.cluster_resolver())``,
    ``tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=tfjob.cluster_resolver())``.

    The cluster is the task's own, in canonical role names (``master`` → ``chief``, evaluators
    left out, as TensorFlow's strategies want), whatever dialect the platform wrote; outside a
    cluster, TensorFlow's resolver of ``TF_CONFIG`` (a single process).
    """
    import tensorflow as tf  # type: ignore[import-untyped,import-not-found,unused-ignore]

    info = task_info_from_env()
    if not info.is_distributed:
        return tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = {job: tasks for job, tasks in info.cluster.as_dict().items() if job != "evaluator"}
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=info.role, task_id=info.index, rpc_layer="grpc"
    )
