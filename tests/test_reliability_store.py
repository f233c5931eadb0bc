"""Faults of the job store and its disk: one ``error:`` line naming the file and the fix, nothing lost.

A damaged store is moved aside (and the place said), never silently reset; a read-only or
full ``TFJOB_HOME`` still lists; a disk that fills while a job runs stops the log files,
not the job, and the job's end is still recorded. The read-only and full disks are real:
a bind mount and a small tmpfs in a private mount namespace (``unshare``, as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import need_in_ci, write_trainer

from reliability import Reliability


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "work", "for i in range(20000):\n    print('x' * 100, i)\nprint('done training')\n").parent


def tfjob(tfjob_exe: str, home: Path, *args: str, reliability: Reliability) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([tfjob_exe, *args], capture_output=True, text=True, timeout=120, env={**os.environ, "TFJOB_HOME": str(home)})
    reliability.tried()
    reliability.output(out.stdout + out.stderr)
    return out


def errors(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stderr.splitlines() if line.startswith("error:")]


def in_namespace(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a private mount namespace (its mounts vanish with it)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        need_in_ci(False, "the store-fault tests need root and unshare for a private mount namespace (CI runs as root)")
    return subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=180, cwd=cwd)


@pytest.mark.reliability
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_store_is_moved_aside_and_said(tmp_path: Path, tfjob_exe: str, reliability: Reliability, damage: str) -> None:
    home = tmp_path / "home"
    assert tfjob(tfjob_exe, home, "list", reliability=reliability).returncode == 0
    store = home / "jobs.db"
    if damage == "garbage":
        store.write_bytes(b"this is not sqlite" * 100)
    else:
        os.truncate(store, 3000)
    reliability.fault(f"store {damage}")
    out = tfjob(tfjob_exe, home, "list", reliability=reliability)
    assert out.returncode == 0, out.stderr
    aside = sorted(p for p in home.glob("jobs.db.damaged-*") if not p.name.endswith(("-wal", "-shm")))
    assert len(aside) == 1 and aside[0].name in out.stderr and "moved it to" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.reliability
@pytest.mark.parametrize("fault", ["store is a directory", "home is a file"])
def test_a_store_in_the_way_is_one_line(tmp_path: Path, tfjob_exe: str, reliability: Reliability, fault: str) -> None:
    home = tmp_path / "home"
    if fault == "store is a directory":
        (home / "jobs.db").mkdir(parents=True)
    else:
        home.write_text("not a directory")
    reliability.fault(fault)
    for command in (["list"], ["status", "abc"]):
        out = tfjob(tfjob_exe, home, *command, reliability=reliability)
        assert out.returncode == 1, out.stderr
        assert len(errors(out)) == 1 and str(home) in errors(out)[0] and "Traceback" not in out.stderr


@pytest.mark.reliability
def test_a_read_only_home_still_lists_and_a_submit_says_why(
    tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability
) -> None:
    home = tmp_path / "home"
    quick = tmp_path / "quick" / "trainer"
    quick.mkdir(parents=True)
    (quick / "__init__.py").write_text("")
    (quick / "task.py").write_text("print('ok')\n")
    assert tfjob(tfjob_exe, home, "submit", str(quick.parent), "-m", "trainer.task", reliability=reliability).returncode == 0
    reliability.fault("read-only TFJOB_HOME")
    exe = tfjob_exe
    done = in_namespace(
        f"mount --bind -o ro {home} {home} && "
        f"TFJOB_HOME={home} {exe} list; echo rc=$?; TFJOB_HOME={home} {exe} submit {quick.parent} -m trainer.task; echo rc=$?",
        tmp_path,
    )
    reliability.output(done.stdout + done.stderr)
    assert "SUCCEEDED" in done.stdout and "rc=0" in done.stdout, done.stdout + done.stderr
    assert "rc=1" in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(home) in lines[0] and "writable" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.reliability
def test_a_disk_that_fills_mid_run_keeps_the_job_and_says_so(
    tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability
) -> None:
    home = tmp_path / "small"
    home.mkdir()
    reliability.fault("ENOSPC mid-run")
    done = in_namespace(
        f"mount -t tmpfs -o size=1m tmpfs {home} && "
        f"TFJOB_HOME={home} {tfjob_exe} submit {trainer} -m trainer.task; echo rc=$?; TFJOB_HOME={home} {tfjob_exe} list",
        tmp_path,
    )
    reliability.output(done.stdout + done.stderr)
    assert "rc=0" in done.stdout, done.stderr[-3000:]
    assert "cannot write the job's logs any more" in done.stderr and "No space left on device" in done.stderr
    assert "done training" in done.stderr  # the console still shows the output
    assert "SUCCEEDED" in done.stdout.split("rc=0", 1)[1]  # the store recorded the end
    assert "LOST" not in done.stdout and "Traceback" not in done.stderr


@pytest.mark.reliability
def test_a_full_disk_before_the_job_is_one_line_and_list_still_works(
    tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability
) -> None:
    home = tmp_path / "full"
    home.mkdir()
    reliability.fault("ENOSPC before the job")
    done = in_namespace(
        f"mount -t tmpfs -o size=256k tmpfs {home} && TFJOB_HOME={home} {tfjob_exe} list >/dev/null && "
        f"dd if=/dev/zero of={home}/fill bs=1k count=1024 2>/dev/null; "
        f"TFJOB_HOME={home} {tfjob_exe} submit {trainer} -m trainer.task; echo rc=$?; TFJOB_HOME={home} {tfjob_exe} list; echo rc=$?",
        tmp_path,
    )
    reliability.output(done.stdout + done.stderr)
    assert done.stdout.count("rc=") == 2 and "rc=1" in done.stdout and done.stdout.rstrip().endswith("rc=0"), done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "disk" in lines[0] and str(home) in lines[0], done.stderr
    assert "Traceback" not in done.stderr


# -- rows this version cannot read as written (issue 24) ---------------------------------------
ODD_ROWS = [
    # (id, column values, what list/status show)
    ("later-1", {"state": "PREEMPTED"}, "UNKNOWN"),  # a state a later version adds
    ("blank-1", {"state": ""}, "UNKNOWN"),
    ("json-1", {"state": "SUCCEEDED", "spec": "{nope", "options": "[1]", "extra": '{"a":'}, "SUCCEEDED"),
    ("deep-1", {"state": "FAILED", "extra": "[" * 100_000}, "FAILED"),
    ("time-1", {"state": "FAILED", "created": "yesterday", "started": 1e300, "ended": "x", "exit_code": "one"}, "FAILED"),
    ("pid-1", {"state": "RUNNING", "supervisor_pid": "abc", "supervisor_start": 1e30}, "RUNNING"),
    ("blob-1", {"state": "CANCELLED", "name": b"\xff\xfename", "message": b"\x00"}, "CANCELLED"),
]


def _insert_odd_rows(store: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(store)
    for job_id, values, _ in ODD_ROWS:
        row = {"id": job_id, "backend": "local", "name": job_id, "created": 1_700_000_000.0, **values}
        conn.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
    conn.execute("INSERT INTO events (job_id, ts, state, message) VALUES ('later-1', 'soon', 'PREEMPTED', 'spot VM reclaimed')")
    conn.execute(
        "INSERT INTO tasks (job_id, name, role, idx, state, pid, started, restart_history) "
        "VALUES ('later-1', 'chief-0', 'chief', 'x', 'EVICTED', 'abc', 'zz', '{')"
    )
    conn.commit()
    conn.close()


@pytest.mark.reliability
def test_rows_this_version_cannot_read_are_shown_not_tracebacks(tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    home = tmp_path / "home"
    assert tfjob(tfjob_exe, home, "list", reliability=reliability).returncode == 0  # makes the store
    _insert_odd_rows(home / "jobs.db")
    reliability.fault("store rows of a later version", len(ODD_ROWS))
    listed = tfjob(tfjob_exe, home, "list", reliability=reliability)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr[-2000:]
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    for job_id, _, state in ODD_ROWS:
        assert state in lines[job_id].split(), lines[job_id]
    # The JSON listing and the status of each row, in both forms.
    assert tfjob(tfjob_exe, home, "list", "--json", reliability=reliability).returncode == 0
    for job_id, _, state in ODD_ROWS:
        shown = tfjob(tfjob_exe, home, "status", job_id, reliability=reliability)
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, (job_id, shown.stderr[-2000:])
        assert f"state     {state}" in shown.stdout
        as_json = tfjob(tfjob_exe, home, "status", job_id, "--json", reliability=reliability)
        assert as_json.returncode == 0, as_json.stderr[-2000:]
        import json

        assert json.loads(as_json.stdout)["state"] == state
    later = tfjob(tfjob_exe, home, "status", "later-1", reliability=reliability).stdout
    assert "state 'PREEMPTED' is not one this version of tfjob knows" in later and "spot VM reclaimed" in later
    # A Vertex AI job of a later version, still running there: its status is asked of the
    # service, and a record without its project says so in one line.
    import sqlite3

    with sqlite3.connect(home / "jobs.db") as conn:
        conn.execute("INSERT INTO jobs (id, backend, name, state, options, created) VALUES ('v-1', 'vertex', 'v', 'PREEMPTED', '{}', 1)")
    out = tfjob(tfjob_exe, home, "status", "v-1", reliability=reliability)
    assert out.returncode == 2 and errors(out) == [errors(out)[0]] and "its job store record names no project" in out.stderr, out.stderr


def test_a_row_read_in_python_keeps_what_can_be_read(tmp_path: Path) -> None:
    from tfjob.model import JobState
    from tfjob.runtime.store import JobStore

    with JobStore(tmp_path / "jobs.db") as store:
        pass
    _insert_odd_rows(tmp_path / "jobs.db")
    with JobStore(tmp_path / "jobs.db") as store:
        records = {r.id: r for r in store.list()}
        assert records["later-1"].state is JobState.UNKNOWN and not JobState.UNKNOWN.is_terminal
        assert records["json-1"].spec == {} and records["json-1"].options == {} and records["json-1"].extra == {}
        assert (records["time-1"].created, records["time-1"].started, records["time-1"].exit_code) == (0.0, None, None)
        assert records["pid-1"].supervisor_pid is None and records["pid-1"].supervisor_start is None
        assert records["blob-1"].name == "\ufffd\ufffdname"
        (task,) = store.tasks("later-1")
        assert (task.state, task.pid, task.started, task.index, task.restart_history) == (JobState.UNKNOWN, None, None, 0, [])
        assert [state for _, state, _ in store.events("later-1")] == [JobState.UNKNOWN]
        # A later state change of this version's is still recorded over UNKNOWN (it is not an end).
        assert store.set_state("later-1", JobState.SUCCEEDED, "done")
        assert store.get("later-1").state is JobState.SUCCEEDED


@pytest.mark.reliability
@pytest.mark.parametrize("kind", ["dangling link", "fifo"])
def test_a_home_that_cannot_hold_the_store_is_said_as_what_it_is(
    tmp_path: Path, tfjob_exe: str, reliability: Reliability, kind: str
) -> None:
    home = tmp_path / "home"
    if kind == "dangling link":
        home.symlink_to(tmp_path / "gone")
        needle = f"{home} (TFJOB_HOME) is a symbolic link to {tmp_path / 'gone'}, which does not exist"
    else:
        home.mkdir()
        os.mkfifo(home / "jobs.db")
        needle = f"{home / 'jobs.db'} is a FIFO (named pipe), not the job store"
    reliability.fault(f"TFJOB_HOME {kind}")
    for args in (["list"], ["status", "nope-1"]):
        out = tfjob(tfjob_exe, home, *args, reliability=reliability)
        assert out.returncode != 0 and errors(out) == [f"error: {needle}" + errors(out)[0][len(needle) + 7 :]], out.stderr
        assert "File exists" not in out.stderr and "disk full" not in out.stderr and "Traceback" not in out.stderr
