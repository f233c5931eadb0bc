"""What /proc says of this machine's processes, and the few signals and waits that act on it
(for :mod:`.contain` and :mod:`.cgroup`)."""

from __future__ import annotations

import os
import signal
import time


def process_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, or None when it is gone."""
    info = process_stat3(pid)
    return None if info is None else info[:2]


def process_stat3(pid: int) -> tuple[str, int, int] | None:
    """(state letter, parent pid, session id) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[3])


def reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def process_table() -> dict[int, tuple[str, int, int]]:
    """pid → (state, parent pid, session id) of every process (from /proc)."""
    table: dict[int, tuple[str, int, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            info = process_stat3(int(entry))
            if info is not None:
                table[int(entry)] = info
    return table


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def wait_gone(pids: list[int], until: float) -> None:
    """Wait until each pid is gone or a zombie (reaping those that are this process')."""
    pending = set(pids)
    while pending and time.monotonic() < until:
        for pid in list(pending):
            info = process_stat(pid)
            if info is None:
                pending.discard(pid)
            elif info[0] == "Z":
                if info[1] == os.getpid():
                    reap(pid)
                else:
                    pending.discard(pid)  # its own parent reaps it
        if pending:
            time.sleep(0.01)
