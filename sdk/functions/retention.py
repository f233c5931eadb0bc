"""What tfjob keeps of its function jobs under ``$TFJOB_HOME/functions``, and for how long.

That directory holds (:mod:`.package`, :mod:`.function`)::

    <digest>/                     a call's package (an unchanged call reuses it, and touches it)
    tfjob-results/<id>.pkl        a result its chief wrote (the tasks run as processes)
    tfjob-results/<id>/           a job's own directory (the tasks run as containers: the one
                                  path mounted writable), its result inside
    .lock                         held shared while a package is found or written, exclusive
                                  while pruning

:func:`prune` runs whenever a function job is submitted. What it keeps:

- what the newest :data:`KEEP_JOBS` function jobs of the job store name — their results and
  packages, whatever their age (``tfjob.get_job(ID).result()`` reads a result again, in any
  process), as long as they total at most :data:`KEEP_BYTES`, newest first;
- what a job that has not ended names;
- anything changed within :data:`RECENT` (a job being submitted, whose record is not written
  yet; a result not read yet; a package just built or reused).

Everything else there is removed: older results and packages, those no job record names (their
record removed, or in another store), leftovers of an interrupted write. A ``job_dir`` the caller
gave is theirs: nothing in it is ever removed. Two processes at once: one prunes, the other
skips (the lock); a package is never removed while another process finds or writes one.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

#: The newest function jobs whose results and packages are kept, whatever their age.
KEEP_JOBS = 100
#: At most this many bytes of those are kept (newest first; what is recent is kept anyway).
KEEP_BYTES = 1024 * 1024 * 1024
#: Nothing changed within this many seconds is removed.
RECENT = 24 * 3600
#: The results' directory under ``$TFJOB_HOME/functions`` (and under a job dir).
RESULTS = "tfjob-results"
LOCK = ".lock"
#: A directory being removed is renamed to this prefix first (a package is whole or gone).
_REMOVING = ".removing-"
_PARTIAL = ".partial-"
#: The most entries of the directory looked at in one prune (the rest wait for the next).
_MAX_ENTRIES = 100_000


def functions_dir() -> Path:
    """``$TFJOB_HOME/functions``: the function jobs' packages and results."""
    from ..runtime.settings import tfjob_home

    return tfjob_home() / "functions"


