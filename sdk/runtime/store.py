"""The job store: one SQLite file under ``$TFJOB_HOME`` that every backend records in.

``tfjob list / status / logs / cancel`` work across processes because every job,
its state history and its tasks are written here. The file is shared by concurrent
``tfjob`` processes: WAL journal, a busy timeout, and ``BEGIN IMMEDIATE`` around
every write so that a read-modify-write (a state change) is atomic.

Terminal states are final: once a job has SUCCEEDED, FAILED, been CANCELLED or LOST,
a later state change is ignored (the first word wins, as in a race between a chief
that exits and a cancel).

A job that a process on this machine supervises (a local job) records that process
(``supervisor_pid`` and its start time). When the process is gone and the job never
reached a terminal state, the local backend (:func:`tfjob.backends.local.reap.reap_lost`)
records it LOST with :meth:`JobStore.mark_lost` and stops what is left of it, so a killed
launcher never leaves a job "running" forever. Reading the store changes nothing.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..model import JobState, JobStatus, TaskRestart, TaskStatus
from ..errors import JobNotFoundError, StoreError, UsageError
from .settings import tfjob_home

if TYPE_CHECKING:
    import weakref

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    spec TEXT NOT NULL DEFAULT '{}',
    options TEXT NOT NULL DEFAULT '{}',
    message TEXT NOT NULL DEFAULT '',
    failed_task TEXT,
    exit_code INTEGER,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    supervisor_pid INTEGER,
    supervisor_start INTEGER,
    log_dir TEXT,
    extra TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
CREATE TABLE IF NOT EXISTS events (
    job_id TEXT NOT NULL,
    ts REAL NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_job ON events (job_id, ts);
CREATE TABLE IF NOT EXISTS requests (
    job_id TEXT NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    value REAL
);
CREATE TABLE IF NOT EXISTS tasks (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    idx INTEGER NOT NULL,
    state TEXT NOT NULL,
    pid INTEGER,
    exit_code INTEGER,
    signal INTEGER,
    started REAL,
    ended REAL,
    log_path TEXT,
    proc_start INTEGER,
    restarts INTEGER NOT NULL DEFAULT 0,
    restart_history TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (job_id, name)
);
"""


@dataclass
class JobRecord:
    """One row of the jobs table."""

    id: str
    backend: str
    name: str
    state: JobState
    spec: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    failed_task: str | None = None
    exit_code: int | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    ended: float | None = None
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    log_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_status(self, tasks: list[TaskStatus] | None = None) -> JobStatus:
        """The record as the backend-neutral :class:`JobStatus`."""
        extra = dict(self.extra)
        if self.log_dir:
            extra.setdefault("log_dir", self.log_dir)
        return JobStatus(
            id=self.id,
            backend=self.backend,
            name=self.name,
            state=self.state,
            message=self.message,
            created=self.created,
            started=self.started,
            ended=self.ended,
            failed_task=self.failed_task,
            tasks=tasks or [],
            extra=extra,
        )


@dataclass
class TaskRecord:
    """One row of the tasks table (a task of a local job)."""

    name: str
    role: str
    index: int
    state: JobState
    pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    started: float | None = None
    ended: float | None = None
    log_path: str | None = None
    #: The process' start time (see :func:`process_start_time`): tells it from a later pid.
    proc_start: int | None = None
    #: How many times the task was started again, and each time (see :class:`TaskRestart`).
    restarts: int = 0
    restart_history: list[TaskRestart] = field(default_factory=list)

    def to_status(self) -> TaskStatus:
        return TaskStatus(
            self.name,
            self.state,
            self.exit_code,
            self.signal,
            self.started,
            self.ended,
            self.log_path,
            restarts=self.restarts,
            restart_history=list(self.restart_history),
        )


