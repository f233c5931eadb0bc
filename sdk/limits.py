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

from .errors import SpecError

#: The largest replica or trial count any platform's API can carry (int32).
INT32_MAX = 2**31 - 1
#: The most tasks one local job (or the trials of a local study running at once) starts.
LOCAL_MAX_TASKS = 512


def check_platform_count(what: str, value: int) -> None:
    """Refuse a count no platform's API can carry (``what`` names it as the user wrote it)."""
    if value > INT32_MAX:
        raise SpecError(
            f"{what} {value} is more than any platform takes: Vertex AI and Kubernetes counts are "
            f"32-bit, at most {INT32_MAX}"
        )


def check_local_tasks(tasks: int, what: str = "this job") -> None:
    """Refuse more tasks than one machine runs at once."""
    if tasks > LOCAL_MAX_TASKS:
        raise SpecError(
            f"{what} has {tasks} tasks; the local backend runs at most {LOCAL_MAX_TASKS} on one machine "
            "(each task is a process with its own port): use fewer --workers/--ps, or a cloud backend"
        )
