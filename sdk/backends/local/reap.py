"""Jobs whose supervisor died: recorded LOST, and what is left of them stopped.

A local job runs under a supervising process (the launcher, or the detached
supervisor). If that process is killed (SIGKILL, a reboot) before it records how the
job ended, the job would read "running" forever. The local backend's ``status``,
``list`` and ``wait`` — and ``tfjob list`` — pass each record they show through
:func:`reap_lost`: such a job becomes LOST and everything left of it is stopped the way
the supervisor would have stopped it: its containers removed, its cgroup killed and
removed (its path is in the record, see :mod:`.contain`), its tasks' leftover process
groups killed, and every process carrying its id. The job store itself only reads and
writes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ...model import JobState
from ...runtime.store import JobRecord, JobStore, process_alive, process_start_time


def reap_lost(store: JobStore, record: JobRecord) -> JobRecord:
    """Record the job LOST if its supervising process died before recording an end, and
    stop what is left of it.

    Returns:
        The record as it is now (unchanged when the job ended, has no supervisor, or its
        supervisor still runs).
    """
    from ...errors import StoreError

    # A state this version does not know (a later version's PREEMPTED) or a recorded end
    # time: the job's end may be recorded in words this version cannot read; not rewritten.
    if record.state.is_terminal or record.state is JobState.UNKNOWN or record.ended is not None or not record.supervisor_pid:
        return record
    if process_alive(record.supervisor_pid, record.supervisor_start):
        return record
    message = (
        f"the process that supervised the job (pid {record.supervisor_pid}) ended without "
        "recording how the job ended; its tasks were stopped with it"
    )
    try:
        # Only if the row still names the process found dead: a detached submit hands the job
        # to its supervisor (a new pid in the row) and then ends.
        orphans = store.mark_lost(record.id, message, supervisor=(record.supervisor_pid, record.supervisor_start))
    except StoreError:
        return record  # a read-only or full store: show the job as recorded
    if orphans is None:
        current = store.get(record.id) or record  # it ended just now, or has a new supervisor
        if current.supervisor_pid != record.supervisor_pid or current.supervisor_start != record.supervisor_start:
            return reap_lost(store, current)  # the new supervisor, checked in its turn
        return current
    from . import contain  # only for a job found lost: `tfjob list` stays light

    record = store.get(record.id) or record  # as the supervisor last wrote it (its cgroup)
    remove_containers(record)  # first: the engine's helper processes may be in the cgroup
    cgroup = (record.extra or {}).get("cgroup")
    if isinstance(cgroup, str) and contain.is_job_cgroup(cgroup, record.id):
        contain.kill_cgroup(Path(cgroup))
    for pid, start in orphans:
        stop_orphan_group(pid, start)
    for pid in contain.job_processes(record.id):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return store.get(record.id) or record


def stop_orphan_group(pid: int, start: int | None) -> None:
    """SIGKILL what is left of a lost task's process group (pgid = the task's pid).

    A task dies with its supervisor (its job's lifeline kills the cgroup, or the task's
    ``PR_SET_PDEATHSIG``), but without a cgroup processes it started stay in its group. The group is killed only if it is provably the task's: the
    task itself still runs (same start time), or no process has its pid any more —
    the kernel never hands out a pid still in use as a group id, so a group without
    its leader can only be what is left of the task.
    """
    if not pid or pid <= 1 or pid == os.getpid():
        return
    now = process_start_time(pid)
    if now is not None and (start is None or now == 0 or now != start):
        return  # a live process we cannot prove is the task: not ours to touch
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def remove_containers(record: JobRecord) -> None:
    """A lost local job's containers (``--image`` tasks, labelled with its id) go with it:
    the supervisor that would have removed them is gone (SIGKILLed, the machine rebooted)."""
    spec = record.spec or {}
    uses_images = bool(spec.get("image")) or any(p.get("image") for p in spec.get("pools") or [])
    if record.backend != "local" or not uses_images:
        return
    from ...runtime.engine import find_engine
    from ...errors import TfjobError

    try:
        find_engine((record.options or {}).get("container_engine")).remove_job(record.id)
    except TfjobError:
        pass  # no engine any more: nothing of it can be running