_JSON_COLUMNS = ("spec", "options", "extra")
# Columns added after the first release: added to an older database on open.
_ADDED_COLUMNS = {
    "jobs": {"supervisor_start": "INTEGER"},
    "tasks": {"proc_start": "INTEGER", "restarts": "INTEGER NOT NULL DEFAULT 0", "restart_history": "TEXT NOT NULL DEFAULT '[]'"},
    "requests": {"token": "TEXT"},
}
#: Requests (``tfjob preempt``) a job may have waiting for its launcher.
MAX_PENDING_REQUESTS = 100
#: At most this many restarts of a task are kept in its history (the count goes on).
MAX_RESTART_HISTORY = 100
_DATE_SUFFIX = re.compile(r"-\d{8}-\d{6}$")

#: The stores this process opened, closed by an ``atexit`` callback (before the interpreter's
#: teardown, whose order of finalization is not defined): a store left open leaves its last
#: writes in its WAL file, where damage to ``jobs.db`` itself would go unseen.
_OPENED: "weakref.WeakSet[JobStore] | None" = None


def _close_at_exit(store: "JobStore") -> None:
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


def make_job_id(name: str, token: str | None = None) -> str:
    """A short id users can type: ``trainer-3fa9c1`` for job ``trainer-20261122-153000``.

    The job name's default date suffix is dropped (the store keeps the name and the
    time), the rest is reduced to 20 lower-case letters, digits and ``-``, and six
    random hex digits make it unique (the store refuses a duplicate; draw again).

    Args:
        name: the job's display name.
        token: the random part; drawn here when not given.
    """
    stem = _DATE_SUFFIX.sub("", name.lower())
    stem = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")[:20].strip("-") or "job"
    return f"{stem}-{token or os.urandom(3).hex()}"  # os.urandom: what secrets uses, without its 5 ms import


def process_start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if it is not running.

    A zombie (exited, not yet reaped by its parent) counts as not running. Paired
    with the pid, the start time tells a live supervisor from a later process that
    happens to reuse its pid. Without ``/proc`` the start time is 0 for any live pid.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return 0
        return 0
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    rest = stat[stat.rindex(b")") + 2 :].split()
    if rest[0] in (b"Z", b"X"):
        return None
    return int(rest[19])


def process_alive(pid: int | None, start: int | None = None) -> bool:
    """True if ``pid`` runs and, when ``start`` is given, is the process that started then."""
    if not pid:
        return False
    now = process_start_time(pid)
    if now is None:
        return False
    return start is None or now == 0 or now == start


# A row is read whatever it holds: one written by a later version (a state this one does not
# know, say PREEMPTED) or damaged by hand (text where a time belongs, JSON cut short) is shown
# with what can be read — the state UNKNOWN (its stored word kept in the message), a time
# as not known — so `tfjob list`/`status` go on to the other rows instead of a traceback.
_TIME_COLUMNS = ("created", "started", "ended")
_INT_COLUMNS = ("exit_code", "supervisor_pid", "supervisor_start", "pid", "signal", "proc_start", "idx", "restarts")
_TEXT_COLUMNS = ("id", "backend", "name", "message", "failed_task", "log_dir", "log_path", "role", "job_id")
#: Times after this (the year 5138) are no time tfjob wrote; time.localtime cannot show them either.
_LATEST_TIME = 1e11


def _read_time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < _LATEST_TIME else None


def _read_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value) if abs(value) < 2**63 else None


def _read_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _read_json(value: Any) -> dict[str, Any]:
    try:
        data = json.loads(_read_text(value) or "{}")
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    for col in _TIME_COLUMNS:
        if col in data:
            data[col] = _read_time(data[col])
    for col in _INT_COLUMNS:
        if col in data:
            data[col] = _read_int(data[col])
    for col in _TEXT_COLUMNS:
        if col in data:
            data[col] = _read_text(data[col])
    stored = data.get("state")
    data["state"] = JobState.read(stored)
    if data["state"] is JobState.UNKNOWN and stored != JobState.UNKNOWN.value:
        word = _read_text(stored) or ""
        data["unknown_state"] = " ".join(word.split())[:40] or "(none)"
    return data


