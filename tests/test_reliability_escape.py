"""Processes that leave the job's process groups (``setsid`` double fork, ``start_new_session``)
still end with the job: checked by PID and by scanning every process for the job's id."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from reliability import Reliability
from tfjob import Job
from tfjob.backends.local.contain import job_processes

TRAINER = """\
import os, subprocess, sys, time
mode, out = sys.argv[1], sys.argv[2]
if mode == "popen":
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    open(out, "w").write(str(p.pid))
else:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open(out, "w").write(str(os.getpid()))
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    while not os.path.exists(out):
        time.sleep(0.01)
print("chief done", flush=True)
"""


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    pkg = tmp_path / "work" / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(TRAINER)
    return pkg.parent


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.reliability
@pytest.mark.parametrize("mode", ["popen", "setsid"])
def test_an_escaped_process_ends_with_the_job(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, mode: str) -> None:
    out = tmp_path / "escaped.pid"
    done = subprocess.run(
        [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--workers", "1", "--", mode, str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    reliability.tried()
    reliability.fault(f"chief {mode}")
    reliability.output(done.stderr)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip().splitlines()[-1]
    pid = int(out.read_text())
    assert not alive(pid), f"pid {pid} outlived job {job_id}"
    assert job_processes(job_id) == []
    assert "left their task's process group" in done.stderr


def test_in_a_pipeline_process_the_callers_children_are_left_alone(trainer: Path, tmp_path: Path) -> None:
    own = subprocess.Popen(["sleep", "30"])  # the pipeline's own child, not the job's
    try:
        out = tmp_path / "escaped.pid"
        handle = Job(str(trainer), "trainer.task", args=["setsid", str(out)], quiet=True).run()
        assert handle.state.value == "SUCCEEDED"
        pid = int(out.read_text())
        assert not alive(pid)
        assert own.poll() is None  # still running, and still ours to wait for
    finally:
        own.kill()
        assert own.wait(timeout=10) == -9
    # No zombie of the job is left under this process.
    time.sleep(0.1)
    mine = [p for p in os.listdir("/proc") if p.isdigit()]
    zombies = []
    for p in mine:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            zombies.append(p)
    assert zombies == []
