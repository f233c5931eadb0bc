"""gcp-storage-emulator, the local Cloud Storage the tests stage into and read from.

The real ``google.cloud.storage`` client (and tfjob's own staging code) reaches it through
``STORAGE_EMULATOR_HOST``, as it would reach Cloud Storage."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from typing import Any, Iterator


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def storage_emulator(monkeypatch: Any, project: str = "p", *buckets: str) -> Iterator[Any]:
    """An in-memory emulator on a free port, started (listening) before this yields a
    ``storage.Client`` of ``project`` on it, ``buckets`` created; ``STORAGE_EMULATOR_HOST``
    names it (through ``monkeypatch``) for the client libraries of this process and of the
    processes it starts."""
    from gcp_storage_emulator.server import create_server
    from google.cloud import storage

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
        client = storage.Client(project=project)
        for bucket in buckets:
            client.create_bucket(bucket)
        yield client
    finally:
        server.stop()