def _row_to_job(row: sqlite3.Row) -> JobRecord:
    data = _read_row(row)
    for col in _JSON_COLUMNS:
        data[col] = _read_json(data.get(col))
    data["id"] = data.get("id") or "?"
    data["backend"] = data.get("backend") or "?"
    data["name"] = data.get("name") or ""
    data["message"] = data.get("message") or ""
    unknown = data.pop("unknown_state", None)
    if unknown is not None:
        data["message"] = f"state {unknown!r} is not one this version of tfjob knows" + (f"; {data['message']}" if data["message"] else "")
    if data["created"] is None:
        data["created"] = 0.0  # not known: shown as '-'
    return JobRecord(**data)


def _row_to_task(row: sqlite3.Row) -> TaskRecord:
    data = _read_row(row)
    data.pop("unknown_state", None)
    data.pop("job_id")
    data["index"] = data.pop("idx") or 0
    data["name"] = data.get("name") or "?"
    data["role"] = data.get("role") or "?"
    data["restarts"] = data.get("restarts") or 0
    data["restart_history"] = _restart_history(_read_text(data.get("restart_history")))
    return TaskRecord(**data)


def _restart_history(text: str | None) -> list[TaskRestart]:
    """A task's restart history as stored (an entry that cannot be read is left out)."""
    try:
        entries = json.loads(text or "[]")
    except (ValueError, RecursionError):
        return []
    names = set(TaskRestart.__dataclass_fields__)
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("time"), (int, float)):
            try:
                out.append(TaskRestart(**{k: v for k, v in entry.items() if k in names}))
            except TypeError:
                continue
    return out


def _special_file(path: Path) -> str:
    """What ``path`` is when it exists and is neither a regular file nor a directory (``""``
    otherwise): SQLite would open a FIFO or a device and fail with "disk I/O error"."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return ""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return ""


def _is_corrupt(e: sqlite3.DatabaseError) -> bool:
    text = str(e)
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


def _move_aside(path: Path) -> Path:
    """Rename a damaged store (and its WAL files) to ``jobs.db.damaged-<time>``; return the new path."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            try:
                os.replace(src, Path(str(aside) + suffix))
            except OSError as e:
                raise StoreError(f"{path} is damaged and cannot be moved aside ({e.strerror or e}); move or remove it by hand") from None
    return aside


