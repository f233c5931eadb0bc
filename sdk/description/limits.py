"""How big a job may be: the bounds every count is checked against, and why.

Counts come from outside (flags, ``--config`` files, studies) and a count decides how
much is rendered, started and kept in memory, so each has a ceiling, said in the error:

- **Any platform**: Vertex AI's ``replicaCount``, ``maxTrialCount`` and
  ``parallelTrialCount`` and Kubernetes' ``replicas`` are 32-bit integers, so no
  platform takes a count above :data:`INT32_MAX`; such a count is refused before
  anything is rendered.
- **One machine** (the local backend and local studies): at most
  :data:`LOCAL_MAX_TASKS` tasks at once, each a process with its own server and port.
"""

from __future__ import annotations

import os

from ..errors import SpecError, subject_of

#: The largest replica or trial count any platform's API can carry (int32).
INT32_MAX = 2**31 - 1
#: The most tasks one local job (or the trials of a local study running at once) starts.
LOCAL_MAX_TASKS = 512
#: The longest a job may run (``--timeout``, ``maxRunningTime``) or be waited for: a year.
#: Far inside what every carrier holds — Kubernetes' ``activeDeadlineSeconds`` (int64), a
#: protobuf Duration (10,000 years), the local launcher's waits (``threading.TIMEOUT_MAX``,
#: 292 years) — and longer than any training run.
MAX_TIMEOUT_SECONDS = 365 * 86400


def check_platform_count(field: str, value: int) -> None:
    """Refuse a count no platform's API can carry (``field`` names its knob, or is the text naming it)."""
    if value > INT32_MAX:
        raise SpecError(
            **subject_of(field),
            value=value,
            problem=f"is more than any platform takes: Vertex AI and Kubernetes counts are 32-bit, at most {INT32_MAX}",
        )


def check_seconds(value: object, field: str, *, zero: bool = False, given: object = None) -> float:
    """``value`` as seconds of a timeout: a finite number above 0 (or 0 with ``zero``), at
    most :data:`MAX_TIMEOUT_SECONDS`; ``field`` names its knob and ``given`` is what the user
    typed (default: the value)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(field=field, value=value, problem="must be a number of seconds")
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float
        seconds = math.inf
    if math.isnan(seconds) or seconds < 0 or (seconds == 0 and not zero):
        raise SpecError(
            field=field, value=value, problem=f"must be {'a number of seconds ≥ 0' if zero else 'a positive number of seconds'}"
        )
    if seconds > MAX_TIMEOUT_SECONDS:
        shown = given if given is not None else float(f"{value:.6g}") if isinstance(value, float) else value
        raise SpecError(
            field=field, value=shown, problem=f"is more than a year ({MAX_TIMEOUT_SECONDS} s), the longest tfjob runs or waits for a job"
        )
    return seconds


def check_local_tasks(tasks: int, what: str = "this job") -> None:
    """Refuse more tasks than one machine runs at once."""
    if tasks > LOCAL_MAX_TASKS:
        raise SpecError(
            problem=f"{what} has {tasks} tasks; the local backend runs at most {LOCAL_MAX_TASKS} on one machine "
            "(each task is a process with its own port)",
            fix="use fewer {workers}/{ps}, or a cloud backend",
        )


def read_bounded_text(
    path: "str | os.PathLike[str]",
    field: str,
    max_bytes: int,
    what: str,
    *,
    follow_links: bool = True,
    errors: str = "strict",
) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``: never blocking on a FIFO,
    never reading a device, and (``follow_links=False``) never through a symbolic link.
    ``errors="replace"`` reads bytes that are not UTF-8 as U+FFFD instead of refusing them.

    Raises:
        ConfigFileError: missing, unreadable, not a regular file, too large, or not UTF-8
            (one line naming knob ``field`` — or, if it is no knob's name, that text — the
            path and what such a file is: ``what``).
    """
    import os
    import stat

    from ..errors import ConfigFileError

    about = subject_of(field)
    given = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ConfigFileError(**about, value=given, problem=": no such file") from None
    except ValueError:  # "embedded null byte"
        raise ConfigFileError(**about, value=given, problem=": a path cannot hold a NUL character") from None
    except OSError as e:
        raise ConfigFileError(**about, value=given, problem=f": cannot read it: {e.strerror or e}") from None
    # Checked on the descriptor, before a file object: fdopen itself refuses a directory
    # with IsADirectoryError, and a directory ('', '.') is no file either.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigFileError(**about, value=given, problem="is not a regular file", fix=f"give {what}")
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ConfigFileError(**about, value=given, problem=f"is larger than {max_bytes // 1024} KiB; {what} is smaller")
    try:
        return data.decode("utf-8-sig", errors)
    except UnicodeDecodeError as e:
        raise ConfigFileError(**about, value=given, problem=f": not UTF-8 text: {e.reason} at byte {e.start}") from None
