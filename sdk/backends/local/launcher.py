"""Start the tasks of a local cluster, follow them, and tear the cluster down.

One process per task, each in its own session and process group, in the job's cgroup
where the machine allows one — which the job's lifeline kills if the launcher dies — or
else with ``PR_SET_PDEATHSIG`` (Linux), so that no task outlives the launcher even when the
launcher is killed with SIGKILL, and nothing a task starts outlives the job
(:mod:`.contain`). One thread waits on everything at once — each task's output pipe and
its pidfd (Linux ≥ 5.3), plus a wake-up pipe for cancels — so there is no polling loop
with sleeps and the launcher reacts to an exit as it happens.

Semantics of a real cluster: the job SUCCEEDS when the chief exits 0; it FAILS as
soon as a chief, worker or evaluator exits non-zero, or a ps dies; it FAILS when
``spec.timeout`` runs out; it is CANCELLED on request. Then every remaining task
gets SIGTERM and, after the grace period, SIGKILL.

Restarts, as the platforms do them (:mod:`tfjob.description.restarts`): a task that ends is started
again in place — the same plan: role, index, ``TF_CONFIG``, address, cgroup — when its
restart policy says so, after an exponential delay, until the job's tasks have been
restarted ``backoff_limit`` times; a job that failed from a lost task is started again
whole up to ``max_restarts`` times. A preemption (``tfjob preempt``, ``--preempt``) is
SIGTERM, the grace period, then SIGKILL, to one task.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ...model import JobState, Strategy, SummaryRow, TaskRestart, describe_exit, render_summary
from .options import LocalOptions
from ...description.restarts import Rules, build_rules, retryable, restart_delay
from ...errors import BackendError
from ...description.spec import JobSpec
from ...runtime.store import JobStore, TaskRecord, process_start_time
from . import contain
from .logs import LogRouter, TaskOutput
from .plan import WORK_DIR, TaskPlan, build_cluster, build_host_cluster, build_task_plans, platform_variables
from ...cluster.dispatch import BOOTSTRAP_MODULE
from .ports import PortPicker, pick_ports, port_taken

#: The bootstrap's exit code when ``--check-port`` finds its port taken (EX_TEMPFAIL): a
#: container task's check (a process task's port is checked by the launcher as it starts it).
PORT_TAKEN_EXIT = 75
#: Per task: command line, working directory, pid and the platform variables it got.
TASKS_FILE = "tasks.json"
#: How many lines of a failed task's log its message carries.
TAIL_LINES = 20
#: A task's exit code when it could not join the job's cgroup (EX_OSERR); it says why on its output.
CGROUP_JOIN_EXIT = 71
_PR_SET_PDEATHSIG = 1


# libc's prctl, resolved once in the parent (the child must not load libraries between fork and exec).
_PRCTL = contain.PRCTL


def _child_setup(parent: int, cgroup: contain.JobCgroup | None = None) -> Callable[[], None]:
    """What runs in the child between fork and exec: join the job's cgroup, die with the launcher."""

    def setup() -> None:
        if cgroup is not None:
            try:
                cgroup.join()  # before exec: everything the task starts is in the cgroup too
            except OSError as e:
                os.write(2, f"tfjob: could not put the task in the job's cgroup {cgroup.path}: {e.strerror}\n".encode())
                os._exit(CGROUP_JOIN_EXIT)
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before the line above
            os._exit(70)

    return setup


def _which(program: str, path: str) -> str | None:
    """``shutil.which(program, path=path)``; a program named by its path (the interpreter, a
    container engine) is checked as shutil checks it, without importing shutil (and the
    compression modules it loads) into every ``tfjob submit``."""
    if os.path.dirname(program):
        ok = os.path.exists(program) and os.access(program, os.F_OK | os.X_OK) and not os.path.isdir(program)
        return program if ok else None
    import shutil

    return shutil.which(program, path=path)


#: Signal numbers, to read a container's exit status 128 + N as signal N.
_SIGNALS = frozenset(int(sig) for sig in signal.Signals)


@dataclass
class _Task:
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


def write_task_manifest(path: Path, tasks: list[_Task]) -> None:
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


