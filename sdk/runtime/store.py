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
import sqlite3
import time
from dataclasses import asdict, fields
from typing import Any, Callable

from ..model import JobState, JobStatus
from ..errors import JobNotFoundError, UsageError
from .connection import StoreFile
from .processes import process_alive, process_start_time
from .records import JSON_COLUMNS, JobRecord, TaskRecord, make_job_id, read_int, read_text, read_time, row_to_job, row_to_task

__all__ = [
    "MAX_PENDING_REQUESTS",
    "MAX_RESTART_HISTORY",
    "JobRecord",
    "JobStore",
    "StoreFile",
    "TaskRecord",
    "make_job_id",
    "process_alive",
    "process_start_time",
]

#: Requests (``tfjob preempt``) a job may have waiting for its launcher.
MAX_PENDING_REQUESTS = 100
#: At most this many restarts of a task are kept in its history (the count goes on).
MAX_RESTART_HISTORY = 100


class JobStore(StoreFile):
    """The SQLite job store (``$TFJOB_HOME/jobs.db`` unless ``path`` is given): its connection,
    reads and transactions are :class:`~tfjob.runtime.connection.StoreFile`'s."""

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
        for col in JSON_COLUMNS:
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
        return row_to_job(rows[0]) if rows else None

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
        return row_to_job(rows[0])

    def list(self, limit: int | None = None, backend: str | None = None, spec_holds: str | None = None) -> list[JobRecord]:
        """Jobs, newest first (with ``spec_holds``: whose stored spec JSON holds that ASCII text, a cheap first filter)."""
        sql = "SELECT * FROM jobs WHERE (? IS NULL OR backend = ?) AND (? IS NULL OR instr(spec, ?) > 0)"
        params: tuple[Any, ...] = (backend or None, backend, spec_holds or None, spec_holds)
        sql += " ORDER BY created DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [row_to_job(r) for r in self._read(sql, params)]

    def update(self, job_id: str, **values: Any) -> None:
        """Set columns of a job (not its state: use :meth:`set_state`)."""
        self._columns(values)  # an unknown column fails before anything is written
        if values:
            self.change(job_id, lambda _: values)

    def change(self, job_id: str, decide: Callable[[JobRecord], dict[str, Any] | None]) -> dict[str, Any] | None:
        """Read the job and set the columns ``decide(record)`` returns (None: nothing), in one
        transaction: no other process writes between the read and the write (a claim). Returns
        what was set, or None (the job is not there, or ``decide`` said nothing)."""
        with self._write() as c:
            row = c.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            values = decide(row_to_job(row)) if row is not None else None
            if values:
                data = self._columns(values)
                c.execute(f"UPDATE jobs SET {', '.join(f'{k} = ?' for k in data)} WHERE id = ?", (*data.values(), job_id))
            return values

    @staticmethod
    def _columns(values: dict[str, Any]) -> dict[str, Any]:
        unknown = set(values) - ({f.name for f in fields(JobRecord)} - {"id", "state"})
        if unknown:
            raise TypeError(f"unknown job columns: {sorted(unknown)}")
        return {k: json.dumps(v, sort_keys=True) if k in JSON_COLUMNS else v for k, v in values.items()}

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
            for col in JSON_COLUMNS:
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
        return [(read_time(r["ts"]) or 0.0, JobState.read(r["state"]), read_text(r["message"]) or "") for r in rows]

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
        return [row_to_task(r) for r in rows]

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
            if current.is_terminal or current is JobState.UNKNOWN or read_time(row["ended"]) is not None:
                return None
            if supervisor is not None and (read_int(row["supervisor_pid"]), read_int(row["supervisor_start"])) != supervisor:
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
