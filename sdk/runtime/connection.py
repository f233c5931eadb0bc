"""The job store's connection: one SQLite file opened on first use, shared by concurrent
``tfjob`` processes (WAL journal, a busy timeout, ``BEGIN IMMEDIATE`` around every write), opened
read-only where it cannot be written, a damaged file moved aside, and closed at exit.

:class:`StoreFile` is what :class:`tfjob.runtime.store.JobStore` reads and writes through.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TypeVar

from ..errors import StoreError
from .schema import ADDED_COLUMNS, SCHEMA, is_corrupt, move_aside, special_file
from .settings import tfjob_home

if TYPE_CHECKING:
    import weakref

_S = TypeVar("_S", bound="StoreFile")

#: The stores this process opened, closed by an ``atexit`` callback (before the interpreter's
#: teardown, whose order of finalization is not defined): a store left open leaves its last
#: writes in its WAL file, where damage to ``jobs.db`` itself would go unseen.
_OPENED: "weakref.WeakSet[StoreFile] | None" = None


def _close_at_exit(store: "StoreFile") -> None:
    global _OPENED
    if _OPENED is None:
        import atexit
        import weakref

        _OPENED = weakref.WeakSet()
        atexit.register(_close_opened)
    _OPENED.add(store)


def _close_opened() -> None:
    for store in list(_OPENED or ()):
        try:
            store.close()
        except sqlite3.Error:
            pass


class StoreFile:
    """The SQLite file of a job store (``$TFJOB_HOME/jobs.db`` unless ``path`` is given) and its connection."""

    def __init__(self, path: str | Path | None = None) -> None:
        #: The SQLite file; ``$TFJOB_HOME`` is read here, once, when no path is given.
        self.path = Path(path) if path is not None else tfjob_home() / "jobs.db"
        # Reentrant: a store opens its connection on first use, from inside a read or a write.
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        #: True when the store could only be opened for reading (a read-only TFJOB_HOME).
        self.read_only = False
        self._read_only_reason = ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    @property
    def jobs_dir(self) -> Path:
        """Where the jobs this store records keep their files (a local job's logs): ``jobs/``
        beside the store's file (``$TFJOB_HOME/jobs`` for the user's store)."""
        return self.path.parent / "jobs"

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection, opened on first use (making a store touches no file: a render, a
        dry run or ``--help`` never creates ``$TFJOB_HOME``); :meth:`close` closes it, and a
        later use opens it again."""
        with self._lock:
            if self._db is None:
                self._connect()
            assert self._db is not None
            return self._db

    def _connect(self) -> None:
        home = self.path.parent
        if home.is_symlink() and not home.exists():
            raise StoreError(
                f"{home} (TFJOB_HOME) is a symbolic link to {os.readlink(home)}, which does not exist; create that "
                "directory, or point TFJOB_HOME at a directory"
            )
        if home.exists() and not home.is_dir():
            raise StoreError(f"{home} (TFJOB_HOME) is a file, not a directory; remove it or point TFJOB_HOME at a directory")
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not the job store; remove or rename it (tfjob makes a new store)")
        odd = special_file(self.path)
        if odd:
            raise StoreError(f"{self.path} is {odd}, not the job store (a file); remove it (tfjob makes a new store)")
        try:
            home.mkdir(parents=True, exist_ok=True)
            self._open()
        except sqlite3.DatabaseError as e:
            self._db = None
            if not is_corrupt(e):
                raise self._error(e) from None
            aside = move_aside(self.path)
            import sys

            print(
                f"tfjob: warning: the job store {self.path} was damaged ({e}); moved it to {aside} "
                "and started a new one (jobs recorded there are no longer listed)",
                file=sys.stderr,
            )
            try:
                self._open()
            except sqlite3.DatabaseError as again:
                self._db = None
                raise self._error(again) from None
        except OSError as e:
            self._db = None
            raise StoreError(f"{home} (TFJOB_HOME): cannot create it: {e.strerror or e}; set TFJOB_HOME to a writable directory") from None

    def open(self: _S) -> _S:
        """Open the store now (else its first read or write does); return it."""
        _ = self._conn
        return self

    def _error(self, e: BaseException) -> StoreError:
        """A StoreError naming the file and the fix for an SQLite failure."""
        text = str(e)
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return StoreError(
                f"{self.path}: cannot write the job store ({text}); make {self.path.parent} writable "
                "or set TFJOB_HOME to a writable directory"
            )
        if "full" in text or "disk I/O" in text:
            return StoreError(
                f"{self.path}: cannot write the job store ({text}; is the disk full?); free some space on "
                f"{self.path.parent} and run the command again"
            )
        return StoreError(f"{self.path}: the job store failed ({text}); run the command again, or move the file aside")

    def _open(self) -> None:
        _close_at_exit(self)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
            self._setup()
        except sqlite3.OperationalError as e:
            if not self.path.is_file():
                raise
            # A read-only TFJOB_HOME, or a full disk: reading still works (`list`, `status`),
            # and a write says why it cannot.
            try:
                self._db = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro&immutable=1",
                    uri=True,
                    timeout=30,
                    isolation_level=None,
                    check_same_thread=False,
                )
                self._conn.row_factory = sqlite3.Row
                self._conn.execute("SELECT count(*) FROM jobs").fetchone()
            except sqlite3.DatabaseError:
                raise e from None
            self.read_only = True
            self._read_only_reason = str(e)

    def _setup(self) -> None:
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA busy_timeout = 30000")
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # e.g. a file system without shared memory
            self._conn.execute("PRAGMA journal_mode = DELETE")
        else:
            # Safe with WAL (no corruption on a crash) and no fsync per state change.
            self._conn.execute("PRAGMA synchronous = NORMAL")
        with self._lock:
            self._conn.executescript(SCHEMA)
            for table, columns in ADDED_COLUMNS.items():
                have = {r["name"] for r in self._conn.execute(f"PRAGMA table_info({table})")}
                for column, kind in columns.items():
                    if column not in have:
                        try:
                            self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                        except sqlite3.OperationalError:  # another process added it first
                            pass

    def close(self) -> None:
        """Close the connection (a later use opens it again)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __del__(self) -> None:
        # Closed with the store, not only when the interpreter tears down: the last close of
        # the file folds the WAL back into jobs.db.
        db = getattr(self, "_db", None)
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass

    def __enter__(self: _S) -> _S:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._conn  # opened first: only then is it known whether it is read-only
        if self.read_only:
            raise self._error(sqlite3.OperationalError(self._read_only_reason))
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as e:
                raise self._error(e) from None
            try:
                yield self._conn
            except sqlite3.DatabaseError as e:
                self._rollback()
                if isinstance(e, sqlite3.IntegrityError):
                    raise
                raise self._error(e) from None
            except BaseException:
                self._rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                self._rollback()
                raise self._error(e) from None

    def _rollback(self) -> None:
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.DatabaseError:
            pass  # SQLite already rolled back (a full disk does)

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as e:
                raise self._error(e) from None