class JobStore:
    """The SQLite job store (``$TFJOB_HOME/jobs.db`` unless ``path`` is given)."""

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
        return f"JobStore({str(self.path)!r})"

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
        odd = _special_file(self.path)
        if odd:
            raise StoreError(f"{self.path} is {odd}, not the job store (a file); remove it (tfjob makes a new store)")
        try:
            home.mkdir(parents=True, exist_ok=True)
            self._open()
        except sqlite3.DatabaseError as e:
            self._db = None
            if not _is_corrupt(e):
                raise self._error(e) from None
            aside = _move_aside(self.path)
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

    def open(self) -> "JobStore":
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
            self._conn.executescript(_SCHEMA)
            for table, columns in _ADDED_COLUMNS.items():
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

    def __enter__(self) -> "JobStore":
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

    # -- jobs ----------------------------------------------------------------------------
    def add_new(self, record: JobRecord, attempts: int = 20) -> JobRecord:
        """Insert ``record`` under a fresh :func:`make_job_id` id from its name; return it."""
        for _ in range(attempts):
            record.id = make_job_id(record.name)
            try:
                self.add(record)
            except UsageError:
                continue  # six hex digits collided: draw again
            return record
        raise UsageError(f"could not find a free job id for {record.name!r} in {self.path}")

    def add(self, record: JobRecord) -> None:
        """Insert a new job (its first state becomes its first event).

        Raises:
            UsageError: a job with this id exists already.
        """
        data = asdict(record)
        data["state"] = record.state.value
        for col in _JSON_COLUMNS:
            data[col] = json.dumps(data[col], sort_keys=True)
        cols = ", ".join(data)
        marks = ", ".join("?" for _ in data)
        with self._write() as c:
            try:
                c.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", tuple(data.values()))
            except sqlite3.IntegrityError as e:
                raise UsageError(f"job id {record.id!r} exists already in {self.path}; choose another id") from e
            c.execute(
                "INSERT INTO events (job_id, ts, state, message) VALUES (?, ?, ?, ?)",
                (record.id, record.created, record.state.value, record.message),
            )

    def get(self, job_id: str) -> JobRecord | None:
        """The job with exactly this id, or None."""
        rows = self._read("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return _row_to_job(rows[0]) if rows else None

    def resolve(self, id_or_prefix: str) -> JobRecord:
        """The job with this id, or the only one whose id starts with it.

        Raises:
            JobNotFoundError: no job matches.
            UsageError: the prefix is empty or matches several jobs.
        """
        if not id_or_prefix.strip():
            raise UsageError("a job id cannot be empty; `tfjob list` shows the known jobs")
        exact = self.get(id_or_prefix)
        if exact is not None:
            return exact
        escaped = id_or_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._read("SELECT * FROM jobs WHERE id LIKE ? ESCAPE '\\' ORDER BY created DESC LIMIT 5", (escaped + "%",))
        if not rows:
            raise JobNotFoundError(f"no job {id_or_prefix!r} in {self.path}; `tfjob list` shows the known jobs")
        if len(rows) > 1:
            ids = ", ".join(r["id"] for r in rows)
            if len(rows) == 5:  # the newest 5 are named: how many more match is said
                (count,) = self._read("SELECT COUNT(*) FROM jobs WHERE id LIKE ? ESCAPE '\\'", (escaped + "%",))[0]
                ids += f" and {count - 5} more" if count > 5 else ""
            raise UsageError(f"job id {id_or_prefix!r} is ambiguous ({ids}); give more of it")
        return _row_to_job(rows[0])

    def list(self, limit: int | None = None, backend: str | None = None) -> list[JobRecord]:
        """Jobs, newest first."""
        sql = "SELECT * FROM jobs"
        params: tuple[Any, ...] = ()
        if backend:
            sql += " WHERE backend = ?"
            params = (backend,)
        sql += " ORDER BY created DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row_to_job(r) for r in self._read(sql, params)]

    def update(self, job_id: str, **values: Any) -> None:
        """Set columns of a job (not its state: use :meth:`set_state`)."""
        allowed = {f.name for f in fields(JobRecord)} - {"id", "state"}
        unknown = set(values) - allowed
        if unknown:
            raise TypeError(f"unknown job columns: {sorted(unknown)}")
        if not values:
            return
        data = {k: json.dumps(v, sort_keys=True) if k in _JSON_COLUMNS else v for k, v in values.items()}
        sets = ", ".join(f"{k} = ?" for k in data)
        with self._write() as c:
            c.execute(f"UPDATE jobs SET {sets} WHERE id = ?", (*data.values(), job_id))

    def set_state(
        self,
        job_id: str,
        state: JobState,
        message: str = "",
        *,
        only_from: tuple[JobState, ...] | None = None,
        **values: Any,
    ) -> bool:
        """Move a job to ``state`` (with other columns) unless it already ended.

        Args:
            job_id: the job.
            state: the new state.
            message: why (kept in the job and in its history).
            only_from: change only from one of these states (e.g. PENDING → RUNNING
                must not undo a CANCELLING that came first).
            **values: other columns to set in the same transaction.

        Returns:
            True if the state changed, False if the job was already in a terminal
            state (the change is dropped), already in ``state``, or not in ``only_from``.
        """
        now = time.time()
        with self._write() as c:
            row = c.execute("SELECT state, started FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFoundError(f"no job {job_id!r} in {self.path}")
            current = JobState.read(row["state"])
            if current.is_terminal or (current is state and not message and not values):
                return False
            if only_from is not None and current not in only_from:
                return False
            data: dict[str, Any] = {"state": state.value, **values}
            if message:
                data["message"] = message
            if state is JobState.RUNNING and row["started"] is None:
                data.setdefault("started", now)
            if state.is_terminal:
                data.setdefault("ended", now)
            for col in _JSON_COLUMNS:
                if col in data:
                    data[col] = json.dumps(data[col], sort_keys=True)
            sets = ", ".join(f"{k} = ?" for k in data)
            c.execute(f"UPDATE jobs SET {sets} WHERE id = ?", (*data.values(), job_id))
            if current is not state:
                c.execute(
                    "INSERT INTO events (job_id, ts, state, message) VALUES (?, ?, ?, ?)",
                    (job_id, now, state.value, message),
                )
            return True

    def remove(self, job_id: str) -> None:
        """Forget a job, its history and its tasks (a cluster reused its name for a new job)."""
        with self._write() as c:
            for table, column in (("events", "job_id"), ("tasks", "job_id"), ("requests", "job_id"), ("jobs", "id")):
                c.execute(f"DELETE FROM {table} WHERE {column} = ?", (job_id,))

    def state(self, job_id: str) -> JobState:
        """The job's current state (one cheap read, for a launcher that watches for a cancel)."""
        rows = self._read("SELECT state FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            raise JobNotFoundError(f"no job {job_id!r} in {self.path}")
        return JobState.read(rows[0]["state"])

    def note(self, job_id: str, message: str) -> None:
        """Add a line to the job's history without changing its state (a preemption, a
        restart of a task or of the whole job)."""
        with self._write() as c:
            row = c.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFoundError(f"no job {job_id!r} in {self.path}")
            c.execute(
                "INSERT INTO events (job_id, ts, state, message) VALUES (?, ?, ?, ?)",
                (job_id, time.time(), row["state"], message[:1000]),
            )

    def request(self, job_id: str, kind: str, task: str, value: float | None = None, token: str | None = None) -> None:
        """Ask the process that runs a local job to do something to one of its tasks
        (``preempt``: ``value`` is the grace period); it takes the request at its next look.
        ``token`` names the request: the launcher's answer in the job's history carries it."""
        with self._write() as c:
            pending = c.execute("SELECT count(*) FROM requests WHERE job_id = ?", (job_id,)).fetchone()[0]
            if pending >= MAX_PENDING_REQUESTS:
                raise UsageError(f"job {job_id} has {pending} requests its launcher has not taken yet; is it still running?")
            c.execute(
                "INSERT INTO requests (job_id, ts, kind, task, value, token) VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, time.time(), kind, task, value, token),
            )

    def pending_requests(self, job_id: str, token: str | None = None) -> int:
        """How many requests of the job (of them, the one named ``token``) are not taken yet."""
        if token is not None:
            rows = self._read("SELECT count(*) AS n FROM requests WHERE job_id = ? AND token = ?", (job_id, token))
        else:
            rows = self._read("SELECT count(*) AS n FROM requests WHERE job_id = ?", (job_id,))
        return int(rows[0]["n"])

    def withdraw_request(self, job_id: str, token: str) -> bool:
        """Take back a request not taken yet (its job ended first); True if it was still there."""
        with self._write() as c:
            return c.execute("DELETE FROM requests WHERE job_id = ? AND token = ?", (job_id, token)).rowcount > 0

    def take_requests(self, job_id: str) -> builtins.list[tuple[str, str, float | None, str | None]]:
        """The job's requests, oldest first, removed as they are taken: (kind, task, value, token)."""
        if not self._read("SELECT 1 FROM requests WHERE job_id = ? LIMIT 1", (job_id,)):
            return []  # the usual case: one read, no write
        with self._write() as c:
            rows = c.execute(
                "SELECT rowid, kind, task, value, token FROM requests WHERE job_id = ? ORDER BY ts, rowid", (job_id,)
            ).fetchall()
            c.execute("DELETE FROM requests WHERE job_id = ?", (job_id,))
        return [(r["kind"], r["task"], r["value"], r["token"]) for r in rows]

    def events(self, job_id: str) -> builtins.list[tuple[float, JobState, str]]:
        """The job's state history, oldest first."""
        rows = self._read("SELECT ts, state, message FROM events WHERE job_id = ? ORDER BY ts, rowid", (job_id,))
        return [(_read_time(r["ts"]) or 0.0, JobState.read(r["state"]), _read_text(r["message"]) or "") for r in rows]

    # -- tasks ---------------------------------------------------------------------------
    def put_task(self, job_id: str, task: TaskRecord) -> None:
        """Insert or replace one task of a job."""
        self.put_tasks(job_id, [task])

    def put_tasks(self, job_id: str, tasks: builtins.list[TaskRecord]) -> None:
        """Insert or replace several tasks of a job in one transaction."""
        rows = [
            (
                job_id,
                t.name,
                t.role,
                t.index,
                t.state.value,
                t.pid,
                t.exit_code,
                t.signal,
                t.started,
                t.ended,
                t.log_path,
                t.proc_start,
                t.restarts,
                json.dumps([r.to_dict() for r in t.restart_history[-MAX_RESTART_HISTORY:]]),
            )
            for t in tasks
        ]
        with self._write() as c:
            c.executemany(
                "INSERT OR REPLACE INTO tasks"
                " (job_id, name, role, idx, state, pid, exit_code, signal, started, ended, log_path, proc_start,"
                " restarts, restart_history)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def tasks(self, job_id: str) -> builtins.list[TaskRecord]:
        """The job's tasks, chief first."""
        rows = self._read(
            "SELECT * FROM tasks WHERE job_id = ? ORDER BY "
            "CASE role WHEN 'chief' THEN 0 WHEN 'worker' THEN 1 WHEN 'ps' THEN 2 ELSE 3 END, idx",
            (job_id,),
        )
        return [_row_to_task(r) for r in rows]

    def status(self, job_id: str) -> JobStatus:
        """The job and its tasks as recorded (a read: nothing is changed, nothing stopped)."""
        record = self.resolve(job_id)
        return record.to_status([t.to_status() for t in self.tasks(record.id)])

    # -- supervisors ---------------------------------------------------------------------
    def mark_lost(
        self, job_id: str, message: str, *, supervisor: tuple[int | None, int | None] | None = None
    ) -> builtins.list[tuple[int, int | None]] | None:
        """Record a job LOST (its supervisor died first), with its tasks still marked live.

        Args:
            job_id: the job.
            message: why.
            supervisor: the pid and start time of the supervisor found dead: the job is
                recorded LOST only if its row still names that process. A detached submit
                hands the job to its supervisor by rewriting the row and then ends: a reader
                that saw the submitting command's pid, found it gone, must not record LOST a
                job its new supervisor runs.

        Returns:
            The pid and start time of each task that was still marked live (what may be
            left of them to stop), or None when the job had ended after all, recorded an
            end, is in a state this version does not know, or has another supervisor now.
        """
        now = time.time()
        live = (JobState.PENDING.value, JobState.RUNNING.value, JobState.QUEUED.value)
        with self._write() as c:
            row = c.execute("SELECT state, ended, supervisor_pid, supervisor_start FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFoundError(f"no job {job_id!r} in {self.path}")
            current = JobState.read(row["state"])
            # A state this version does not know (a later version's PREEMPTED) may be an end;
            # a recorded end time is one: neither is rewritten LOST.
            if current.is_terminal or current is JobState.UNKNOWN or _read_time(row["ended"]) is not None:
                return None
            if supervisor is not None and (_read_int(row["supervisor_pid"]), _read_int(row["supervisor_start"])) != supervisor:
                return None
            c.execute(
                "UPDATE jobs SET state = ?, message = ?, ended = ? WHERE id = ?",
                (JobState.LOST.value, message, now, job_id),
            )
            c.execute(
                "INSERT INTO events (job_id, ts, state, message) VALUES (?, ?, ?, ?)",
                (job_id, now, JobState.LOST.value, message),
            )
            orphans = c.execute(
                "SELECT pid, proc_start FROM tasks WHERE job_id = ? AND state IN (?, ?, ?) AND pid IS NOT NULL",
                (job_id, *live),
            ).fetchall()
            # Tasks still marked as running went down with their supervisor.
            c.execute(
                "UPDATE tasks SET state = ?, ended = COALESCE(ended, ?) WHERE job_id = ? AND state IN (?, ?, ?)",
                (JobState.LOST.value, now, job_id, *live),
            )
        return [(row["pid"], row["proc_start"]) for row in orphans]
