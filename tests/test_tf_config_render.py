"""render_task_env / device_filters: the variables each platform sets, value for value."""

from __future__ import annotations

import json

import pytest

from tfjob.cluster import (
    device_filters,
    render_gcloud_local_cluster,
    render_kubeflow_cluster,
    render_task_env,
)
from tfjob.errors import ClusterConfigError, UsageError

CLUSTER = {
    "chief": ["127.0.0.1:4001"],
    "worker": ["127.0.0.1:4002", "127.0.0.1:4003"],
    "ps": ["127.0.0.1:4004"],
    "evaluator": ["127.0.0.1:4005"],
}
TF_CLUSTER = {"chief": ["127.0.0.1:4001"], "worker": ["127.0.0.1:4002", "127.0.0.1:4003"], "ps": ["127.0.0.1:4004"]}


def _json(env: dict[str, str], name: str) -> dict:
    return json.loads(env[name])


# --- Vertex AI -------------------------------------------------------------------------


def test_vertex_worker_gets_cluster_spec_with_worker_pools_and_tf_config_with_tf_names() -> None:
    job = {"workerPoolSpecs": [{"replicaCount": "1"}]}
    env = render_task_env(CLUSTER, "worker", 1, "vertex", job=job)
    assert set(env) == {"CLUSTER_SPEC", "TF_CONFIG"}
    assert _json(env, "CLUSTER_SPEC") == {
        "cluster": {
            "workerpool0": ["127.0.0.1:4001"],
            "workerpool1": ["127.0.0.1:4002", "127.0.0.1:4003"],
            "workerpool2": ["127.0.0.1:4004"],
            "workerpool3": ["127.0.0.1:4005"],
        },
        "environment": "cloud",
        "task": {"type": "workerpool1", "index": 1},
        "job": job,
    }
    assert _json(env, "TF_CONFIG") == {
        "cluster": TF_CLUSTER,
        "task": {"type": "worker", "index": 1},
        "job": job,
        "environment": "cloud",
    }


def test_vertex_evaluator_is_typed_evaluator_but_left_out_of_the_tf_config_cluster() -> None:
    env = render_task_env(CLUSTER, "evaluator", 0, "vertex")
    tf_config = _json(env, "TF_CONFIG")
    assert tf_config["task"] == {"type": "evaluator", "index": 0}
    assert "evaluator" not in tf_config["cluster"]
    assert _json(env, "CLUSTER_SPEC")["task"] == {"type": "workerpool3", "index": 0}


def test_vertex_single_replica_job_gets_no_tf_config() -> None:
    env = render_task_env({"chief": ["127.0.0.1:4001"]}, "chief", 0, "vertex")
    assert set(env) == {"CLUSTER_SPEC"}
    assert _json(env, "CLUSTER_SPEC")["cluster"] == {"workerpool0": ["127.0.0.1:4001"]}


def test_vertex_unused_pool_in_between_is_absent_and_pools_keep_their_numbers() -> None:
    cluster = {"chief": ["h:1"], "worker": [], "ps": ["h:2"]}
    env = render_task_env(cluster, "ps", 0, "vertex")
    assert _json(env, "CLUSTER_SPEC")["cluster"] == {"workerpool0": ["h:1"], "workerpool2": ["h:2"]}
    assert _json(env, "CLUSTER_SPEC")["task"]["type"] == "workerpool2"


def test_vertex_trial_goes_into_task_and_output_dirs() -> None:
    env = render_task_env(CLUSTER, "chief", 0, "vertex", trial="7", job_dir="gs://bucket/out/")
    assert _json(env, "CLUSTER_SPEC")["task"] == {"type": "workerpool0", "index": 0, "trial": "7"}
    assert _json(env, "TF_CONFIG")["task"]["trial"] == "7"
    assert env["AIP_MODEL_DIR"] == "gs://bucket/out/7/model/"
    assert env["AIP_CHECKPOINT_DIR"] == "gs://bucket/out/7/checkpoints/"
    assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://bucket/out/7/logs/"


