"""The job store's file: its tables, the columns added to an older one on open, and what is done
with a file that is no database (a FIFO or a device; one damaged, moved aside)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ..errors import StoreError

SCHEMA = """
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
# Columns added after the first release: added to an older database on open.
ADDED_COLUMNS = {
    "jobs": {"supervisor_start": "INTEGER"},
    "tasks": {"proc_start": "INTEGER", "restarts": "INTEGER NOT NULL DEFAULT 0", "restart_history": "TEXT NOT NULL DEFAULT '[]'"},
    "requests": {"token": "TEXT"},
}


def special_file(path: Path) -> str:
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


def is_corrupt(e: sqlite3.DatabaseError) -> bool:
    text = str(e)
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


def move_aside(path: Path) -> Path:
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
