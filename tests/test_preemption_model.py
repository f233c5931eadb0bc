"""Restarts in the job model: a task's restart count and history, kept by the store, read from
a pod, shown by `tfjob status` (a RESTARTS column) and in the job's history."""

from __future__ import annotations

import json
from pathlib import Path

from tfjob.backends.kubeflow.status import parse_pod_task
from tfjob.cli.jobs import render_status
from tfjob.model import JobState, JobStatus, TaskRestart, TaskStatus
from tfjob.runtime.store import JobRecord, JobStore, TaskRecord


def test_the_store_keeps_a_task_s_restarts_and_the_job_s_history_notes(tmp_path: Path) -> None:
    with JobStore(tmp_path / "jobs.db") as store:
        store.add(JobRecord(id="j-1", backend="local", name="j", state=JobState.RUNNING))
        history = [TaskRestart(100.0, None, 15, "preempted"), TaskRestart(200.0, 3, None, "exited")]
        store.put_task("j-1", TaskRecord("worker-0", "worker", 0, JobState.RUNNING, 42, restarts=2, restart_history=history))
        store.note("j-1", "worker-0 preempted: SIGTERM, SIGKILL after 30s")
        (task,) = store.status("j-1").tasks
        assert (task.restarts, task.restart_history) == (2, history)
        assert store.events("j-1")[-1][1:] == (JobState.RUNNING, "worker-0 preempted: SIGTERM, SIGKILL after 30s")
        as_json = json.loads(json.dumps(store.status("j-1").to_dict()))
        assert as_json["tasks"][0]["restarts"] == 2
        assert as_json["tasks"][0]["restart_history"][0] == {"time": 100.0, "exit_code": None, "signal": 15, "reason": "preempted"}


def test_status_shows_a_restarts_column_only_when_a_task_restarted() -> None:
    def status(restarts: int) -> str:
        job = JobStatus(
            id="j", backend="local", name="n", state=JobState.RUNNING, started=1.0,
            tasks=[TaskStatus("chief-0", JobState.RUNNING, started=1.0), TaskStatus("worker-0", JobState.RUNNING, started=1.0, restarts=restarts)],
        )  # fmt: skip
        return render_status(job, [], now=11.0)

    assert "RESTARTS" not in status(0)
    text = status(3)
    assert "TASK      STATE    EXIT  DURATION  RESTARTS" in text
    assert [line.split()[-1] for line in text.splitlines()[-2:]] == ["0", "3"]


def test_a_pod_s_restart_count_and_last_end_are_its_task_s_restarts() -> None:
    pod = {
        "metadata": {"name": "j-worker-0", "labels": {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
        "status": {"phase": "Running", "startTime": "2026-11-26T10:00:00Z", "containerStatuses": [{
            "name": "tensorflow", "restartCount": 2, "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 143, "reason": "Error", "finishedAt": "2026-11-26T10:05:00Z"}},
        }]},
    }  # fmt: skip
    task = parse_pod_task(pod)
    assert task.restarts == 2
    assert [(r.exit_code, r.signal, r.reason) for r in task.restart_history] == [(143, 15, "Error")]