def test_vertex_output_dirs_without_trial() -> None:
    env = render_task_env({"chief": ["h:1"]}, "chief", 0, "vertex", job_dir="/tmp/out")
    assert env["AIP_MODEL_DIR"] == "/tmp/out/model/"
    assert "AIP_MODEL_DIR" not in render_task_env({"chief": ["h:1"]}, "chief", 0, "vertex")


def test_vertex_without_chief_is_refused() -> None:
    with pytest.raises(ClusterConfigError, match=r"Vertex AI job needs a chief.*workerPoolSpecs\[0\]"):
        render_task_env({"worker": ["h:1", "h:2"]}, "worker", 0, "vertex")


# --- AI Platform (legacy) ----------------------------------------------------------------


def test_ai_platform_names_the_primary_master_by_default_and_never_lists_evaluators() -> None:
    job = {"scale_tier": "CUSTOM", "master_type": "n1-standard-4", "python_module": "trainer.task"}
    env = render_task_env(CLUSTER, "chief", 0, "ai-platform", job=job, trial="2")
    assert _json(env, "TF_CONFIG") == {
        "cluster": {"master": ["127.0.0.1:4001"], "worker": TF_CLUSTER["worker"], "ps": TF_CLUSTER["ps"]},
        "task": {"type": "master", "index": 0, "trial": "2"},
        "job": job,
        "environment": "cloud",
    }


def test_ai_platform_use_chief_renames_master_in_tf_config_but_not_in_cluster_spec() -> None:
    env = render_task_env(CLUSTER, "chief", 0, "ai-platform", use_chief=True)
    assert _json(env, "TF_CONFIG")["task"]["type"] == "chief"
    assert "chief" in _json(env, "TF_CONFIG")["cluster"]
    spec = _json(env, "CLUSTER_SPEC")
    assert spec["task"] == {"type": "master", "index": 0}
    assert spec["cluster"]["master"] == ["127.0.0.1:4001"]
    assert spec["cluster"]["evaluator"] == ["127.0.0.1:4005"]


def test_ai_platform_evaluator_task() -> None:
    env = render_task_env(CLUSTER, "evaluator", 0, "ai-platform")
    assert _json(env, "TF_CONFIG")["task"] == {"type": "evaluator", "index": 0}
    assert set(_json(env, "TF_CONFIG")["cluster"]) == {"master", "worker", "ps"}


def test_ai_platform_single_machine_still_gets_tf_config() -> None:
    env = render_task_env({"chief": ["h:1"]}, "chief", 0, "ai-platform")
    assert _json(env, "TF_CONFIG")["cluster"] == {"master": ["h:1"]}


# --- Kubeflow TFJob: the operator's documented format ------------------------------------


def test_kubeflow_addresses_are_the_operators_headless_services() -> None:
    assert render_kubeflow_cluster("mnist", "team-a", {"chief": 1, "worker": 2}) == {
        "chief": ["mnist-chief-0.team-a.svc:2222"],
        "worker": ["mnist-worker-0.team-a.svc:2222", "mnist-worker-1.team-a.svc:2222"],
    }
    assert render_kubeflow_cluster("j", "ns", {"ps": 1}, port=3333, cluster_domain="cluster.local") == {
        "ps": ["j-ps-0.ns.svc.cluster.local:3333"]
    }


