"""The job store: ids, prefixes, state history, supervisors, LOST jobs, concurrency."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tfjob.model import JobState
from tfjob.errors import JobNotFoundError, UsageError
from tfjob.runtime.store import (
    JobRecord,
    JobStore,
    TaskRecord,
    make_job_id,
    process_alive,
    process_start_time,
)
from tfjob.backends.local.reap import reap_lost, stop_orphan_group


def _record(job_id: str = "", name: str = "trainer-20261122-153000", **kw: object) -> JobRecord:
    return JobRecord(id=job_id, backend=str(kw.pop("backend", "local")), name=name, state=JobState.PENDING, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / "jobs.db")
    yield s
    s.close()


def _dead_pid() -> tuple[int, int | None]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(proc.pid)
    proc.wait()
    return proc.pid, start


# -- ids -----------------------------------------------------------------------------------
def test_job_id_drops_the_default_date_and_keeps_it_short() -> None:
    assert make_job_id("trainer-20261122-153000", "3fa9c1") == "trainer-3fa9c1"
    assert make_job_id("Census PS / run #2", "000aaa") == "census-ps-run-2-000aaa"
    assert make_job_id("---", "abcdef") == "job-abcdef"
    long_id = make_job_id("x" * 100)
    assert len(long_id) == 20 + 1 + 6


def test_add_new_gives_distinct_ids_and_a_duplicate_is_refused(store: JobStore) -> None:
    ids = {store.add_new(_record()).id for _ in range(50)}
    assert len(ids) == 50
    assert all(i.startswith("trainer-") and len(i) == len("trainer-") + 6 for i in ids)
    with pytest.raises(UsageError, match="exists already"):
        store.add(_record(sorted(ids)[0]))


def test_resolve_takes_a_unique_prefix(store: JobStore) -> None:
    store.add(_record("census-aaaaaa"))
    store.add(_record("census-aabbbb"))
    store.add(_record("mnist-cccccc"))
    assert store.resolve("mnist").id == "mnist-cccccc"
    assert store.resolve("census-aab").id == "census-aabbbb"
    assert store.resolve("census-aaaaaa").id == "census-aaaaaa"
    with pytest.raises(UsageError, match="ambiguous.*census-aa"):
        store.resolve("census-aa")
    with pytest.raises(JobNotFoundError, match="no job 'nope'.*tfjob list"):
        store.resolve("nope")
    # LIKE wildcards in a prefix are literal characters.
    with pytest.raises(JobNotFoundError, match="no job"):
        store.resolve("c_nsus")
    # An empty id is a mistake, not a prefix of every job.
    for empty in ("", "  "):
        with pytest.raises(UsageError, match="job id cannot be empty"):
            store.resolve(empty)


# -- states --------------------------------------------------------------------------------
def test_state_history_and_terminal_states_are_final(store: JobStore) -> None:
    store.add(_record("j-1"))
    assert store.set_state("j-1", JobState.RUNNING)
    assert store.get("j-1").started is not None  # type: ignore[union-attr]
    assert store.set_state("j-1", JobState.SUCCEEDED, "chief-0 exited with code 0", exit_code=0)
    assert not store.set_state("j-1", JobState.FAILED, "too late")
    record = store.get("j-1")
    assert record is not None and record.state is JobState.SUCCEEDED and record.exit_code == 0
    assert record.ended is not None
    assert [(s, m) for _, s, m in store.events("j-1")] == [
        (JobState.PENDING, ""),
        (JobState.RUNNING, ""),
        (JobState.SUCCEEDED, "chief-0 exited with code 0"),
    ]


def test_only_from_keeps_a_cancel_that_came_first(store: JobStore) -> None:
    store.add(_record("j-2"))
    assert store.set_state("j-2", JobState.CANCELLING, "cancel requested")
    assert not store.set_state("j-2", JobState.RUNNING, only_from=(JobState.PENDING,))
    assert store.state("j-2") is JobState.CANCELLING
    with pytest.raises(JobNotFoundError, match="no job 'missing'"):
        store.state("missing")


def test_update_refuses_unknown_columns(store: JobStore) -> None:
    store.add(_record("j-3"))
    with pytest.raises(TypeError, match="unknown job columns: \\['colour'\\]"):
        store.update("j-3", colour="red")


def test_tasks_come_back_chief_first(store: JobStore) -> None:
    store.add(_record("j-4"))
    store.put_tasks(
        "j-4",
        [
            TaskRecord("ps-0", "ps", 0, JobState.RUNNING, pid=3),
            TaskRecord("worker-1", "worker", 1, JobState.RUNNING, pid=2),
            TaskRecord("evaluator-0", "evaluator", 0, JobState.RUNNING),
            TaskRecord("chief-0", "chief", 0, JobState.RUNNING, pid=1, proc_start=42),
            TaskRecord("worker-0", "worker", 0, JobState.RUNNING),
        ],
    )
    store.put_task("j-4", TaskRecord("worker-1", "worker", 1, JobState.FAILED, pid=2, exit_code=3))
    tasks = store.tasks("j-4")
    assert [t.name for t in tasks] == ["chief-0", "worker-0", "worker-1", "ps-0", "evaluator-0"]
    assert tasks[0].proc_start == 42
    assert tasks[2].state is JobState.FAILED and tasks[2].exit_code == 3
    status = store.status("j-4")
    assert [t.name for t in status.tasks][0] == "chief-0"


def test_list_newest_first_with_limit_and_backend(store: JobStore) -> None:
    for i, backend in enumerate(["local", "vertex", "local"]):
        store.add(_record(f"j-{i}", backend=backend, created=1000.0 + i))
    assert [r.id for r in store.list()] == ["j-2", "j-1", "j-0"]
    assert [r.id for r in store.list(limit=1)] == ["j-2"]
    assert [r.id for r in store.list(backend="local")] == ["j-2", "j-0"]


# -- processes and LOST jobs ---------------------------------------------------------------
def test_process_start_time_tells_live_dead_and_zombie() -> None:
    assert process_start_time(os.getpid()) is not None
    assert process_alive(os.getpid(), process_start_time(os.getpid()))
    assert not process_alive(os.getpid(), (process_start_time(os.getpid()) or 0) + 1)  # a reused pid
    pid, start = _dead_pid()
    assert process_start_time(pid) is None and not process_alive(pid, start)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    assert process_start_time(zombie.pid) is None
    zombie.wait()


def test_a_job_whose_supervisor_died_is_lost(store: JobStore) -> None:
    pid, start = _dead_pid()
    store.add(_record("j-lost", supervisor_pid=pid, supervisor_start=start))
    store.set_state("j-lost", JobState.RUNNING)
    store.put_tasks("j-lost", [TaskRecord("chief-0", "chief", 0, JobState.RUNNING)])
    # Reading the store changes nothing: the job is as recorded until the local backend reaps it.
    before = store.events("j-lost")
    assert store.status("j-lost").state is JobState.RUNNING and [r.state for r in store.list()] == [JobState.RUNNING]
    assert store.events("j-lost") == before and store.tasks("j-lost")[0].state is JobState.RUNNING
    record = reap_lost(store, store.get("j-lost"))  # type: ignore[arg-type]
    assert record.state is JobState.LOST
    assert f"pid {pid}" in record.message
    assert store.tasks("j-lost")[0].state is JobState.LOST
    assert store.status("j-lost").state is JobState.LOST


def test_a_live_supervisor_keeps_its_job_and_an_ended_job_stays_ended(store: JobStore) -> None:
    store.add(_record("j-live", supervisor_pid=os.getpid(), supervisor_start=process_start_time(os.getpid())))
    assert reap_lost(store, store.get("j-live")).state is JobState.PENDING  # type: ignore[arg-type]
    pid, start = _dead_pid()
    store.add(_record("j-done", supervisor_pid=pid, supervisor_start=start))
    store.set_state("j-done", JobState.SUCCEEDED)
    assert reap_lost(store, store.get("j-done")).state is JobState.SUCCEEDED  # type: ignore[arg-type]
    # A live process with another start time is not the supervisor (its pid was reused).
    store.add(_record("j-reused", supervisor_pid=os.getpid(), supervisor_start=1))
    assert reap_lost(store, store.get("j-reused")).state is JobState.LOST  # type: ignore[arg-type]


_LEADER = textwrap.dedent(
    """
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(child.pid, flush=True)
    """
)


def test_reaping_a_lost_job_kills_what_is_left_of_its_task_groups(store: JobStore) -> None:
    # A task (group leader) that left a child behind in its process group, then died.
    leader = subprocess.Popen([sys.executable, "-c", _LEADER], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    leader_start = process_start_time(leader.pid)
    leader.wait()
    child_start = process_start_time(child)
    assert child_start is not None
    pid, start = _dead_pid()
    store.add(_record("j-orphans", supervisor_pid=pid, supervisor_start=start))
    store.put_tasks("j-orphans", [TaskRecord("chief-0", "chief", 0, JobState.RUNNING, pid=leader.pid, proc_start=leader_start)])
    reap_lost(store, store.get("j-orphans"))  # type: ignore[arg-type]
    deadline = time.monotonic() + 60
    while process_alive(child, child_start) and time.monotonic() < deadline:
        time.sleep(0.01)  # SIGKILL is delivered asynchronously; init reaps the orphan
    assert not process_alive(child, child_start)


def test_an_unrelated_process_with_a_tasks_old_pid_is_left_alone() -> None:
    # This very process is a live process whose start time does not match: never touched.
    stop_orphan_group(os.getpid(), 1)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        stop_orphan_group(other.pid, (process_start_time(other.pid) or 0) + 1)
        stop_orphan_group(other.pid, None)
        with pytest.raises(subprocess.TimeoutExpired, match=r"timed out after 2 seconds"):  # a signal sent would have ended it by then
            other.wait(timeout=2)
    finally:
        other.kill()
        other.wait()


# -- the file itself -----------------------------------------------------------------------
def test_an_older_database_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, backend TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,"
        " spec TEXT NOT NULL DEFAULT '{}', options TEXT NOT NULL DEFAULT '{}', message TEXT NOT NULL DEFAULT '',"
        " failed_task TEXT, exit_code INTEGER, created REAL NOT NULL, started REAL, ended REAL,"
        " supervisor_pid INTEGER, log_dir TEXT, extra TEXT NOT NULL DEFAULT '{}');"
        "CREATE TABLE tasks (job_id TEXT NOT NULL, name TEXT NOT NULL, role TEXT NOT NULL, idx INTEGER NOT NULL,"
        " state TEXT NOT NULL, pid INTEGER, exit_code INTEGER, signal INTEGER, started REAL, ended REAL,"
        " log_path TEXT, PRIMARY KEY (job_id, name));"
        "INSERT INTO jobs (id, backend, name, state, created) VALUES ('old-1', 'local', 'old', 'SUCCEEDED', 1.0);"
    )
    conn.commit()
    conn.close()
    with JobStore(path) as store:
        assert store.get("old-1").supervisor_start is None  # type: ignore[union-attr]
        store.put_task("old-1", TaskRecord("chief-0", "chief", 0, JobState.SUCCEEDED, proc_start=7))
        assert store.tasks("old-1")[0].proc_start == 7


_WRITER = textwrap.dedent(
    """
    import sys
    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore
    store = JobStore(sys.argv[1])
    for i in range(40):
        r = store.add_new(JobRecord(id="", backend="local", name="w" + sys.argv[2], state=JobState.PENDING))
        store.set_state(r.id, JobState.RUNNING)
        store.set_state(r.id, JobState.SUCCEEDED, "done")
        store.list(limit=5)
    """
)


def test_concurrent_writers_keep_the_database_consistent(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    JobStore(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(n)], stderr=subprocess.PIPE) for n in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with JobStore(path) as store:
        records = store.list()
        assert len(records) == 120 and len({r.id for r in records}) == 120
        assert all(r.state is JobState.SUCCEEDED for r in records)
        assert all([s for _, s, _ in store.events(r.id)] == [JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED] for r in records)
