"""Faults in a local cluster: the job ends the right way, says why, and leaves no process behind.

Where a test bounds time, it only checks that the launcher did not sit out a grace
period or a timeout it should not have (generous margins; speed lives in bench/).
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from reliability import Reliability
from local_helpers import (
    PROBE,
    assert_no_survivors,
    job_processes,
    only_job_id,
    probe_args,
    read_until,
    ready_lines,
    reports,
    start_cli,
)
from click.testing import CliRunner

from tfjob import Job
from tfjob.model import JobState
from tfjob.cli.main import app
from tfjob.backends.local.ports import pick_ports
from tfjob.runtime.store import JobStore, process_alive

GRACE = "30"  # long: a test that waited for it would show


def _record(job_id: str):
    with JobStore() as store:
        return store.get(job_id), {t.name: t for t in store.tasks(job_id)}


@pytest.mark.reliability
def test_a_worker_that_exits_3_fails_the_job_fast_and_shows_its_log(tmp_path: Path, reliability: Reliability) -> None:
    reliability.fault("worker crash")
    argv = probe_args("--grace", GRACE, "--", "--hang", "chief", "--exit", "worker-1=3", workers=2, job_dir=tmp_path / "out")
    started = time.monotonic()
    result = CliRunner().invoke(app, argv)
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.stderr
    job_id = only_job_id()
    assert result.stderr.splitlines()[-1] == (
        f"error: job {job_id} FAILED: task worker-1 exited with code 3; its log: "
        f"{Path(os.environ['TFJOB_HOME']) / 'jobs' / job_id / 'worker-1.log'}"
    )
    assert "last lines of worker-1:\n  worker-1 ready\n  worker-1 exits with code 3 on purpose" in result.stderr
    record, tasks = _record(job_id)
    assert record.state is JobState.FAILED and record.failed_task == "worker-1" and record.exit_code == 3
    assert record.extra["task_exit_code"] == 3 and "on purpose" in record.extra["log_tail"]
    assert record.ended - tasks["worker-1"].ended < 2.0  # failed within 2 s of the worker's exit
    assert tasks["chief-0"].state is JobState.STOPPED and tasks["chief-0"].signal == signal.SIGTERM
    assert elapsed < float(GRACE)  # SIGTERM was enough: the grace period was not sat out
    assert_no_survivors(job_processes(job_id, tmp_path / "out"))


@pytest.mark.reliability
def test_a_parameter_server_killed_with_sigkill_fails_the_job(tmp_path: Path, reliability: Reliability) -> None:
    job_dir = tmp_path / "out"
    proc = start_cli(probe_args("--strategy", "multi-worker", "--grace", GRACE, "--", "--hang", "all", workers=1, ps=2, job_dir=job_dir))
    read_until(proc, ready_lines(["chief-0", "worker-0", "ps-0", "ps-1"]))
    os.kill(reports(job_dir)["ps-1"]["pid"], signal.SIGKILL)
    reliability.fault("ps SIGKILL")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    job_id = only_job_id()
    assert f"error: job {job_id} FAILED: task ps-1 was killed by SIGKILL" in err
    record, tasks = _record(job_id)
    assert record.failed_task == "ps-1" and tasks["ps-1"].signal == signal.SIGKILL
    assert record.extra["task_exit_code"] is None
    assert_no_survivors(job_processes(job_id, job_dir))


@pytest.mark.reliability
def test_ctrl_c_cancels_the_job(tmp_path: Path, reliability: Reliability) -> None:
    job_dir = tmp_path / "out"
    proc = start_cli(probe_args("--grace", GRACE, "--", "--hang", "all", workers=2, job_dir=job_dir))
    read_until(proc, ready_lines(["chief-0", "worker-0", "worker-1"]))
    proc.send_signal(signal.SIGINT)
    reliability.fault("SIGINT to the CLI")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    job_id = only_job_id()
    assert err.splitlines()[-1] == f"error: job {job_id} was cancelled: interrupted by SIGINT"
    record, tasks = _record(job_id)
    assert record.state is JobState.CANCELLED
    assert all(t.state is JobState.STOPPED for t in tasks.values())
    assert_no_survivors(job_processes(job_id, job_dir))


@pytest.mark.reliability
def test_a_chief_that_never_ends_times_out(tmp_path: Path, reliability: Reliability) -> None:
    reliability.fault("chief hang, --timeout")
    started = time.monotonic()
    result = CliRunner().invoke(app, probe_args("--timeout", "5", "--grace", GRACE, "--", "--hang", "chief", job_dir=tmp_path / "out"))
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.stderr
    job_id = only_job_id()
    assert f"error: job {job_id} FAILED: timed out: the job ran longer than --timeout 5s (still running: chief-0)" in result.stderr
    record, tasks = _record(job_id)
    assert record.failed_task == "chief-0" and tasks["worker-0"].state is JobState.SUCCEEDED
    assert 5 <= elapsed < float(GRACE)
    assert_no_survivors(job_processes(job_id, tmp_path / "out"))


#: ``tfjob ARGS`` whose launcher has no lifeline, so its tasks get a parent-death signal each
#: (setpriv): what a launcher does where it starts no shell.
_WITHOUT_LIFELINE = (
    "import sys; from tfjob.backends.local import contain; "
    "contain.Lifeline.start = classmethod(lambda cls, cgroup: None); "
    "from tfjob.cli.main import run; sys.argv[0] = 'tfjob'; run()"
)


def _has_cgroup() -> bool:
    from tfjob.backends.local.contain import JobCgroup, kill_cgroup

    probe = JobCgroup.create(f"probe-{os.getpid()}-{time.monotonic_ns()}")
    if probe is None:
        return False
    probe.close()
    kill_cgroup(probe.path)
    return True


@pytest.mark.reliability
@pytest.mark.parametrize("guard", ["lifeline", "pdeathsig"])
def test_a_killed_launcher_takes_its_tasks_along_and_the_job_shows_lost(guard: str, tmp_path: Path, reliability: Reliability) -> None:
    # Where the tasks are born in the job's cgroup, the job's lifeline kills the cgroup when
    # the launcher dies: the tasks and what they started. Without it, each task's
    # parent-death signal takes the task; `tfjob list` finds the job LOST and ends the rest.
    job_dir = tmp_path / "out"
    args = probe_args("--", "--hang", "all", "--grandchild", "worker-0", workers=1, job_dir=job_dir)
    if guard == "lifeline":
        proc = start_cli(args)
    else:
        proc = subprocess.Popen(
            [sys.executable, "-c", _WITHOUT_LIFELINE, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
    read_until(proc, ready_lines(["chief-0", "worker-0"]))
    job_id = only_job_id()
    seen = reports(job_dir)
    tasks = [(r["pid"], r["start"]) for r in seen.values()]
    grandchild = [(seen["worker-0"]["grandchild"], seen["worker-0"]["grandchild_start"])]
    reliability.watch(tasks + grandchild)
    proc.kill()
    reliability.fault("SIGKILL to the launcher")
    proc.wait()
    assert_no_survivors(tasks)
    if guard == "lifeline" and _has_cgroup():
        assert_no_survivors(grandchild)  # the whole cgroup, before anything found the job LOST
    elif guard == "pdeathsig":
        assert process_alive(*grandchild[0])  # each task's own signal: the grandchild waits for `list`
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert (entry["id"], entry["state"]) == (job_id, "LOST")
    assert f"pid {proc.pid}" in entry["message"]
    status = CliRunner().invoke(app, ["status", job_id])
    assert "state     LOST" in status.stdout
    assert_no_survivors(grandchild)  # what the task left in its group went with the LOST job


@pytest.mark.reliability
def test_a_stolen_port_restarts_the_cluster_on_new_ports(tmp_path: Path, reliability: Reliability) -> None:
    thief = socket.socket()
    thief.bind(("127.0.0.1", 0))
    thief.listen()
    calls: list[list[int]] = []

    def picker(n: int) -> list[int]:
        # The first pick hands the chief a port someone else already listens on.
        ports = pick_ports(n)
        if not calls:
            ports[0] = thief.getsockname()[1]
            reliability.fault("port stolen between pick and bind")
        calls.append(ports)
        return ports

    job = Job(
        package=str(PROBE), module="probe.task", workers=1, backend="local", job_dir=str(tmp_path / "out"), args=["--wait-tasks", "2"]
    )
    console = io.StringIO()
    try:
        job_id = job.backend.run(job.spec, job.options, console=console, summary=io.StringIO(), port_picker=picker)
    finally:
        thief.close()
    record, tasks = _record(job_id)
    assert record.state is JobState.SUCCEEDED, record.message
    assert len(calls) == 2
    assert (
        f"chief-0's port {calls[0][0]} was taken before it could listen; starting the cluster again on new ports (2/4)"
        in console.getvalue()
    )
    assert reports(tmp_path / "out")["chief-0"]["cluster"]["chief"] == [f"127.0.0.1:{calls[1][0]}"]
    assert_no_survivors(job_processes(job_id, tmp_path / "out"))


@pytest.mark.reliability
def test_ports_that_keep_being_stolen_fail_the_job(tmp_path: Path, reliability: Reliability) -> None:
    thief = socket.socket()
    thief.bind(("127.0.0.1", 0))
    thief.listen()

    def picker(n: int) -> list[int]:
        reliability.fault("port stolen between pick and bind")
        return [thief.getsockname()[1], *pick_ports(n - 1)]

    job = Job(package=str(PROBE), module="probe.task", backend="local", args=["--hang", "all"])
    try:
        job_id = job.backend.run(job.spec, job.options, console=io.StringIO(), summary=io.StringIO(), port_picker=picker)
    finally:
        thief.close()
    record, _ = _record(job_id)
    assert record.state is JobState.FAILED
    assert "gave up after 4 starts of the cluster" in record.message


@pytest.mark.reliability
def test_a_task_deaf_to_sigterm_is_killed_after_the_grace_period(tmp_path: Path, reliability: Reliability) -> None:
    reliability.fault("task deaf to SIGTERM")
    job_dir = tmp_path / "out"
    argv = probe_args(
        "--grace", "0.5", "--",
        "--wait-tasks", "2", "--hang", "worker", "--ignore-sigterm", "worker", "--grandchild", "worker",
        workers=1, job_dir=job_dir,
    )  # fmt: skip
    started = time.monotonic()
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - started < float(GRACE)
    job_id = only_job_id()
    record, tasks = _record(job_id)
    assert record.state is JobState.SUCCEEDED
    assert tasks["worker-0"].state is JobState.STOPPED and tasks["worker-0"].signal == signal.SIGKILL
    assert tasks["worker-0"].ended - tasks["chief-0"].ended >= 0.5
    reliability.watch(job_processes(job_id, job_dir))
    assert_no_survivors(job_processes(job_id, job_dir))  # the worker's own child too


def test_a_missing_module_is_a_usage_error_before_anything_starts(tmp_path: Path) -> None:
    # As for Vertex AI packaging: the module is looked for before the job exists (exit 2).
    result = CliRunner().invoke(app, ["submit", str(PROBE), "-m", "probe.missing", "--quiet"])
    assert result.exit_code == 2
    assert "--module-name probe.missing: no probe/missing.py in" in result.stderr
    with JobStore() as store:
        assert store.list() == []


def test_a_trainer_module_that_does_not_import_names_the_task_and_the_error(tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "__init__.py").write_text("")
    (tmp_path / "broken" / "task.py").write_text("import no_such_dependency_here\n")
    result = CliRunner().invoke(app, ["submit", str(tmp_path), "-m", "broken.task", "--quiet"])
    assert result.exit_code == 1
    job_id = only_job_id()
    assert f"error: job {job_id} FAILED: task chief-0 exited with code 1" in result.stderr
    assert "ModuleNotFoundError: No module named 'no_such_dependency_here'" in result.stderr
    assert_no_survivors(job_processes(job_id))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["submit", "--image", "gcr.io/p/t:1", "-m", "t.task", "--container-engine", "/no/such/podman"],
            "needs a container engine, and /no/such/podman is not installed",
        ),
        (["submit", str(PROBE), "-m", "probe.task", "--dialect", "sagemaker"], "--dialect 'sagemaker' is not known"),
        (["submit", "no/such/dir", "-m", "probe.task"], "trainer directory 'no/such/dir' does not exist"),
        (["submit", str(PROBE), "-m", "trainer.task"], "module 'trainer.task' is not in trainer directory"),
        (["submit", str(PROBE), "-m", "probe.task", "--python", "/no/python"], "--python '/no/python' is not an executable interpreter"),
        (
            ["submit", str(PROBE), "-m", "probe.task", "--ps", "1", "--workers", "1", "--strategy", "mirrored"],
            "--strategy 'mirrored' is not known",
        ),
    ],
)
def test_mistakes_are_one_line_and_start_nothing(argv: list[str], message: str) -> None:
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: ") and message in result.stderr
    with JobStore() as store:
        assert store.list() == []


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"])
@pytest.mark.parametrize("command", [["wait"], ["logs", "--follow"]])
def test_ctrl_c_while_reading_a_job_leaves_it_running_and_says_how_to_go_on(
    tmp_path: Path, command: list[str], inherited: signal.Handlers
) -> None:
    import subprocess

    from local_helpers import TFJOB

    job_dir = tmp_path / "out"
    submitted = subprocess.run([TFJOB, *probe_args("--detach", "--grace", "5", "--", "--hang", "all", workers=1, job_dir=job_dir)],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split()[-1]
    reader = None
    try:
        _until_ready(job_dir, ["chief-0", "worker-0"])
        # As from a terminal: SIGINT at its default; or ignored, as a test runner's worker or a
        # background shell leaves it: the command takes Ctrl-C back either way.
        reader = subprocess.Popen([TFJOB, command[0], job_id, *command[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))  # fmt: skip
        # Ready when it reads the job: `wait` says the job's state, `logs --follow` shows its first line.
        stream = reader.stderr if command[0] == "wait" else reader.stdout
        assert stream is not None and select.select([stream], [], [], 60)[0], f"tfjob {command[0]} said nothing in 60 s"
        first = stream.readline()
        assert first.startswith(f"job {job_id} RUNNING" if command[0] == "wait" else "[")
        reader.send_signal(signal.SIGINT)
        _, err = reader.communicate(timeout=120)
        assert reader.returncode == 130, err
        again = f"tfjob {command[0]} {job_id}" + (" --follow" if len(command) > 1 else "")
        assert err.splitlines()[-1] == f"error: interrupted; job {job_id} keeps running ({again} goes on, tfjob cancel {job_id} stops it)"
        assert "Traceback" not in err
        status = subprocess.run([TFJOB, "status", job_id], capture_output=True, text=True, timeout=60)
        assert "RUNNING" in status.stdout, status.stdout
    finally:
        if reader is not None and reader.poll() is None:
            reader.kill()
            reader.communicate()
        subprocess.run([TFJOB, "cancel", job_id], capture_output=True, timeout=60)
        subprocess.run([TFJOB, "wait", job_id, "--timeout", "60"], capture_output=True, timeout=90)


def _until_ready(job_dir: Path, tasks: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if set(tasks) <= set(reports(job_dir)):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"tasks {tasks} never reported ready in {job_dir}")


@pytest.mark.parametrize("pidfds", [True, False])
def test_exits_are_seen_with_and_without_pidfds(pidfds: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the kernel has no pidfd (Linux < 5.3), the launcher asks each task without one
    # with waitpid; with pidfds it asks none but those that said they exited. Either way the
    # chief's end is seen and the workers that never end on their own are stopped.
    if not pidfds:

        def no_pidfd(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    job_dir = tmp_path / "out"
    job = Job(
        package=str(PROBE), module="probe.task", workers=3, ps=1, backend="local", job_dir=str(job_dir),
        args=["--wait-tasks", "5", "--hang", "worker", "--hang", "ps"],
    )  # fmt: skip
    job_id = job.backend.run(job.spec, job.options, console=io.StringIO(), summary=io.StringIO())
    record, tasks = _record(job_id)
    assert record.state is JobState.SUCCEEDED, record.message
    assert tasks["chief-0"].state is JobState.SUCCEEDED
    assert all(tasks[name].state is JobState.STOPPED for name in ("worker-0", "worker-1", "worker-2", "ps-0"))
    assert_no_survivors(job_processes(job_id, job_dir))
