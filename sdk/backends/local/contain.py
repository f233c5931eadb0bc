"""Keep every process a job starts inside the job, even those that leave its process group.

A task runs in its own process group, and teardown signals the group. A trainer that
double-forks with ``setsid`` or calls ``subprocess.Popen(..., start_new_session=True)``
leaves that group. Two mechanisms catch such a process on Linux:

- the launcher becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``) for the job's
  life, so an orphaned descendant is re-parented to it rather than to PID 1 and can be
  reaped by it;
- every task's environment carries ``TFJOB_JOB_ID``, which its descendants inherit:
  at teardown :func:`job_processes` finds each live process that carries this job's id,
  and :func:`stop_escaped` kills it and reaps it.

A process that clears its environment and leaves the group escapes both; a cgroup
would be needed for that, and is not assumed here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def load_prctl():  # type: ignore[no-untyped-def]
    """libc's ``prctl`` (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


#: Resolved once, at import in the parent: a child must not load libraries between fork and exec.
PRCTL = load_prctl()


def become_subreaper() -> bool | None:
    """Make this process the subreaper of its descendants; return the previous setting (None: unsupported)."""
    if PRCTL is None:
        return None
    previous = ctypes.c_int(0)
    if PRCTL(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0) != 0:
        return None
    if PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return None
    return bool(previous.value)


def restore_subreaper(previous: bool | None) -> None:
    """Undo :func:`become_subreaper` (when this process was not a subreaper before)."""
    if PRCTL is not None and previous is False:
        PRCTL(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1])


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


def stop_escaped(job_id: str, children_before: set[int], wait: float = 2.0) -> list[int]:
    """SIGKILL every live process of the job, reap those re-parented here; return their pids.

    ``children_before``: this process's children before the job started (never reaped here:
    they belong to the caller, e.g. a pipeline that runs ``Job.run()``).
    """
    pids = job_processes(job_id)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    until = time.monotonic() + wait
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
    reap_orphans(children_before)
    return pids


def children() -> set[int]:
    """This process's children (from /proc; empty where /proc is not there)."""
    me = os.getpid()
    out = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[1] == me:
                out.add(int(entry))
    return out


def reap_orphans(children_before: set[int]) -> None:
    """Reap zombies re-parented to this subreaper during the job (never the caller's own children)."""
    for pid in children() - children_before:
        info = _stat(pid)
        if info is not None and info[0] == "Z":
            _reap(pid)
