"""tfjob's cluster contract against what the peers' own tests and sources say, case by case.

Each case names its peer (repository, file, test or function) and the expected value,
written here from the peer's published behaviour. Where TensorFlow itself can run on the
same input, ``test_peer_tensorflow.py`` runs it.
"""

from __future__ import annotations

import json

import pytest

from tfjob.cluster import (
    ClusterSpec,
    render_bootstrap_env,
    render_task_env,
    task_info_from_env,
)
from tfjob.errors import ClusterConfigError

KF = "kubeflow/training-operator v1.9 pkg/controller.v1/tensorflow"


# -- 15.1 Kubeflow: one replica in all gets no TF_CONFIG ---------------------------------------
@pytest.mark.parametrize(
    "cluster, role",
    [({"worker": ["h:2222"]}, "worker"), ({"ps": ["h:2222"]}, "ps"), ({"chief": ["h:2222"]}, "chief")],
    ids=["one-worker", "one-ps", "lone-chief"],
)
def test_kubeflow_single_replica_has_no_tf_config(cluster: dict, role: str) -> None:
    # Peer: KF tensorflow.go isDistributed() / SetClusterSpec ("Do not set TF_CONFIG for local
    # training jobs"); tensorflow_test.go TestIsDistributed: a total of one replica → not distributed.
    assert render_task_env(cluster, role, 0, "kubeflow") == {}


def test_kubeflow_two_replicas_do_get_tf_config() -> None:
    # Peer: KF tensorflow_test.go TestClusterSpec: {chief: 1, worker: 1} is distributed.
    env = render_task_env({"chief": ["c:2222"], "worker": ["w:2222"]}, "worker", 0, "kubeflow")
    assert json.loads(env["TF_CONFIG"]) == {
        "cluster": {"chief": ["c:2222"], "worker": ["w:2222"]},
        "task": {"type": "worker", "index": 0},
        "environment": "cloud",
    }


# -- 15.2 Kubeflow dynamic workers: the v1.7+ form under "cluster" ------------------------------
CLUSTER = {"chief": ["c-0:2222"], "worker": ["w-0:2222", "w-1:2222"], "ps": ["p-0:2222"]}


@pytest.mark.parametrize(
    "role, index, expected_cluster",
    [
        ("chief", 0, {"worker": {}, "ps": []}),
        ("worker", 1, {"worker": {"1": "w-1:2222"}, "ps": ["p-0:2222"]}),
        ("ps", 0, {"worker": {}, "ps": ["p-0:2222"]}),
    ],
)
def test_kubeflow_dynamic_workers_render_the_v17_form(role: str, index: int, expected_cluster: dict) -> None:
    # Peer: KF tensorflow.go genTFConfigJSONStr with EnableDynamicWorker → SparseTFConfig
    # {"cluster": SparseClusterSpec{worker map, ps list}, "task"} (json tag "cluster" since v1.7.0;
    # convertClusterSpecToSparseClusterSpec: a worker sees the ps and itself, a ps itself, others nothing).
    env = render_task_env(CLUSTER, role, index, "kubeflow", dynamic_workers=True)
    assert json.loads(env["TF_CONFIG"]) == {"cluster": expected_cluster, "task": {"type": role, "index": index}}


@pytest.mark.parametrize("key", ["cluster", "sparseCluster"], ids=["v1.7+", "v1.6-"])
@pytest.mark.parametrize(
    "role, index, sparse",
    [
        ("chief", 0, {"worker": {}, "ps": []}),
        ("worker", 1, {"worker": {"1": "w-1:2222"}, "ps": ["p-0:2222"]}),
        ("ps", 0, {"worker": {}, "ps": ["p-0:2222"]}),
    ],
)
def test_kubeflow_dynamic_workers_are_read_for_every_role_in_both_forms(key: str, role: str, index: int, sparse: dict) -> None:
    # Peer: what KF writes (as above) must start every role: the chief of a dynamic-worker
    # job is not in its own sparse map (the ≤ v1.6 reader accepted it only under sparseCluster).
    text = json.dumps({key: sparse, "task": {"type": role, "index": index}})
    info = task_info_from_env({"TF_CONFIG": text})
    assert (info.role, info.index, info.dialect) == (role, index, "kubeflow")


# -- 15.3 keys the bootstrap does not rewrite are kept ------------------------------------------
RPC = {
    "cluster": {"chief": ["c:1"], "worker": ["w:1"]},
    "task": {"type": "worker", "index": 0},
    "rpc_layer": "grpc+loas",
    "session_master": "sessionmaster",
}


def test_platform_mode_leaves_the_platform_variables_alone() -> None:
    # Peer: tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver_test.py
    # testRpcLayerRead, testSessionMasterRead, testTaskTypeIndexRpcRead: the trainer's
    # resolver reads rpc_layer and session_master from TF_CONFIG, so they must reach it.
    env = {"TF_CONFIG": json.dumps(RPC)}
    exported = render_bootstrap_env(task_info_from_env(env), env)
    assert "TF_CONFIG" not in exported and "CLUSTER_SPEC" not in exported
    assert exported["TFJOB_TASK_TYPE"] == "worker" and exported["TFJOB_IS_CHIEF"] == "0"


