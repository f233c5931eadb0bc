"""Messages that say what is wrong (issue 24): a requirements marker that cannot be evaluated,
a container engine that hangs or whose daemon is not there, a Kubernetes backend without a
kubeconfig, a job id of the wrong type — each one line, nothing started or recorded.

The engines are real: the docker command line pointed (``DOCKER_HOST``) at a socket where
no daemon listens, and at one that accepts and never answers, as a hung daemon does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import tfjob
from helpers import need_in_ci, one_error, write_trainer
from reliability import Reliability
from tfjob.errors import SpecError, UsageError
from tfjob.description.requirements import read_requirements


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "work", "print('hi')\n").parent


def run(
    tfjob_exe: str, *args: str, reliability: Reliability, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([tfjob_exe, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    reliability.tried()
    reliability.output(out.stdout + out.stderr)
    return out


def nothing_recorded(tfjob_exe: str, reliability: Reliability) -> None:
    assert "no jobs yet" in run(tfjob_exe, "list", reliability=reliability).stderr


# -- requirements markers ----------------------------------------------------------------------
@pytest.mark.reliability
@pytest.mark.parametrize("marker", ['os_name ~= "posix"', 'platform_machine ~= "x86_64"', 'implementation_name ~= "cpython"'])
@pytest.mark.parametrize("backend", ["local", "vertex"])
def test_a_marker_that_cannot_be_evaluated_is_one_line(
    trainer: Path, tfjob_exe: str, reliability: Reliability, marker: str, backend: str
) -> None:
    (trainer / "requirements.txt").write_text(f"# deps\nnumpy; {marker}\n")
    args = ["--dry-run"] if backend == "vertex" else []
    out = run(tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--backend", backend, *args, reliability=reliability)
    if out.returncode == 0:
        pytest.fail(f"taken: {out.stderr[-500:]}")
    one_error(out, 2, "requirements.txt:2: the marker", "cannot be evaluated", "compare names (os_name, sys_platform) with == or !=")
    nothing_recorded(tfjob_exe, reliability)


def test_markers_that_compare_what_they_can_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text('numpy; python_version ~= "3.10"\nscipy; os_name == "posix" and platform_release > "1"\n')
    assert len(read_requirements(path)) == 2
    path.write_text('numpy; os_name ~= "posix"\n')
    with pytest.raises(UsageError, match=r"requirements.txt:1: the marker 'os_name ~= \"posix\"' cannot be evaluated"):
        read_requirements(path)


# -- the container engine ----------------------------------------------------------------------
def _docker() -> str:
    # The client alone: the tests point it at sockets of their own (no daemon runs here).
    exe = shutil.which("docker")
    need_in_ci(exe is not None, "the docker command line is not installed (this kind of machine has it in /usr/local/bin)")
    assert exe is not None
    return exe


class SilentDaemon:
    """A Unix socket that accepts every connection and never answers (a hung daemon)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def all_hung_up(self, within: float = 60) -> bool:
        """True when every client that connected has closed its end (its process is gone)."""
        deadline = time.monotonic() + within
        for conn in self.conns:
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                return False
        return bool(self.conns)

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.mark.reliability
def test_an_engine_that_hangs_is_stopped_and_said(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    _docker()
    daemon = SilentDaemon(tmp_path / "docker.sock")
    try:
        reliability.fault("hung container engine")
        started = time.monotonic()
        out = run(
            tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--image", "busybox:1", "--container-engine", "docker",
            env={"DOCKER_HOST": f"unix://{daemon.path}"}, reliability=reliability,
        )  # fmt: skip
        one_error(out, 1, "docker did not answer `docker image inspect busybox:1` within 30 s", "the engine is hung")
        assert time.monotonic() - started < 90
        assert daemon.all_hung_up(), "the engine's command was left running"
    finally:
        daemon.close()
    nothing_recorded(tfjob_exe, reliability)


@pytest.mark.reliability
def test_docker_without_its_daemon_is_said_as_such(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    _docker()
    reliability.fault("no docker daemon")
    out = run(
        tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--image", "busybox:1", "--container-engine", "docker",
        env={"DOCKER_HOST": f"unix://{tmp_path / 'none.sock'}"}, reliability=reliability,
    )  # fmt: skip
    line = one_error(out, 1, "docker's daemon is not reachable", "Cannot connect to the Docker daemon", "systemctl start docker")
    assert "store" not in line
    nothing_recorded(tfjob_exe, reliability)


@pytest.mark.reliability
def test_a_missing_image_is_still_said_as_missing(
    trainer: Path, tfjob_exe: str, reliability: Reliability, podman_env: dict[str, str]
) -> None:
    # podman as the container tests configure it (installed under CI by the fixture), whatever ran before.
    engine = {k: podman_env[k] for k in ("CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")}
    out = run(
        tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--image", "localhost/tfjob-no-such-image:0", "--container-engine", "podman",
        env=engine, reliability=reliability,
    )  # fmt: skip
    one_error(out, 2, "image localhost/tfjob-no-such-image:0 is not in podman's store")


# -- Kubernetes backends name themselves -------------------------------------------------------
@pytest.mark.reliability
@pytest.mark.parametrize("backend", ["jobset", "trainjob"])
def test_no_kubeconfig_names_the_chosen_backend(
    trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, backend: str
) -> None:
    out = run(
        tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--image", "img", "--backend", backend,
        env={"HOME": str(tmp_path / "no-home")}, reliability=reliability,
    )  # fmt: skip
    one_error(out, 2, f"no kubeconfig for --backend {backend}:")
    nothing_recorded(tfjob_exe, reliability)


# -- the Python API ----------------------------------------------------------------------------
@pytest.mark.parametrize("job_id", [123, None, b"trainer-1", ["trainer-1"], 1.5])
def test_get_job_of_a_wrong_type_is_one_line(job_id: object) -> None:
    with pytest.raises(SpecError, match=r"get_job: job_id=.* must be text, a job's id as `tfjob list` shows it, not "):
        tfjob.get_job(job_id)  # type: ignore[arg-type]


def test_get_job_bounds_the_id_and_checks_the_backend() -> None:
    with pytest.raises(SpecError, match=r"get_job: a job id is at most 512 characters, not 100000"):
        tfjob.get_job("x" * 100_000)
    with pytest.raises(SpecError, match=r"get_job: backend=5 must be a backend's name"):
        tfjob.get_job("trainer-1", backend=5)
    with pytest.raises(tfjob.errors.JobNotFoundError, match=r"no job 'trainer-1'"):
        tfjob.get_job("trainer-1")
