"""Free TCP ports on 127.0.0.1 for the tasks of a local cluster."""

from __future__ import annotations

from typing import Callable

# The C module: socket.py's enums and wrappers are ~3 ms of every `tfjob submit` start-up.
import _socket

#: Local clusters listen on the loopback interface only, never on 0.0.0.0.
HOST = "127.0.0.1"

#: Picks ``n`` distinct free ports (injectable, e.g. to simulate a stolen port).
PortPicker = Callable[[int], "list[int]"]


def pick_ports(n: int, host: str = HOST) -> list[int]:
    """``n`` distinct ports that are free on ``host`` right now.

    All sockets are held open until every port is known, so the kernel cannot hand
    out the same port twice. A port can still be taken by someone else between this
    call and the task's own bind; the bootstrap's ``--check-port`` catches that and
    the launcher starts the cluster again on new ports.
    """
    socks: list[_socket.socket] = []
    try:
        for _ in range(n):
            s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_is_free(port: int, host: str = HOST) -> bool:
    """True if ``port`` can be bound on ``host`` now."""
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        s.bind((host, port))
    except OSError:
        return False
    finally:
        s.close()
    return True
