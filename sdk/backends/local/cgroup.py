"""A local job's cgroup (cgroup v2), where the machine allows one: made before the first task
starts, joined by every task, killed at the end — and the job's :class:`Lifeline`, which kills
it when the launcher dies. See :mod:`.contain` for how it keeps a job's processes in the job."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from .procfs import kill_pids, process_stat, reap, wait_gone

if TYPE_CHECKING:
    import subprocess


#: The lifeline's shell: it waits on a pipe whose other end only the launcher holds. The
#: word ``release`` (the job ended, the launcher tidies up) lets it go; the end of the pipe
#: without it (the launcher died, even of SIGKILL) makes it kill the job's cgroup. Signals
#: other than SIGKILL do not stop it; ``$1`` is the cgroup's directory.
_LIFELINE_SCRIPT = "; ".join(
    (
        "trap '' HUP INT QUIT TERM PIPE",
        'while read -r word; do [ "$word" = release ] && exit 0; done',
        'echo 1 > "$1/cgroup.kill"',
    )
)
_SHELL = "/bin/sh"


class Lifeline:
    """Ends a job's cgroup when its launcher dies: one small shell per job, in place of a
    parent-death signal set on each task.

    ``PR_SET_PDEATHSIG`` must be set in each task before it runs the trainer: by
    ``setpriv``'s exec in front of every task (~1.2 ms of CPU each), or by Python code between
    fork and exec. Where the tasks are born in the job's cgroup, one watcher per job does
    the same and more: when the launcher dies, however, the pipe it alone holds ends, and
    the watcher writes ``cgroup.kill`` — every task and everything each started dies at once,
    where the parent-death signal reaches the task's own process only.

    The watcher runs in a session of its own (a signal to the launcher's process group
    spares it) and outside the cgroup it guards.
    """

    def __init__(self, proc: "subprocess.Popen[bytes]") -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    @classmethod
    def start(cls, cgroup: "JobCgroup") -> "Lifeline | None":
        """Start the watcher of ``cgroup`` (None where there is no ``/bin/sh``, or it fails to start)."""
        if not os.access(_SHELL, os.X_OK):
            return None
        import subprocess

        try:
            proc = subprocess.Popen(
                [_SHELL, "-c", _LIFELINE_SCRIPT, "tfjob-lifeline", str(cgroup.path)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd="/", close_fds=True, start_new_session=True,
            )  # fmt: skip
        except OSError:
            return None
        return cls(proc)

    def release(self, wait: float = 2.0) -> None:
        """The job ended: let the watcher go without killing anything, and reap it."""
        import subprocess

        pipe = self._proc.stdin
        if pipe is not None and not pipe.closed:
            try:
                os.write(pipe.fileno(), b"release\n")
            except OSError:
                pass  # it is gone already
            try:
                pipe.close()
            except OSError:
                pass
        try:
            self._proc.wait(wait)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


# -- the job's cgroup ---------------------------------------------------------------------

#: A job's cgroup is ``<the launcher's cgroup>/tfjob-<job id>``.
CGROUP_PREFIX = "tfjob-"


def _unescape(field: str) -> str:
    """A /proc/self/mountinfo path field (spaces and such are octal escapes)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup2_mounts() -> list[tuple[str, str]]:
    """(root within the hierarchy, mount point) of each cgroup v2 mount this process sees."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if sep and right.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            mounts.append((_unescape(fields[3]), _unescape(fields[4])))
    return mounts


def own_cgroup() -> str | None:
    """This process's cgroup v2 path (``/…``, from /proc/self/cgroup), or None."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].rstrip("\n")
    except OSError:
        pass
    return None


def cgroup_home() -> Path | None:
    """The directory of this process's own cgroup v2 (where a job's cgroup is made), or None."""
    own = own_cgroup()
    if own is None or not own.startswith("/"):
        return None  # "/… (deleted)" or unreachable from this namespace
    for root, mountpoint in cgroup2_mounts():
        rel = os.path.relpath(own, root)
        if rel == "." or not rel.startswith(".."):
            path = Path(mountpoint) if rel == "." else Path(mountpoint, rel)
            if (path / "cgroup.procs").exists():
                return path
    return None


