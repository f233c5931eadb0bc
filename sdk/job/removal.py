"""Ended jobs removed: their record and what tfjob keeps of them on this machine (``tfjob rm``,
``tfjob prune``, :meth:`tfjob.JobHandle.remove`).

What goes with a record: a local job's directory ``$TFJOB_HOME/jobs/<id>`` (its logs, tasks.json,
its tasks' working directories ``work/<task>``: files a trainer wrote there by a relative path go
too), and a function job's result under ``$TFJOB_HOME/functions`` (its package once no record
names it: :mod:`tfjob.functions.retention`). Never anything outside ``$TFJOB_HOME``: a ``--job-dir``
is the user's, and when a job's ``--job-dir`` lies in (or holds) its directory, that directory is
kept and the removal says so. A cloud job's record goes alone: the platform's job, its outputs in
its job dir or bucket are not touched. The store's transaction takes the record and renames the
directory aside at once (:mod:`tfjob.runtime.removal`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import JobNotFoundError, JobTimeoutError, UsageError
from ..runtime import removal as taking

if TYPE_CHECKING:
    from ..runtime.records import JobRecord
    from ..runtime.store import JobStore

#: How long ``--force`` waits for a job it cancelled to end before it gives up.
FORCE_WAIT = 120.0
#: How long a removal waits for an ended local job's launcher to exit.
LAUNCHER_WAIT = 10.0


@dataclass
class Removal:
    """One job removed (or, in a dry run, that would be): its id, backend, the bytes freed,
    and notes to show (what was kept and why, what could not be removed)."""

    id: str
    backend: str
    bytes: int = 0
    paths: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _local_path(record: JobRecord) -> Path | None:
    job_dir = record.spec.get("job_dir") if isinstance(record.spec, dict) else None
    if not isinstance(job_dir, str) or not job_dir or "://" in job_dir or not Path(job_dir).is_absolute():
        return None
    return Path(job_dir).resolve()


def keeps_user_outputs(store: JobStore, record: JobRecord) -> Path | None:
    """The job's ``--job-dir`` when it lies in (or holds) tfjob's directory of the job: the user's
    outputs, which a removal must keep; else None."""
    user = _local_path(record)
    own = taking.job_dir_of(store, record.id)
    if user is not None and own is not None and (user.is_relative_to(own.resolve()) or own.resolve().is_relative_to(user)):
        return user
    return None


def _cloud_note(record: JobRecord) -> str:
    return (
        f"job {record.id} ran on {record.backend}: only tfjob's record of it was removed; "
        "the platform's job and its outputs (job dir, bucket) are untouched"
    )


def _function_result(record: JobRecord) -> tuple[list[Path], int]:
    args = record.spec.get("args") if isinstance(record.spec, dict) else None
    if not isinstance(args, list) or "--result" not in args:
        return [], 0
    from ..functions.retention import forget

    return forget(record)


def take(store: JobStore, job_id: str, *, dry_run: bool = False) -> Removal | None:
    """Remove the ended job ``job_id`` (an exact id) now: None when it is not in the store.

    Raises:
        UsageError: it has not ended (naming the fix).
    """
    record = store.get(job_id)
    if record is None:
        return None
    kept = keeps_user_outputs(store, record)
    own = taking.job_dir_of(store, record.id)
    if dry_run:
        if not record.state.is_terminal:
            raise _not_ended(record)
        done = Removal(record.id, record.backend, 0 if kept or own is None else taking.tree_size(own))
    else:
        taken = taking.take_ended(store, job_id, keep_files=kept is not None)
        if taken is None:
            return None
        if not taken.taken:
            raise _not_ended(taken.record)
        record = taken.record
        done = Removal(record.id, record.backend)
        if taken.aside is not None:
            done.bytes += taking.tree_size(taken.aside)
            done.paths.append(str(own))
            done.failed += taking.remove_tree(taken.aside)
        paths, size = _function_result(record)
        done.paths += [str(p) for p in paths]
        done.bytes += size
    if kept is not None:
        done.notes.append(f"kept {own}: job {record.id}'s --job-dir {kept} overlaps it (your outputs); remove it yourself when done")
    if record.backend != "local":
        done.notes.append(_cloud_note(record))
    return done


def _not_ended(record: JobRecord) -> UsageError:
    return UsageError(
        f"job {record.id} is {record.state.value}, not ended; cancel it first (tfjob cancel {record.id}), "
        f"or tfjob rm --force {record.id} cancels it, waits for its end and removes it"
    )


def remove(handle: Any, *, force: bool = False, timeout: float = FORCE_WAIT) -> Removal:
    """:meth:`tfjob.JobHandle.remove`: the ended job's record and files removed; with ``force``, a
    job that has not ended is cancelled first and waited for (at most ``timeout`` seconds)."""
    store: JobStore = handle.store
    record = store.get(handle.id)
    if record is None:
        raise JobNotFoundError(f"no job {handle.id!r} in {store.path}; `tfjob list` shows the known jobs")
    if not record.state.is_terminal and record.backend == "local":
        handle.status()  # a local job whose launcher died is recorded LOST here
        record = store.get(handle.id) or record
    if not record.state.is_terminal and force:
        handle.cancel()
        try:
            handle.wait(timeout)
        except JobTimeoutError:
            raise JobTimeoutError(
                f"job {handle.id} did not end within {timeout:g}s of its cancel, so it was not removed; "
                f"`tfjob wait {handle.id}` waits for it, then `tfjob rm {handle.id}`"
            ) from None
    _launcher_gone(store.get(handle.id) or record)
    done = take(store, handle.id)
    if done is None:
        raise JobNotFoundError(f"no job {handle.id!r} in {store.path}; `tfjob list` shows the known jobs")
    return done


def _launcher_gone(record: JobRecord, within: float = LAUNCHER_WAIT) -> None:
    """Let an ended local job's launcher (another process) finish its last writes to the job's
    directory (the summary, tasks.json) and exit, for a moment at most, before it is removed."""
    import os

    from ..runtime.processes import process_alive

    pid = record.supervisor_pid
    if record.backend != "local" or not record.state.is_terminal or not pid or pid == os.getpid():
        return
    deadline = time.monotonic() + within
    while process_alive(pid, record.supervisor_start) and time.monotonic() < deadline:
        time.sleep(0.05)


def prune(
    store: JobStore, older_than: float, *, backend: str | None = None, dry_run: bool = False, now: float | None = None
) -> Iterator[Removal]:
    """The ended jobs older than ``older_than`` seconds (by their end) removed one by one, read from
    the store a page at a time; with ``dry_run``, those that would be (nothing is removed)."""
    from ..backends import BACKENDS

    if backend is not None and backend not in BACKENDS:
        raise UsageError(f"--backend {backend!r} is not a backend; choose one of {', '.join(BACKENDS)}")
    cutoff = (time.time() if now is None else now) - older_than
    for record in taking.ended_before(store, cutoff, backend):
        try:
            done = take(store, record.id, dry_run=dry_run)
        except UsageError:  # it started again meanwhile (a new job under the same id)
            continue
        if done is not None:
            yield done
    if not dry_run:
        for path in taking.leftovers(store):
            taking.remove_tree(path)
        from ..functions.retention import functions_dir, prune as prune_functions

        if functions_dir().is_dir():
            prune_functions(store)
