"""The Python API on the local backend: Job.run(), Job.submit(), handles, get_job() elsewhere."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import PROBE, assert_no_survivors, job_processes, reports, wait_for_reports

from tfjob._internal import job_from_keywords
from tfjob import Job, JobHandle, Local, get_job
from tfjob.model import JobState
from tfjob.errors import JobCancelledError, JobFailedError, JobNotFoundError, JobTimeoutError, SpecError
from tfjob.runtime.store import JobStore, process_start_time


def _job(
    tmp_path: Path,
    *args: str,
    workers: int = 1,
    ps: int | None = None,
    strategy: str | None = None,
    quiet: bool = True,
    install: bool = False,
) -> Job:
    return Job(
        str(PROBE), "probe.task", args=list(args), workers=workers, ps=ps, strategy=strategy, quiet=quiet,
        job_dir=str(tmp_path / "out"), backend=Local(install=install),
    )  # fmt: skip


def test_run_blocks_until_the_end_and_returns_the_finished_handle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handle = _job(tmp_path, "--wait-tasks", "5", "--lines", "2", workers=2, ps=2, strategy="multi-worker", quiet=False).run()
    assert isinstance(handle, JobHandle) and handle.backend_name == "local"
    assert handle.state is JobState.SUCCEEDED
    err = capsys.readouterr().err
    assert "[worker-1] worker-1 line 1" in err and f"job {handle.id} SUCCEEDED" in err
    assert sorted(reports(tmp_path / "out")) == ["chief-0", "ps-0", "ps-1", "worker-0", "worker-1"]
    lines = list(handle.logs(task="worker-1"))
    assert lines[:3] == ["[worker-1] worker-1 ready", "[worker-1] worker-1 line 0", "[worker-1] worker-1 line 1"]
    assert any(line.startswith("[ps-0]") for line in handle.logs())
    assert handle.result().state is JobState.SUCCEEDED
    assert_no_survivors(job_processes(handle.id, tmp_path / "out"))


def test_run_raises_job_failed_error_naming_the_task_and_its_log_tail(tmp_path: Path) -> None:
    with pytest.raises(JobFailedError, match=r"FAILED: task worker-0 exited with code 3") as caught:
        _job(tmp_path, "--hang", "chief", "--exit", "worker=3").run()
    error = caught.value
    assert error.task == "worker-0" and error.exit_code_of_task == 3
    assert error.log_tail.splitlines() == ["worker-0 ready", "worker-0 exits with code 3 on purpose"]
    assert error.job_id is not None and get_job(error.job_id).state is JobState.FAILED
    assert_no_survivors(job_processes(error.job_id, tmp_path / "out"))


def test_submit_returns_at_once_and_the_handle_follows_the_job(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    handle = _job(tmp_path, "--wait-for", str(gate)).submit()
    assert not handle.state.is_terminal
    # wait(timeout) on a clock that runs out at once: no real time passes.
    ticks = iter([0.0, 100.0, 100.0, 100.0])
    slept: list[float] = []
    patient = JobHandle("local", handle.id, clock=lambda: next(ticks), sleep=slept.append)
    with pytest.raises(JobTimeoutError, match=f"job {handle.id} is still (PENDING|RUNNING) after 5s"):
        patient.wait(timeout=5)
    assert slept == []
    gate.touch()
    final = handle.wait(timeout=120)
    assert final.state is JobState.SUCCEEDED and final.message == "chief-0 exited with code 0"
    assert [t.name for t in final.tasks] == ["chief-0", "worker-0"]
    assert "[chief-0] chief-0 ready" in list(handle.logs())


_ELSEWHERE = textwrap.dedent(
    """
    import sys
    from tfjob import get_job
    handle = get_job(sys.argv[1])
    print(handle.id, handle.backend_name, handle.state.value, flush=True)
    handle.cancel()
    """
)


def test_get_job_rebuilds_the_handle_in_another_process(tmp_path: Path) -> None:
    handle = _job(tmp_path, "--hang", "all").submit()
    wait_for_reports(tmp_path / "out", 2)
    other = subprocess.run([sys.executable, "-c", _ELSEWHERE, handle.id[:-1]], capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    job_id, backend, state = other.stdout.split()
    assert (job_id, backend, state) == (handle.id, "local", "RUNNING")
    final = handle.wait(timeout=120)
    assert final.state is JobState.CANCELLED
    with pytest.raises(JobCancelledError, match="was cancelled: cancel requested with `tfjob cancel`"):
        handle.result()
    assert_no_survivors(job_processes(handle.id, tmp_path / "out"))
    with pytest.raises(JobNotFoundError, match="no job 'ghost'"):
        get_job("ghost")
    with pytest.raises(JobNotFoundError, match="ran on the local backend, not vertex"):
        get_job(handle.id, backend="vertex")


def test_run_in_a_thread_is_cancelled_through_the_store(tmp_path: Path) -> None:
    # No signal handlers outside the main thread: handle.cancel() reaches the launcher anyway.
    job = _job(tmp_path, "--hang", "all")
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            job.run()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    wait_for_reports(tmp_path / "out", 2)
    with JobStore() as store:
        job_id = store.list(limit=1)[0].id
    get_job(job_id).cancel()
    thread.join(60)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], JobCancelledError)
    assert_no_survivors(job_processes(job_id, tmp_path / "out"))


def test_a_killed_supervisor_leaves_a_lost_job_and_no_task(tmp_path: Path) -> None:
    handle = _job(tmp_path, "--hang", "all").submit()
    wait_for_reports(tmp_path / "out", 2)
    with JobStore() as store:
        record = store.get(handle.id)
    assert record is not None and record.supervisor_pid and record.supervisor_pid != os.getpid()
    assert record.supervisor_start == process_start_time(record.supervisor_pid)
    os.kill(record.supervisor_pid, signal.SIGKILL)
    final = handle.wait(timeout=60)
    assert final.state is JobState.LOST and f"pid {record.supervisor_pid}" in final.message
    with pytest.raises(JobFailedError, match=f"job {handle.id} LOST"):
        handle.result()
    assert_no_survivors(job_processes(handle.id, tmp_path / "out"))


@pytest.mark.slow
def test_install_runs_the_trainer_from_its_sdist_in_a_throwaway_venv(tmp_path: Path) -> None:
    console = io.StringIO()
    job = _job(tmp_path, "--wait-tasks", "2", install=True)
    job_id = job.backend.run(job.spec, job.options, console=console, summary=console)
    handle = get_job(job_id)
    assert handle.state is JobState.SUCCEEDED, console.getvalue()
    install_dir = job.store.jobs_dir / job_id / "install"  # the job's files are beside its store
    for report in reports(tmp_path / "out").values():
        assert report["module_file"].startswith(str(install_dir / "venv"))  # the installed copy, not the source
        # Its own working directory, as a replica has its container's: not the install, not the source.
        assert "site-packages" in report["module_file"] and report["cwd"] == str(job.store.jobs_dir / job_id / "work" / report["task"])
    assert not (install_dir / "venv").exists()  # thrown away after the job
    assert list((install_dir / "dist").rglob("probe-0.0.0.tar.gz"))


@pytest.mark.parametrize(
    "keywords",
    [
        {"env": {"A": "x\0y"}},
        {"env": {"A\0": "y"}},
        {"args": ["--lr", "0.1\0"]},
        {"job_dir": "/tmp/out\0put"},
        {"requirements": "requirements\0.txt"},
        {"package": "train\0er"},
    ],
)
def test_a_nul_character_is_refused_by_keyword_before_anything_starts(tmp_path: Path, keywords: dict[str, object]) -> None:
    # The OS takes no NUL in a path, an argument or an environment value: without this check
    # the launcher died on ValueError('embedded null byte') after the job was recorded.
    from tfjob.errors import SpecError

    kw: dict[str, object] = {"package": str(PROBE), "module": "probe.task", **keywords}
    with pytest.raises(SpecError, match=rf"^{next(iter(keywords))} holds a NUL character"):
        job_from_keywords(None, None, {**kw}).run(timeout=60)  # type: ignore[arg-type]
    assert JobStore().list() == []


def test_a_config_path_with_a_nul_character_is_one_line(tmp_path: Path) -> None:
    from tfjob.errors import ConfigFileError

    with pytest.raises(ConfigFileError, match=r"^config='.*': a path cannot hold a NUL character$"):
        Job(config=str(tmp_path / "job\0.yaml"), module="trainer.task")


def test_a_keyword_value_that_holds_itself_is_checked_once(tmp_path: Path) -> None:
    # A list that contains itself (as a YAML alias can build) must not send the NUL check round
    # forever: the Job is refused at once, in one line naming the field.
    from tfjob.errors import SpecError

    looped: list[object] = ["--lr"]
    looped.append(looped)
    env: dict[str, object] = {"A": "1"}
    env["B"] = env
    for keywords, said in (
        ({"args": looped}, r"^args: \['--lr', \[\.\.\.\]\] is not text$"),
        ({"env": env}, r"^env='B': the value .* must be text$"),
    ):
        with pytest.raises(SpecError, match=said) as refused:
            job_from_keywords(str(PROBE), "probe.task", {**keywords})  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"strategy": -1}, r"^strategy=-1 must be text$"),
        ({"module": b"probe.task"}, r"^module=b'probe\.task' must be text$"),
        ({"chief_machine_type": 4}, r"^chief_machine_type=4 must be text$"),
        ({"tf_config": b"tf2"}, r"^tf_config=b'tf2' must be text$"),
        ({"config": 0}, r"^config=0 must be text$"),
        ({"accelerator": 0}, r"^accelerator=0 must be an accelerator, such as 'type=NVIDIA_TESLA_T4,count=1'$"),
    ],
)
def test_a_keyword_of_the_wrong_kind_is_one_line_naming_it(keywords: dict[str, object], message: str) -> None:
    # These were AttributeError/TypeError from deep inside (the CLI always passes text).
    from tfjob.errors import SpecError

    kw: dict[str, object] = {"package": str(PROBE), "module": "probe.task", **keywords}
    with pytest.raises(SpecError, match=message):
        job_from_keywords(None, None, {**kw})  # type: ignore[arg-type]
    assert Job(package=PROBE, module="probe.task").spec.package == str(PROBE)  # a path object names a directory as well


def test_a_job_given_a_store_is_recorded_there_and_only_there(tmp_path: Path) -> None:
    # No TFJOB_HOME patching: the store is a value the job (and its detached supervisor) is given.
    mine = JobStore(tmp_path / "mine" / "jobs.db")
    job = Job(str(PROBE), "probe.task", workers=1, quiet=True, job_dir=str(tmp_path / "out"), backend=Local(), store=mine)
    handle = job.submit()
    assert handle.store is mine and job.backend.store is mine
    assert handle.wait(timeout=120).state is JobState.SUCCEEDED
    record = mine.get(handle.id)
    assert record is not None and Path(str(record.log_dir)).parent == tmp_path / "mine" / "jobs"
    assert "[chief-0] chief-0 ready" in list(get_job(handle.id, store=mine).logs())
    assert JobStore().list() == []  # the user's store never saw it
    with pytest.raises(JobNotFoundError, match=f"no job '{handle.id}'"):
        get_job(handle.id)
    from tfjob.backends.local import LocalBackend

    with pytest.raises(SpecError, match="give the store once"):
        Job(str(PROBE), "probe.task", backend=LocalBackend(store=mine), store=JobStore(tmp_path / "other.db"))
