"""The job model every layer shares: job and task states, a job's status, and the options a
submission carries. At the bottom: it imports nothing of tfjob, so the store, the clients,
the renderers and the backends all build on it without importing each other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar, Literal, TypeVar, get_args

#: What the bootstrap does with a job's tasks (:mod:`tfjob.cluster.dispatch`): ``module`` (every
#: task runs the trainer module, the default), ``parameter-server`` (the bootstrap serves ps and
#: workers for a chief-only trainer), ``auto`` or ``multi-worker``.
Strategy = Literal["module", "parameter-server", "auto", "multi-worker"]
#: How a task's ``TF_CONFIG`` / ``CLUSTER_SPEC`` are given: ``platform`` (as the platform writes
#: them, the default) or ``tf2`` (rewritten for TensorFlow 2's strategies).
TFConfigMode = Literal["platform", "tf2"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
TF_CONFIG_MODES: tuple[str, ...] = get_args(TFConfigMode)


def check_choice(field: str, value: object, choices: tuple[str, ...]) -> None:
    """Refuse a ``strategy`` / ``tf_config`` that is not one of its ``choices``, naming the
    field, the value, the closest choice and every choice (a :class:`~tfjob.errors.SpecError`)."""
    if isinstance(value, str) and value in choices:
        return
    import difflib

    from .errors import SpecError

    close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise SpecError(field=field, value=value, problem=f"is not known{hint}", fix=f"choose one of {', '.join(choices)}")


class JobState(str, Enum):
    """The states a job goes through, on every backend."""

    QUEUED = "QUEUED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    #: The process that supervised a local job died without recording an end.
    LOST = "LOST"
    #: Tasks only: stopped by the launcher because the job ended (e.g. parameter servers,
    #: which never exit on their own, after the chief finished), not failed.
    STOPPED = "STOPPED"
    #: A state this version does not know (a job store row written by a later version, say
    #: ``PREEMPTED``, or damaged): shown as it is, never a traceback; not terminal, so the
    #: job's backend may still tell its real state.
    UNKNOWN = "UNKNOWN"

    @classmethod
    def read(cls, value: object) -> "JobState":
        """``value`` as a state, or :attr:`UNKNOWN` for one this version does not know."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST, JobState.STOPPED)


@dataclass
class TaskRestart:
    """One restart of a task: when its previous run ended, how, and why it was started again."""

    #: When the ended run was seen to end (seconds since the epoch).
    time: float
    exit_code: int | None = None
    signal: int | None = None
    #: ``preempted`` (``tfjob preempt``, ``--preempt``, a Spot VM reclaimed), ``exited``
    #: (the task's own failure, restarted by its restart policy), ``job restart`` (the whole
    #: job was started again, ``--max-restarts``), or the platform's word (``Evicted``…).
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class TaskStatus:
    """One task of a job (``worker-1``) as last seen."""

    name: str
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    started: float | None = None
    ended: float | None = None
    log_path: str | None = None
    #: Why the task is not running, as its platform says (``Unschedulable: 0/3 nodes are
    #: available: 3 Insufficient cpu``, ``ImagePullBackOff: …``, ``CrashLoopBackOff``).
    reason: str | None = None
    #: How many times the task was started again (by its restart policy, a preemption, or a
    #: restart of the whole job); the platforms' ``restartCount``.
    restarts: int = 0
    #: Those restarts, oldest first (as many as the backend saw; a platform may give only the count).
    restart_history: list[TaskRestart] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        out = dict(self.__dict__)
        out["state"] = self.state.value
        out["restart_history"] = [r.to_dict() for r in self.restart_history]
        return out


