"""The container engine the local backend runs images with: podman, or docker.

Only the command line is used (no daemon API, no Python client), so the engine's own
configuration applies: ``CONTAINERS_CONF`` / ``CONTAINERS_STORAGE_CONF`` for podman
(storage, runtime, ulimits), ``DOCKER_HOST`` for docker. Every container tfjob starts
carries the label ``tfjob.job=<job id>``, so a job's containers can always be found and
removed, even after the launcher was killed.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import BackendError, UsageError

#: How long a query of the engine (``image inspect``, ``ps``, ``network ls``…) may take: it
#: answers in well under a second, so one that has not answered is hung (a daemon that
#: accepts and never replies, a storage lock held); removals get :data:`ENGINE_REMOVE_TIMEOUT`.
ENGINE_QUERY_TIMEOUT = 30.0
#: How long ``<engine> version`` may take when tfjob picks between two installed engines.
ENGINE_PROBE_TIMEOUT = 10.0
ENGINE_REMOVE_TIMEOUT = 120.0
#: The most an engine query's answer may hold (standard output; standard error is cut there):
#: an ``image inspect`` is a few KiB, a ``ps`` of thousands of containers well under 1 MiB.
ENGINE_OUTPUT_LIMIT = 16 << 20
#: What the engines say when their daemon or service cannot be reached (docker, podman --remote).
_UNREACHABLE = re.compile(
    r"cannot connect to the docker daemon|is the docker daemon running|error during connect|"
    r"unable to connect to podman|connection refused|no such file or directory.*\.sock|permission denied.*\.sock",
    re.IGNORECASE,
)
#: What they say for an image they do not have.
_NO_IMAGE = re.compile(r"no such image|image not known|failed to find image|not found", re.IGNORECASE)

#: The label every container of a job carries: ``tfjob.job=<job id>``.
JOB_LABEL = "tfjob.job"
ENGINES = ("podman", "docker")
#: What ``podman run --sig-proxy`` prints on its own stderr — into a task's output — when
#: teardown's SIGTERM reaches it after its container has already ended: not the task's.
ENGINE_NOISE = re.compile(
    rb'^time="[^"]*" level=error msg="forwarding signal \d+ to container [0-9a-f]{12,64}: '
    rb'container [0-9a-f]{12,64} does not exist in database: no such container"\s*$'
)


@dataclass(frozen=True)
class Engine:
    """A container engine's command line."""

    name: str
    exe: str

    def command(self, *args: str) -> list[str]:
        return [self.exe, *args]

    def _run(self, *args: str, timeout: float = ENGINE_QUERY_TIMEOUT, limit: int = ENGINE_OUTPUT_LIMIT) -> subprocess.CompletedProcess[str]:
        """One engine command, bounded: see :func:`run_engine`.

        Raises:
            BackendError: the engine did not answer in time, answered too much, or cannot be run.
        """
        return run_engine(self.command(*args), self.name, timeout=timeout, limit=limit)

    def unreachable(self, stderr: str) -> BackendError | None:
        """The error to raise when ``stderr`` says the engine's daemon cannot be reached."""
        if not _UNREACHABLE.search(stderr or ""):
            return None
        first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
        fix = (
            "start it (systemctl start docker), set DOCKER_HOST to a running one, or use podman (--container-engine podman)"
            if self.name == "docker"
            else "start its service (systemctl --user start podman.socket) or run podman without --remote"
        )
        return BackendError(f"{self.name}'s daemon is not reachable ({first[:200]}); {fix}")

    def reachable(self) -> BackendError | None:
        """None when the engine answers (``<engine> version`` reaches its daemon or service);
        else the error that says why it cannot be reached."""
        try:
            done = self._run("version", timeout=ENGINE_PROBE_TIMEOUT)
        except BackendError as e:
            return e
        if done.returncode == 0:
            return None
        first = next((line.strip() for line in (done.stderr or "").splitlines() if line.strip()), f"exit {done.returncode}")
        return self.unreachable(done.stderr) or BackendError(f"{self.name} version failed: {first[:300]}")

    def has_image(self, image: str) -> bool:
        """Whether the engine's store holds ``image``.

        Raises:
            BackendError: the engine cannot say (its daemon is not reachable, or it failed
                otherwise): not the same as an image that is not there.
        """
        done = self._run("image", "inspect", image)
        if done.returncode == 0:
            return True
        error = self.unreachable(done.stderr)
        if error is not None:
            raise error
        if _NO_IMAGE.search(done.stderr or "") or not (done.stderr or "").strip():
            return False
        first = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "")
        raise BackendError(f"{self.name} image inspect {image} failed: {first[:300]}")

    def job_containers(self, job_id: str) -> list[str]:
        """Ids of every container (running or not) labelled with this job."""
        done = self._run("ps", "-a", "-q", "--filter", f"label={JOB_LABEL}={job_id}")
        return done.stdout.split() if done.returncode == 0 else []

    def remove_job(self, job_id: str) -> list[str]:
        """Stop and remove every container of the job at once, then its network; return the containers' ids."""
        ids = self.job_containers(job_id)
        if ids:
            self._run("rm", "-f", *(["-t", "0"] if self.name == "podman" else []), *ids, timeout=ENGINE_REMOVE_TIMEOUT)
        done = self._run("network", "ls", "-q", "--filter", f"label={JOB_LABEL}={job_id}")
        networks = done.stdout.split() if done.returncode == 0 else []
        if networks:
            self._run("network", "rm", *(["-f"] if self.name == "podman" else []), *networks, timeout=ENGINE_REMOVE_TIMEOUT)
        return ids

    def kill(self, name: str, remove: bool = False) -> None:
        """SIGKILL one container (a preemption's end), or remove it whatever its state."""
        if remove:
            self._run("rm", "-f", *(["-t", "0"] if self.name == "podman" else []), name, timeout=ENGINE_REMOVE_TIMEOUT)
        else:
            self._run("kill", "--signal", "KILL", name)

    def create_network(self, job_id: str) -> str | None:
        """A private network for the job's containers, in which each reaches the others by
        the host names the platform gives them (the engine's DNS answers a container's
        ``--network-alias``). None when the engine cannot make one here: the tasks then
        share the host's network, on 127.0.0.1 ports."""
        name = network_name(job_id)
        done = self._run("network", "create", "--label", f"{JOB_LABEL}={job_id}", name)
        return name if done.returncode == 0 else None

    def run_argv(
        self,
        image: str,
        args: list[str],
        *,
        name: str,
        job_id: str,
        env_names: list[str],
        volumes: list[str],
        entrypoint: str | None,
        network: str | None = None,
        host: str | None = None,
    ) -> list[str]:
        """``<engine> run`` of one task in the foreground: its output is the task's, signals
        reach it (``--sig-proxy``), and it is removed when it ends (``--rm``).

        On the job's ``network`` the task is ``host`` (its host name, and the alias the
        others resolve), as on the platform; without one, the host's network: tasks reach
        each other on 127.0.0.1 ports as the process backend's tasks do. ``env_names`` are
        passed by name (``-e NAME``): their values come from the engine process's
        environment, not its command line.
        """
        where = ["--network", network, "--network-alias", host, "--hostname", host] if network and host else ["--network", "host"]
        argv = [
            self.exe, "run", "--rm", "--name", name, "--label", f"{JOB_LABEL}={job_id}", *where,
            "--sig-proxy=true", "--stop-timeout", "5",
        ]  # fmt: skip
        for env_name in env_names:
            argv += ["-e", env_name]
        for volume in volumes:
            argv += ["-v", volume]
        if entrypoint is not None:
            argv += ["--entrypoint", entrypoint]
        return [*argv, image, *args]

    def writable_volume(self, host: str, container: str) -> str:
        """A bind mount the image's non-root user can write (podman chowns it with ``:U``)."""
        if self.name == "podman":
            return f"{host}:{container}:U"
        return f"{host}:{container}"  # docker has no :U: the job dir is made writable to all first


