"""Issue 36, high 1: a healthy job is never recorded LOST by a reader that races its hand-off.

A detached submit records the job under the submitting command's pid, starts the job's
supervisor, rewrites the row to name it, and ends. A ``tfjob list`` / ``status`` that read
the row before the rewrite and checks the pid after the command ended finds it gone: the
job must stay as its new supervisor keeps it. A row whose state this version does not know
(a later version's ``PREEMPTED``) or that recorded an end is not rewritten LOST either.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tfjob.backends.local.reap import reap_lost
from tfjob.model import JobState
from tfjob.runtime.store import JobRecord, JobStore, process_start_time


def _dead_pid() -> tuple[int, int | None]:
    """A pid that ran and ended (its start time as it was)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    start = process_start_time(proc.pid)
    proc.wait()
    return proc.pid, start


def test_a_reader_that_saw_the_submitters_pid_does_not_record_the_handed_off_job_lost(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    submitter, submitter_start = _dead_pid()
    record = JobRecord(
        id="", backend="local", name="trainer", state=JobState.PENDING, supervisor_pid=submitter, supervisor_start=submitter_start
    )
    store.add_new(record)
    seen = store.get(record.id)  # what `tfjob list` read before the hand-off
    assert seen is not None and seen.supervisor_pid == submitter
    # The hand-off: the row now names the supervisor (a live process: this one), the submitter ended.
    store.update(record.id, supervisor_pid=os.getpid(), supervisor_start=process_start_time(os.getpid()))
    after = reap_lost(store, seen)
    assert after.state is JobState.PENDING, after.message
    assert store.state(record.id) is JobState.PENDING
    assert [state for _, state, _ in store.events(record.id)] == [JobState.PENDING]


def test_a_job_whose_supervisor_died_is_still_recorded_lost(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    pid, start = _dead_pid()
    record = store.add_new(
        JobRecord(id="", backend="local", name="trainer", state=JobState.RUNNING, supervisor_pid=pid, supervisor_start=start)
    )
    after = reap_lost(store, store.get(record.id) or record)
    assert after.state is JobState.LOST
    assert f"pid {pid}" in after.message


def test_a_row_in_a_later_versions_state_is_not_rewritten_lost_by_list(tmp_path: Path, tfjob_exe: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    store = JobStore(home / "jobs.db")
    pid, start = _dead_pid()
    record = store.add_new(
        JobRecord(id="", backend="local", name="trainer", state=JobState.RUNNING, supervisor_pid=pid, supervisor_start=start)
    )
    store.close()
    with sqlite3.connect(home / "jobs.db") as db:  # as a later version records a preempted job that then succeeded
        db.execute("UPDATE jobs SET state = 'PREEMPTED', ended = ? WHERE id = ?", (time.time(), record.id))
    db.close()
    out = subprocess.run([tfjob_exe, "list"], capture_output=True, text=True, timeout=120, env={**os.environ, "TFJOB_HOME": str(home)})
    assert out.returncode == 0, out.stderr
    assert "LOST" not in out.stdout and "supervisor" not in out.stdout, out.stdout
    with sqlite3.connect(home / "jobs.db") as db:
        assert db.execute("SELECT state FROM jobs WHERE id = ?", (record.id,)).fetchone()[0] == "PREEMPTED"
        assert db.execute("SELECT count(*) FROM events WHERE job_id = ? AND state = 'LOST'", (record.id,)).fetchone()[0] == 0
    db.close()


def test_a_job_that_recorded_its_end_is_not_rewritten_lost(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    pid, start = _dead_pid()
    record = store.add_new(
        JobRecord(id="", backend="local", name="trainer", state=JobState.RUNNING, supervisor_pid=pid, supervisor_start=start)
    )
    store.update(record.id, ended=time.time())
    assert reap_lost(store, store.get(record.id) or record).state is JobState.RUNNING