def test_tf2_mode_keeps_every_key_it_does_not_rewrite() -> None:
    # Peer: tfconfig_cluster_resolver_test.py testParameterOverrides / testRpcLayerRead.
    env = {"TF_CONFIG": json.dumps({**RPC, "cluster": {"master": ["c:1"], "worker": ["w:1"], "evaluator": ["e:1"]}})}
    exported = json.loads(render_bootstrap_env(task_info_from_env(env), env, mode="tf2")["TF_CONFIG"])  # type: ignore[arg-type]
    assert exported["rpc_layer"] == "grpc+loas" and exported["session_master"] == "sessionmaster"
    assert exported["cluster"] == {"chief": ["c:1"], "worker": ["w:1"]}


def test_tf2_mode_never_lets_tf_config_and_cluster_spec_disagree() -> None:
    # Issue 15.6: AI Platform writes master in both; in tf2 mode both say chief.
    cluster = {"chief": ["c:1"], "worker": ["w:1"]}
    env = render_task_env(cluster, "chief", 0, "ai-platform")
    exported = render_bootstrap_env(task_info_from_env(env), env, mode="tf2")
    tf_config, cluster_spec = json.loads(exported["TF_CONFIG"]), json.loads(exported["CLUSTER_SPEC"])  # type: ignore[arg-type]
    assert tf_config["task"]["type"] == cluster_spec["task"]["type"] == "chief"
    assert set(tf_config["cluster"]) == set(cluster_spec["cluster"]) == {"chief", "worker"}


# -- 15.4 a half-written TF_CONFIG is refused ----------------------------------------------------
@pytest.mark.parametrize(
    "tf_config, needle",
    [
        ({"cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"]}}, "no type and index"),
        ({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "worker"}}, "no index"),
        ({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"index": 0}}, "no type"),
        ({"cluster": {"chief": ["c:1"], "master": ["m:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}}, "same role twice"),
        ({"cluster": {"chief": ["c:1", "c:2"]}, "task": {"type": "chief", "index": 0}}, "2 chiefs"),
    ],
    ids=["no-task", "no-index", "no-type", "chief-and-master", "two-chiefs"],
)
def test_a_half_written_tf_config_is_refused(tf_config: dict, needle: str) -> None:
    # Peers: MultiWorkerMirroredStrategy ("When `cluster_spec` is given, you must also specify
    # `task_type` and `task_id`", tensorflow/python/distribute/multi_worker_util.py
    # _validate_cluster_spec: "Multiple chief nodes"); tensorflow/estimator run_config_test.py
    # RunConfigDistributedSettingTest (missing task type / multiple chief nodes fail).
    with pytest.raises(ClusterConfigError, match=needle):
        task_info_from_env({"TF_CONFIG": json.dumps(tf_config)})


@pytest.mark.parametrize(
    "tf_config",
    [{}, {"cluster": {}}, {"cluster": {"chief": ["c:1"]}}, {"cluster": {"worker": ["w:1"]}, "task": {}}],
    ids=["empty", "empty-cluster", "one-task-cluster", "one-worker-no-task"],
)
def test_no_cluster_or_a_one_task_cluster_is_a_local_process(tf_config: dict) -> None:
    # Peer: estimator run_config_test.py (no cluster → local), tfconfig_cluster_resolver_test.py
    # (an empty cluster gives an empty ClusterSpec).
    info = task_info_from_env({"TF_CONFIG": json.dumps(tf_config)})
    assert not info.is_distributed and info.role == "chief"


# -- 15.5 a task with no cluster is a local process ----------------------------------------------
@pytest.mark.parametrize("task", [{"type": "worker", "index": 0}, {"type": "chief", "index": 0}, {"type": "ps", "index": 3}])
def test_a_task_without_a_cluster_is_a_local_process(task: dict) -> None:
    # Peers: the Estimator's RunConfig and MultiWorkerMirroredStrategy run {"task": …} without a
    # cluster as a single local process (no server, no collective).
    info = task_info_from_env({"TF_CONFIG": json.dumps({"task": task})})
    assert not info.is_distributed and info.cluster == ClusterSpec({})


# -- judged harmless or by design ----------------------------------------------------------------
def test_the_evaluator_is_never_chief_as_in_the_estimator() -> None:
    # Peers disagree: TF's multi_worker_util.is_chief answers True for an evaluator; the
    # Estimator's RunConfig answers False. tfjob follows the Estimator (see TaskInfo).
    env = render_task_env({"chief": ["c:1"], "worker": ["w:1"], "evaluator": ["e:1"]}, "evaluator", 0, "kubeflow")
    assert task_info_from_env(env).is_chief is False


def test_a_master_cluster_with_an_evaluator_task_is_read() -> None:
    # AI Platform writes exactly this: evaluators are not in TF_CONFIG's cluster.
    env = render_task_env({"chief": ["c:1"], "worker": ["w:1"], "evaluator": ["e:1"]}, "evaluator", 0, "ai-platform")
    info = task_info_from_env({"TF_CONFIG": env["TF_CONFIG"]})
    assert (info.role, info.index) == ("evaluator", 0) and "master" not in info.cluster.jobs