def test_kubeflow_tf_config_matches_the_operator_byte_for_byte() -> None:
    # What training-operator's genTFConfigJSONStr writes for worker 1 of a TFJob "mnist"
    # in namespace "kubeflow" with Chief 1, Worker 2, PS 1, Evaluator 1: Go's encoding/json
    # (compact; struct fields in order cluster, task, environment; map keys sorted).
    cluster = render_kubeflow_cluster("mnist", "kubeflow", {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1})
    env = render_task_env(cluster, "worker", 1, "kubeflow")
    assert env == {
        "TF_CONFIG": '{"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],'
        '"evaluator":["mnist-evaluator-0.kubeflow.svc:2222"],'
        '"ps":["mnist-ps-0.kubeflow.svc:2222"],'
        '"worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    }


def test_kubeflow_master_replica_type() -> None:
    env = render_task_env({"chief": ["h:1"], "worker": ["h:2"]}, "chief", 0, "kubeflow", use_chief=False)
    assert env["TF_CONFIG"] == '{"cluster":{"master":["h:1"],"worker":["h:2"]},"task":{"type":"master","index":0},"environment":"cloud"}'


def test_kubeflow_dynamic_workers_write_the_operators_sparse_cluster() -> None:
    # training-operator v1.7.0+ writes the sparse map under "cluster" (v1.6: "sparseCluster").
    cluster = {"chief": ["c:1"], "worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p0:1", "p1:1"]}
    worker = render_task_env(cluster, "worker", 2, "kubeflow", dynamic_workers=True)
    assert worker["TF_CONFIG"] == ('{"cluster":{"worker":{"2":"w2:1"},"ps":["p0:1","p1:1"]},"task":{"type":"worker","index":2}}')
    ps = render_task_env(cluster, "ps", 1, "kubeflow", dynamic_workers=True)
    assert ps["TF_CONFIG"] == '{"cluster":{"worker":{},"ps":["p1:1"]},"task":{"type":"ps","index":1}}'
    chief = render_task_env(cluster, "chief", 0, "kubeflow", dynamic_workers=True)
    assert chief["TF_CONFIG"] == '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'
    # A Go nil slice: a worker of a job without parameter servers sees "ps": null.
    no_ps = render_task_env({"worker": ["w0:1", "w1:1"]}, "worker", 0, "kubeflow", dynamic_workers=True)
    assert json.loads(no_ps["TF_CONFIG"])["cluster"] == {"worker": {"0": "w0:1"}, "ps": None}


# --- gcloud ai-platform local train -------------------------------------------------------


def test_gcloud_local_ports_start_at_27182_chief_then_ps_then_workers() -> None:
    assert render_gcloud_local_cluster(workers=2, ps=1) == {
        "chief": ["localhost:27182"],
        "ps": ["localhost:27183"],
        "worker": ["localhost:27184", "localhost:27185"],
    }


def test_gcloud_local_distributed_tf_config() -> None:
    cluster = render_gcloud_local_cluster(workers=1, ps=0)
    job = {"job_name": "trainer.task", "args": ["--epochs", "2"]}
    env = render_task_env(cluster, "worker", 0, "gcloud-local", job=job)
    assert list(_json(env, "TF_CONFIG")) == ["job", "task", "cluster", "environment"]
    assert _json(env, "TF_CONFIG") == {
        "job": job,
        "task": {"type": "worker", "index": 0},
        "cluster": {"chief": ["localhost:27182"], "ps": [], "worker": ["localhost:27183"]},
        "environment": "cloud",
    }
    master = render_task_env(cluster, "chief", 0, "gcloud-local", job=job, use_chief=False)
    assert _json(master, "TF_CONFIG")["task"] == {"type": "master", "index": 0}
    assert "master" in _json(master, "TF_CONFIG")["cluster"]


def test_gcloud_local_single_process_has_empty_task_and_cluster() -> None:
    env = render_task_env({"chief": ["localhost:27182"]}, "chief", 0, "gcloud-local", job={"job_name": "m", "args": []})
    assert _json(env, "TF_CONFIG") == {"job": {"job_name": "m", "args": []}, "task": {}, "cluster": {}, "environment": "cloud"}


def test_gcloud_local_evaluator_is_not_in_cluster() -> None:
    env = render_task_env(CLUSTER, "evaluator", 0, "gcloud-local")
    assert _json(env, "TF_CONFIG")["task"] == {"type": "evaluator", "index": 0}
    assert "evaluator" not in _json(env, "TF_CONFIG")["cluster"]


