"""Peak memory of a process and of its process tree, sampled from /proc while it runs.

The kernel keeps a process' own high-water mark (``VmHWM``); the tree's peak is the
largest sum of ``VmRSS`` over the process and its descendants seen at any sample.
Linux only (reads /proc).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Sequence

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MIB = float(1 << 20)


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _children_map() -> dict[int, list[int]]:
    """ppid → pids, from every /proc/PID/stat (no /proc/PID/task/TID/children needed)."""
    out: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ")".
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        out.setdefault(ppid, []).append(int(name))
    return out


def tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and all its descendants now."""
    children = _children_map()
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


class TreeSampler:
    """Samples a running process until it exits: its own peak and its tree's peak (bytes)."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.interval = interval
        self.own_peak = 0
        self.tree_peak = 0
        self.elapsed = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            hwm = _status_kib(self.pid, "VmHWM")
            if hwm is None:  # gone (or a zombie without memory): nothing more to see
                return
            self.own_peak = max(self.own_peak, hwm * 1024)
            self.tree_peak = max(self.tree_peak, tree_rss(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_sampled(argv: Sequence[str], *, env: dict[str, str] | None = None, interval: float = 0.02) -> TreeSampler:
    """Run ``argv`` to its end (it must exit 0) while sampling it; return the sampler
    (its ``elapsed``: seconds from the start to the exit)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with TreeSampler(proc.pid, interval) as sampler:
        _, err = proc.communicate()
        # The process is reaped only by communicate(): the sampler saw it up to its exit.
    sampler.elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    if sampler.own_peak == 0:
        raise RuntimeError(f"{' '.join(argv)} ended before its memory could be sampled")
    return sampler
