"""Logs of a local job: live prefixed lines, per-task files, the summary table, reading back.

While a job runs, every line a task prints goes to three places: its own file
``<log_dir>/<task>.log`` (as printed), the job's file ``<log_dir>/job.log`` (prefixed
``[worker-1]``, in the order the launcher saw the lines) and, unless ``--quiet``, the
console (prefixed, coloured on a TTY only). ``tfjob logs`` reads the files back.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, TextIO

from ...runtime.lifecycle import LineFeed, follow_lines

# The summary table is the job model's (every backend's `tfjob status` shows it); named here too
# for the launcher and the runner, which write it at a job's end.
from ...model import SummaryRow, describe_exit, format_duration, render_summary  # noqa: F401

#: The combined, prefixed log of a job.
JOB_LOG = "job.log"
#: A line longer than this is cut (a progress bar without newlines must still show).
MAX_LINE = 64 * 1024
#: The most of a log file read back for ``--tail`` (its last lines), and at once while following.
MAX_TAIL_BYTES = 8 * 1024 * 1024
READ_CHUNK = 1024 * 1024
_COLOURS = {"chief": "\033[1;32m", "worker": "\033[36m", "ps": "\033[35m", "evaluator": "\033[33m"}
_NOTE_COLOUR = "\033[1m"
#: What TensorFlow logs when a peer goes away — a preempted task, or the others at a job's
#: end: gRPC's errors (absl's ``E0000`` lines, UNAVAILABLE, a closed socket) and the
#: coordinator's. Expected then; explained in one line before the first of them.
PEER_LOSS_NOISE = re.compile(
    rb"^E\d{4} \d\d:\d\d:\d\d|UNAVAILABLE|Socket closed|Connection reset by peer|failed to connect to all addresses"
    rb"|CANCELLED|ABORTED|ERROR:tensorflow:"
)
_RESET = "\033[0m"


def task_log_name(task: str) -> str:
    """The file name of a task's log in the job's log directory."""
    return f"{task}.log"


def use_colour(stream: TextIO | None, environ: dict[str, str] | None = None) -> bool:
    """Colours on a terminal only, and never with ``NO_COLOR`` set (no-color.org)."""
    env = os.environ if environ is None else environ
    if stream is None or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: A file of :data:`RESERVE_BYTES` in the log directory while the job runs (see LogRouter).
RESERVE_FILE = ".space-reserve"
RESERVE_BYTES = 512 * 1024


class TaskOutput:
    """The output of one task: split into lines, written to its file."""

    def __init__(
        self,
        name: str,
        role: str,
        path: Path,
        prefix: str,
        write: Callable[[BinaryIO, bytes], None] | None = None,
        drop: re.Pattern[bytes] | None = None,
    ) -> None:
        self.name = name
        self.role = role
        self.path = path
        self.prefix = prefix
        #: Lines that are not the task's (a container engine's own noise), kept out of every log.
        self.drop = drop
        self._pending = b""
        self._file: BinaryIO = open(path, "ab", buffering=0)
        self._write = write or (lambda f, data: f.write(data) and None)

    def split(self, data: bytes, final: bool = False) -> list[bytes]:
        """Complete lines in ``data`` (and, when ``final``, whatever is left), written to the file."""
        if data and self.drop is None:
            self._write(self._file, data)
        buf = self._pending + data
        lines = buf.split(b"\n")
        self._pending = lines.pop()
        tail = b""
        if len(self._pending) > MAX_LINE or (final and self._pending):
            tail, self._pending = self._pending, b""
        if self.drop is not None:
            # Filtered output is written a line at a time (a partial line waits for its end).
            lines = [line for line in lines if not self.drop.search(line)]
            tail = b"" if tail and self.drop.search(tail) else tail
            out = b"".join(line + b"\n" for line in lines) + tail
            if out:
                self._write(self._file, out)
        return lines + [tail] if tail else lines

    def close(self) -> None:
        self._file.close()


class LogRouter:
    """Routes task output to the per-task files, ``job.log`` and the console.

    Args:
        log_dir: the job's log directory (created).
        console: where live lines go (None: nowhere, as with ``--quiet``).
        colour: colour the prefixes (only on a TTY; see :func:`use_colour`).
    """

    def __init__(self, log_dir: Path, console: TextIO | None, colour: bool) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self.console = console
        self.colour = colour
        self._job_log: BinaryIO = open(log_dir / JOB_LOG, "ab", buffering=0)
        #: Why log files are no longer written (a full disk), or None.
        self.write_error: str | None = None
        #: Why TensorFlow's peer-loss errors are expected now (a preemption, the job's end), until explained.
        self._peer_loss: str | None = None
        # Space held back for the job's last state changes: freed when the logs fill the disk,
        # so the job store can still record how the job ended.
        self._reserve = log_dir / RESERVE_FILE
        try:
            with open(self._reserve, "wb") as f:
                f.write(b"\0" * RESERVE_BYTES)
        except OSError:
            self._reserve.unlink(missing_ok=True)

    def _write_file(self, f: BinaryIO, data: bytes) -> None:
        """Write to a log file; on a full disk stop writing files (once, said once), never fail the job."""
        if self.write_error is not None:
            return
        try:
            f.write(data)
        except OSError as e:
            self.write_error = f"{getattr(f, 'name', self.log_dir)}: {e.strerror or e}"
            self._reserve.unlink(missing_ok=True)
            self.note(
                f"cannot write the job's logs any more ({self.write_error}); the job goes on, its state is kept "
                "and its output still shows here, but the log files stop at this point: free some space"
            )

    def open_task(self, name: str, role: str, drop: re.Pattern[bytes] | None = None) -> TaskOutput:
        """The output of task ``name`` (its file is appended to across restarts); lines
        matching ``drop`` are not the task's and go nowhere."""
        return TaskOutput(name, role, self.log_dir / task_log_name(name), f"[{name}] ", self._write_file, drop)

    def expect_peer_loss(self, why: str) -> None:
        """Tasks are about to lose a peer (``why``: ``worker-1 is preempted``): the first of
        TensorFlow's errors about it that follows is preceded by one line saying they are expected."""
        self._peer_loss = why

    def feed(self, task: TaskOutput, data: bytes, final: bool = False) -> list[str]:
        """Take a chunk of a task's output (``final`` at end of file); return its complete lines."""
        lines = task.split(data, final)
        if not lines:
            return []
        if self._peer_loss is not None and any(PEER_LOSS_NOISE.search(line) for line in lines):
            self.note(
                f"{self._peer_loss}: the gRPC errors TensorFlow logs now (E0000, UNAVAILABLE, Socket closed) "
                "are its tasks losing that peer; expected, not a failure"
            )
            self._peer_loss = None
        self._emit(task.prefix, task.role, lines)
        return [line.decode("utf-8", "replace") for line in lines]

    def note(self, text: str, console: bool = True) -> None:
        """Lines of the launcher's own (``[tfjob] restarting…``), in the job log and on the console."""
        lines = [line.encode() for line in text.splitlines()]
        self._emit("[tfjob] ", None, lines, console)

    def _emit(self, prefix: str, role: str | None, lines: list[bytes], console: bool = True) -> None:
        raw = prefix.encode()
        self._write_file(self._job_log, b"".join(raw + line + b"\n" for line in lines))
        if self.console is None or not console:
            return
        shown = prefix
        if self.colour:
            shown = f"{_COLOURS.get(role or '', _NOTE_COLOUR)}{prefix.rstrip()}{_RESET} "
        text = "".join(shown + line.decode("utf-8", "replace") + "\n" for line in lines)
        try:
            self.console.write(text)
            self.console.flush()
        except (BrokenPipeError, ValueError):
            self.console = None  # the reader went away; files keep everything

    def close(self) -> None:
        self._job_log.close()
        self._reserve.unlink(missing_ok=True)


