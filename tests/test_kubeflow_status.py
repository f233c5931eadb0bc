"""Pure parsing of TFJob and pod objects: conditions → JobState, pods → tasks, ids, selectors, kubeconfig lookup."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import cli_words

from tfjob.model import JobState
from tfjob.errors import UsageError
from tfjob.backends.kubeflow.client import find_kubeconfig
from tfjob.model import parse_time
from tfjob.backends.kubeflow.status import (
    build_job_status,
    build_pod_selector,
    parse_job_id,
    parse_pod_task,
    parse_tfjob_state,
    pod_has_logs,
    sort_pods,
)


def _tfjob(*conditions: tuple[str, str], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ml", "creationTimestamp": "2026-01-02T03:04:05Z", **meta},
        "status": {"conditions": [{"type": t, "status": s, "message": f"{t} says {s}"} for t, s in conditions]},
    }


def _pod(rtype: str, index: int, phase: str = "Running", exit_code: int | None = None, restarts: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {}} if phase == "Running" else {"waiting": {"reason": "ContainerCreating"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "finishedAt": "2026-01-02T04:00:00Z"}}
    return {
        "metadata": {
            "name": f"j-{rtype}-{index}",
            "labels": {"training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": str(index)},
        },
        "status": {
            "phase": phase,
            "startTime": "2026-01-02T03:05:00Z",
            "containerStatuses": [
                {"name": "istio-proxy", "restartCount": 9, "state": {"running": {}}},
                {"name": "tensorflow", "restartCount": restarts, "state": state},
            ],
        },
    }


@pytest.mark.parametrize(
    ("conditions", "state", "message"),
    [
        ((), JobState.PENDING, "waiting for the training operator to pick the TFJob up"),
        ((("Created", "True"),), JobState.PENDING, "Created says True"),
        ((("Created", "True"), ("Running", "True")), JobState.RUNNING, "Running says True"),
        ((("Created", "True"), ("Running", "False"), ("Restarting", "True")), JobState.RUNNING, "restarting: Restarting says True"),
        ((("Created", "True"), ("Running", "False"), ("Succeeded", "True")), JobState.SUCCEEDED, "Succeeded says True"),
        ((("Created", "True"), ("Running", "False"), ("Failed", "True")), JobState.FAILED, "Failed says True"),
        ((("Created", "True"), ("Suspended", "True")), JobState.QUEUED, "Suspended says True"),
        ((("Created", "True"), ("Running", "False")), JobState.PENDING, "Created says True"),
    ],
)
def test_conditions_map_to_one_state(conditions: tuple[tuple[str, str], ...], state: JobState, message: str) -> None:
    assert parse_tfjob_state(_tfjob(*conditions)) == (state, message)


def test_a_tfjob_being_deleted_is_cancelling_unless_it_already_ended() -> None:
    deleting = _tfjob(("Running", "True"), deletionTimestamp="2026-01-02T05:00:00Z")
    assert parse_tfjob_state(deleting)[0] is JobState.CANCELLING
    done = _tfjob(("Succeeded", "True"), deletionTimestamp="2026-01-02T05:00:00Z")
    assert parse_tfjob_state(done)[0] is JobState.SUCCEEDED


def test_pods_become_tasks_chief_first_with_the_tensorflow_exit_code() -> None:
    pods = [_pod("ps", 0), _pod("worker", 10), _pod("worker", 2, "Failed", exit_code=137), _pod("master", 0, "Succeeded", exit_code=0)]
    assert [p["metadata"]["name"] for p in sort_pods(pods)] == ["j-master-0", "j-worker-2", "j-worker-10", "j-ps-0"]
    task = parse_pod_task(pods[2])
    assert (task.name, task.state, task.exit_code, task.signal) == ("worker-2", JobState.FAILED, 137, 9)
    assert task.started == parse_time("2026-01-02T03:05:00Z") and task.ended == parse_time("2026-01-02T04:00:00Z")
    assert parse_pod_task(pods[3]).name == "chief-0"  # the legacy Master is our chief


def test_a_failed_status_names_the_first_failed_pod_or_the_replica_type_of_the_message() -> None:
    tfjob = _tfjob(("Failed", "True"))
    pods = [_pod("chief", 0), _pod("worker", 1, "Failed", exit_code=3), _pod("worker", 0, "Failed", exit_code=4)]
    status = build_job_status("ml/j", tfjob, pods)
    assert status.failed_task == "worker-0" and status.extra["task_exit_code"] == 4
    assert (status.id, status.backend, status.name, status.created) == ("ml/j", "kubeflow", "j", parse_time("2026-01-02T03:04:05Z"))
    tfjob["status"]["conditions"][0]["message"] = "TFJob ml/j has failed because 2 PS replica(s) failed."
    assert build_job_status("ml/j", tfjob, []).failed_task == "ps"
    assert build_job_status("ml/j", _tfjob(("Running", "True")), pods).failed_task is None


def test_logs_are_readable_once_the_container_started() -> None:
    assert not pod_has_logs(_pod("worker", 0, "Pending"))
    assert pod_has_logs(_pod("worker", 0))
    assert pod_has_logs(_pod("worker", 0, "Failed", exit_code=1))


@pytest.mark.parametrize(
    ("job_id", "expected"),
    [("ml/census-ps", ("ml", "census-ps")), ("census-ps", (None, "census-ps")), (" ml/j ", ("ml", "j"))],
)
def test_job_ids_are_namespace_slash_name(job_id: str, expected: tuple[str | None, str]) -> None:
    assert parse_job_id(job_id) == expected


@pytest.mark.parametrize("job_id", ["/j", "ml/", "ML/j", "ml/j_1", "a/b/c", "trainer-3fa9c1.log"])
def test_a_bad_job_id_is_a_usage_error(job_id: str) -> None:
    with pytest.raises(UsageError, match=r"is not NAMESPACE/NAME of a TFJob .*`tfjob list` shows the known jobs$"):
        parse_job_id(job_id)


def test_pod_selectors_for_a_job_a_role_and_a_task() -> None:
    job = "training.kubeflow.org/job-name=j"
    assert build_pod_selector("j") == job
    assert build_pod_selector("j", "ps") == f"{job},training.kubeflow.org/replica-type=ps"
    assert build_pod_selector("j", "Worker-01") == (
        f"{job},training.kubeflow.org/replica-type=worker,training.kubeflow.org/replica-index=1"
    )
    assert build_pod_selector("j", "master-0").endswith("replica-type=chief,training.kubeflow.org/replica-index=0")
    with pytest.raises(UsageError, match=r"--task 'worker_1' is not a task"), cli_words():
        build_pod_selector("j", "worker_1")


def test_timestamps() -> None:
    assert parse_time("1970-01-01T00:01:00Z") == 60.0
    assert parse_time(None) is None and parse_time("yesterday") is None


def test_the_kubeconfig_is_the_flag_then_kubeconfig_then_home(tmp_path: Path) -> None:
    a, b, home_config = tmp_path / "a", tmp_path / "b", tmp_path / "home" / ".kube" / "config"
    for path in (a, b, home_config):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    env = {"HOME": str(tmp_path / "home")}
    assert find_kubeconfig(None, env) == str(home_config)
    assert find_kubeconfig(None, {**env, "KUBECONFIG": f"{tmp_path / 'missing'}{os.pathsep}{b}{os.pathsep}{a}"}) == f"{b}{os.pathsep}{a}"
    assert find_kubeconfig(str(a), {**env, "KUBECONFIG": str(b)}) == str(a)
    assert find_kubeconfig(None, {"HOME": str(tmp_path / "nobody")}) is None
    assert find_kubeconfig(None, {"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "missing")}) is None
    with pytest.raises(UsageError, match=r"^kubeconfig='.*/missing' does not exist; give the path of a kubeconfig file$"):
        find_kubeconfig(str(tmp_path / "missing"), env)


def test_a_streamed_log_line_without_end_comes_in_bounded_pieces() -> None:
    from tfjob.backends.kubeflow.client import MAX_LOG_LINE, iter_stream_lines

    class Response:
        def stream(self, size: int, decode_content: bool = True):  # type: ignore[no-untyped-def]
            yield b"first\r\n"
            for _ in range(1024):  # 4 MiB of a progress bar, no newline
                yield b"=" * 4096
            yield b"\nlast"

    lines = list(iter_stream_lines(Response()))
    assert lines[0] == "first" and lines[-1] == "last"
    assert "".join(lines[1:-1]) == "=" * (4 * 1024 * 1024)
    assert max(len(line) for line in lines) <= MAX_LOG_LINE + 4096
