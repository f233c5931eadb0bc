"""Helpers for the tests that run real local clusters (probe trainer, CLI processes, PIDs)."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest
from helpers import BIN, ROOT

from tfjob.backends.local.reap import reap_lost
from tfjob.runtime.store import JobStore, process_alive

#: The probe trainer (tests/data/trainers/probe): reports its task, then does as told.
PROBE = ROOT / "tests" / "data" / "trainers" / "probe"
TFJOB = str(BIN / "tfjob")


def probe_args(*extra: str, workers: int = 1, ps: int = 0, job_dir: Path | None = None) -> list[str]:
    """``submit PROBE -m probe.task --workers N [--ps M] [--job-dir D] *extra``."""
    args = ["submit", str(PROBE), "-m", "probe.task"]
    if workers:
        args += ["--workers", str(workers)]
    if ps:
        args += ["--ps", str(ps)]
    if job_dir is not None:
        # The probe also finds it in PROBE_JOB_DIR: Kubeflow passes no --job-dir to a trainer.
        args += ["--job-dir", str(job_dir), "--env", f"PROBE_JOB_DIR={job_dir}"]
    return args + list(extra)


def start_cli(args: list[str]) -> subprocess.Popen[str]:
    """``tfjob ARGS`` as a real process (its own process group: signals reach only it)."""
    return subprocess.Popen([TFJOB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def read_until(proc: subprocess.Popen[str], needles: Iterable[str], timeout: float = 60.0, stdout: bool = False) -> str:
    """Read the process' stderr (or stdout) until every needle has appeared; return what was read.

    Reads the pipe's file descriptor directly: the text wrapper's buffer would hide
    lines from the selector.
    """
    stream = proc.stdout if stdout else proc.stderr
    assert stream is not None
    fd = stream.fileno()
    wanted = set(needles)
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while any(n.encode() not in seen for n in wanted):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise AssertionError(f"timed out waiting for {sorted(wanted)}; read so far:\n{seen.decode()}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"tfjob ended (rc={proc.wait()}) before {sorted(wanted)}; read:\n{seen.decode()}")
            seen += chunk
    return seen.decode()


def ready_lines(names: Iterable[str]) -> list[str]:
    """What the probe prints once each task is up."""
    return [f"{name} ready" for name in names]


def reports(job_dir: Path) -> dict[str, dict[str, Any]]:
    """What each probe task reported: task name → report."""
    out = {}
    for path in sorted((job_dir / "tasks").glob("*.json")):
        data = json.loads(path.read_text())
        out[data["task"]] = data
    return out


def wait_for_reports(job_dir: Path, count: int, timeout: float = 60.0) -> dict[str, dict[str, Any]]:
    """Wait until ``count`` probe tasks have reported (they are up and running)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = reports(job_dir) if (job_dir / "tasks").exists() else {}
        if len(seen) >= count:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"only {sorted(seen)} reported within {timeout}s")
        time.sleep(0.02)


def only_job_id() -> str:
    with JobStore() as store:
        records = store.list()
    assert len(records) == 1, [r.id for r in records]
    return records[0].id


def job_processes(job_id: str, job_dir: Path | None = None) -> list[tuple[int, int | None]]:
    """(pid, start time) of every task of the job, and of any child a probe task started."""
    with JobStore() as store:
        found = [(t.pid, t.proc_start) for t in store.tasks(job_id) if t.pid]
    if job_dir is not None and (job_dir / "tasks").exists():
        for report in reports(job_dir).values():
            if report.get("grandchild"):
                found.append((report["grandchild"], report["grandchild_start"]))
    assert found, f"job {job_id} recorded no task processes"
    return found


def assert_no_survivors(processes: list[tuple[int, int | None]], within: float = 5.0) -> None:
    """Every process is gone (within a moment: SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid, start in processes if process_alive(pid, start)]
        if not alive:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"processes outlived their job: {alive}")
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def no_leftover_jobs() -> Iterator[None]:
    """After each test, cancel any local job it left running (a failed test must not leak a cluster)."""
    yield
    from tfjob.backends.local.backend import LocalBackend
    from tfjob.job import JobHandle

    with JobStore() as store:
        live = [r.id for r in store.list(backend="local") if not reap_lost(store, r).state.is_terminal]
        for job_id in live:
            LocalBackend(store=store).cancel(job_id)
    for job_id in live:
        JobHandle("local", job_id).wait(timeout=60)
