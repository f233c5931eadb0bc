"""A diagnosis when a task fails (issue 27.5): each pattern fed with the line TensorFlow, Python,
the kernel or the platform prints (tests/data/diagnosis holds them as printed), on every
backend's status; and the diagnosis reaching `tfjob status`, its --json and JobFailedError
through a real local job."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import write_trainer
from click.testing import CliRunner

from tfjob.backends.kubeflow.status import build_job_status, parse_pod_task
from tfjob.cli.main import app
from tfjob.results.diagnosis import diagnose, diagnose_text, evaluator_hang, explain, kernel_oom_record
from tfjob.errors import JobFailedError
from tfjob.job import Job
from tfjob.platforms import Local
from tfjob.model import JobState, JobStatus, TaskStatus

DATA = Path(__file__).parent / "data" / "diagnosis"

#: file → (code, words the explanation must hold)
LOGS = {
    "tf2master.log": ("tf2-master", ("master", "--tf-config tf2", "--use-chief")),
    "jobdir.log": ("job-dir-required", ("--job-dir", "after `--`", "AIP_MODEL_DIR")),
    "batch.log": ("batch-not-divisible", ("64", "3 replicas", "num_replicas_in_sync")),
    "port.log": ("port-in-use", ("port",)),
    "missing.log": ("missing-module", ("census_feature_utils", "requirements")),
}


def _failed(backend: str, tail: str = "", message: str = "", tasks: list[TaskStatus] | None = None, **extra: object) -> JobStatus:
    return JobStatus(
        "j1", backend, "j", JobState.FAILED, message=message, failed_task="chief-0", tasks=tasks or [],
        extra={"log_tail": tail, **extra},
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["local", "vertex", "kubeflow"])
@pytest.mark.parametrize("name", sorted(LOGS))
def test_each_printed_line_is_recognised_on_every_backend(name: str, backend: str) -> None:
    code, words = LOGS[name]
    found = diagnose(_failed(backend, (DATA / name).read_text()))
    assert [d.code for d in found] == [code]
    said = explain(found)
    for word in words:
        assert word in said, (word, said)
    assert found[0].task == "chief-0" and found[0].evidence in (DATA / name).read_text()


def test_vertex_says_job_dir_is_not_passed_there() -> None:
    vertex = diagnose_text((DATA / "jobdir.log").read_text(), backend="vertex")[0]
    assert "Vertex AI passes no --job-dir" in vertex.fix
    batch = diagnose_text((DATA / "batch.log").read_text(), backend="vertex")[0]
    assert "--no-chief" not in batch.fix and "always runs a chief" in batch.fix
    assert "--no-chief" in diagnose_text((DATA / "batch.log").read_text(), backend="kubeflow")[0].fix


def test_a_log_without_a_known_cause_has_no_diagnosis() -> None:
    assert diagnose(_failed("local", "Traceback (most recent call last):\nZeroDivisionError: division by zero")) == []
    assert diagnose(JobStatus("j1", "local", "j", JobState.SUCCEEDED, extra={"log_tail": (DATA / "port.log").read_text()})) == []


def test_vertex_reads_the_failing_task_log_when_the_status_has_none() -> None:
    asked: list[str] = []

    def log_of(task: str) -> str:
        asked.append(task)
        return "[chief-0] " + (DATA / "missing.log").read_text().replace("\n", "\n[chief-0] ")

    found = diagnose(_failed("vertex", message="The replica workerpool0-0 exited with a non-zero status of 1."), log_of=log_of)
    assert asked == ["chief-0"] and [d.code for d in found] == ["missing-module"]


def test_a_trainers_failure_quoting_a_stockout_is_the_trainers_failure() -> None:
    """A replica's non-zero exit is the program's failure, whatever its message quotes (as the failover rules)."""
    own = "The replica workerpool1-0 exited with a non-zero status of 1. Resources are insufficient in region: us-central1."
    status = JobStatus("j1", "vertex", "j", JobState.FAILED, message=own, failed_task="worker-0", extra={"task_exit_code": 1})
    [d] = diagnose(status)
    assert d.code == "trainer-failed" and d.task == "worker-0"
    assert d.cause.startswith("the trainer failed: worker-0 exited with code 1") and "quotes a capacity error" in d.cause
    assert "a stockout" in d.cause and "--region" not in d.fix and "tfjob logs j1 --task worker-0" in d.fix
    # What its log says comes first; the quoted capacity error after.
    tail = (DATA / "missing.log").read_text()
    found = diagnose(JobStatus("j1", "vertex", "j", JobState.FAILED, message=own, failed_task="worker-0",
                               extra={"task_exit_code": 1, "log_tail": tail}))  # fmt: skip
    assert [d.code for d in found] == ["missing-module", "trainer-failed"]
    # AI Platform names no task in the status: its message does.
    legacy = "The replica master 0 exited with a non-zero status of 1. ZONE_RESOURCE_POOL_EXHAUSTED in us-central1-a"
    [d] = diagnose(JobStatus("j1", "aiplatform", "j", JobState.FAILED, message=legacy))
    assert d.code == "trainer-failed" and d.task == "master 0" and "exited with code 1" in d.cause
    # A stockout the platform ended the job for (no replica's exit) is still one.
    [d] = diagnose(JobStatus("j1", "vertex", "j", JobState.FAILED, message="Resources are insufficient in region: us-central1."))
    assert d.code == "capacity-stockout"


def test_out_of_memory_as_each_platform_says_it() -> None:
    # AI Platform / Vertex AI's job error (tensorflow/models#5591, #9352).
    platform = "The replica master 0 ran out-of-memory and exited with a non-zero status of 9(SIGKILL)"
    assert [d.code for d in diagnose(_failed("vertex", message=platform))] == ["out-of-memory"]
    # Kubernetes: the container's terminated reason.
    pod = {
        "metadata": {
            "name": "j-chief-0",
            "labels": {"training.kubeflow.org/replica-type": "chief", "training.kubeflow.org/replica-index": "0"},
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "tensorflow", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
        },
    }
    task = parse_pod_task(pod)
    found = diagnose(_failed("kubeflow", tasks=[task]))
    assert [d.code for d in found] == ["out-of-memory"] and found[0].certain
    # Locally: the kernel's record (mm/oom_kill.c's format), as the launcher keeps it.
    kernel = (
        "Out of memory: Killed process 4242 (python3) total-vm:9876543kB, anon-rss:8123456kB, file-rss:0kB, "
        "shmem-rss:0kB, UID:0 pgtables:16384kB oom_score_adj:0"
    )
    found = diagnose(_failed("local", tasks=[TaskStatus("chief-0", JobState.FAILED, signal=9)], oom_evidence=kernel))
    assert [(d.code, d.certain) for d in found] == [("out-of-memory", True)]
    # A SIGKILL with nothing readable: said, and said to be an inference.
    killed = "task chief-0 was killed by SIGKILL; its log: /x/chief-0.log"
    found = diagnose(_failed("local", message=killed, tasks=[TaskStatus("chief-0", JobState.FAILED, signal=9)]))
    assert [(d.code, d.certain) for d in found] == [("out-of-memory", False)]
    # A chief the launcher killed after a --timeout is no memory problem.
    timed_out = "timed out: the job ran longer than --timeout 5s (still running: chief-0)"
    assert diagnose(_failed("local", message=timed_out, tasks=[TaskStatus("chief-0", JobState.FAILED, signal=9)])) == []
    assert "(inferred)" in explain(found) and "dmesg" in found[0].fix


def test_the_kernel_record_is_found_by_pid(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(
        "6,1001,5000,-;eth0: link up\n"
        "3,1002,6000,-;Memory cgroup out of memory: Killed process 77 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1kB oom_score_adj:0\n"
        "3,1003,7000,-;Out of memory: Killed process 4242 (python3) total-vm:2kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1kB oom_score_adj:0\n"
    )  # fmt: skip
    assert kernel_oom_record(4242, kmsg=str(kmsg)).startswith("Out of memory: Killed process 4242")
    assert kernel_oom_record(77, kmsg=str(kmsg)).startswith("Memory cgroup out of memory")
    assert kernel_oom_record(5, kmsg=str(kmsg)) is None
    # A record from before the task started (its pid reused since) is not its.
    assert kernel_oom_record(4242, since=0.006, kmsg=str(kmsg)) is not None
    assert kernel_oom_record(4242, since=0.008, kmsg=str(kmsg)) is None
    assert kernel_oom_record(5, kmsg=str(tmp_path / "absent")) is None


def _kube_pod(role: str, index: int, status: dict) -> dict:
    labels = {
        "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": role,
        "training.kubeflow.org/replica-index": str(index),
    }
    return {"metadata": {"name": f"j-{role}-{index}", "labels": labels}, "status": status}


def test_image_pull_back_off_as_the_kubelet_says_it() -> None:
    # kubelet: images.ErrImagePullBackOff ("ImagePullBackOff") with `Back-off pulling image %q`.
    waiting = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "registry.example/trainer:v1"'}
    pod = _kube_pod("chief", 0, {"phase": "Pending", "containerStatuses": [{"name": "tensorflow", "state": {"waiting": waiting}}]})
    tfjob = {"metadata": {"name": "j", "namespace": "ml"}, "status": {"conditions": [{"type": "Created", "status": "True"}]}}
    status = build_job_status("ml/j", tfjob, [pod])
    found = diagnose(status)
    assert [d.code for d in found] == ["image-pull"]
    assert "registry.example/trainer:v1" in found[0].evidence and "imagePullSecrets" in found[0].fix


def test_a_ps_chief_waiting_for_an_ended_evaluator_is_said_while_it_hangs() -> None:
    running = {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "state": {"running": {}}}]}
    done = {"phase": "Succeeded", "containerStatuses": [{"name": "tensorflow", "state": {"terminated": {"exitCode": 0}}}]}
    pods = [_kube_pod("chief", 0, running), _kube_pod("worker", 0, running), _kube_pod("ps", 0, running), _kube_pod("evaluator", 0, done)]
    tfjob = {"metadata": {"name": "j", "namespace": "ml"}, "status": {"conditions": [{"type": "Running", "status": "True"}]}}
    status = build_job_status("ml/j", tfjob, pods)
    assert status.state is JobState.RUNNING
    # The follow loop and `tfjob status` say why it waits…
    assert "evaluator-0" in status.extra["waiting"] and "--tf-config tf2" in status.extra["waiting"]
    found = diagnose(status)
    assert [d.code for d in found] == ["ps-waits-for-evaluator"] and not found[0].certain
    # …and not where evaluators are out of the cluster, nor once the evaluator runs.
    local = JobStatus("j2", "local", "j", JobState.RUNNING, tasks=status.tasks)
    assert evaluator_hang(local, dialect="vertex") is None
    assert evaluator_hang(local, dialect="kubeflow") is not None
    pods[-1] = _kube_pod("evaluator", 0, running)
    assert "waiting" not in build_job_status("ml/j", tfjob, pods).extra


def _trainer(tmp_path: Path, body: str) -> Path:
    return write_trainer(tmp_path / "t", textwrap.dedent(body)).parent


def test_a_real_local_job_is_diagnosed_in_status_json_and_the_error(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--job-dir", required=True)
        parser.parse_args()
    """)  # fmt: skip
    job = Job(str(trainer), "trainer.task", quiet=True, backend=Local(python=sys.executable, grace=1))  # one task: the one that fails
    with pytest.raises(JobFailedError, match=r"(?s)FAILED.*diagnosis \(chief-0\): the trainer requires --job-dir.*fix: give it") as failed:
        job.run()
    assert [d.code for d in failed.value.diagnoses] == ["job-dir-required"]
    job_id = failed.value.job_id
    result = CliRunner().invoke(app, ["status", job_id])
    assert result.exit_code == 0, result.output
    assert "diagnosis (chief-0): the trainer requires --job-dir" in result.output
    data = json.loads(CliRunner().invoke(app, ["status", job_id, "--json"]).output)
    assert data["diagnoses"][0]["code"] == "job-dir-required"
    assert "the following arguments are required: --job-dir" in data["diagnoses"][0]["evidence"]


