"""The container engine the local backend runs images with: podman, or docker.

Only the command line is used (no daemon API, no Python client), so the engine's own
configuration applies: ``CONTAINERS_CONF`` / ``CONTAINERS_STORAGE_CONF`` for podman
(storage, runtime, ulimits), ``DOCKER_HOST`` for docker. Every container tfjob starts
carries the label ``tfjob.job=<job id>``, so a job's containers can always be found and
removed, even after the launcher was killed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import BackendError, UsageError

#: How long a query of the engine (``image inspect``, ``ps``, ``network ls``…) may take: it
#: answers in well under a second, so one that has not answered is hung (a daemon that
#: accepts and never replies, a storage lock held); removals get :data:`ENGINE_REMOVE_TIMEOUT`.
ENGINE_QUERY_TIMEOUT = 30.0
ENGINE_REMOVE_TIMEOUT = 120.0
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

    def _run(self, *args: str, timeout: float = ENGINE_QUERY_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """One engine command, bounded: in its own session, and killed with everything it
        started when it has not answered within ``timeout`` seconds.

        Raises:
            BackendError: the engine did not answer in time (naming the command), or cannot be run.
        """
        import signal

        argv = self.command(*args)
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                errors="replace", start_new_session=True,
            )  # fmt: skip
        except OSError as e:
            raise BackendError(f"cannot run {self.exe}: {e.strerror or e}") from None
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            proc.communicate()
            shown = " ".join([self.name, *args[:3]]) + (" …" if len(args) > 3 else "")
            raise BackendError(
                f"{self.name} did not answer `{shown}` within {timeout:g} s, so it was stopped: the engine is hung "
                f"(its daemon or storage; `{self.name} info` shows which); nothing more was asked of it"
            ) from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

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


def network_name(job_id: str) -> str:
    """The job's network: ``tfjob-<job id>`` in the characters engines take."""
    return "tfjob-" + re.sub(r"[^a-z0-9_.-]+", "-", job_id.lower()).strip("-.")[:200]


def find_engine(choice: str | None = None) -> Engine:
    """The engine to run containers with: ``choice`` (``--container-engine``,
    ``TFJOB_CONTAINER_ENGINE``), else podman, else docker.

    Raises:
        UsageError: the chosen engine, or both, are not installed (naming both).
    """
    choice = choice or os.environ.get("TFJOB_CONTAINER_ENGINE") or None
    if choice is not None and choice not in ENGINES and os.path.sep not in choice:
        raise UsageError(field="container_engine", value=choice, problem=f"is not one of {', '.join(ENGINES)} (or a path to one)")
    for name in [choice] if choice else list(ENGINES):
        exe = shutil.which(name)  # type: ignore[arg-type]
        if exe:
            return Engine(os.path.basename(name).split(".")[0], exe)  # type: ignore[arg-type]
    wanted = choice or "podman or docker"
    raise UsageError(
        problem=f"running {{image}} locally needs a container engine, and {wanted} is not installed",
        fix="install podman (apt-get install podman) or docker, or run the image on {backend=vertex} / kubeflow",
    )
