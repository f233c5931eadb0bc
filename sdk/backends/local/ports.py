"""Free TCP ports on 127.0.0.1 for the tasks of a local cluster."""

from __future__ import annotations

import os
from typing import Callable

# The C module: socket.py's enums and wrappers are ~3 ms of every `tfjob submit` start-up.
import _socket

#: Local clusters listen on the loopback interface only, never on 0.0.0.0.
HOST = "127.0.0.1"

#: Picks ``n`` distinct free ports (injectable, e.g. to simulate a stolen port).
PortPicker = Callable[[int], "list[int]"]


#: Where the kernel says which ports outgoing connections take their source port from.
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
#: How many ports below (or above) the ephemeral range local clusters pick from, and the
#: fewest worth picking from; the lowest port a task may get.
PICK_SPAN, MIN_SPAN, LOWEST_PORT = 16384, 4096, 1024


def ephemeral_range(path: str = EPHEMERAL_RANGE_FILE) -> tuple[int, int] | None:
    """The kernel's ephemeral port range, ``(first, last)``, or None where it cannot be read."""
    try:
        with open(path, "rb") as f:
            first, last = (int(v) for v in f.read(64).split()[:2])
    except (OSError, ValueError):
        return None
    return (first, last) if LOWEST_PORT <= first <= last <= 65535 else None


def pick_range(ephemeral: tuple[int, int] | None) -> tuple[int, int] | None:
    """The ports ``[low, high)`` local clusters pick from: just below the ephemeral range,
    else just above it; None (the kernel's own choice) where neither leaves room."""
    if ephemeral is None:
        return None
    first, last = ephemeral
    if first - LOWEST_PORT >= MIN_SPAN:
        return max(LOWEST_PORT, first - PICK_SPAN), first
    if 65535 - last >= MIN_SPAN:
        return last + 1, min(65536, last + 1 + PICK_SPAN)
    return None


def pick_ports(n: int, host: str = HOST, span: tuple[int, int] | None = None) -> list[int]:
    """``n`` distinct ports that are free on ``host`` right now.

    Picked at random outside the kernel's ephemeral range (:func:`pick_range`; ``span``
    overrides it): every outgoing connection on the machine takes its source port from that
    range, so a port picked there could be taken by any process's ``connect`` — another
    job's gRPC client, say — before the task listens on it, which for a trainer that
    imports TensorFlow first is seconds later. All sockets are held open until every port is
    known, so no port is picked twice. A port can still be bound by someone else between this
    call and the task's own bind; the launcher checks each task's port as it starts the task
    (:func:`port_taken`) and starts the cluster again on new ports when one is.
    """
    span = span or pick_range(ephemeral_range())
    socks: list[_socket.socket] = []
    ports: list[int] = []
    tries = 0
    try:
        while len(ports) < n:
            s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            socks.append(s)
            if span is None or tries >= 20 * n + 100:
                s.bind((host, 0))  # no room outside the ephemeral range, or hardly a free port in it
                ports.append(s.getsockname()[1])
                continue
            tries += 1
            port = span[0] + int.from_bytes(os.urandom(4), "little") % (span[1] - span[0])
            if port in ports:
                continue
            try:
                s.bind((host, port))
            except OSError:
                continue  # taken (or lingering): another one
            ports.append(port)
        return ports
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
