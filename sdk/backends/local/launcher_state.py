"""What a local job's launcher holds while it runs (its tasks, timers, restart counts, the
selector it waits on), shared by the parts of :class:`~.launcher.Launcher`: starting and
stopping processes (:mod:`.processes`), restarts and preemptions (:mod:`.recovery`), and
following the job to its end (:mod:`.launcher`)."""

from __future__ import annotations

import os
import selectors
import signal
import time
from typing import Any, Callable, Mapping

from ...description.restarts import Rules, build_rules
from ...description.spec import JobSpec
from ...model import Strategy, TaskRestart
from ...runtime.store import JobStore
from . import contain
from .logs import LogRouter, TaskOutput
from .options import LocalOptions
from .ports import PortPicker, pick_ports
from .tasks import Outcome, Task


class LauncherState:
    """The launcher's state and the few steps every part of it takes (see :class:`~.launcher.Launcher`)."""

    #: The job's cgroup and its lifeline, made by ``run`` (None where the machine allows none).
    _cgroup: contain.JobCgroup | None
    _lifeline: contain.Lifeline | None

    def __init__(
        self,
        spec: JobSpec,
        options: LocalOptions,
        job_id: str,
        store: JobStore,
        router: LogRouter,
        *,
        python: str,
        strategy: Strategy,
        source_root: str | None,
        engine: Any = None,
        shipped: tuple[str, ...] = (),
        environ: Mapping[str, str] | None = None,
        port_picker: PortPicker = pick_ports,
        max_attempts: int = 4,
        startup_window: float = 30.0,
        cancel_poll: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.options = options
        self.job_id = job_id
        self.store = store
        self.router = router
        self.python = python
        self.strategy = strategy
        self.source_root = source_root
        self.engine = engine
        self.shipped = shipped
        self.environ = dict(os.environ if environ is None else environ)
        self.port_picker = port_picker
        self.max_attempts = max_attempts
        self.startup_window = startup_window
        self.cancel_poll = cancel_poll
        self.clock = clock
        self.tasks: list[Task] = []
        self._outputs: dict[str, TaskOutput] = {}
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._cancel_reason: str | None = None
        self._outcome: Outcome | None = None
        self.rules: Rules = build_rules(options, [f"{role}-{index}" for role, index in spec.tasks()])
        self._restarts_used = 0  # restarts of tasks in this attempt, against the backoff limit
        self._job_restarts = 0
        self._preempted_this_attempt = False
        self._scheduled: list[tuple[float, str, bool, float]] = []  # (when, task or role, random?, mean)
        self._random: Any = None  # random.Random(rules.seed), made when a preemption is scheduled
        #: Restart counts and histories carried over a restart of the whole job.
        self._carried: dict[str, tuple[int, list[TaskRestart]]] = {}
        self._scheduled_once = False
        self._attempt_started = 0.0
        from tfjob.results.oom import cgroup_oom_kills

        self._oom_kills = cgroup_oom_kills()
        #: The job's private container network (None: processes, or the host's network).
        self._network: str | None = None
        #: In the job's cgroup while starting tasks; programs found for setpriv to run.
        self._inside = False
        self._programs: set[tuple[str, str | None]] = set()

    def request_cancel(self, reason: str) -> None:
        """Cancel the job (safe from a signal handler or another thread)."""
        if self._cancel_reason is None:
            self._cancel_reason = reason
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    @property
    def _rng(self) -> Any:
        """The random preemptions' generator (seeded by the rules), made on first use: a job
        without random preemptions does not import :mod:`random`."""
        if self._random is None:
            import random

            self._random = random.Random(self.rules.seed)
        return self._random

    def _in_container(self, task: Task) -> bool:
        return self.engine is not None and task.plan.argv[:1] == [self.engine.exe]

    def _note(self, line: str) -> None:
        """A line in the follow output and the job log, and in the job's history."""
        self.router.note(line)
        self.store.note(self.job_id, line)

    def _signal(self, task: Task, sig: int) -> None:
        try:
            os.killpg(task.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGKILL and self._in_container(task):
            # SIGKILL cannot be passed on by the engine's client: the container itself is killed.
            argv = task.plan.argv
            if "--name" in argv[:-1]:
                self.engine.kill(argv[argv.index("--name") + 1])

    # -- steps the other parts define -------------------------------------------------------
    def _on_exit(self, task: Task, watching: bool) -> None:
        """A task exited (:class:`~.launcher.Launcher`): record it and tell the job's outcome."""
        raise NotImplementedError

    def _schedule_preemptions(self) -> None:
        """Plan the preemptions ``--preempt`` asked for (:class:`~.recovery.Recovery`)."""
        raise NotImplementedError
