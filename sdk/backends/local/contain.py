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
import sys
import threading
import time
from functools import lru_cache
from typing import Callable

from .cgroup import CGROUP_PREFIX, JobCgroup, Lifeline, cgroup_home, cgroup_pids, is_job_cgroup, kill_cgroup
from .procfs import kill_pids, process_stat, process_stat3, process_table, reap, wait_gone

__all__ = [
    "CGROUP_PREFIX",
    "JobCgroup",
    "Lifeline",
    "adopted_orphans",
    "become_subreaper",
    "cgroup_home",
    "cgroup_pids",
    "children",
    "is_job_cgroup",
    "job_processes",
    "kill_cgroup",
    "pdeathsig_prefix",
    "reap_orphans",
    "restore_subreaper",
    "stop_escaped",
]

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
            kill_pids(left)
            wait_gone(left, time.monotonic() + 2.0)
            reap_orphans(_Jobs.before)
        if PRCTL is not None and previous is False:
            PRCTL(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


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


def adopted_orphans(children_before: set[int]) -> list[int]:
    """Processes re-parented to this subreaper by a task's descendants, with all theirs.

    An orphan is a live child of this process that was not one of its children before the
    job and runs in another session than this process': every task starts a session of its
    own, and no descendant of a task can ever join the launcher's session again, so a new
    child in another session can only be what a task left (or, in a pipeline process that
    runs ``Job.run()``, a child its own code started in a new session while the job ran).
    """
    me = os.getpid()
    own = process_stat3(me)
    table = process_table()
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
        kill_pids(pids)
        killed.extend(pids)
        wait_gone(pids, time.monotonic() + wait)
    reap_orphans(children_before)
    return killed


def children() -> set[int]:
    """This process's children (from /proc; empty where /proc is not there): each thread's
    ``/proc/self/task/<tid>/children`` where the kernel has them (``CONFIG_PROC_CHILDREN``),
    else a scan of every process's parent (its cost grows with the machine's processes)."""
    listed = _listed_children()
    if listed is not None:
        return listed
    me = os.getpid()
    return {pid for pid, (_, ppid, _) in process_table().items() if ppid == me}


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
        info = process_stat(pid)
        if info is not None and info[0] == "Z":
            reap(pid)