class JobCgroup:
    """The job's cgroup: made before the first task starts, joined by every task, killed at the end.

    Attributes:
        path: its directory (``…/tfjob-<job id>``).
    """

    def __init__(self, path: Path, procs: int) -> None:
        self.path = path
        self._procs = procs  # cgroup.procs, open for writing: a task writes "0" to join
        self._ahead: threading.Thread | None = None  # join_ahead's, until settle()
        self._ahead_error: OSError | None = None
        self._joined = False

    @classmethod
    def create(cls, job_id: str) -> "JobCgroup | None":
        """Make the job's cgroup, or None where this machine does not let this process.

        Needs cgroup v2 with ``cgroup.kill`` (Linux ≥ 5.14), and the right to write this
        process's own cgroup (root, or a cgroup delegated to the user, e.g. by systemd).
        """
        if not sys.platform.startswith("linux") or not job_id or "/" in job_id or job_id.startswith("."):
            return None
        home = cgroup_home()
        if home is None or not os.access(home / "cgroup.procs", os.W_OK):
            return None
        path = home / f"{CGROUP_PREFIX}{job_id}"
        try:
            os.mkdir(path, 0o755)
        except OSError:
            return None  # read-only, not delegated, or already there (not ours to reuse)
        try:
            kind = (path / "cgroup.type").read_text().strip()
            if kind != "domain" or not (path / "cgroup.kill").exists():
                raise OSError(f"cgroup type {kind}, or no cgroup.kill")
            procs = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            _remove_tree(path)
            return None
        return cls(path, procs)

    def join(self) -> None:
        """Move the calling process into the cgroup (run in a task between fork and exec)."""
        os.write(self._procs, b"0")

    def join_ahead(self) -> None:
        """Start moving this process into the cgroup now, in a thread of its own, for
        :meth:`entered`: the kernel's first move of a process between cgroups waits for an RCU
        grace period (10–20 ms here), which this hides behind the work before the first task
        starts. Only where this process starts no other process until :meth:`settle`."""

        def move() -> None:
            try:
                self.join()
            except OSError as e:
                self._ahead_error = e

        self._ahead = threading.Thread(target=move, name="tfjob-cgroup-join", daemon=True)
        self._ahead.start()

    def settle(self) -> None:
        """Wait for :meth:`join_ahead`'s move (this process is then inside, or the error is raised)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        ahead.join()
        error, self._ahead_error = self._ahead_error, None
        if error is not None:
            raise error
        self._joined = True

    @contextmanager
    def entered(self) -> Iterator[None]:
        """This process inside the cgroup while it starts tasks, so that they are born in it
        (no code between fork and exec: see :func:`pdeathsig_prefix`); back in its own cgroup after.

        Only for a process with no other thread that could start a process meanwhile.
        """
        self.settle()
        if not self._joined:
            self.join()
        self._joined = False
        try:
            yield
        finally:
            self._leave()

    def _leave(self) -> None:
        """Back to this process's own cgroup."""
        try:
            with open(self.path.parent / "cgroup.procs", "w") as f:
                f.write("0")
        except OSError:
            pass  # its own cgroup is gone: it stays here, and kill_cgroup spares it

    def kill(self, wait: float = 2.0) -> list[int]:
        """SIGKILL everything in the cgroup, remove it; return the pids that were in it."""
        try:
            self.settle()  # a join_ahead no task start took up (the job ended before starting)
        except OSError:
            pass
        if self._joined:
            self._joined = False
            self._leave()
        self.close()
        return kill_cgroup(self.path, wait)

    def close(self) -> None:
        if self._procs >= 0:
            os.close(self._procs)
            self._procs = -1


def cgroup_pids(path: Path) -> list[int]:
    """The processes in a cgroup and the cgroups below it."""
    pids: list[int] = []
    for dirpath, _, _ in os.walk(path):
        try:
            with open(os.path.join(dirpath, "cgroup.procs")) as f:
                pids.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            pass
    return pids


def kill_cgroup(path: Path, wait: float = 2.0) -> list[int]:
    """``cgroup.kill`` a job's cgroup (and all below it), wait until it is empty, remove it.

    Returns:
        The pids that were in it (empty when it was empty, or is gone).
    """
    pids = cgroup_pids(path)
    if os.getpid() in pids:  # could not leave it after starting tasks: never kill ourselves
        pids.remove(os.getpid())
        kill_pids(pids)
        wait_gone(pids, time.monotonic() + wait)
        return pids
    try:
        with open(path / "cgroup.kill", "w") as f:
            f.write("1")
    except OSError:
        return []  # gone already (another command ended it), or not a cgroup
    until = time.monotonic() + wait
    while time.monotonic() < until:
        try:
            events = (path / "cgroup.events").read_text()
        except OSError:
            break
        if "populated 0" in events:
            break
        _reap_dead(pids)
        time.sleep(0.005)
    _reap_dead(pids)
    _remove_tree(path)
    return pids


def _reap_dead(pids: list[int]) -> None:
    """Reap those of ``pids`` that are zombies of this process (a subreaper's adoptees)."""
    me = os.getpid()
    for pid in pids:
        info = process_stat(pid)
        if info is not None and info[0] == "Z" and info[1] == me:
            reap(pid)


def _remove_tree(path: Path) -> None:
    """rmdir a cgroup and the cgroups below it, deepest first (an empty cgroup's files cannot be unlinked)."""
    for dirpath, _, _ in sorted(os.walk(path), key=lambda d: -len(d[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def is_job_cgroup(path: str, job_id: str) -> bool:
    """True if ``path`` (from a job's record) can only be that job's cgroup: a directory
    named ``tfjob-<job id>`` in a cgroup v2 hierarchy. A record is data, and data does not
    get to choose which processes are killed."""
    if not path or not job_id or os.path.basename(path) != f"{CGROUP_PREFIX}{job_id}":
        return False
    real = os.path.realpath(path)
    if real != os.path.normpath(path):
        return False
    for _, mountpoint in cgroup2_mounts():
        if real.startswith(mountpoint.rstrip("/") + "/"):
            return os.path.isfile(os.path.join(real, "cgroup.kill"))
    return False