@contextlib.contextmanager
def stopped_by_signals(*, sigint: bool = False) -> Iterator[None]:
    """While the block runs, SIGTERM (when nothing else handles it) raises KeyboardInterrupt,
    as Ctrl-C does: the block's ``finally`` and ``except`` clauses stop what it started
    and remove what it made, where SIGTERM's default action would end the process at once.
    ``sigint``: Ctrl-C raises KeyboardInterrupt too even when this process inherited SIGINT
    ignored (a command started in the background of a script, a test runner). Only the main
    thread can set handlers; elsewhere the block runs as it is. The handlers are restored after.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous: dict[int, Any] = {}
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupted)
        if sigint and signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def stop_group(proc: subprocess.Popen[bytes], grace: float = 0.0) -> None:
    """End ``proc`` and every process it started (in its own session it leads its group):
    SIGTERM and up to ``grace`` seconds to end, then SIGKILL to whatever is left; reaped."""

    def signal_group(sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)

    if grace > 0 and proc.poll() is None:
        signal_group(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    signal_group(signal.SIGKILL)  # and what it started and left behind
    proc.wait()
    # A signal is delivered when its process next runs: on a loaded machine the group's
    # other members may still be on their way out. Wait a little for them (not past 5 s).
    deadline = time.monotonic() + 5
    while _group_running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie, ended and waiting for its
    reaper, does not); False where /proc cannot say."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


def run_engine(
    argv: list[str],
    name: str,
    *,
    timeout: float = ENGINE_QUERY_TIMEOUT,
    limit: int = ENGINE_OUTPUT_LIMIT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one engine command and collect its answer, bounded in time and size.

    The command runs in its own session, so a terminal's Ctrl-C reaches tfjob alone, which
    then ends it; it is ended with everything it started (its process group) when it has
    not answered within ``timeout`` seconds, when its standard output passes ``limit``
    bytes, and when tfjob is interrupted (Ctrl-C, or SIGTERM: :func:`stopped_by_signals`).
    Its standard error is kept up to ``limit`` bytes; the rest is read and dropped.

    Raises:
        BackendError: the engine did not answer in time, answered more than ``limit``
            bytes, or cannot be run (naming the command).
    """
    shown = " ".join([name, *argv[1:4]]) + (" …" if len(argv) > 4 else "")
    with stopped_by_signals():
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
            )
        except OSError as e:
            raise BackendError(f"cannot run {argv[0]}: {e.strerror or e}") from None
        assert proc.stdout is not None and proc.stderr is not None
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        kept: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
        deadline = time.monotonic() + timeout
        try:
            with selectors.DefaultSelector() as sel:
                for stream in (proc.stdout, proc.stderr):
                    os.set_blocking(stream.fileno(), False)
                    sel.register(stream.fileno(), selectors.EVENT_READ)
                while sel.get_map():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _Hung
                    for key, _ in sel.select(timeout=min(left, 1.0)):
                        fd = int(key.fd)
                        try:
                            chunk = os.read(fd, 1 << 16)
                        except BlockingIOError:
                            continue
                        if not chunk:
                            sel.unregister(fd)
                            continue
                        room = limit - len(kept[fd])
                        if room > 0:
                            kept[fd] += chunk[:room]
                        if fd == out_fd and len(chunk) > room:
                            stop_group(proc)
                            raise BackendError(
                                f"{name} answered `{shown}` with more than {limit // (1 << 20)} MiB, so it was stopped: "
                                "no engine answers a query with that much; check what the engine command is "
                                f"({argv[0]})"
                            )
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise _Hung from None
        except _Hung:
            stop_group(proc)
            raise BackendError(
                f"{name} did not answer `{shown}` within {timeout:g} s, so it was stopped: the engine is hung "
                f"(its daemon or storage; `{name} info` shows which); nothing more was asked of it"
            ) from None
        except BaseException:
            stop_group(proc)  # Ctrl-C, SIGTERM: the engine ends with us
            raise
        finally:
            proc.stdout.close()
            proc.stderr.close()
    return subprocess.CompletedProcess(argv, code, _text(kept[out_fd]), _text(kept[err_fd]))


