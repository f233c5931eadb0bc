"""Keep every process a job starts inside the job, whatever it does to its session, group or environment.

A task runs in its own session and process group, and teardown signals the group. A
trainer that double-forks with ``setsid``, calls ``os.setpgid`` or
``subprocess.Popen(..., start_new_session=True)`` leaves that group. Three mechanisms
catch such a process on Linux:

- **a cgroup per job** (cgroup v2), where this machine lets the launcher make one: a
  directory ``tfjob-<job id>`` beside the launcher's own cgroup (:class:`JobCgroup`).
  Each task joins it between fork and exec, so everything it ever starts is in it from
  its first instruction on; no session, group or environment change leaves it (only a
  process privileged to move itself to another cgroup can). The job ends with
  ``cgroup.kill`` (every process in it, at once) and ``rmdir``. Its path is kept in the
  job's record, so a job whose launcher was SIGKILLed is ended the same way when it is
  found LOST (:func:`kill_cgroup`, from :mod:`.reap`).
- the launcher is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``) for the job's life:
  an orphaned descendant is re-parented to it rather than to PID 1. At teardown every
  such orphan — a child of the launcher in another session than the launcher's, which
  no task's descendant can ever rejoin — is killed with all its descendants
  (:func:`stop_escaped`), whatever its environment says;
- every task's environment carries ``TFJOB_JOB_ID``, which its descendants inherit:
  :func:`job_processes` finds each live process that carries this job's id.

When the launcher itself dies (even of SIGKILL), the job's :class:`Lifeline` — one small
shell per job, waiting on a pipe only the launcher holds — kills the cgroup at once: every
task and everything each started. Where there is no lifeline (no ``/bin/sh``, or a launcher
sharing its process with other threads), each task gets ``PR_SET_PDEATHSIG`` instead, and
what the tasks started is ended through the cgroup when the job is found LOST.

Where no cgroup can be made (not Linux, no cgroup v2, not writable), the last two remain.
They hold for a job that ends while its launcher lives; when the launcher itself is
SIGKILLed, the tasks die with it (``PR_SET_PDEATHSIG``) and a LOST job's leftover
groups and processes carrying its id are killed, but a process that left its group
*and* rewrote its environment is then beyond reach: only the cgroup holds that one.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    import subprocess

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


#: Resolved once, at import in the parent: a child must not load libraries between fork and exec.
PRCTL = load_prctl()


#: Where util-linux's ``setpriv`` may be (never looked up on the user's PATH).
_SETPRIV_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")


@lru_cache(maxsize=1)
def pdeathsig_prefix() -> tuple[str, ...] | None:
    """A command prefix that gives a task ``PR_SET_PDEATHSIG`` (SIGKILL) with no Python code
    between fork and exec: util-linux's ``setpriv --pdeathsig KILL --`` (2.33 or later;
    checked once per process), or None.

    Without it, the parent-death signal is set by a ``preexec_fn``, and that forces Python
    to fork its whole interpreter and run code in the child for every task (about 3× the
    cost of the ``vfork`` it uses otherwise, paid one task after another at start-up).
    """
    if not sys.platform.startswith("linux"):
        return None
    for folder in _SETPRIV_DIRS:
        exe = os.path.join(folder, "setpriv")
        if os.access(exe, os.X_OK):
            break
    else:
        return None
    import subprocess

    try:
        done = subprocess.run(
            [exe, "--pdeathsig", "KILL", "--", exe, "--version"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return (exe, "--pdeathsig", "KILL", "--") if done.returncode == 0 else None


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


class _Jobs:
    """The jobs this process runs at once (parallel tuning trials run in threads of one process)."""

    lock = threading.Lock()
    count = 0
    #: This process's children before its first running job started (the caller's own).
    before: set[int] = set()
    #: A job ended without a cgroup while others ran: its orphans are stopped with the last.
    orphans_left = False
    #: Whether this process was a subreaper before its first running job (None: unsupported).
    previous: bool | None = None


def become_subreaper() -> bool | None:
    """Make this process the subreaper of its descendants; return the previous setting (None: unsupported).

    Calls nest, one per job running in this process: the first one sets it, and
    :func:`restore_subreaper` restores it when the last job ends.
    """
    with _Jobs.lock:
        _Jobs.count += 1
        if _Jobs.count == 1:
            _Jobs.before = children()
            _Jobs.orphans_left = False
            _Jobs.previous = _set_subreaper()
        return _Jobs.previous


def _set_subreaper() -> bool | None:
    if PRCTL is None:
        return None
    previous = ctypes.c_int(0)
    if PRCTL(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0) != 0:
        return None
    if PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return None
    return bool(previous.value)


def restore_subreaper(previous: bool | None) -> None:
    """Undo :func:`become_subreaper` once the last job of this process ended (when this
    process was not a subreaper before, as ``previous`` says), after stopping the orphans
    that jobs which ended while others ran left behind."""
    with _Jobs.lock:
        _Jobs.count -= 1
        if _Jobs.count > 0:
            return
        if _Jobs.orphans_left:
            left = adopted_orphans(_Jobs.before)
            _kill(left)
            _wait_gone(left, time.monotonic() + 2.0)
            reap_orphans(_Jobs.before)
        if PRCTL is not None and previous is False:
            PRCTL(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, or None when it is gone."""
    info = _stat3(pid)
    return None if info is None else info[:2]


