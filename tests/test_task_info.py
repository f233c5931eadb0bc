"""TaskInfo from TF_CONFIG / CLUSTER_SPEC: every dialect, every mistake, arbitrary input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability import Reliability

from tfjob.cluster import (
    DIALECTS,
    ROLES,
    TaskInfo,
    parse_cluster_spec,
    render_task_env,
    render_tf2_env,
    task_info_from_env,
)
from tfjob.errors import ClusterConfigError, UsageError

CASES_DIR = Path(__file__).parent / "data" / "cluster"
CASES = sorted(CASES_DIR.glob("*.json"))


def _plain(cluster_dict: dict[Any, Any]) -> Any:
    # Sparse task indices become strings, as in the JSON the fixtures are written in.
    return json.loads(json.dumps(cluster_dict))


def test_the_table_covers_every_dialect() -> None:
    dialects = {json.loads(p.read_text())["expect"]["dialect"] for p in CASES}
    assert dialects == {"ai-platform", "vertex", "kubeflow", "sagemaker", "gcloud-local", "tony", "none"}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_looking_environments(path: Path) -> None:
    case = json.loads(path.read_text())
    info = task_info_from_env(case["env"])
    expect = case["expect"]
    assert (info.role, info.name, info.index, info.is_chief, info.trial, info.dialect) == (
        expect["role"],
        expect["name"],
        expect["index"],
        expect["is_chief"],
        expect["trial"],
        expect["dialect"],
    )
    assert _plain(info.cluster.as_dict()) == expect["cluster"]


def test_ai_platform_job_and_environment_are_exposed() -> None:
    info = task_info_from_env(json.loads((CASES_DIR / "ai_platform_master.json").read_text())["env"])
    assert info.job["python_module"] == "trainer.task"
    assert info.environment == "cloud"
    assert info.source == "TF_CONFIG"
    assert info.address == "cmle-training-master-e118948ef4-0:2222"


def test_tf_config_wins_over_cluster_spec() -> None:
    env = json.loads((CASES_DIR / "vertex_tf_config.json").read_text())["env"]
    assert task_info_from_env(env).source == "TF_CONFIG"
    del env["TF_CONFIG"]
    info = task_info_from_env(env)
    assert (info.source, info.role, info.name) == ("CLUSTER_SPEC", "evaluator", "workerpool3")
    assert info.address == "cmle-training-workerpool3-3f1d2c8a9b-0:2222"


def test_empty_variables_mean_a_local_process() -> None:
    info = task_info_from_env({"TF_CONFIG": "  ", "CLUSTER_SPEC": ""})
    assert (info.role, info.is_chief, info.is_distributed, info.tf_config()) == ("chief", True, False, None)


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 1}}))
    info = task_info_from_env()
    assert (info.role, info.index, info.is_chief, info.dialect) == ("worker", 1, False, "tf")


def test_tf2_config_renames_master_and_drops_evaluators() -> None:
    cluster = {"chief": ["h:0"], "worker": ["h:1"], "ps": ["h:2"], "evaluator": ["h:3"]}
    env = render_task_env(cluster, "evaluator", 0, "kubeflow", use_chief=False)
    info = task_info_from_env(env)
    # The operator sorts its job names; master is renamed in place.
    assert info.cluster.jobs == ["evaluator", "chief", "ps", "worker"]
    assert info.name == "evaluator"
    assert info.tf_config() == {
        "cluster": {"chief": ["h:0"], "ps": ["h:2"], "worker": ["h:1"]},
        "task": {"type": "evaluator", "index": 0},
        "environment": "cloud",
    }
    exported = render_tf2_env(info)
    assert json.loads(exported["TF_CONFIG"]) == info.tf_config()
    assert exported["TFJOB_TASK_TYPE"] == "evaluator"
    assert exported["TFJOB_TASK_INDEX"] == "0"
    assert exported["TFJOB_IS_CHIEF"] == "0"
    assert exported["TFJOB_TRIAL"] is None


def test_local_process_exports_no_tf_config() -> None:
    exported = render_tf2_env(task_info_from_env({}))
    assert exported == {
        "TF_CONFIG": None,
        "TFJOB_TASK_TYPE": "chief",
        "TFJOB_TASK_INDEX": "0",
        "TFJOB_IS_CHIEF": "1",
        "TFJOB_TRIAL": None,
    }


def test_string_and_numeric_index_and_trial_forms() -> None:
    info = task_info_from_env(
        {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": "1", "trial": 5}})}
    )
    assert (info.index, info.trial) == (1, "5")


# --- every rendered dialect reads back as the same task ------------------------------------

FULL = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"], "ps": ["127.0.0.1:4"], "evaluator": ["127.0.0.1:5"]}
TASKS = [(role, i) for role in ROLES for i in range(len(FULL[role]))]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("role", "index"), TASKS)
def test_render_then_parse_round_trips(dialect: str, role: str, index: int) -> None:
    env = render_task_env(FULL, role, index, dialect, job={"job_name": "m", "args": []} if dialect == "gcloud-local" else None)
    info = task_info_from_env(env)
    assert (info.role, info.index, info.is_chief) == (role, index, role == "chief")
    assert info.dialect == dialect
    expected = {k: v for k, v in FULL.items() if dialect == "kubeflow" or k != "evaluator"}
    assert info.cluster == TaskInfo(role, index, cluster=type(info.cluster)(expected)).cluster
    assert info.tf_config()["cluster"] == {k: v for k, v in FULL.items() if k != "evaluator"}


@pytest.mark.parametrize(("role", "index"), [("worker", 1), ("ps", 0), ("chief", 0)])
def test_kubeflow_dynamic_workers_round_trip(role: str, index: int) -> None:
    env = render_task_env(FULL, role, index, "kubeflow", dynamic_workers=True)
    info = task_info_from_env(env)
    assert (info.role, info.index, info.dialect) == (role, index, "kubeflow")


def test_ai_platform_cluster_spec_reads_back_with_evaluators() -> None:
    env = render_task_env(FULL, "evaluator", 0, "ai-platform")
    info = parse_cluster_spec(env["CLUSTER_SPEC"])
    assert (info.role, info.name, info.dialect) == ("evaluator", "evaluator", "ai-platform")
    assert info.cluster.task_address("evaluator", 0) == "127.0.0.1:5"


# --- mistakes quote the offending part -----------------------------------------------------


def _tf(value: Any) -> dict[str, str]:
    return {"TF_CONFIG": value if isinstance(value, str) else json.dumps(value)}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (_tf("{'cluster': {}}"), r"TF_CONFIG is not valid JSON \(Expecting property name .*\): \"\{'cluster': \{\}\}\""),
        (_tf("[1, 2]"), r"TF_CONFIG must be a JSON object with \"cluster\" and \"task\", not \[1, 2\]"),
        (
            _tf({"cluster": ["h:1"], "task": {"type": "worker", "index": 0}}),
            r"\"cluster\" must be an object of job name → addresses: \[\"h:1\"\]",
        ),
        (
            _tf({"cluster": {"worker": "h:1"}, "task": {"type": "worker", "index": 0}}),
            r"job 'worker' must list its addresses: \{\"worker\": \"h:1\"\}",
        ),
        (
            _tf({"cluster": {"worker": ["h:1", 2222]}, "task": {"type": "worker", "index": 0}}),
            r"job 'worker' has a non-string address: \[\"h:1\", 2222\]",
        ),
        (
            _tf({"cluster": {"worker": {"one": "h:1"}}, "task": {"type": "worker", "index": 0}}),
            r"job 'worker' must map task indices .*: \{\"one\": \"h:1\"\}",
        ),
        (_tf({"cluster": {"worker": ["h:1"]}, "task": "worker"}), r"TF_CONFIG \"task\" must be an object with type and index: \"worker\""),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}}),
            r"task index 1 is out of range for 'worker', which has tasks \[0\]",
        ),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}}),
            r"task index must be a whole number ≥ 0: \"task\": \{\"type\": \"worker\", \"index\": -1\}",
        ),
        (_tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": True}}), r"task index must be a whole number"),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}}),
            r"task type 'ps' is not in the cluster \(jobs: \[\"worker\"\]\)",
        ),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "driver", "index": 0}}),
            r"task type 'driver' is not one of chief, evaluator, master, ps, worker",
        ),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": 7, "index": 0}}),
            r"task type must be a string: \"task\": \{\"type\": 7, \"index\": 0\}",
        ),
        (
            _tf({"cluster": {"master": ["h:0"], "chief": ["h:1"]}, "task": {"type": "chief", "index": 0}}),
            r"names the same role twice \('chief'\): \[\"master\", \"chief\"\]; a job has one chief",
        ),
        (
            _tf({"cluster": {"chief": ["h:0", "h:1"]}, "task": {"type": "chief", "index": 1}}),
            r"lists 2 chiefs: \[\"h:0\", \"h:1\"\]; a job has exactly one",
        ),
        (_tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0, "trial": {"id": 1}}}), r"task trial must be a string"),
        (
            _tf({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "environment": 1}),
            r"\"environment\" must be a string: 1",
        ),
        (
            {
                "CLUSTER_SPEC": json.dumps(
                    {"cluster": {"workerpool0": ["h:0"], "master": ["h:1"]}, "task": {"type": "workerpool0", "index": 0}}
                )
            },
            r"CLUSTER_SPEC mixes Vertex worker pools with other jobs: \[\"master\"\]",
        ),
        (
            {"CLUSTER_SPEC": json.dumps({"cluster": {"workerpool0": ["h:0"]}, "task": {"type": "chief", "index": 0}})},
            r"CLUSTER_SPEC task type 'chief' is not one of workerpool0, workerpool1, workerpool2, workerpool3",
        ),
        (
            {"CLUSTER_SPEC": json.dumps({"worker": ["h:0"]}), "JOB_NAME": "worker", "TASK_INDEX": "first"},
            r"TASK_INDEX must be a whole number ≥ 0, not 'first'",
        ),
        (_tf("[" * 100_000), r"TF_CONFIG is nested too deeply to read"),
    ],
)
def test_malformed_configs_raise_cluster_config_error_quoting_the_part(env: dict[str, str], message: str) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        task_info_from_env(env)


def test_cluster_config_error_is_a_usage_error_and_a_value_error() -> None:
    with pytest.raises(UsageError, match="TF_CONFIG") as caught:
        task_info_from_env(_tf("nope"))
    assert isinstance(caught.value, ValueError)
    assert caught.value.exit_code == 2


def test_long_offending_values_are_shortened() -> None:
    with pytest.raises(ClusterConfigError, match="…") as caught:
        task_info_from_env(_tf({"cluster": {"worker": ["h" * 500, 1]}, "task": {"type": "worker", "index": 0}}))
    assert len(str(caught.value)) < 300 and "…" in str(caught.value)


# --- property: only TaskInfo or ClusterConfigError, whatever comes in ---------------------

_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-5, 2**40)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["chief", "master", "worker", "ps", "evaluator", "workerpool0", "workerpool3", "0", "1", "h:1", "sparseCluster"])
)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.sampled_from(["0", "1", "2", "ps", "worker"]), inner, max_size=4)
    ),
    max_leaves=12,
)
_names = st.sampled_from(["chief", "master", "worker", "ps", "evaluator", "workerpool0", "workerpool1", "workerpool2", "x"])
_addresses = st.lists(st.text(max_size=6) | st.integers(0, 3), max_size=3) | st.dictionaries(
    st.sampled_from(["0", "1", "3", "-1", "x", "99999999999"]), st.text(max_size=4) | st.none(), max_size=3
)
_near_valid = st.fixed_dictionaries(
    {},
    optional={
        "cluster": st.dictionaries(_names, _addresses, max_size=4) | _json,
        "sparseCluster": st.dictionaries(_names, _addresses, max_size=2),
        "task": st.fixed_dictionaries(
            {},
            optional={
                "type": _names | _json_leaf,
                "index": st.integers(-2, 4) | st.sampled_from(["0", "1", "x", "", True]) | _json_leaf,
                "trial": _json_leaf,
            },
        )
        | _json,
        "job": _json,
        "environment": _json_leaf,
    },
)
_payload = st.one_of(_near_valid.map(json.dumps), _json.map(json.dumps), st.text(max_size=40))
_env = st.fixed_dictionaries(
    {},
    optional={
        "TF_CONFIG": _payload,
        "CLUSTER_SPEC": _payload,
        "JOB_NAME": _names,
        "TASK_INDEX": st.sampled_from(["0", "1", "x", "٣"]),
        "SM_CURRENT_HOST": st.just("algo-1"),
        "AIP_MODEL_DIR": st.just("gs://b/m/model/"),
    },
)


@pytest.mark.reliability
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # examples: the profile's (tests/conftest.py)
@given(env=_env)
def test_any_input_gives_task_info_or_cluster_config_error(env: dict[str, str], reliability: Reliability) -> None:
    reliability.tried()
    try:
        info = task_info_from_env(env)
    except ClusterConfigError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert isinstance(info, TaskInfo)
    assert info.role in ROLES and isinstance(info.index, int) and info.index >= 0
    assert isinstance(info.is_chief, bool)
    exported = render_tf2_env(info)
    if exported["TF_CONFIG"] is not None:
        assert json.loads(exported["TF_CONFIG"])["task"]["type"] == info.role