@contextlib.contextmanager
def locked(directory: Path, *, exclusive: bool, wait: bool) -> Iterator[bool]:
    """Hold ``directory``'s lock (shared or exclusive) while the block runs: True; False when
    it is not to be had without waiting (``wait=False``) or this system has no ``flock``."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK, "a") as f:
        try:
            fcntl.flock(f, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _key(name: str) -> str:
    """The job a results entry is of: ``<id>.pkl``, ``<id>/`` and ``<id>.pkl.<pid>.partial`` are one."""
    return name.split(".", 1)[0]


def _named(record: Any, directory: Path) -> set[Path]:
    """The entries of ``directory`` a function job's record names: its package, and its result
    (when it is under ``directory``'s results: a job dir the caller gave is not)."""
    from .result import result_uri

    spec = record.spec if isinstance(record.spec, dict) else {}
    out: set[Path] = set()
    package = spec.get("package")
    if isinstance(package, str) and Path(package).resolve().parent == directory:
        out.add(Path(package).resolve())
    uri = result_uri(spec.get("args") if isinstance(spec.get("args"), list) else None)
    results = directory / RESULTS
    path = Path(uri).resolve() if uri and "://" not in uri else None
    if path is not None and path.is_relative_to(results) and path != results:
        out.add(results / _key(path.relative_to(results).parts[0]))
    return out


def _entries(directory: Path) -> dict[Path, list[Path]]:
    """The prunable entries of ``directory``: key → the paths that are it (a results entry may
    be a file, a directory and partial writes)."""
    out: dict[Path, list[Path]] = {}
    seen = 0
    for parent, is_results in ((directory, False), (directory / RESULTS, True)):
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            seen += 1
            if seen > _MAX_ENTRIES:
                return out
            if name == LOCK or (not is_results and name == RESULTS):
                continue
            key = parent / (_key(name) if is_results and not name.startswith(".") else name)
            out.setdefault(key, []).append(parent / name)
    return out


def _kept(records: Iterable[Any], directory: Path) -> set[Path]:
    """The entries the job records keep: every one a job not ended names; those the newest
    :data:`KEEP_JOBS` ended ones name, up to :data:`KEEP_BYTES`, newest first."""
    from ..runtime.removal import tree_size  # (the job store's module: not on the packaging path)

    kept: set[Path] = set()
    counted: set[Path] = set()
    jobs = total = 0
    for record in sorted(records, key=lambda r: r.created or 0, reverse=True):
        named = _named(record, directory)
        if not named:
            continue
        if not record.state.is_terminal:
            kept |= named
            continue
        jobs += 1
        if jobs > KEEP_JOBS:
            continue
        total += sum(tree_size(p) for p in named - counted)
        counted |= named
        if total <= KEEP_BYTES:
            kept |= named
    return kept


def _recent(paths: list[Path], now: float) -> bool:
    for path in paths:
        try:
            if now - path.lstat().st_mtime < RECENT:
                return True
        except OSError:
            continue
    return False


def prune(store: Any, directory: Path | None = None, *, keep: Iterable[str | Path] = ()) -> list[Path]:
    """Remove what the policy (the module's) does not keep from ``directory`` (default
    ``$TFJOB_HOME/functions``), given the jobs ``store`` records, and ``keep`` (the package of
    the job about to be submitted); return what was removed. Nothing when another process holds
    the lock (it prunes, or finds a package)."""
    from ..runtime.removal import remove_tree  # (the job store's module: not on the packaging path)

    directory = (functions_dir() if directory is None else directory).resolve()
    if not directory.is_dir():
        return []
    removed: list[Path] = []
    aside: list[Path] = []
    with locked(directory, exclusive=True, wait=False) as held:
        if not held:
            return []
        kept = _kept(store.list(spec_holds="--result"), directory) | {Path(p).resolve() for p in keep}
        now = time.time()
        for key, paths in _entries(directory).items():
            if key in kept or (not key.name.startswith(_REMOVING) and _recent(paths, now)):
                continue
            for path in paths:
                if path.name.startswith(_REMOVING):
                    aside.append(path)  # an earlier prune's, not removed whole
                elif _put_aside(path, directory, aside):
                    removed.append(path)
    # Directories are removed outside the lock: renamed aside first, no package is half there.
    for path in aside:
        remove_tree(path)  # what cannot go stays aside, named .removing-: the next prune tries again
    return removed


def removed_note(uri: str) -> str:
    """What to add when a result at ``uri`` is not there: tfjob may have pruned it."""
    if "://" in uri or not Path(uri).resolve().is_relative_to((functions_dir() / RESULTS).resolve()):
        return ""
    return (
        f" (or tfjob removed it: it keeps the results of the newest {KEEP_JOBS} function jobs, "
        f"up to {KEEP_BYTES // (1024 * 1024)} MiB, and any of the last {RECENT // 3600} hours)"
    )


def _put_aside(path: Path, directory: Path, aside: list[Path]) -> bool:
    """Remove a file, or rename a directory aside (into ``aside``) to be removed: whether done."""
    if path.is_dir() and not path.is_symlink():
        to = directory / f"{_REMOVING}{path.name}-{os.getpid()}"
        try:
            os.replace(path, to)
        except OSError:
            return False
        aside.append(to)
        return True
    try:
        path.unlink()
    except OSError:
        return False
    return True


def forget(record: Any, directory: Path | None = None) -> tuple[list[Path], int]:
    """Remove the result a function job's record names under ``directory`` (default
    ``$TFJOB_HOME/functions``), once its record is gone (``tfjob rm``, ``tfjob prune``): its
    ``<id>.pkl``, its own directory, partial writes. Its package is shared by every call of the
    same function: :func:`prune` removes it once no record names it. A result in a job dir the
    caller gave is theirs: not touched. Returns what was removed and its bytes."""
    from ..runtime.removal import remove_tree, tree_size  # (the job store's module: not on the packaging path)

    directory = (functions_dir() if directory is None else directory).resolve()
    results = directory / RESULTS
    mine = {p for p in _named(record, directory) if p.parent == results}
    if not mine or not results.is_dir():
        return [], 0
    removed: list[Path] = []
    aside: list[Path] = []
    size = 0
    with locked(directory, exclusive=True, wait=True):
        try:
            names = os.listdir(results)[:_MAX_ENTRIES]
        except OSError:
            names = []
        for name in names:
            path = results / name
            if not name.startswith(".") and results / _key(name) in mine:
                size += tree_size(path)
                if _put_aside(path, directory, aside):
                    removed.append(path)
    for path in aside:
        remove_tree(path)  # what cannot go stays aside, named .removing-: the next prune tries again
    return removed, size
