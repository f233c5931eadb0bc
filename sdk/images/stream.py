"""The engine at work: its output streamed as progress (one line a step, or as on a terminal), bounded
in time and in line length, and the short forms of what it said that messages quote."""

from __future__ import annotations

import collections
import os
import re
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from ..runtime.engine import stop_group, stopped_by_signals
from ..errors import ImageBuildError, UsageError
from ..shown import inert


#: The lines of the engine's output kept for an error message.
TAIL_LINES = 40
#: How long one build, push or pull may take (seconds), unless ``$TFJOB_BUILD_TIMEOUT`` says.
BUILD_TIMEOUT = 3600.0
BUILD_TIMEOUT_VARIABLE = "TFJOB_BUILD_TIMEOUT"
#: The longest line of the engine's output kept or shown (bytes); the rest of it is dropped.
LINE_LIMIT = 4096


@dataclass
class Progress:
    """Where build and push progress goes: ``tty`` (the engine's own output, as on a
    terminal), ``steps`` (one line per step or layer), or ``none`` (``--output json``)."""

    mode: str = "steps"
    write: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))

    @classmethod
    def auto(cls, quiet: bool = False) -> "Progress":
        if quiet:
            return cls("none")
        return cls("tty" if sys.stderr.isatty() else "steps")

    def say(self, line: str) -> None:
        if self.mode != "none":
            self.write(f"tfjob: {line}")

    def engine_line(self, line: str) -> None:
        if self.mode == "tty":
            self.write(line)
        elif self.mode == "steps":
            step = step_line(line)
            if step:
                self.write(f"tfjob: {step}")


_PODMAN_STEP = re.compile(r"^STEP (\d+/\d+): (.*)")
_DOCKER_STEP = re.compile(r"^#\d+ \[(?:[\w-]+ )?(\d+/\d+)\] (.*)")
_MOUNT_FLAG = re.compile(r"--mount=\S+\s*")
_PUSH_BLOB = re.compile(
    r"^(Copying blob \S+(?: skipped: already exists| done)?|Copying config \S+(?: done)?|Writing manifest.*|Storing signatures|[0-9a-f]{12}: (?:Pushed|Layer already exists|Mounted from \S+|Pull complete|Already exists))"
)


def step_line(line: str) -> str | None:
    for pattern in (_PODMAN_STEP, _DOCKER_STEP):
        m = pattern.match(line)
        if m:
            # A RUN's bind mounts say where files are seen, not what the step does.
            text = _MOUNT_FLAG.sub("", m.group(2))
            return f"build step {m.group(1)}: {short(text)}"
    m = _PUSH_BLOB.match(line)
    if m:
        return f"layers: {m.group(1)}"
    return None


def short(text: str, width: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def first_line(error: BaseException) -> str:
    return short(next((line for line in str(error).splitlines() if line.strip()), type(error).__name__), 200)


def build_timeout() -> float:
    """How long one build, push or pull may take: ``$TFJOB_BUILD_TIMEOUT`` seconds, else
    :data:`BUILD_TIMEOUT`.

    Raises:
        UsageError: the variable is not a whole number of seconds from 1 to a week.
    """
    text = os.environ.get(BUILD_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return BUILD_TIMEOUT
    if not (text.isascii() and text.isdigit() and len(text) <= 7 and 1 <= int(text) <= 7 * 86400):
        raise UsageError(f"${BUILD_TIMEOUT_VARIABLE}={short(inert(text), 40)!r} must be a whole number of seconds from 1 to 604800")
    return float(text)


def run_streamed(argv: list[str], progress: Progress, env: dict[str, str] | None = None, *, what: str) -> tuple[int, list[str]]:
    """Run the engine, its output (stdout and stderr) line by line to ``progress``; return
    its exit status and the last :data:`TAIL_LINES` lines.

    Bounded: the engine runs in its own session (a terminal's Ctrl-C reaches tfjob, which
    ends it, rather than the engine, which would die first and look like a failed build),
    and is ended with everything it started when it runs past :func:`build_timeout` (output
    or not), when tfjob is interrupted (Ctrl-C, SIGTERM) and on any error; a line is kept
    and shown up to :data:`LINE_LIMIT` bytes, the rest of it read and dropped; what is
    shown is made inert (:func:`tfjob.shown.inert`).

    Raises:
        ImageBuildError: ``what`` (the build, the push…) did not end in time.
    """
    timeout = build_timeout()
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    with stopped_by_signals(sigint=True):
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)  # fmt: skip
        except OSError as e:
            raise ImageBuildError(f"cannot run {argv[0]}: {e.strerror or e}") from None
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        deadline = time.monotonic() + timeout
        line = bytearray()
        cut = False

        def emit(raw: bytes | bytearray) -> None:
            text = inert(bytes(raw).decode("utf-8", "replace").rstrip("\r\n"))
            if not text:
                return
            tail.append(text)
            progress.engine_line(text)

        try:
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _Overdue
                    if not sel.select(timeout=min(left, 1.0)):
                        continue
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        break
                    for piece in chunk.splitlines(keepends=True):
                        if not cut:
                            line += piece[: max(0, LINE_LIMIT - len(line))]
                        ended = piece.endswith((b"\n", b"\r"))
                        if len(line) >= LINE_LIMIT and not ended:
                            cut = True
                        if ended:
                            emit(line + (b" \xe2\x80\xa6" if cut else b""))
                            line, cut = bytearray(), False
            if line:
                emit(line)
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise _Overdue from None
        except _Overdue:
            stop_group(proc, grace=30)
            raise ImageBuildError(
                f"{what} did not end within {timeout:g} s, so {argv[0].rsplit('/', 1)[-1]} was stopped "
                f"(its last line: {short(next((t for t in reversed(tail) if t.strip()), 'none'), 200)}); "
                f"set ${BUILD_TIMEOUT_VARIABLE} (seconds) for a longer one"
            ) from None
        except BaseException:
            # Ctrl-C or SIGTERM (tfjob's alone: the engine is in its own session), an error: it ends with us.
            stop_group(proc, grace=30)
            raise
        finally:
            proc.stdout.close()
    return code, list(tail) or ["(the engine said nothing)"]


class _Overdue(Exception):
    """A build, push or pull ran past its time (internal to :func:`run_streamed`)."""
