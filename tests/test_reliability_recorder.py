"""The reliability recorder itself: it sees orphans and lost jobs, and says so (real processes, real store).

These tests use a recorder of their own, so the session's summary line is untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from reliability import Reliability

from tfjob.model import JobState
from tfjob.runtime.store import JobRecord, JobStore, TaskRecord, process_alive, process_start_time


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process that would run for a minute (in its own group, as a task is); killed afterwards."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _job(job_id: str, state: JobState, **fields: object) -> JobRecord:
    return JobRecord(id=job_id, backend="local", name=job_id, state=state, **fields)  # type: ignore[arg-type]


def _reap(proc: subprocess.Popen[bytes]) -> None:
    # The recorder kills; only the parent can reap, and a zombie still has a start time.
    proc.wait(timeout=60)


def test_a_task_alive_after_its_job_ended_is_an_orphan_and_is_killed(sleeper: subprocess.Popen[bytes]) -> None:
    recorder = Reliability(settle_seconds=0.2)
    start = process_start_time(sleeper.pid)
    with JobStore() as store:
        store.add(_job("done-1", JobState.SUCCEEDED))
        store.put_task("done-1", TaskRecord("worker-0", "worker", 0, JobState.SUCCEEDED, pid=sleeper.pid, proc_start=start))
    problems = recorder.settle()
    _reap(sleeper)
    assert problems == [f"1 process(es) outlived their job: pids [{sleeper.pid}]"]
    assert (recorder.orphans, recorder.lost) == (1, 0)
    assert not process_alive(sleeper.pid, start)


def test_a_job_left_running_by_a_live_launcher_is_lost(sleeper: subprocess.Popen[bytes]) -> None:
    recorder = Reliability(settle_seconds=0.2)
    with JobStore() as store:
        store.add(_job("run-1", JobState.RUNNING, supervisor_pid=sleeper.pid, supervisor_start=process_start_time(sleeper.pid)))
    problems = recorder.settle()
    _reap(sleeper)
    # The live launcher is an orphan too: nothing of a finished test may still run.
    assert "job run-1 (local) was left RUNNING" in problems
    assert (recorder.orphans, recorder.lost) == (1, 1)


def test_a_job_whose_launcher_died_shows_lost_and_is_accounted_for() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    recorder = Reliability(settle_seconds=0.2)
    with JobStore() as store:
        store.add(_job("gone-1", JobState.RUNNING, supervisor_pid=dead.pid, supervisor_start=1))
    assert recorder.settle() == []
    assert (recorder.orphans, recorder.lost) == (0, 0)
    from tfjob.backends import get_backend

    assert get_backend("local", JobStore()).status("gone-1").state is JobState.LOST  # what `tfjob status` / `tfjob list` show


def test_a_job_a_service_created_but_the_store_does_not_know_is_lost() -> None:
    recorder = Reliability(settle_seconds=0.2)
    with JobStore() as store:
        store.add(JobRecord(id="111", backend="vertex", name="j", state=JobState.SUCCEEDED))
    recorder.expect_recorded(["111", "222"])
    assert recorder.settle() == ["vertex job 222 was created but is not in the job store"]
    assert recorder.lost == 1
    assert recorder.settle() == []  # what was expected is checked once


def test_watched_processes_count_and_the_summary_line(sleeper: subprocess.Popen[bytes]) -> None:
    recorder = Reliability(settle_seconds=0.2)
    recorder.tried(10_000)
    recorder.fault("ps SIGKILL")
    recorder.fault("vertex 503", 3)
    recorder.watch([(sleeper.pid, process_start_time(sleeper.pid))])
    assert recorder.settle() == [f"1 process(es) outlived their job: pids [{sleeper.pid}]"]
    _reap(sleeper)
    recorder.packaged(2)
    assert recorder.output("x\nTraceback (most recent call last):\n  boom").startswith("x")
    assert recorder.line() == (
        "reliability: 10000 inputs tried, 4 faults injected, 0 jobs lost, 1 orphans, 2 secrets packaged, 1 tracebacks"
    )
    assert recorder.kinds == {"ps SIGKILL": 1, "vertex 503": 3}


def test_what_no_test_may_add_to_is_said_as_problems() -> None:
    recorder = Reliability()
    before = recorder.unallowed()
    assert recorder.unallowed_since(before) == [] and not recorder.failed()
    recorder.packaged(0)
    recorder.output("no traceback here")
    assert recorder.unallowed_since(before) == [] and not recorder.failed()
    recorder.packaged(2)
    recorder.output("Traceback (most recent call last):\n  x\nTraceback (most recent call last):\n")
    assert recorder.unallowed_since(before) == [
        "2 secret(s) or link target(s) went into a package",
        "2 Python traceback(s) in what a command printed",
    ]
    assert recorder.failed()


INNER = """
import pytest


def test_a_traceback(reliability):
    reliability.output("Traceback (most recent call last):\\n  boom")


@pytest.mark.reliability
def test_a_secret(reliability):
    reliability.packaged(1)


def test_clean(reliability):
    reliability.output("fine")
    reliability.packaged(0)
"""


def test_a_test_that_counts_a_traceback_or_a_secret_fails_and_so_does_the_run(tmp_path: Path) -> None:
    # A pytest run of its own, with the recorder plugin (tests/reliability.py) and nothing else of this suite.
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    reliability: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "reliability", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "reliability: 1 Python traceback(s) in what a command printed" in done.stdout
    assert "reliability: 1 secret(s) or link target(s) went into a package" in done.stdout
    assert "1 secrets packaged, 1 tracebacks — the run fails on these" in done.stdout
