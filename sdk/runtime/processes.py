"""Whether a process runs, told from a later one that reuses its pid (its start time)."""

from __future__ import annotations

import os


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
