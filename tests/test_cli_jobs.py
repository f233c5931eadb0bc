"""``tfjob list / status / logs / cancel / wait`` and ``submit --detach``, on real local jobs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import (
    TFJOB,
    assert_no_survivors,
    job_processes,
    probe_args,
    read_until,
    wait_for_reports,
)
from click.testing import CliRunner

from tfjob.model import JobState, JobStatus, TaskStatus
from tfjob.cli.jobs import render_job_list, render_status
from tfjob.cli.main import app
from tfjob.runtime.store import JobStore


def _cli(*argv: str) -> object:
    return CliRunner().invoke(app, list(argv))


def _run(*extra: str, **kw: object) -> str:
    result = CliRunner().invoke(app, probe_args("--quiet", *extra, **kw))  # type: ignore[arg-type]
    return result.stdout.strip() or _latest()


def _latest() -> str:
    with JobStore() as store:
        return store.list(limit=1)[0].id


def _detach(*extra: str, **kw: object) -> str:
    result = CliRunner().invoke(app, probe_args("--detach", *extra, **kw))  # type: ignore[arg-type]
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


# -- pure renderings --------------------------------------------------------------------------
def test_list_and_status_renderings() -> None:
    status = JobStatus(
        id="probe-abc123", backend="local", name="probe-20261122-153000", state=JobState.FAILED,
        message="task worker-1 exited with code 3", created=1000.0, started=1001.0, ended=1013.5,
        failed_task="worker-1", tasks=[TaskStatus("chief-0", JobState.STOPPED, None, 15, 1001.0, 1013.0)],
        extra={"log_dir": "/h/jobs/probe-abc123", "log_tail": "boom\nexit 3"},
    )  # fmt: skip
    table = render_job_list([status]).splitlines()
    assert table[0].split() == ["ID", "NAME", "BACKEND", "STATE", "CREATED", "DURATION"]
    assert table[1].split()[:4] == ["probe-abc123", "probe-20261122-153000", "local", "FAILED"]
    assert table[1].endswith("12.5s")
    text = render_status(status, [(1000.0, JobState.PENDING, ""), (1013.5, JobState.FAILED, "task worker-1 exited with code 3")])
    assert "state     FAILED" in text and "failed    worker-1" in text and "logs      /h/jobs/probe-abc123" in text
    assert text.splitlines()[-3:] == ["last lines of worker-1", "  boom", "  exit 3"]
    assert "  chief-0  STOPPED  SIGTERM  12.0s" in text
    running = JobStatus(id="x", backend="local", name="n", state=JobState.RUNNING, started=100.0)
    assert render_job_list([running], now=160.0).endswith("1m00s")


# -- on real jobs -----------------------------------------------------------------------------
def test_list_status_and_logs_of_finished_jobs() -> None:
    empty = _cli("list")
    assert empty.exit_code == 0 and "no jobs yet" in empty.stderr
    ok = _run("--", "--lines", "3", workers=0)
    failed = _run("--", "--exit", "chief=4", workers=0)
    listed = _cli("list")
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [failed, ok]
    as_json = json.loads(_cli("list", "--json", "--limit", "1").stdout)
    assert [(j["id"], j["state"]) for j in as_json] == [(failed, "FAILED")]
    assert json.loads(_cli("list", "--json", "--backend", "vertex").stdout) == []
    bad = _cli("list", "--backend", "vertx")
    assert bad.exit_code == 2 and "error: --backend 'vertx' is not a backend" in bad.stderr

    status = _cli("status", ok[:-2])  # a unique prefix is enough
    assert status.exit_code == 0
    assert "state     SUCCEEDED" in status.stdout and "  chief-0  SUCCEEDED  0" in status.stdout
    data = json.loads(_cli("status", failed, "--json").stdout)
    assert data["state"] == "FAILED" and data["failed_task"] == "chief-0"
    assert data["extra"]["task_exit_code"] == 4 and "exits with code 4 on purpose" in data["extra"]["log_tail"]
    assert [e["state"] for e in data["events"]] == ["PENDING", "RUNNING", "FAILED"]
    assert "last lines of chief-0" in _cli("status", failed).stdout
    missing = _cli("status", "nope")
    assert missing.exit_code == 2 and missing.stderr.startswith("error: no job 'nope'")

    lines = _cli("logs", ok).stdout.splitlines()
    assert lines[:4] == ["[chief-0] chief-0 ready", "[chief-0] chief-0 line 0", "[chief-0] chief-0 line 1", "[chief-0] chief-0 line 2"]
    assert "[tfjob] job SUCCEEDED: chief-0 exited with code 0" in lines
    assert _cli("logs", ok, "--task", "chief-0", "--tail", "1").stdout == "[chief-0] chief-0 line 2\n"
    wrong = _cli("logs", ok, "--task", "worker-9")
    assert wrong.exit_code == 2 and "--task 'worker-9' is not a task of job" in wrong.stderr and "chief-0" in wrong.stderr

    assert _cli("wait", ok).exit_code == 0
    waited = _cli("wait", failed)
    assert waited.exit_code == 1 and "last lines of chief-0" in waited.stderr
    again = _cli("cancel", ok)
    assert again.exit_code == 0 and "already ended: SUCCEEDED; nothing to cancel" in again.stderr


def test_detach_returns_at_once_and_cancel_stops_the_job(tmp_path: Path) -> None:
    job_id = _detach("--", "--hang", "all", workers=1, job_dir=tmp_path / "out")
    with JobStore() as store:
        record = store.get(job_id)
    assert record is not None and not record.state.is_terminal and record.extra["detached"] is True
    waited = _cli("wait", job_id, "--timeout", "0.3")
    assert waited.exit_code == 1 and f"job {job_id} is still" in waited.stderr
    # Cancel a job that runs (a cancel before the supervisor started it is another test's).
    wait_for_reports(tmp_path / "out", 2, timeout=120)
    cancelled = _cli("cancel", job_id[:-1])
    assert cancelled.exit_code == 0 and f"cancelling job {job_id}" in cancelled.stderr
    done = _cli("wait", job_id)
    assert done.exit_code == 130, done.stderr
    assert "was cancelled: cancel requested with `tfjob cancel`" in done.stderr
    assert_no_survivors(job_processes(job_id, tmp_path / "out"))


def test_logs_follow_a_running_detached_job(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    job_id = _detach("--", "--wait-for", str(gate), "--lines", "2", workers=0, job_dir=tmp_path / "out")
    follower = subprocess.Popen([TFJOB, "logs", job_id, "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = read_until(follower, ["[chief-0] chief-0 line 1"], stdout=True)
        assert follower.poll() is None  # still following: the job has not ended
        gate.touch()
        rest, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert "[chief-0] chief-0 ready" in seen
    assert "job SUCCEEDED: chief-0 exited with code 0" in rest


def _submit_process(job_dir: Path) -> subprocess.Popen[str]:
    argv = probe_args("--quiet", "--", "--wait-tasks", "3", "--lines", "50", workers=2, job_dir=job_dir)
    return subprocess.Popen([TFJOB, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_concurrent_submits_and_lists_keep_the_database_consistent(tmp_path: Path) -> None:
    submits = [_submit_process(tmp_path / f"out{i}") for i in range(2)]
    listings = []
    while any(p.poll() is None for p in submits):
        listed = subprocess.run([TFJOB, "list", "--json"], capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        listings.append(json.loads(listed.stdout))
    ids = []
    for p in submits:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        ids.append(out.strip())
    assert listings and all(len(entries) <= 2 for entries in listings)
    with JobStore() as store:
        records = store.list()
        assert sorted(r.id for r in records) == sorted(ids)
        for r in records:
            assert r.state is JobState.SUCCEEDED
            assert [s for _, s, _ in store.events(r.id)] == [JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED]
            assert [t.name for t in store.tasks(r.id)] == ["chief-0", "worker-0", "worker-1"]
            chief_log = Path(r.log_dir, "chief-0.log").read_text().splitlines()  # type: ignore[arg-type]
            assert chief_log == ["chief-0 ready", *(f"chief-0 line {i}" for i in range(50))]


@pytest.mark.parametrize("command", ["status", "logs", "cancel", "wait"])
def test_every_command_says_when_a_job_is_unknown(command: str) -> None:
    result = _cli(command, "ghost")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no job 'ghost'") and "`tfjob list` shows the known jobs" in result.stderr
