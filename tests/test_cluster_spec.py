"""tfjob.cluster.ClusterSpec against tf.train.ClusterSpec, case by case, in the same run.

Every case is built with both classes and every accessor is called on both; the
results, or the exception types and messages, must be identical. A second part
checks that TensorFlow accepts the TF_CONFIG the bootstrap exports.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from helpers import requires_tf
from tfjob.cluster import ClusterSpec, render_task_env, render_tf2_env, task_info_from_env

pytestmark = requires_tf


@pytest.fixture(scope="module")
def tf() -> Any:
    import tensorflow

    return tensorflow


def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        return ("raised", type(e).__name__, str(e))


VALID = {
    "dense": {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["p0:2222", "p1:2222"]},
    "sparse": {"worker": {1: "w1:2222"}, "ps": ["p0:2222", "p1:2222"]},
    "sparse_string_keys": {"worker": {"1": "w1:2222", "3": "w3:2222"}},
    "sparse_from_zero_is_dense": {"worker": {0: "w0:2222", 1: "w1:2222"}},
    "tuple": {"chief": ("c:1",), "worker": ("w:1", "w:2")},
    "empty": {},
    "empty_job_list": {"worker": [], "ps": ["p:1"]},
    "empty_job_dict": {"worker": {}},
    "bytes_names_and_addresses": {b"worker": [b"w0:1", "w1:1"]},
    "unsorted_jobs": {"worker": ["w:1"], "chief": ["c:1"], "evaluator": ["e:1"], "ps": ["p:1"]},
    "negative_sparse_index": {"worker": {-1: "w:1"}},
    "float_sparse_index": {"worker": {1.7: "w:1"}},
}

INVALID = {
    "list": ["w:1"],
    "string": "worker",
    "none": None,
    "number": 5,
    "tasks_string": {"worker": "w:1"},
    "tasks_number": {"worker": 2222},
    "tasks_none": {"worker": None},
    "job_name_int": {1: ["w:1"]},
    "job_name_mixed_types": {1: ["a"], "x": ["b"]},
    "address_int": {"worker": ["w:1", 2222]},
    "address_none": {"worker": [None]},
    "sparse_address_int": {"worker": {0: 7}},
    "sparse_key_not_int": {"worker": {"x": "w:1"}},
    "sparse_key_out_of_int32": {"worker": {2**31: "w:1"}},
}

PROBES: dict[str, Callable[[Any], Any]] = {
    "jobs": lambda s: s.jobs,
    "bool": lambda s: bool(s),
    "repr": lambda s: repr(s),
    "as_dict": lambda s: s.as_dict(),
    "num_tasks(worker)": lambda s: s.num_tasks("worker"),
    "num_tasks(missing)": lambda s: s.num_tasks("missing"),
    "task_indices(worker)": lambda s: s.task_indices("worker"),
    "task_indices(missing)": lambda s: s.task_indices("missing"),
    "task_address(worker,1)": lambda s: s.task_address("worker", 1),
    "task_address(worker,7)": lambda s: s.task_address("worker", 7),
    "task_address(missing,0)": lambda s: s.task_address("missing", 0),
    "task_address(ps,0)": lambda s: s.task_address("ps", 0),
    "job_tasks(worker)": lambda s: s.job_tasks("worker"),
    "job_tasks(ps)": lambda s: s.job_tasks("ps"),
    "job_tasks(missing)": lambda s: s.job_tasks("missing"),
    "eq_dict_of_dicts": lambda s: s == {"worker": {1: "w1:2222"}, "ps": {0: "p0:2222", 1: "p1:2222"}},
    "ne_dict_of_lists": lambda s: s != {"worker": ["w0:2222", "w1:2222", "w2:2222"]},
    "eq_empty": lambda s: s == {},
}


@pytest.mark.parametrize("case", VALID, ids=list(VALID))
@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_accessors_match_tensorflow(tf: Any, case: str, probe: str) -> None:
    ours, theirs = ClusterSpec(VALID[case]), tf.train.ClusterSpec(VALID[case])
    assert _outcome(lambda: PROBES[probe](ours)) == _outcome(lambda: PROBES[probe](theirs))


@pytest.mark.parametrize("case", INVALID, ids=list(INVALID))
def test_construction_errors_match_tensorflow(tf: Any, case: str) -> None:
    ours = _outcome(lambda: ClusterSpec(INVALID[case]))
    theirs = _outcome(lambda: tf.train.ClusterSpec(INVALID[case]))
    assert ours[0] == theirs[0] == "raised"
    assert ours == theirs


@pytest.mark.parametrize("case", VALID, ids=list(VALID))
def test_copy_constructor_matches_tensorflow(tf: Any, case: str) -> None:
    ours, theirs = ClusterSpec(ClusterSpec(VALID[case])), tf.train.ClusterSpec(tf.train.ClusterSpec(VALID[case]))
    for probe in PROBES.values():
        assert _outcome(lambda: probe(ours)) == _outcome(lambda: probe(theirs))


@pytest.mark.parametrize("case", VALID, ids=list(VALID))
def test_from_a_cluster_def_and_back(tf: Any, case: str) -> None:
    theirs = tf.train.ClusterSpec(VALID[case])
    ours = ClusterSpec(theirs.as_cluster_def())
    assert ours.as_dict() == tf.train.ClusterSpec(theirs.as_cluster_def()).as_dict()
    assert ClusterSpec(VALID[case]).as_cluster_def() == theirs.as_cluster_def()


@pytest.mark.parametrize("case", VALID, ids=list(VALID))
def test_to_tf_gives_an_equal_tensorflow_spec(tf: Any, case: str) -> None:
    converted = ClusterSpec(VALID[case]).to_tf()
    assert isinstance(converted, tf.train.ClusterSpec)
    assert converted.as_dict() == tf.train.ClusterSpec(VALID[case]).as_dict()
    assert converted.jobs == tf.train.ClusterSpec(VALID[case]).jobs


def test_equality_across_the_two_classes(tf: Any) -> None:
    spec = {"worker": ["w:1", "w:2"], "ps": ["p:1"]}
    assert ClusterSpec(spec) == tf.train.ClusterSpec(spec)
    assert tf.train.ClusterSpec(spec) == ClusterSpec(spec)
    assert ClusterSpec(spec) != tf.train.ClusterSpec({"worker": ["w:1"]})
    # Both compare their internal index → address dicts, so a list-valued dict is unequal.
    assert (ClusterSpec(spec) == spec) == (tf.train.ClusterSpec(spec) == spec) is False
    with pytest.raises(TypeError, match="unhashable type: 'ClusterSpec'"):
        hash(ClusterSpec(spec))


def test_cluster_def_needs_tensorflow_only_when_asked(tf: Any) -> None:
    assert ClusterSpec({"w": ["a:1"]}).as_cluster_def().job[0].tasks[0] == "a:1"


# --- TensorFlow accepts what the bootstrap exports ------------------------------------------

CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"], "ps": ["127.0.0.1:4"], "evaluator": ["127.0.0.1:5"]}


@pytest.mark.parametrize("dialect", ["ai-platform", "vertex", "kubeflow", "gcloud-local"])
@pytest.mark.parametrize(("role", "index"), [("chief", 0), ("worker", 1), ("ps", 0), ("evaluator", 0)])
def test_tensorflow_resolves_the_exported_tf_config(tf: Any, monkeypatch: pytest.MonkeyPatch, dialect: str, role: str, index: int) -> None:
    from tensorflow.python.distribute import multi_worker_util

    info = task_info_from_env(render_task_env(CLUSTER, role, index, dialect, use_chief=False))
    exported = render_tf2_env(info)["TF_CONFIG"]
    assert exported is not None
    monkeypatch.setenv("TF_CONFIG", exported)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert (resolver.task_type, resolver.task_id) == (role, index)
    assert resolver.cluster_spec() == tf.train.ClusterSpec(json.loads(exported)["cluster"])
    assert resolver.cluster_spec().as_dict() == {k: v for k, v in CLUSTER.items() if k != "evaluator"}
    # TensorFlow's own validation (the one its strategies run) passes, and it agrees
    # on who is chief; it also calls an evaluator "chief" (for summaries), tfjob does not.
    multi_worker_util._validate_cluster_spec(resolver.cluster_spec(), role, index)
    tf_says = multi_worker_util.is_chief(resolver.cluster_spec(), role, index)
    assert info.is_chief == (tf_says and role != "evaluator")


def test_tensorflow_picks_worker_0_as_chief_without_a_chief_like_tfjob(tf: Any) -> None:
    from tensorflow.python.distribute import multi_worker_util

    cluster = {"worker": ["h:1", "h:2"]}
    for index in (0, 1):
        info = task_info_from_env({"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})})
        assert info.is_chief == multi_worker_util.is_chief(tf.train.ClusterSpec(cluster), "worker", index)
