"""tfjob's reading of TF_CONFIG against TensorFlow's own classes, run on the same inputs.

For each TF_CONFIG, TensorFlow's ``TFConfigClusterResolver`` and tfjob's ``TaskInfo`` must
agree on the cluster, the task type and index and the RPC layer; for every TF_CONFIG tfjob
refuses as half-written, TensorFlow's ``multi_worker_util`` (what MultiWorkerMirroredStrategy
and ParameterServerStrategy validate with) must refuse it too.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers import need_module

from tfjob.cluster import render_bootstrap_env, render_task_env, task_info_from_env
from tfjob.errors import ClusterConfigError

pytestmark = pytest.mark.tf
tf = need_module("tensorflow", "pip install -e '.[tf]'")

AGREED = [
    {"cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1"]}, "task": {"type": "worker", "index": 1}},
    {"cluster": {"worker": ["w:1", "w:2"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"},
    {"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "chief", "index": 0}, "rpc_layer": "grpc+loas"},
    {"cluster": {"ps": ["p:1", "p:2"], "worker": ["w:1"]}, "task": {"type": "ps", "index": "1"}},
    {"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}},
]


def _resolver(tf_config: dict):  # type: ignore[no-untyped-def]
    os.environ["TF_CONFIG"] = json.dumps(tf_config)
    try:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return resolver.cluster_spec().as_dict(), resolver.task_type, resolver.task_id, resolver.rpc_layer
    finally:
        del os.environ["TF_CONFIG"]


@pytest.mark.parametrize("tf_config", AGREED, ids=range(len(AGREED)))
def test_tensorflow_and_tfjob_read_the_same_task(tf_config: dict) -> None:
    # Peer: tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver_test.py
    # (testNormalClusterSpecRead, testTaskTypeIndexRpcRead, testRpcLayerRead).
    cluster, task_type, task_id, rpc = _resolver(tf_config)
    info = task_info_from_env({"TF_CONFIG": json.dumps(tf_config)})
    assert info.cluster.as_dict() == cluster
    assert (info.role, info.index) == (task_type, task_id)
    # The platform mode leaves TF_CONFIG alone: the trainer's resolver reads the same rpc layer.
    assert "TF_CONFIG" not in render_bootstrap_env(info, {"TF_CONFIG": json.dumps(tf_config)})
    assert rpc == tf_config.get("rpc_layer")


@pytest.mark.parametrize(
    "tf_config",
    [
        {"cluster": {"chief": ["c:1"], "master": ["m:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
        {"cluster": {"chief": ["c:1", "c:2"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
    ],
    ids=["chief-and-master", "two-chiefs"],
)
def test_what_tensorflow_refuses_tfjob_refuses(tf_config: dict) -> None:
    # Peer: tensorflow/python/distribute/multi_worker_util.py _validate_cluster_spec
    # ("Multiple chief nodes"), used by the multi-worker strategies.
    from tensorflow.python.distribute import multi_worker_util

    with pytest.raises(ValueError, match="chief"):
        multi_worker_util._validate_cluster_spec(tf_config["cluster"], tf_config["task"]["type"], tf_config["task"]["index"])
    with pytest.raises(ClusterConfigError, match="chief"):
        task_info_from_env({"TF_CONFIG": json.dumps(tf_config)})


def test_tf2_mode_gives_tensorflow_a_cluster_its_strategies_take() -> None:
    # AI Platform's master cluster with an evaluator: TF2 strategies need `chief` and no evaluator.
    from tensorflow.python.distribute import multi_worker_util

    cluster = {"chief": ["c:1"], "worker": ["w:1"], "ps": ["p:1"], "evaluator": ["e:1"]}
    env = render_task_env(cluster, "chief", 0, "ai-platform", use_chief=False)
    assert '"master"' in env["TF_CONFIG"]
    exported = json.loads(render_bootstrap_env(task_info_from_env(env), env, mode="tf2")["TF_CONFIG"])  # type: ignore[arg-type]
    multi_worker_util._validate_cluster_spec(exported["cluster"], exported["task"]["type"], exported["task"]["index"])
    cluster_read, task_type, task_id, _ = _resolver(exported)
    assert (task_type, task_id) == ("chief", 0) and "evaluator" not in cluster_read