def test_a_real_sigkill_without_a_kernel_record_is_said_as_an_inference(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)  # fmt: skip
    with pytest.raises(JobFailedError, match=r"killed by SIGKILL") as failed:
        Job(str(trainer), "trainer.task", quiet=True, backend=Local(python=sys.executable, grace=1)).run()
    found = failed.value.diagnoses
    # No kernel record of this pid exists (it was not the OOM killer), so it is not said as certain.
    assert [(d.code, d.task, d.certain) for d in found] == [("out-of-memory", "chief-0", False)]
    assert "(inferred)" in str(failed.value) and "dmesg" in found[0].fix


def test_a_real_local_kubeflow_job_whose_evaluator_ended_is_said_to_hang(tmp_path: Path) -> None:
    """--dialect kubeflow puts the evaluator in every task's cluster: once it has ended, a
    parameter-server chief that waits for it hangs, and `tfjob status` says so while it runs."""
    import time

    from tfjob.job import get_job

    trainer = _trainer(tmp_path, """
        import json, os, time
        if json.loads(os.environ["TF_CONFIG"])["task"]["type"] == "evaluator":
            raise SystemExit(0)
        time.sleep(120)
    """)  # fmt: skip
    handle = Job(
        str(trainer),
        "trainer.task",
        workers=1,
        ps=1,
        evaluators=1,
        quiet=True,
        backend=Local(dialect="kubeflow", python=sys.executable, grace=1),
    ).submit()
    try:
        deadline = time.monotonic() + 60
        while True:
            tasks = {t.name: t for t in handle.status().tasks}
            if "evaluator-0" in tasks and tasks["evaluator-0"].state.is_terminal:
                break
            assert time.monotonic() < deadline, tasks
            time.sleep(0.2)
        shown = CliRunner().invoke(app, ["status", handle.id])
        assert "diagnosis (chief-0): the job hangs" in shown.output and "evaluator-0" in shown.output, shown.output
        assert [d.code for d in get_job(handle.id).diagnose()] == ["ps-waits-for-evaluator"]
    finally:
        handle.cancel()
        handle.wait(timeout=60)