class _Restart(Exception):
    """A task found its port taken at start-up: start the cluster again on new ports."""


class Launcher:
    """Runs one local job to its end.

    Args:
        spec: the job.
        options: dialect, strategy, grace… (see :class:`LocalOptions`).
        job_id: the job's id in ``store``.
        store: where the job's state and tasks are recorded.
        router: where task output goes.
        python: the interpreter the tasks run.
        source_root: put on PYTHONPATH (None when the trainer is installed in
            ``python``'s environment). Each task runs in its own working directory,
            ``<log dir>/work/<task>`` (:data:`WORK_DIR`), as a replica in its container's.
        environ: the environment the tasks start from (default: this process').
        port_picker: picks free ports (injectable to test a stolen port).
        max_attempts: how often the cluster is started when ports are stolen.
        startup_window: seconds after start during which an exit with code 75 means
            "port taken" rather than the trainer's own exit code.
        cancel_poll: how often the store is read for a ``tfjob cancel``.
        clock: monotonic clock (injectable).
    """

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
        self.tasks: list[_Task] = []
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

    # -- control from outside (signal handlers, other threads) -----------------------------
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

    # -- the whole run ---------------------------------------------------------------------
    def run(self) -> Outcome:
        """Start the cluster, follow it to its end, tear it down; record and return the outcome."""
        # Descendants that leave their task's process group are re-parented here, not to PID 1.
        self._children_before = contain.children()
        self._subreaper = contain.become_subreaper()
        self._cgroup: contain.JobCgroup | None = None
        self._lifeline: contain.Lifeline | None = None
        try:
            self._contain()
            if self.store.state(self.job_id) is JobState.CANCELLING:
                self._outcome = Outcome(JobState.CANCELLED, "cancelled before it started")
            else:
                if self.engine is not None:
                    self._network = self.engine.create_network(self.job_id)
                    if self._network is None:
                        self.router.note(
                            f"{self.engine.name} could not make a network for the job: its tasks share this machine's, on 127.0.0.1 ports"
                        )
                self._run_attempts()
        except BackendError as e:
            self._outcome = Outcome(JobState.FAILED, str(e))
        except BaseException as e:
            # Not ours to swallow (KeyboardInterrupt, a bug): stop the cluster, record, re-raise.
            if self._outcome is None:
                state = JobState.CANCELLED if isinstance(e, KeyboardInterrupt) else JobState.FAILED
                self._outcome = Outcome(state, f"the launcher stopped: {type(e).__name__}: {e}".rstrip(": "))
            raise
        finally:
            try:
                self._teardown()
            finally:
                try:
                    if self.engine is not None:
                        # A container whose `run` process was killed keeps running: remove
                        # every container of the job by its label.
                        left = self.engine.remove_job(self.job_id)
                        if left:
                            self.router.note(f"removed {len(left)} container(s) of the job that were still there")
                    try:
                        escaped = self._cgroup.kill() if self._cgroup is not None else []
                    finally:
                        if self._lifeline is not None:
                            self._lifeline.release()  # before stop_escaped: it is a child in a session of its own
                            self._lifeline = None
                    escaped += [
                        p
                        for p in contain.stop_escaped(self.job_id, self._children_before, orphans=self._cgroup is None)
                        if p not in escaped
                    ]
                    if escaped:
                        self.router.note(
                            f"stopped {len(escaped)} process(es) that had left their task's process group "
                            f"(setsid or a new session): pids {', '.join(map(str, sorted(escaped)))}"
                        )
                finally:
                    contain.restore_subreaper(self._subreaper)
                self._close()
                self._record(self._outcome or Outcome(JobState.FAILED, "the launcher stopped without an outcome"))
        assert self._outcome is not None
        return self._outcome

    def _contain(self) -> None:
        """Make the job's cgroup (where the machine allows) and keep its path in the job's
        record, so that a job found LOST is ended through it too (:mod:`.reap`)."""
        self._cgroup = contain.JobCgroup.create(self.job_id)
        if self._cgroup is not None and self._sole_thread():
            # Tasks born in the cgroup need no parent-death signal each: the lifeline kills
            # the cgroup if this process dies (started outside the cgroup, before the move in).
            self._lifeline = contain.Lifeline.start(self._cgroup)
            if self.engine is None and (self._lifeline is not None or contain.pdeathsig_prefix() is not None):
                # Tasks will be born in the cgroup (the fast start): the move in, whose first
                # time waits on the kernel, overlaps the cluster's planning (no process starts
                # meanwhile). Only the main thread of a process with no other: the move takes
                # the whole process, and a launcher in a thread (a parallel trial's) shares it
                # with others starting tasks.
                self._cgroup.join_ahead()
        if self._cgroup is not None:
            record = self.store.get(self.job_id)
            self.store.update(self.job_id, extra={**(record.extra if record else {}), "cgroup": str(self._cgroup.path)})

    def _run_attempts(self) -> None:
        deadline = None if self.spec.timeout is None else self.clock() + self.spec.timeout
        while True:
            self._run_ports(deadline)
            if not self._restart_job():
                return

    def _restart_job(self) -> bool:
        """Start the whole job again (``max_restarts``) when it failed from a lost task: stop
        what is left, keep each task's history, and go again; True if it does."""
        outcome = self._outcome
        if outcome is None or outcome.state is not JobState.FAILED or self._cancel_reason is not None:
            return False
        if not (outcome.retryable or self._preempted_this_attempt) or self._job_restarts >= self.rules.max_restarts:
            return False
        if self.store.state(self.job_id) is JobState.CANCELLING:
            return False
        self._job_restarts += 1
        line = (
            f"restarting the whole job ({self._job_restarts}/{self.rules.max_restarts} of --max-restarts) "
            f"after: {outcome.message.split('; its log:')[0]}"
        )
        self.router.note(line)
        self.store.note(self.job_id, line)
        self._teardown()
        now = time.time()
        self._carried = {
            t.plan.name: (t.restarts + 1, [*t.history, TaskRestart(t.ended or now, t.exit_code, t.signal, "job restart")])
            for t in self.tasks
        }
        record = self.store.get(self.job_id)
        attempts = [*((record.extra if record else {}).get("attempts") or []), {"ended": now, "message": outcome.message}]
        self.store.update(self.job_id, extra={**(record.extra if record else {}), "attempts": attempts[-100:]})
        self._outcome = None
        self._preempted_this_attempt = False
        self._restarts_used = 0
        return True

    def _run_ports(self, deadline: float | None) -> None:
        for attempt in range(1, self.max_attempts + 1):
            try:
                self._start()
                self.store.set_state(self.job_id, JobState.RUNNING, "", only_from=(JobState.QUEUED, JobState.PENDING))
                self._watch(deadline)
                return
            except _Restart as e:
                if attempt == self.max_attempts:
                    self._outcome = Outcome(
                        JobState.FAILED,
                        f"{e}; gave up after {attempt} starts of the cluster (something keeps taking ports on 127.0.0.1)",
                    )
                    return
                self.router.note(f"{e}; starting the cluster again on new ports ({attempt + 1}/{self.max_attempts})")
                self._kill_all(signal.SIGKILL)
                self._wait_all(None)
                self._drain(0.2)

    def _in_container(self, task: _Task) -> bool:
        return self.engine is not None and task.plan.argv[:1] == [self.engine.exe]

    # -- start ------------------------------------------------------------------------------
    def _noise(self) -> Any:
        """Lines of a task's output that are the container engine's, not the task's (or None)."""
        if self.engine is None:
            return None
        from ...runtime.engine import ENGINE_NOISE

        return ENGINE_NOISE

    def _start(self) -> None:
        if self._cgroup is not None:
            self._cgroup.settle()  # join_ahead's move done: no thread of ours left (see _fast_start)
        if self._network is not None:
            cluster = build_host_cluster(self.spec, self.options.dialect)  # the platform's host names, port 2222
        else:
            cluster = build_cluster(self.spec, self.port_picker(len(self.spec.tasks())))
        plans = build_task_plans(
            self.spec,
            cluster,
            dialect=self.options.dialect,
            strategy=self.strategy,
            python=self.python,
            source_root=self.source_root,
            environ=self.environ,
            job_id=self.job_id,
            work_dir=str(self.router.log_dir / WORK_DIR),
            trial=self.options.trial,
            tf_config=self.options.tf_config,
            engine=self.engine,
            network=self._network,
            shipped=self.shipped,
        )
        self.tasks = []
        # Every log file is opened before the first task starts: once tasks run, each step of
        # this loop competes with all those started before it for the CPU and its caches
        # (an open took ~15× its idle cost at 161 tasks), so the loop does no more than start.
        noise = self._noise()
        for plan in plans:
            if plan.name not in self._outputs:
                self._outputs[plan.name] = self.router.open_task(plan.name, plan.role, noise)
            os.makedirs(plan.cwd, exist_ok=True)  # the task's own working directory (kept across its restarts)
        self._attempt_started = self.clock()
        with self._inside_cgroup(self._fast_start() is not None):
            for plan in plans:
                if self._network is None and plan.argv[1:3] == ["-m", BOOTSTRAP_MODULE] and port_taken(plan.port):
                    # A container task's bootstrap checks its own (--check-port: it exits PORT_TAKEN_EXIT).
                    raise _Restart(f"{plan.name}'s port {plan.port} was taken before it could listen")
                task = self._spawn(plan, self._outputs[plan.name])
                task.restarts, task.history = self._carried.get(plan.name, (0, []))
                self.tasks.append(task)
        self.store.put_tasks(self.job_id, [t.record() for t in self.tasks])
        write_task_manifest(self.router.log_dir / TASKS_FILE, self.tasks)
        self._schedule_preemptions()

    @staticmethod
    def _sole_thread() -> bool:
        """Whether this launcher runs in the main thread of a process with no other thread."""
        return threading.current_thread() is threading.main_thread() and threading.active_count() == 1

    def _fast_start(self) -> tuple[str, ...] | None:
        """The command prefix that starts a task with no Python between fork and exec (so
        Popen can vfork). The task is born in the job's cgroup because this process steps
        into it meanwhile — which needs no other thread here that could start a process of
        its own meanwhile (a pipeline's, a parallel trial's). The job's lifeline kills that
        cgroup if this process dies: no prefix. Without a lifeline, setpriv sets each task's
        parent-death signal. None: each task runs :func:`_child_setup` between fork and exec."""
        if self._cgroup is not None and threading.active_count() > 1:
            return None
        if self._lifeline is not None:
            return ()
        return contain.pdeathsig_prefix()

    @contextlib.contextmanager
    def _inside_cgroup(self, fast: bool) -> Iterator[None]:
        """This process in the job's cgroup while it starts tasks the fast way (once for many)."""
        if not fast or self._cgroup is None or self._inside:
            yield
            return
        with self._cgroup.entered():
            self._inside = True
            try:
                yield
            finally:
                self._inside = False

    def _spawn(self, plan: TaskPlan, output: TaskOutput) -> _Task:
        """Start one task of ``plan`` (again, for a restart: the same command, variables and
        address), in the job's cgroup, its output to ``output``."""
        prefix = self._fast_start()
        if prefix and (plan.argv[0], plan.env.get("PATH")) not in self._programs:
            # setpriv would start, and then fail to run it: say so as Popen would have.
            if _which(plan.argv[0], plan.env.get("PATH") or os.defpath) is None:
                raise BackendError(f"could not start task {plan.name} ({plan.argv[0]}): no such program, or not executable")
            self._programs.add((plan.argv[0], plan.env.get("PATH")))
        try:
            with self._inside_cgroup(prefix is not None):
                proc = subprocess.Popen(
                    [*(prefix or ()), *plan.argv],
                    env=plan.env,
                    cwd=plan.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    preexec_fn=None if prefix is not None else _child_setup(os.getpid(), self._cgroup),
                    close_fds=True,
                    # A session of its own (so its pgid is its pid): none of its descendants can
                    # ever join the launcher's session, which tells them from the caller's children.
                    start_new_session=True,
                )
        except OSError as e:
            raise BackendError(f"could not start task {plan.name} ({plan.argv[0]}): {e}") from e
        task = _Task(plan, output, proc, time.time(), process_start_time(proc.pid))
        assert proc.stdout is not None
        task.pipe = proc.stdout.fileno()
        os.set_blocking(task.pipe, False)
        self._sel.register(task.pipe, selectors.EVENT_READ, ("out", task))
        try:
            task.pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            task.pidfd = None  # no pidfd: exits are found by the short poll in _watch
        else:
            self._sel.register(task.pidfd, selectors.EVENT_READ, ("exit", task))
        return task

    # -- watch ------------------------------------------------------------------------------
    def _watch(self, deadline: float | None) -> None:
        """Follow the tasks until the job's outcome is known."""
        next_poll = self.clock() + self.cancel_poll
        fallback = any(t.pidfd is None for t in self.tasks)
        while self._outcome is None:
            now = self.clock()
            timeout = next_poll - now
            if deadline is not None:
                timeout = min(timeout, deadline - now)
            due = self._next_timer()
            if due is not None:
                timeout = min(timeout, due - now)
            if fallback:
                timeout = min(timeout, 0.02)
            self._dispatch(self._sel.select(max(0.0, timeout)), watching=True)
            if fallback or any(t.pidfd is None and not t.done for t in self.tasks):
                fallback = True
                for task in list(self.tasks):
                    if not task.done and task.proc.poll() is not None:
                        self._on_exit(task, watching=True)
            if self._outcome is None:
                self._run_timers()
            if self._outcome is not None:
                return
            now = self.clock()
            if self._cancel_reason is not None:
                self._outcome = Outcome(JobState.CANCELLED, f"interrupted by {self._cancel_reason}")
            elif deadline is not None and now >= deadline:
                self._outcome = self._timed_out()
            elif now >= next_poll:
                next_poll = now + self.cancel_poll
                if self.store.state(self.job_id) is JobState.CANCELLING:
                    self._outcome = Outcome(JobState.CANCELLED, "cancel requested with `tfjob cancel`")
                else:
                    for kind, name, value, token in self.store.take_requests(self.job_id):
                        if kind == "preempt":
                            # The answer, yes or no, goes in the job's history with the request's token.
                            self.preempt(name, value, "tfjob preempt", token=token or "")

    # -- restarts and preemptions ---------------------------------------------------------------
    def _note(self, line: str) -> None:
        """A line in the follow output and the job log, and in the job's history."""
        self.router.note(line)
        self.store.note(self.job_id, line)

    def _signal(self, task: _Task, sig: int) -> None:
        try:
            os.killpg(task.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGKILL and self._in_container(task):
            # SIGKILL cannot be passed on by the engine's client: the container itself is killed.
            argv = task.plan.argv
            if "--name" in argv[:-1]:
                self.engine.kill(argv[argv.index("--name") + 1])

    def preempt(self, name: str, grace: float | None = None, why: str = "", *, token: str = "") -> bool:
        """Preempt task ``name`` as a Spot VM is reclaimed: SIGTERM now, SIGKILL after
        ``grace`` seconds (the rules' by default) if it has not ended; True if it was running.
        The answer to a request named ``token`` (``tfjob preempt`` waits for it), yes or no,
        is in the job's history with the token."""
        task = next((t for t in self.tasks if t.plan.name == name), None)
        asked = f" (request {token})" if token else ""
        if task is None or task.done or task.preempted:
            state = "no such task" if task is None else "it is not running" if task.done else "it is being preempted already"
            line = f"not preempting {name}{f' ({why})' if why else ''}: {state}{asked}"
            if token:
                self._note(line)
            else:
                self.router.note(line)
            return False
        grace = self.rules.grace if grace is None else float(grace)
        task.preempted = True
        self._preempted_this_attempt = True
        self._note(f"preempting {name}{f' ({why})' if why else ''}: SIGTERM now, SIGKILL after {grace:g}s{asked}")
        self.router.expect_peer_loss(f"{name} is preempted")
        self._signal(task, signal.SIGTERM)
        task.kill_at = self.clock() + grace
        return True

    def _schedule_preemptions(self) -> None:
        now = self.clock()
        if not self._scheduled_once:
            self._scheduled_once = True
            for p in self.rules.preemptions:
                when = now + (self._rng.expovariate(1.0 / p.at) if p.every else p.at)
                self._scheduled.append((when, p.task, p.every, p.at))
        else:  # a new attempt of the whole job: random preemptions go on from its start
            self._scheduled = [
                (now + self._rng.expovariate(1.0 / mean), task, True, mean) for _, task, every, mean in self._scheduled if every
            ]

    def _next_timer(self) -> float | None:
        times = [t.kill_at for t in self.tasks if t.kill_at is not None]
        times += [t.restart_at for t in self.tasks if t.restart_at is not None]
        times += [when for when, *_ in self._scheduled]
        return min(times) if times else None

    def _run_timers(self) -> None:
        now = self.clock()
        for task in list(self.tasks):
            if task.kill_at is not None and now >= task.kill_at:
                task.kill_at = None
                if not task.done:
                    self._note(f"{task.plan.name} did not end within the grace period: SIGKILL")
                    self._signal(task, signal.SIGKILL)
            if task.restart_at is not None and now >= task.restart_at and self._outcome is None:
                self._restart_task(task)
        due = [item for item in self._scheduled if item[0] <= now]
        if not due:
            return
        self._scheduled = [item for item in self._scheduled if item[0] > now]
        for _, who, every, mean in due:
            if every:
                live = [t.plan.name for t in self.tasks if not t.done and not t.preempted and (who == "*" or t.plan.role == who)]
                if live:
                    self.preempt(self._rng.choice(live), why="--preempt random")
                self._scheduled.append((now + self._rng.expovariate(1.0 / mean), who, True, mean))
            else:
                self.preempt(who, why="--preempt")

    def _restart_task(self, old: _Task) -> None:
        """Start an ended task again in place: the same plan (role, index, TF_CONFIG, address)."""
        old.restart_at = None
        if old.pipe is not None:
            self._read(old, final=True)  # what is left of the ended run's output
            if old.pipe is not None:
                self._sel.unregister(old.pipe)
                assert old.proc.stdout is not None
                old.proc.stdout.close()
                old.pipe = None
        if self._in_container(old):
            argv = old.plan.argv
            if "--name" in argv[:-1]:
                self.engine.kill(argv[argv.index("--name") + 1], remove=True)  # its name is taken until it is gone
        task = self._spawn(old.plan, old.output)
        task.restarts = old.restarts + 1
        task.history = [
            *old.history,
            TaskRestart(old.ended or time.time(), old.exit_code, old.signal, "preempted" if old.preempted else "exited"),
        ]
        self.tasks[self.tasks.index(old)] = task
        self.store.put_task(self.job_id, task.record())
        write_task_manifest(self.router.log_dir / TASKS_FILE, self.tasks)
        self._note(f"{task.plan.name} restarted at {task.plan.address} (restart {task.restarts})")

    def _restart_or_fail(self, task: _Task, how: str) -> bool:
        """Schedule a restart of an ended task when its policy says so; False if it is not restarted."""
        if task.stopped or self._cancel_reason is not None:
            return False
        again, why = self.rules.restarts(task.plan.role, task.exit_code, task.signal, task.preempted)
        if not again:
            return False
        name = task.plan.name
        if self._restarts_used >= self.rules.backoff_limit:
            self._outcome = self._failure(
                task,
                f"task {name} {how}; {why} would restart it, but the job's tasks were "
                f"restarted {self._restarts_used} times already (--backoff-limit {self.rules.backoff_limit})",
            )
            return True
        self._restarts_used += 1
        delay = restart_delay(self.rules.delay, task.restarts + 1)
        task.restart_at = self.clock() + delay
        self._note(
            f"{name} {how}; {why}: restarting it in {delay:g}s ({self._restarts_used}/{self.rules.backoff_limit} of --backoff-limit)"
        )
        return True

    def _dispatch(self, events: list[tuple[selectors.SelectorKey, int]], watching: bool) -> None:
        for key, _ in events:
            kind, task = key.data
            if kind == "out":
                self._read(task)
            elif kind == "exit":
                if task.proc.poll() is not None:
                    self._on_exit(task, watching)
            else:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
            if watching and self._outcome is not None:
                return

    def _read(self, task: _Task, final: bool = False) -> bool:
        """Read what the task printed; False at end of file (the pipe is then closed).

        ``final``: the task has exited; read what is already in the pipe (bounded, as
        a child the task left behind may still be writing).
        """
        if task.pipe is None:
            return False
        for _ in range(64 if final else 1):
            try:
                data = os.read(task.pipe, 65536)
            except BlockingIOError:
                return True
            except OSError:
                data = b""
            if not data:
                task.tail.extend(self.router.feed(task.output, b"", final=True))
                self._sel.unregister(task.pipe)
                assert task.proc.stdout is not None
                task.proc.stdout.close()
                task.pipe = None
                return False
            task.tail.extend(self.router.feed(task.output, data))
        return True

    def _on_exit(self, task: _Task, watching: bool) -> None:
        rc = task.proc.returncode
        task.ended = time.time()
        if rc < 0:
            task.signal = -rc
        elif rc > 128 and self._in_container(task) and rc - 128 in _SIGNALS:
            # A container's PID 1 cannot die of a signal: the engine reports 128 + N. Said as
            # the signal, so a task reads the same whether it ran as a process or a container.
            task.signal = rc - 128
        else:
            task.exit_code = rc
        if task.pidfd is not None:
            self._sel.unregister(task.pidfd)
            os.close(task.pidfd)
            task.pidfd = None
        if not watching:
            return
        # The pipe holds everything the task wrote before it died: its last lines matter.
        self._read(task, final=True)
        name = task.plan.name
        if rc == PORT_TAKEN_EXIT and self.clock() - self._attempt_started < self.startup_window:
            raise _Restart(f"{name}'s port {task.plan.port} was taken before it could listen")
        task.kill_at = None
        self.store.put_task(self.job_id, task.record())
        how = f"was killed by {describe_exit(None, task.signal)}" if task.signal else f"exited with code {rc}"
        if task.preempted:
            how += " after its preemption"
        if rc == 0 and (task.plan.role == "chief" or (not self.spec.has_chief and task.plan.name == "worker-0")):
            self._outcome = Outcome(JobState.SUCCEEDED, f"{name} exited with code 0")
        elif self._restart_or_fail(task, how):
            return
        elif rc != 0:
            self._outcome = self._failure(task, f"task {name} {how}")
        elif task.plan.role == "ps" and self.strategy == "parameter-server":
            self._outcome = self._failure(task, f"parameter server {name} ended (code 0) while the job ran")

    def _failure(self, task: _Task, what: str) -> Outcome:
        return Outcome(
            JobState.FAILED,
            f"{what}; its log: {task.output.path}",
            failed_task=task.plan.name,
            task_exit_code=task.exit_code,
            log_tail="\n".join(task.tail),
            retryable=task.preempted or retryable(task.exit_code, task.signal),
            oom_evidence=self._oom_evidence(task) if task.signal == signal.SIGKILL and not task.stopped else "",
        )

    def _oom_evidence(self, task: _Task) -> str:
        """The kernel's out-of-memory record of a task it killed, when this machine shows it;
        else the growth of the cgroup's oom_kill count (said as such: an inference)."""
        from tfjob.results.diagnosis import cgroup_oom_kills, kernel_oom_record

        # /dev/kmsg stamps records on the monotonic clock: only a record after the task started.
        since = time.monotonic() - (time.time() - task.started) - 1.0 if task.started else None  # 1 s of slack between clocks
        record = kernel_oom_record(task.proc.pid, since=since)
        if record:
            return record
        if self._cgroup is not None:
            # The job's own cgroup (v2) was made for it: any oom_kill there is one of its tasks'.
            kills = cgroup_oom_kills(str(self._cgroup.path / "memory.events"))
            if kills:
                return f"the job's cgroup {self._cgroup.path} counts {kills} oom_kill (memory.events)"
        kills = cgroup_oom_kills()
        if kills is not None and self._oom_kills is not None and kills > self._oom_kills:
            return f"the cgroup's memory.events oom_kill count rose from {self._oom_kills} to {kills} while the job ran"
        return ""

    def _timed_out(self) -> Outcome:
        running = [t for t in self.tasks if not t.done]
        names = ", ".join(t.plan.name for t in running[:5]) + (" …" if len(running) > 5 else "")
        focus = next((t for t in running if t.plan.role == "chief" or t.plan.name == "worker-0"), running[0] if running else None)
        return Outcome(
            JobState.FAILED,
            f"timed out: the job ran longer than --timeout {self.spec.timeout:g}s (still running: {names or 'none'})",
            failed_task=focus.plan.name if focus else None,
            log_tail="\n".join(focus.tail) if focus else "",
        )

    # -- teardown ---------------------------------------------------------------------------
    def _kill_all(self, sig: int) -> None:
        for task in self.tasks:
            if not task.done:
                task.stopped = True
            # The whole group: the task's own children too (its pgid is its pid).
            try:
                os.killpg(task.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def _wait_all(self, until: float | None) -> bool:
        """Wait for every task to exit (until ``until`` on the clock); True if all did."""
        while True:
            live = [t for t in self.tasks if not t.done]
            if not live:
                return True
            now = self.clock()
            if until is not None and now >= until:
                return False
            timeout: float | None
            if any(t.pidfd is None for t in live):
                timeout = 0.02
            else:
                timeout = None if until is None else until - now
            self._dispatch(self._sel.select(timeout), watching=False)
            # A task with a pidfd said it exited through it (in _dispatch); only those without
            # are asked (a waitpid each, which for every live task at every wake-up grew with
            # the square of the tasks still running at teardown).
            for task in live:
                if task.pidfd is None and not task.done and task.proc.poll() is not None:
                    self._on_exit(task, watching=False)

    def _teardown(self) -> None:
        if not self.tasks:
            return
        self.router.expect_peer_loss("the job is ending and its tasks are stopped")
        self._kill_all(signal.SIGTERM)
        if not self._wait_all(self.clock() + max(0.0, float(self.options.grace))):
            self._kill_all(signal.SIGKILL)
            self._wait_all(None)
        else:
            # Children a task left behind in its group, deaf to SIGTERM.
            self._kill_all(signal.SIGKILL)
        self._drain(0.5)

    def _drain(self, seconds: float) -> None:
        """Read what is left in the pipes (bounded: a stray process may hold one open)."""
        until = self.clock() + seconds
        while any(t.pipe is not None for t in self.tasks) and self.clock() < until:
            events = self._sel.select(max(0.0, until - self.clock()))
            if not events:
                break
            self._dispatch(events, watching=False)
        for task in self.tasks:
            if task.pipe is not None:
                self._sel.unregister(task.pipe)
                assert task.proc.stdout is not None
                task.proc.stdout.close()
                task.pipe = None

    def _close(self) -> None:
        for task in self.tasks:
            if task.pidfd is not None:
                os.close(task.pidfd)
                task.pidfd = None
        for output in self._outputs.values():
            output.close()
        self._sel.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- record -----------------------------------------------------------------------------
    def _record(self, outcome: Outcome) -> None:
        outcome.rows = [
            SummaryRow(t.plan.name, t.state.value, t.exit_code, t.signal, (t.ended or time.time()) - t.started, restarts=t.restarts)
            for t in self.tasks
        ]
        # The job log ends with the outcome, before the state says so: `tfjob logs --follow` shows it.
        self.router.note(f"job {outcome.state.value}: {outcome.message}\n{render_summary(outcome.rows)}", console=False)
        self.store.put_tasks(self.job_id, [t.record() for t in self.tasks])
        extra: dict[str, Any] = {}
        if outcome.failed_task:
            extra["log_tail"] = outcome.log_tail
            extra["task_exit_code"] = outcome.task_exit_code
        if outcome.oom_evidence:
            extra["oom_evidence"] = outcome.oom_evidence
        record = self.store.get(self.job_id)
        merged = {**(record.extra if record else {}), **extra}
        self.store.set_state(
            self.job_id,
            outcome.state,
            outcome.message,
            failed_task=outcome.failed_task,
            exit_code=outcome.task_exit_code,
            extra=merged,
        )