# -- reading back --------------------------------------------------------------------------
def read_tail(path: Path, n: int, end: int | None = None, block: int = 8192) -> list[str]:
    """The last ``n`` lines of a file (up to byte ``end``), decoded leniently; [] if there is no file."""
    if n <= 0:
        return []
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return []
    with f:
        size = f.seek(0, os.SEEK_END)
        end = size if end is None else min(end, size)
        pos, data = end, b""
        while pos > 0 and data.count(b"\n") <= n and end - pos < MAX_TAIL_BYTES:
            step = min(block, pos, MAX_TAIL_BYTES - (end - pos))
            pos -= step
            f.seek(pos)
            data = f.read(step) + data
    if pos > 0 and data.count(b"\n") <= n:
        # The window ends inside a line: it is shown from where the window starts.
        data = b"\xe2\x80\xa6" + data
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[-n:]


class FileFeed(LineFeed):
    """A log file read from where the last read stopped (a missing file is empty: the task has
    not started); the lines of :func:`read_lines`."""

    def __init__(self, path: Path, *, prefix: str = "", tail: int | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.path, self.prefix, self.tail, self._sleep = path, prefix, tail, sleep
        self.offset = 0
        self.pending = b""
        self.started = False

    def read(self, look: bool, final: bool) -> list[str]:
        out: list[str] = []
        if not self.started:
            self.started = True
            if self.tail is not None:
                try:
                    self.offset = self.path.stat().st_size
                except FileNotFoundError:
                    self.offset = 0
                out += [self.prefix + line for line in read_tail(self.path, self.tail, end=self.offset)]
        while True:
            chunk = b""
            try:
                with open(self.path, "rb") as f:
                    f.seek(self.offset)
                    chunk = f.read(READ_CHUNK)
            except FileNotFoundError:
                pass
            self.offset += len(chunk)
            lines = (self.pending + chunk).split(b"\n")
            self.pending = lines.pop()
            if len(self.pending) > MAX_LINE:
                # A line without an end (a progress bar, a binary dump) is shown in pieces.
                lines.append(self.pending)
                self.pending = b""
            out += [self.prefix + line.decode("utf-8", "replace") for line in lines]
            if len(chunk) < READ_CHUNK:
                break  # all that is there now
        if final and self.pending:
            out.append(self.prefix + self.pending.decode("utf-8", "replace"))
            self.pending = b""
        return out

    def wait(self, seconds: float) -> bool:
        self._sleep(seconds)
        return True


def read_lines(
    path: Path,
    *,
    prefix: str = "",
    tail: int | None = None,
    follow: bool = False,
    is_done: Callable[[], bool] = lambda: True,
    poll_interval: float = 0.1,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Lines of a log file, optionally only the last ``tail``, optionally following it.

    Following stops once ``is_done()`` is true and the file holds nothing new: the
    writer has finished (:func:`tfjob.runtime.lifecycle.follow_lines`). A missing file counts as
    empty (the task has not started).

    Args:
        path: the log file.
        prefix: put before every line (``[worker-1] `` for a task's own file).
        tail: only the last ``tail`` lines present now.
        follow: keep reading what is appended until ``is_done()``.
        is_done: true once nothing more will be written.
        poll_interval: how long to wait for more when following.
        sleep: injected for tests.
    """
    feed = FileFeed(path, prefix=prefix, tail=tail, sleep=sleep)
    if not follow:
        yield from feed.read(True, True)
        return
    yield from follow_lines(feed, is_done, interval=poll_interval)