@dataclass
class JobStatus:
    """A job as last seen by its backend."""

    id: str
    backend: str
    name: str
    state: JobState
    message: str = ""
    created: float | None = None
    started: float | None = None
    ended: float | None = None
    failed_task: str | None = None
    tasks: list[TaskStatus] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (for ``--json``)."""
        out = {k: v for k, v in self.__dict__.items() if k != "tasks"}
        out["state"] = self.state.value
        out["tasks"] = [t.to_dict() for t in self.tasks]
        return out


@dataclass
class SubmitOptions:
    """How to submit and follow a job, beyond its description: what every backend takes.

    Each backend declares the options only it takes as a subclass of this
    (``LocalOptions``, ``VertexOptions``, ``TFJobOptions``… in its own folder, named in
    :data:`tfjob.backends.BACKENDS`); :class:`tfjob.Job` builds the chosen backend's.
    """

    #: What the bootstrap does (:data:`Strategy`).
    strategy: Strategy = "module"
    #: How tasks get TF_CONFIG / CLUSTER_SPEC (:data:`TFConfigMode`).
    tf_config: TFConfigMode = "platform"
    quiet: bool = False
    #: The hyperparameter-tuning trial this job is (``tfjob tune``): its id goes in every
    #: task's TF_CONFIG / CLUSTER_SPEC task and CLOUD_ML_TRIAL_ID, and its --job-dir is DIR/<trial>.
    trial: str | None = None
    wait: bool = True
    cancel_on_interrupt: bool = False
    poll_interval: float | None = None
    dry_run: bool = False
    #: Package files that look like credentials too (each is still named in a warning).
    include_secrets: bool = False
    #: A line for stderr once the backend has accepted the job (checked, not yet
    #: started), e.g. why this backend was chosen; a rejected job prints only its error.
    notice: str | None = None
    #: Build the trainer directory into an image first (``tfjob.images``) and run that image.
    build: bool = False
    #: ``REGISTRY/PATH`` a built image is pushed to (the job runs ``REPO@sha256:…``).
    image_repo: str | None = None
    #: The image a built image starts from (default tfjob's base image, ``tfjob:VERSION``).
    base_image: str | None = None
    #: ``podman`` or ``docker`` (or a path): what builds images and runs ``--image`` tasks locally.
    container_engine: str | None = None
    #: Build with Cloud Build (in ``--project``, the context staged in ``--staging-bucket``) instead of an engine here.
    cloud_build: bool = False

    #: The job description's keywords (``tfjob.description.request.build_spec``) that only some
    #: platforms have and this backend renders (Vertex AI's ``spot``, ``network``…).
    #: A keyword no backend lists here is for every backend.
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset()


Options = TypeVar("Options", bound=SubmitOptions)


def options_as(cls: type[Options], options: SubmitOptions | None) -> Options:
    """``options`` as a ``cls`` (a backend's own options): the same object when it is one,
    else a ``cls`` with the values both declare (a plain :class:`SubmitOptions` → defaults
    for the backend's own fields)."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in vars(options).items() if k in names})


def normalize_task(task: str) -> str:
    """A ``--task`` as every backend reads it: spaces and case ignored, ``master`` (AI Platform's
    and the Kubeflow operator's name) read as ``chief`` — ``Master-0`` → ``chief-0``."""
    name = task.strip().lower()
    if name == "master" or name.startswith("master-"):
        name = "chief" + name[len("master") :]
    return name


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time as the platforms write it (``2026-11-22T15:30:00.123456789Z``) as
    seconds since the epoch; None when there is none or it cannot be read."""
    if not text:
        return None
    text = text.replace("Z", "+00:00")
    # Python's parser takes at most 6 fractional digits; Vertex AI sends up to 9.
    head, dot, rest = text.partition(".")
    if dot:
        digits = "".join(c for c in rest if c in "0123456789")
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    from datetime import datetime  # read a platform's times only (a start need not import it)

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


# -- the job written for people: durations and the task table (pure) ------------------------
@dataclass
class SummaryRow:
    """One task in the summary table."""

    task: str
    state: str
    exit_code: int | None
    signal: int | None
    duration: float | None
    #: Why the task is not running (Unschedulable, ImagePullBackOff…); a WHY column when any has one.
    reason: str | None = None
    #: How many times the task was started again; a RESTARTS column when any was.
    restarts: int = 0


def describe_exit(exit_code: int | None, sig: int | None) -> str:
    """``0``, ``3`` or ``SIGKILL``; ``-`` while unknown."""
    import signal

    if sig is not None:
        try:
            return signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"
    return "-" if exit_code is None else str(exit_code)


def format_duration(seconds: float | None) -> str:
    """``0.4s``, ``12.0s``, ``3m04s``, ``2h05m``."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def render_summary(rows: list[SummaryRow]) -> str:
    """The summary table (task, state, exit code, duration), one line per task."""
    table: list[tuple[str, ...]] = [("TASK", "STATE", "EXIT", "DURATION")]
    table += [(r.task, r.state, describe_exit(r.exit_code, r.signal), format_duration(r.duration)) for r in rows]
    if any(r.restarts for r in rows):
        table = [(*table[0], "RESTARTS")] + [(*row, str(r.restarts)) for row, r in zip(table[1:], rows)]
    if any(r.reason for r in rows):
        table = [(*table[0], "WHY")] + [(*row, r.reason or "") for row, r in zip(table[1:], rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table)


def render_tasks(tasks: list[TaskStatus], now: float | None = None) -> str:
    """The task table of a job's status (``tfjob status``): task, state, exit, duration, and
    restarts and why a task waits where any has them. Pure (``now`` ends a running task's time)."""
    import time

    rows = [
        SummaryRow(
            t.name,
            t.state.value,
            t.exit_code,
            t.signal,
            ((t.ended or now or time.time()) - t.started) if t.started else None,
            t.reason,
            t.restarts,
        )
        for t in tasks
    ]
    return render_summary(rows)
