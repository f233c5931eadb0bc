"""Ended jobs taken out of the job store, with their directory under ``jobs/`` (``tfjob rm``, ``tfjob prune``).

A job is taken in one write transaction of the store (:func:`take_ended`): its record is read, and
only if it has ended are its directory renamed aside (``jobs/.removing-<id>-<pid>``) and its rows
deleted. No job can be added between the read and the delete (the store's write lock), so a new job
given the same id later gets a directory of its own, and the old files are removed from their
aside name after the commit (:func:`remove_tree`), by whoever took them. Nothing is followed
out of ``jobs/``: a symbolic link is removed as a link, never its target.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..model import JobState
from .records import JobRecord, row_to_job
from .store import JobStore

#: A job's directory being removed is renamed to this prefix first (a job id never starts with a dot).
REMOVING = ".removing-"
#: The records read from the store at a time by :func:`ended_before`.
PAGE = 500
_ENDED = tuple(s.value for s in JobState if s.is_terminal)


@dataclass
class Taken:
    """What :func:`take_ended` found: the record; whether it was taken (False: it has not ended);
    its directory, renamed aside to be removed (None: it had none, or it is kept)."""

    record: JobRecord
    taken: bool
    aside: Path | None = None


def job_dir_of(store: JobStore, job_id: str) -> Path:
    """The directory tfjob keeps a job's files in: ``jobs/<id>`` beside the store's file."""
    return store.jobs_dir / job_id


def take_ended(store: JobStore, job_id: str, *, keep_files: bool = False) -> Taken | None:
    """Delete the job's rows if it has ended, renaming its directory aside in the same transaction
    (unless ``keep_files``); None when the store has no such job."""
    with store._write() as c:  # the store's own transaction (this module is the store's)
        row = c.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return None
        record = row_to_job(row)
        if not record.state.is_terminal:
            return Taken(record, False)
        aside = None if keep_files else _put_aside(job_dir_of(store, job_id))
        for table, column in (("events", "job_id"), ("tasks", "job_id"), ("requests", "job_id"), ("jobs", "id")):
            c.execute(f"DELETE FROM {table} WHERE {column} = ?", (job_id,))
        return Taken(record, True, aside)


def _put_aside(path: Path) -> Path | None:
    """Rename ``path`` to a ``.removing-`` name beside it (a link is removed at once); the new path."""
    try:
        if path.is_symlink():
            path.unlink()
            return None
        if not path.is_dir():
            return None
        aside = path.with_name(f"{REMOVING}{path.name}-{os.getpid()}")
        os.replace(path, aside)
        return aside
    except OSError:
        return None


def ended_before(store: JobStore, cutoff: float, backend: str | None = None, page: int = PAGE) -> Iterator[JobRecord]:
    """The jobs that ended (else were created) before ``cutoff``, read ``page`` at a time (in id
    order, from where the last page stopped: records removed meanwhile shift nothing)."""
    marks = ", ".join("?" for _ in _ENDED)
    last = ""
    while True:
        rows = store._read(
            f"SELECT * FROM jobs WHERE id > ? AND state IN ({marks}) AND COALESCE(ended, created) < ?"
            " AND (? IS NULL OR backend = ?) ORDER BY id LIMIT ?",
            (last, *_ENDED, cutoff, backend, backend, int(page)),
        )
        for row in rows:
            yield row_to_job(row)
        if len(rows) < page:
            return
        last = rows[-1]["id"]


def leftovers(store: JobStore) -> list[Path]:
    """Directories an earlier removal renamed aside and did not finish removing."""
    try:
        with os.scandir(store.jobs_dir) as entries:
            return [Path(e.path) for e in entries if e.name.startswith(REMOVING)]
    except OSError:
        return []


def tree_size(path: Path) -> int:
    """The bytes of the files under ``path``, links not followed (a link counts as itself)."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
    except OSError:
        return 0
    total = 0
    for root, _, files in os.walk(path):  # iterative; links to directories are not entered
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def remove_tree(path: Path) -> list[str]:
    """Remove ``path`` and everything under it, never following a link (a link is removed as a
    link); a directory without write permission is given it (it is tfjob's) and tried again.
    Returns what could not be removed, one line each."""
    failed: list[str] = []

    def retry(func: object, name: str, info: object) -> None:
        parent = os.path.dirname(name)
        try:
            if not os.path.islink(parent):
                os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, stat.S_IRWXU)
                shutil.rmtree(name)
            else:
                os.unlink(name)
        except OSError as e:
            failed.append(f"{name}: {e.strerror or e}")

    if path.is_symlink():
        try:
            path.unlink()
        except OSError as e:
            failed.append(f"{path}: {e.strerror or e}")
        return failed
    if path.is_dir():
        shutil.rmtree(path, onerror=retry)
    return failed
