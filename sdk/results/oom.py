"""How many tasks the kernel's out-of-memory killer ended, from this process' cgroup (stdlib
only): read when every local job starts, so it lives apart from :mod:`tfjob.results.diagnosis` (its
patterns and result types), which re-exports it."""

from __future__ import annotations


def cgroup_oom_kills(path: str | None = None) -> int | None:
    """This process' cgroup's ``oom_kill`` count, or None where it cannot be read: cgroup v2's
    ``memory.events``, or v1's ``memory.oom_control``. The tasks of a local job are in this
    cgroup (or below it)."""
    if path is None:
        try:
            with open("/proc/self/cgroup", encoding="utf-8") as f:
                lines = f.read(8192).splitlines()
        except OSError:
            return None
        v1 = next((l.split(":", 2)[2] for l in lines if l.count(":") >= 2 and "memory" in l.split(":", 2)[1].split(",")), None)
        v2 = next((l[3:] for l in lines if l.startswith("0::")), None)
        if v1 is not None:
            path = "/sys/fs/cgroup/memory" + v1.rstrip("/") + "/memory.oom_control"
        elif v2 is not None:
            path = "/sys/fs/cgroup" + v2.rstrip("/") + "/memory.events"
        else:
            return None
    try:
        with open(path, encoding="ascii") as f:
            for line in f.read(4096).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    return int(value)
    except OSError:
        return None
    return None
