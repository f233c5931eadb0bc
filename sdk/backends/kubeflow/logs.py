"""A TFJob's logs: its pods' ``tensorflow`` containers, each line prefixed ``[worker-1]``.

Read once, the pods are read one after the other (chief first). Followed, one thread
per container streams its log into a queue while the caller's thread yields the
lines as they come, looks for pods that start later (or containers that restart),
and stops once the job has ended and every stream is closed.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from typing import Any, Callable, Iterator

from ...runtime.lifecycle import LineFeed, follow_lines
from .render import CONTAINER_NAME
from .client import KubeClient, iter_stream_lines
from .status import object_name, pod_has_logs, pod_restarts, pod_task_name, sort_pods

#: Seconds to let open streams finish after the job has ended (ps pods may linger).
DRAIN_SECONDS = 10.0


def read_logs(client: KubeClient, namespace: str, selector: str, tail: int | None = None) -> Iterator[str]:
    """The logs so far of the pods matching ``selector``, chief first."""
    for pod in sort_pods(client.list_pods(namespace, selector)):
        if not pod_has_logs(pod):
            continue
        prefix = f"[{pod_task_name(pod)}] "
        text = client.read_log(namespace, object_name(pod), CONTAINER_NAME, tail=tail)
        for line in text.splitlines():
            yield prefix + line


class _Reader(threading.Thread):
    """Streams one container's log into the shared queue, then puts itself as the end mark."""

    def __init__(self, client: KubeClient, namespace: str, pod: str, prefix: str, tail: int | None, out: "queue.Queue[Any]") -> None:
        super().__init__(name=f"tfjob-log-{pod}", daemon=True)
        self.client, self.namespace, self.pod, self.prefix, self.tail, self.out = client, namespace, pod, prefix, tail, out
        self.response: Any = None
        self.error: BaseException | None = None
        #: The log could not be opened yet (container not started, pod gone): try again later.
        self.retry = False
        self._closed = threading.Event()

    def run(self) -> None:
        try:
            self.response = self.client.open_log_stream(self.namespace, self.pod, CONTAINER_NAME, tail=self.tail)
            if self.response is None:
                self.retry = True
                return
            if self._closed.is_set():
                return
            for line in iter_stream_lines(self.response):
                self.out.put(self.prefix + line)
        except Exception as e:  # handed to the follower, which raises it in the caller's thread
            if not self._closed.is_set():
                self.error = e
        finally:
            self.out.put(self)

    def close(self) -> None:
        self._closed.set()
        response = self.response
        if response is not None:
            # The socket is shut first: this thread blocked in its read holds the response's
            # buffer, which closing it waits for, so a close alone would hang until the
            # container wrote another line (forever, for a quiet parameter server).
            _shut(response)
            try:
                response.close()
            except Exception:  # closing a half-read socket may complain; it is closed anyway
                pass


def _shut(response: Any) -> None:
    """Shut the socket under a streaming urllib3 response down, so a read blocked on it returns."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is None:  # the http.client response under it: its buffered socket file
        sock = getattr(getattr(getattr(getattr(response, "_fp", None), "fp", None), "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed by the other end
            pass


class StreamFeed(LineFeed):
    """The job's pods' log streams: one reader thread per container puts its lines in a queue;
    a look lists the pods and opens a stream for each new one (or restarted container)."""

    def __init__(
        self, client: KubeClient, namespace: str, selector: str, tail: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client, self.namespace, self.selector, self.tail, self.clock = client, namespace, selector, tail, clock
        self.lines: "queue.Queue[Any]" = queue.Queue()
        self.readers: dict[tuple[str, int], _Reader] = {}
        self.finished: set[tuple[str, int]] = set()
        self.seen: set[str] = set()
        self.held: list[Any] = []
        self.until: float | None = None

    def read(self, look: bool, final: bool) -> list[str]:
        if look:
            for pod in sort_pods(self.client.list_pods(self.namespace, self.selector)):
                key = (object_name(pod), pod_restarts(pod))
                if key in self.readers or not pod_has_logs(pod):
                    continue
                # A restarted container starts a fresh log: read it whole.
                first = key[0] not in self.seen
                self.seen.add(key[0])
                reader = _Reader(self.client, self.namespace, key[0], f"[{pod_task_name(pod)}] ", self.tail if first else None, self.lines)
                self.readers[key] = reader
                reader.start()
        items, self.held = self.held, []
        while True:
            try:
                items.append(self.lines.get_nowait())
            except queue.Empty:
                break
        out: list[str] = []
        for item in items:
            if not isinstance(item, _Reader):
                out.append(item)
                continue
            if item.error is not None:
                raise item.error
            key = (item.pod, next(k[1] for k, r in self.readers.items() if r is item))
            if item.retry and not final:
                # The log could not be opened yet (container not started): a later look opens it.
                del self.readers[key]
                if not any(name == item.pod for name, _ in self.readers):
                    self.seen.discard(item.pod)
            else:
                self.finished.add(key)
        return out

    def wait(self, seconds: float) -> bool:
        if self.until is None:
            self.until = self.clock() + seconds
        try:
            self.held.append(self.lines.get(timeout=max(0.0, self.until - self.clock())))
        except queue.Empty:
            self.until = None
            return True
        return False  # lines came before the pause was over: the rest of it is for the next wait

    def drained(self) -> bool:
        return self.finished.issuperset(self.readers) and self.lines.empty() and not self.held

    def close(self) -> None:
        for reader in self.readers.values():
            reader.close()


def follow_logs(
    client: KubeClient,
    namespace: str,
    selector: str,
    job_ended: Callable[[], bool],
    tail: int | None = None,
    poll_interval: float = 2.0,
    drain_seconds: float = DRAIN_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """Yield log lines of the matching pods as they are written, until the job ends
    (:func:`tfjob.runtime.lifecycle.follow_lines` over a :class:`StreamFeed`).

    Args:
        client: the cluster.
        namespace: the job's namespace.
        selector: the pods' label selector (see :func:`~tfjob.backends.kubeflow.status.build_pod_selector`).
        job_ended: True once the job is in a terminal state (polled).
        tail: start each pod's log with its last ``tail`` lines (first container only).
        poll_interval: seconds between looks for new pods and at the job's state.
        drain_seconds: after the job ended, how long open streams may still finish.
        clock: injected for tests.
    """
    feed = StreamFeed(client, namespace, selector, tail, clock)
    return follow_lines(feed, job_ended, interval=poll_interval, drain=drain_seconds, clock=clock)