# --- device filters ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "index", "expected"),
    [
        ("master", 0, ["/job:ps", "/job:master"]),
        ("chief", 0, ["/job:ps", "/job:chief"]),
        ("worker", 3, ["/job:ps", "/job:worker/task:3"]),
        ("ps", 1, []),
        ("evaluator", 0, []),
    ],
)
def test_device_filters_follow_the_platform_docs(role: str, index: int, expected: list[str]) -> None:
    assert device_filters(role, index) == expected


def test_device_filters_reject_unknown_role_and_bad_index() -> None:
    with pytest.raises(ClusterConfigError, match="task role 'driver' is not one of"):
        device_filters("driver", 0)
    with pytest.raises(ClusterConfigError, match="task index -1 must be a whole number"):
        device_filters("worker", -1)


# --- mistakes -----------------------------------------------------------------------------


def test_unknown_dialect_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(UsageError, match="dialect 'sagemaker' is not one of vertex, ai-platform, kubeflow, gcloud-local"):
        render_task_env(CLUSTER, "chief", 0, "sagemaker")


def test_task_outside_cluster_names_the_task_and_the_count() -> None:
    with pytest.raises(ClusterConfigError, match=r"task worker-2 is not in the cluster: 'worker' has 2 task\(s\), indices 0\.\.1"):
        render_task_env(CLUSTER, "worker", 2, "kubeflow")
    with pytest.raises(ClusterConfigError, match=r"task ps-0 is not in the cluster: 'ps' has 0 task\(s\)$"):
        render_task_env({"chief": ["h:1"]}, "ps", 0, "kubeflow")


def test_non_canonical_role_names_are_refused_with_the_fix() -> None:
    with pytest.raises(ClusterConfigError, match="cluster role 'master' is not one of .* name the primary replica 'chief'"):
        render_task_env({"master": ["h:1"]}, "chief", 0, "vertex")
    with pytest.raises(ClusterConfigError, match="task role 'master' is not one of"):
        render_task_env({"chief": ["h:1"]}, "master", 0, "vertex")


def test_bad_addresses_and_two_chiefs_are_refused() -> None:
    with pytest.raises(ClusterConfigError, match=r"cluster\['worker'\] = 'h:1': give a list of 'host:port' strings"):
        render_task_env({"chief": ["h:0"], "worker": "h:1"}, "chief", 0, "vertex")
    with pytest.raises(ClusterConfigError, match=r"cluster\['chief'\] has 2 addresses; a job has exactly one chief"):
        render_task_env({"chief": ["h:0", "h:1"]}, "chief", 0, "vertex")
    with pytest.raises(ClusterConfigError, match="task index True must be a whole number"):
        render_task_env({"chief": ["h:0"]}, "chief", True, "vertex")


@pytest.mark.parametrize("dialect", ["vertex", "ai-platform", "kubeflow", "gcloud-local"])
def test_every_task_rendered_at_once_is_each_task_rendered_alone(dialect: str) -> None:
    from tfjob.cluster.render import render_task_envs

    cluster = {"chief": ["h:1"], "worker": [f"h:{10 + i}" for i in range(3)], "ps": ["h:20", "h:21"], "evaluator": ["h:30"]}
    tasks = [(role, i) for role, addresses in cluster.items() for i in range(len(addresses))]
    options = {"job": {"k": "v"} if dialect != "kubeflow" else None, "use_chief": None}
    together = render_task_envs(cluster, tasks, dialect, **options)  # type: ignore[arg-type]
    assert together == [render_task_env(cluster, role, i, dialect, **options) for role, i in tasks]  # type: ignore[arg-type]
    assert len({env.get("TF_CONFIG") for env in together}) == len(tasks)  # each names its own task
    separators = (",", ":") if dialect == "kubeflow" else (", ", ": ")
    for env in together:  # written in parts, laid out as json.dumps lays out the whole
        for name in ("TF_CONFIG", "CLUSTER_SPEC"):
            if name in env:
                assert json.dumps(json.loads(env[name]), separators=separators) == env[name]
    with pytest.raises(ClusterConfigError, match=r"task worker-3 is not in the cluster"):
        render_task_envs(cluster, [("chief", 0), ("worker", 3)], dialect)
