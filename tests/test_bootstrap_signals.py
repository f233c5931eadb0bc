"""The bootstrap as PID 1 (a container's first process) still ends on SIGTERM (issue 12).

The kernel delivers PID 1 no signal it has no handler for, so without care `podman stop`
and Kubernetes wait out their grace period and SIGKILL. The bootstrap stays PID 1 as a tiny
init that forwards signals, and the task runs as PID 2 with ordinary signal semantics. A private PID
namespace (`unshare --pid --fork`, as root) makes the bootstrap PID 1 without a container.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import need_in_ci, need_module


def _as_pid1(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        need_in_ci(False, "needs root and unshare for a private PID namespace (CI runs as root)")
    return subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "tfjob.container.bootstrap", *argv],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})},
    )  # fmt: skip


def _child(pid: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        if out:
            return int(out[0])
        time.sleep(0.02)
    raise AssertionError("the bootstrap did not start")


def _stop(proc: subprocess.Popen[str], ready: str) -> tuple[int, str]:
    assert proc.stdout is not None
    seen = ""
    while ready not in seen:
        line = proc.stdout.readline()
        assert line, f"ended before {ready!r}: {seen}"
        seen += line
    child = _child(proc.pid)
    os.kill(child, signal.SIGTERM)
    try:
        # Generous (a loaded machine): what ended it is in its exit status (143 is SIGTERM's own
        # end, a trainer's handler exits as it chose), not in how soon.
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.kill(child, signal.SIGKILL)  # PID 1 of the namespace: its end ends the namespace
        proc.wait(timeout=60)
        raise AssertionError(f"SIGTERM did not end the bootstrap as PID 1: {seen}") from None
    return code, seen + proc.stdout.read()


def test_a_trainer_under_pid_1_ends_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("import os, time\nprint('up as pid', os.getpid(), flush=True)\ntime.sleep(60)\n")
    proc = _as_pid1(["--module", "trainer.task"], tmp_path)
    code, out = _stop(proc, "up as pid")
    assert "up as pid 2" in out  # PID 1 stays a tiny init; the trainer is an ordinary process
    assert code == 143, (code, out)


def test_a_server_blocked_in_cpp_under_pid_1_ends_on_sigterm(tmp_path: Path) -> None:
    # A trainer whose main thread blocks outside Python (as tf.distribute.Server.join() does):
    # a Python handler would never run there; the default disposition of PID 2 ends it.
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("import ctypes, os\nprint('serving', flush=True)\nctypes.CDLL(None).pause()\n")
    code, out = _stop(_as_pid1(["--module", "trainer.task"], tmp_path), "serving")
    assert code == 143, (code, out)


def test_a_trainer_s_own_handler_still_gets_sigterm(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('checkpointing', flush=True), sys.exit(7)))\n"
        "print('up', flush=True)\ntime.sleep(60)\n"
    )
    code, out = _stop(_as_pid1(["--module", "trainer.task"], tmp_path), "up")
    assert code == 7 and "checkpointing" in out, (code, out)


@pytest.mark.tf
def test_a_parameter_server_under_pid_1_ends_on_sigterm(tmp_path: Path) -> None:
    need_module("tensorflow", "pip install -e '.[tf]'")
    import socket

    ports = []
    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"], "ps": [f"127.0.0.1:{ports[2]}"]}
    tf_config = json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}})
    env = {"TF_CONFIG": tf_config, "TF_CPP_MIN_LOG_LEVEL": "0"}
    proc = _as_pid1(["--module", "trainer.task", "--strategy", "parameter-server"], tmp_path, env)
    code, out = _stop(proc, "Started server")
    assert code == 143, (code, out[-2000:])