def _stat3(pid: int) -> tuple[str, int, int] | None:
    """(state letter, parent pid, session id) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[3])


def job_processes(job_id: str, exclude: set[int] | None = None) -> list[int]:
    """Live processes (not zombies) whose environment carries ``TFJOB_JOB_ID=<job_id>``."""
    marker = f"TFJOB_JOB_ID={job_id}".encode()
    skip = {os.getpid(), *(exclude or ())}
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) in skip:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read(1 << 20)
        except OSError:
            continue  # gone, or not ours to read
        if marker in env.split(b"\0"):
            found.append(int(entry))
    return found


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _process_table() -> dict[int, tuple[str, int, int]]:
    """pid → (state, parent pid, session id) of every process (from /proc)."""
    table: dict[int, tuple[str, int, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            info = _stat3(int(entry))
            if info is not None:
                table[int(entry)] = info
    return table


def adopted_orphans(children_before: set[int]) -> list[int]:
    """Processes re-parented to this subreaper by a task's descendants, with all theirs.

    An orphan is a live child of this process that was not one of its children before the
    job and runs in another session than this process': every task starts a session of its
    own, and no descendant of a task can ever join the launcher's session again, so a new
    child in another session can only be what a task left (or, in a pipeline process that
    runs ``Job.run()``, a child its own code started in a new session while the job ran).
    """
    me = os.getpid()
    own = _stat3(me)
    table = _process_table()
    kids: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    roots = [
        pid for pid in kids.get(me, ()) if pid not in children_before and table[pid][0] != "Z" and (own is None or table[pid][2] != own[2])
    ]
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(kids.get(pid, ()))
    return [pid for pid in found if table[pid][0] != "Z"]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def stop_escaped(job_id: str, children_before: set[int], wait: float = 2.0, rounds: int = 20, orphans: bool = True) -> list[int]:
    """SIGKILL every live process of the job, reap those re-parented here; return their pids.

    What is the job's: each process carrying its id in its environment, and (``orphans``:
    the job had no cgroup) each orphan a task left to this subreaper, with all its
    descendants (:func:`adopted_orphans`). While other jobs run in this process (parallel
    trials), an orphan cannot be told from theirs: the last job to end stops them (in
    :func:`restore_subreaper`). A process that forks while this runs has its children
    re-parented here when it dies: the search is repeated until it finds nothing new (at
    most ``rounds`` times).

    ``children_before``: this process's children before the job started (never reaped here:
    they belong to the caller, e.g. a pipeline that runs ``Job.run()``).
    """
    with _Jobs.lock:
        alone = _Jobs.count <= 1
        if orphans and not alone:
            _Jobs.orphans_left = True
        before = children_before | _Jobs.before
    killed: list[int] = []
    for _ in range(rounds):
        found = job_processes(job_id) + (adopted_orphans(before) if orphans and alone else [])
        pids = [pid for pid in dict.fromkeys(found) if pid not in killed]
        if not pids:
            break
        _kill(pids)
        killed.extend(pids)
        _wait_gone(pids, time.monotonic() + wait)
    reap_orphans(children_before)
    return killed


def _wait_gone(pids: list[int], until: float) -> None:
    """Wait until each pid is gone or a zombie (reaping those that are this process')."""
    pending = set(pids)
    while pending and time.monotonic() < until:
        for pid in list(pending):
            info = _stat(pid)
            if info is None:
                pending.discard(pid)
            elif info[0] == "Z":
                if info[1] == os.getpid():
                    _reap(pid)
                else:
                    pending.discard(pid)  # its own parent reaps it
        if pending:
            time.sleep(0.01)


def children() -> set[int]:
    """This process's children (from /proc; empty where /proc is not there): each thread's
    ``/proc/self/task/<tid>/children`` where the kernel has them (``CONFIG_PROC_CHILDREN``),
    else a scan of every process's parent (its cost grows with the machine's processes)."""
    listed = _listed_children()
    if listed is not None:
        return listed
    me = os.getpid()
    return {pid for pid, (_, ppid, _) in _process_table().items() if ppid == me}


def _listed_children() -> set[int] | None:
    """The children the kernel lists per thread of this process, or None where it does not."""
    me = os.getpid()
    found: set[int] = set()
    try:
        threads = os.listdir(f"/proc/{me}/task")
        for tid in threads:
            try:
                with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
                    found.update(int(pid) for pid in f.read(1 << 20).split())
            except FileNotFoundError:
                if tid == str(me):
                    return None  # no CONFIG_PROC_CHILDREN
            except ProcessLookupError:
                pass  # a thread that ended meanwhile
    except (OSError, ValueError):
        return None
    return found


def reap_orphans(children_before: set[int]) -> None:
    """Reap zombies re-parented to this subreaper during the job (never the caller's own children)."""
    for pid in children() - children_before:
        info = _stat(pid)
        if info is not None and info[0] == "Z":
            _reap(pid)


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
        _kill(pids)
        _wait_gone(pids, time.monotonic() + wait)
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
        info = _stat(pid)
        if info is not None and info[0] == "Z" and info[1] == me:
            _reap(pid)


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
