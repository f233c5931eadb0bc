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
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

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


def job_dir_of(store: JobStore, job_id: str) -> Path | None:
    """The directory tfjob keeps a job's files in: ``jobs/<id>`` beside the store's file; None for
    an id that is no plain name there (a cloud job's ``projects/…/customJobs/N``, ``NAMESPACE/NAME``)."""
    if not job_id or "/" in job_id or "\\" in job_id or "\0" in job_id or job_id.startswith("."):
        return None
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
        own = job_dir_of(store, job_id)
        aside = None if keep_files or own is None else _put_aside(own)
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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def tree_size(path: Path) -> int:
    """The bytes of the files under ``path``, links not followed (a link counts as itself); any depth."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
    except OSError:
        return 0
    total = 0
    try:
        pending = [os.open(path, _DIR_FLAGS)]
    except OSError:
        return 0
    while pending:  # a stack of open directories, not recursion
        fd = pending.pop()
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(os.open(entry.name, _DIR_FLAGS, dir_fd=fd))
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


def remove_tree(path: Path) -> list[str]:
    """Remove ``path`` and everything under it, at any depth, never following a link (a link is
    removed as a link; each directory is opened relative to its parent, without following one);
    a directory without permissions is given them (it is tfjob's) and tried again. Returns what
    could not be removed, one line each."""
    failed: list[str] = []
    try:
        if path.is_symlink() or not path.is_dir():
            if path.is_symlink() or path.exists():
                path.unlink()
            return failed
        top = os.open(path, _DIR_FLAGS)
    except OSError as e:
        return [f"{path}: {e.strerror or e}"]
    # Each frame: the directory's fd, its name in its parent, the names in it that could not go.
    stack: list[tuple[int, str, set[str]]] = [(top, "", set())]
    while stack:
        fd, name, skipped = stack[-1]
        child = _step(fd, skipped, failed, path)
        if child is not None:
            stack.append(child)
            continue
        os.close(fd)
        stack.pop()
        if stack:
            parent, _, parent_skipped = stack[-1]
            if not _try(lambda: os.rmdir(name, dir_fd=parent), parent):
                parent_skipped.add(name)
                failed.append(f"{path}/…/{name}: not empty or not removable")
    if not failed and not _try(lambda: os.rmdir(path), None):
        failed.append(f"{path}: cannot remove it")
    return failed


def _step(fd: int, skipped: set[str], failed: list[str], root: Path) -> tuple[int, str, set[str]] | None:
    """Remove the files of the directory open at ``fd``; the first subdirectory left, opened
    (to be emptied next), or None when only what could not be removed is left."""
    try:
        with os.scandir(fd) as it:
            entries = [e for e in it if e.name not in skipped]
    except OSError as e:
        failed.append(f"{root}: {e.strerror or e}")
        return None
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if not is_dir:
            if not _try(lambda: os.unlink(entry.name, dir_fd=fd), fd):
                skipped.add(entry.name)
                failed.append(f"{root}/…/{entry.name}: cannot remove it")
            continue
        try:
            return os.open(entry.name, _DIR_FLAGS, dir_fd=fd), entry.name, set()
        except PermissionError:
            try:  # a directory of the job's without read or search permission
                os.chmod(entry.name, stat.S_IRWXU, dir_fd=fd)
                return os.open(entry.name, _DIR_FLAGS, dir_fd=fd), entry.name, set()
            except OSError:
                pass
        except OSError:
            pass
        skipped.add(entry.name)
        failed.append(f"{root}/…/{entry.name}: cannot open it")
    return None


def _try(action: Callable[[], None], dir_fd: int | None) -> bool:
    """Run ``action``; on a permission error, give the directory open at ``dir_fd`` write
    permission and run it again. Whether it was done (a name already gone counts as done)."""
    for attempt in (0, 1):
        try:
            action()
            return True
        except FileNotFoundError:
            return True
        except PermissionError:
            if attempt or dir_fd is None:
                return False
            try:
                os.chmod(dir_fd, stat.S_IRWXU)
            except OSError:
                return False
        except OSError:
            return False
    return False
