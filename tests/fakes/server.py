"""What every local stand-in server shares: a loopback HTTP server on a free port, started in a thread."""

from __future__ import annotations

import json
import socket
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator, TypeVar

T = TypeVar("T", bound="LocalServer")


class LocalServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 whose handler class sees this object as ``state``.

    Subclasses set :attr:`handler` (a ``BaseHTTPRequestHandler`` subclass that reads
    ``self.state``) and call ``super().__init__()``.
    """

    handler: type[BaseHTTPRequestHandler]
    #: The attribute name under which the handler finds the server's state.
    state_attribute = "state"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    url = endpoint

    def start(self: T) -> T:
        handler = type("Handler", (self.handler,), {self.state_attribute: self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self: T) -> T:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that logs nothing (the tests' output stays theirs)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering on a free loopback port, in a thread, while the block runs: its ``host:port``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class JsonHandler(QuietHandler):
    """A quiet HTTP/1.1 handler with JSON replies, Google-style errors and connection resets.

    Subclasses implement ``_handle(method)``.
    """

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        raise NotImplementedError

    def _reply(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, status: int, message: str, grpc: str, details: list[dict[str, Any]] | None = None) -> None:
        """A Google API error body: ``{"error": {"code", "message", "status", "details"}}``."""
        self._reply(status, {"error": {"code": status, "message": message, "status": grpc, "details": details or []}})

    def _reset(self) -> None:
        # Close without an answer: the client sees the connection reset.
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        finally:
            self.connection.close()