class _Hung(Exception):
    """The engine did not answer in time (internal to :func:`run_engine`)."""


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def network_name(job_id: str) -> str:
    """The job's network: ``tfjob-<job id>`` in the characters engines take."""
    return "tfjob-" + re.sub(r"[^a-z0-9_.-]+", "-", job_id.lower()).strip("-.")[:200]


def find_engine(choice: str | None = None) -> Engine:
    """The engine to run containers with: ``choice`` (``--container-engine``,
    ``TFJOB_CONTAINER_ENGINE``), else podman, else docker — of those two, when both are
    installed, the first that answers (docker installed beside a podman whose service is
    down, or the other way round, is not a reason to fail).

    Raises:
        UsageError: the chosen engine, or both, are not installed (naming both).
        BackendError: both are installed and neither answers (saying why each does not).
    """
    choice = choice or os.environ.get("TFJOB_CONTAINER_ENGINE") or None
    if choice is not None and choice not in ENGINES and os.path.sep not in choice:
        raise UsageError(field="container_engine", value=choice, problem=f"is not one of {', '.join(ENGINES)} (or a path to one)")
    found = [
        Engine(os.path.basename(name).split(".")[0], exe) for name in ([choice] if choice else list(ENGINES)) if (exe := shutil.which(name))
    ]
    if len(found) == 1:
        return found[0]  # its own commands say so if it cannot be reached
    if found:
        errors = []
        for engine in found:
            error = engine.reachable()
            if error is None:
                return engine
            errors.append(str(error))
        raise BackendError(f"no container engine answers: {'; '.join(errors)}")
    wanted = choice or "podman or docker"
    raise UsageError(
        problem=f"running {{image}} locally needs a container engine, and {wanted} is not installed",
        fix="install podman (apt-get install podman) or docker, or run the image on {backend=vertex} / kubeflow",
    )
