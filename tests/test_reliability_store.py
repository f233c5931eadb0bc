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

from reliability import Reliability


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    pkg = tmp_path / "work" / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("for i in range(20000):\n    print('x' * 100, i)\nprint('done training')\n")
    return pkg.parent


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
        if os.environ.get("CI") == "true":
            pytest.fail("the store-fault tests need root and unshare (CI runs as root)")
        pytest.skip("needs root and unshare for a private mount namespace")
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
def test_a_read_only_home_still_lists_and_a_submit_says_why(tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability) -> None:
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
def test_a_disk_that_fills_mid_run_keeps_the_job_and_says_so(tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability) -> None:
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
def test_a_full_disk_before_the_job_is_one_line_and_list_still_works(tmp_path: Path, trainer: Path, tfjob_exe: str, reliability: Reliability) -> None:
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
