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
    call and the task's own bind; the launcher checks each task's port as it starts the
    task (:func:`port_taken`) and starts the cluster again on new ports when one is.
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


def _binds(port: int, host: str, reuse: bool = False) -> bool:
    """Whether a socket can bind ``port`` on ``host`` now (``reuse``: with ``SO_REUSEADDR``)."""
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        if reuse:
            s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        s.bind((host, port))
    except OSError:
        return False
    finally:
        s.close()
    return True


def port_is_free(port: int, host: str = HOST) -> bool:
    """True if ``port`` can be bound on ``host`` now."""
    return _binds(port, host)


def port_taken(port: int, host: str = HOST) -> bool:
    """True if ``port`` cannot be bound on ``host`` now because something holds it: what the
    bootstrap's ``--check-port`` asks in a task, asked by the launcher as it starts the task
    (one bind here instead of loading the socket module into every task, 1.6 M instructions
    of each one's start). ``SO_REUSEADDR``, so a port in TIME_WAIT (a previous run's) is not
    mistaken for taken; a listening socket still makes the bind fail."""
    return not _binds(port, host, reuse=True)
