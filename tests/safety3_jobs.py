"""Shared by the tests/test_safety3_*.py files: a job recorded in the store as ended (no
trainer run), and event files written record by record as TensorBoard writes them."""

from __future__ import annotations

import os
import struct
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable

from tfjob.model import JobState
from tfjob.runtime.store import JobRecord, JobStore


#: A chief and one worker, as a recorded spec holds them.
POOLS = [
    {"role": "chief", "replicas": 1, "machine": {"type": "n1-standard-4"}},
    {"role": "worker", "replicas": 1, "machine": {"type": "n1-standard-4"}},
]


def recorded_job(home: Path, job_dir: str | None, *, state: JobState = JobState.SUCCEEDED, **spec: Any) -> str:
    """A local job recorded in ``home``'s store as ended, its job dir ``job_dir``; its id."""
    store = JobStore(home / "jobs.db")
    now = time.time()
    record = store.add_new(
        JobRecord(
            id="", backend="local", name="trainer", state=state, created=now - 10, started=now - 9, ended=now,
            spec={"name": "trainer", "module": "trainer.task", "job_dir": job_dir, "pools": POOLS, **spec},
        )
    )  # fmt: skip
    store.close()
    return record.id


def _masked_crc(data: bytes) -> int:
    import google_crc32c  # a dependency of google-cloud-storage, which tfjob installs

    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record_bytes(data: bytes, *, length: int | None = None) -> bytes:
    """One TFRecord: its length, the length's checksum, the data, the data's checksum
    (``length`` overrides the length written, its checksum made to match)."""
    header = struct.pack("<Q", len(data) if length is None else length)
    return header + struct.pack("<I", _masked_crc(header)) + data + struct.pack("<I", _masked_crc(data))


def scalar_events(points: Iterable[tuple[int, str, float]]) -> Iterable[bytes]:
    """The records of scalar summaries (step, tag, value), after the file's version record."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    yield record_bytes(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
    for step, tag, value in points:
        event = event_pb2.Event(
            step=step, wall_time=1.0 + step, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
        )
        yield record_bytes(event.SerializeToString())


def write_events(path: Path, records: Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in records:
            f.write(r)
    return path


def tfjob(
    exe: str, home: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env={**os.environ, "TFJOB_HOME": str(home), **(env or {})}
    )


def remove_tree(root: Path) -> None:
    """``rm -rf`` without recursion (shutil.rmtree recurses once per level: a tree 1,400 levels
    deep, left behind, would end pytest's own clean-up in a RecursionError)."""
    if not root.is_dir() or root.is_symlink():
        return
    stack = [str(root)]
    while stack:
        here = stack[-1]
        subdirs = []
        with os.scandir(here) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
                else:
                    os.unlink(entry.path)
        if subdirs:
            stack.extend(subdirs)
        else:
            os.rmdir(here)
            stack.pop()
