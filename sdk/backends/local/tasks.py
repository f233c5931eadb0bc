"""A local job's tasks as the launcher follows them, and how the job ended (:class:`Outcome`)."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...model import JobState, SummaryRow, TaskRestart
from ...runtime.store import TaskRecord
from .logs import TaskOutput
from .plan import TaskPlan, platform_variables

#: The bootstrap's exit code when ``--check-port`` finds its port taken (EX_TEMPFAIL): a
#: container task's check (a process task's port is checked by the launcher as it starts it).
PORT_TAKEN_EXIT = 75
#: Per task: command line, working directory, pid and the platform variables it got.
TASKS_FILE = "tasks.json"
#: How many lines of a failed task's log its message carries.
TAIL_LINES = 20


#: Signal numbers, to read a container's exit status 128 + N as signal N.
SIGNALS = frozenset(int(sig) for sig in signal.Signals)


@dataclass
class Task:
    """One started task: its plan, process and output, and what became of it."""

    plan: TaskPlan
    output: TaskOutput
    proc: subprocess.Popen[bytes]
    started: float
    proc_start: int | None = None
    pidfd: int | None = None
    pipe: int | None = None
    ended: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    stopped: bool = False  # ended by the launcher's SIGTERM/SIGKILL
    restarts: int = 0
    history: list[TaskRestart] = field(default_factory=list)
    #: Preempted: when its SIGKILL is due (None once it ended, or if not preempted).
    preempted: bool = False
    kill_at: float | None = None
    #: Ended and to be started again then (on the launcher's clock).
    restart_at: float | None = None
    tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))

    @property
    def done(self) -> bool:
        return self.ended is not None

    @property
    def state(self) -> JobState:
        if not self.done:
            return JobState.RUNNING
        if self.exit_code == 0:
            return JobState.SUCCEEDED
        return JobState.STOPPED if self.stopped else JobState.FAILED

    def record(self) -> TaskRecord:
        return TaskRecord(
            self.plan.name,
            self.plan.role,
            self.plan.index,
            self.state,
            self.proc.pid,
            self.exit_code,
            self.signal,
            self.started,
            self.ended,
            str(self.output.path),
            self.proc_start,
            restarts=self.restarts,
            restart_history=list(self.history),
        )


@dataclass
class Outcome:
    """How a local job ended.

    Attributes:
        state: SUCCEEDED, FAILED or CANCELLED.
        message: one line: what happened, naming the task.
        failed_task: the task that made the job fail.
        task_exit_code: that task's exit code (None when a signal ended it).
        log_tail: the last lines of that task's log.
        rows: the summary table.
        oom_evidence: for a task killed by SIGKILL, what tells it ran out of memory: the
            kernel's record of it when readable, else the cgroup's ``oom_kill`` count.
    """

    state: JobState
    message: str
    failed_task: str | None = None
    task_exit_code: int | None = None
    log_tail: str = ""
    rows: list[SummaryRow] = field(default_factory=list)
    oom_evidence: str = ""
    #: A task was lost to something from outside (a preemption, a signal, exit 128–255):
    #: ``max_restarts`` may start the job again.
    retryable: bool = False


def write_task_manifest(path: Path, tasks: list[Task]) -> None:
    """Record what each task was started with (only the platform variables: no secrets)."""
    manifest = [
        {
            "name": t.plan.name,
            "address": t.plan.address,
            "pid": t.proc.pid,
            "argv": t.plan.argv,
            "cwd": t.plan.cwd,
            "env": platform_variables(t.plan.env),
        }
        for t in tasks
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest))  # no indent: the C encoder (every task's env holds the cluster)
    os.replace(tmp, path)


class ClusterRestart(Exception):
    """A task found its port taken at start-up: start the cluster again on new ports."""
