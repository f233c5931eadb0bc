"""Start a local job's tasks, read their output, and stop them: one process per task, in its
own session and process group, in the job's cgroup where the machine allows one (see
:mod:`.launcher` and :mod:`.contain`)."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Iterator

from ...cluster.dispatch import BOOTSTRAP_MODULE
from ...errors import BackendError
from ...runtime.store import process_start_time
from . import contain
from .launcher_state import LauncherState
from .logs import TaskOutput
from .plan import WORK_DIR, TaskPlan, build_cluster, build_host_cluster, build_task_plans
from .ports import port_taken
from .tasks import TASKS_FILE, ClusterRestart, Task, write_task_manifest

#: A task's exit code when it could not join the job's cgroup (EX_OSERR); it says why on its output.
CGROUP_JOIN_EXIT = 71
_PR_SET_PDEATHSIG = 1


# libc's prctl, resolved once in the parent (the child must not load libraries between fork and exec).
_PRCTL = contain.PRCTL


def child_setup(parent: int, cgroup: contain.JobCgroup | None = None) -> Callable[[], None]:
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


class TaskProcesses(LauncherState):
    """The launcher's processes: start them, read what they print, stop them."""

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
                    raise ClusterRestart(f"{plan.name}'s port {plan.port} was taken before it could listen")
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
        parent-death signal. None: each task runs :func:`child_setup` between fork and exec."""
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

    def _spawn(self, plan: TaskPlan, output: TaskOutput) -> Task:
        """Start one task of ``plan`` (again, for a restart: the same command, variables and
        address), in the job's cgroup, its output to ``output``."""
        prefix = self._fast_start()
        if prefix and (plan.argv[0], plan.env.get("PATH")) not in self._programs:
            # setpriv would start, and then fail to run it: say so as Popen would have.
            if shutil.which(plan.argv[0], path=plan.env.get("PATH") or os.defpath) is None:
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
                    preexec_fn=None if prefix is not None else child_setup(os.getpid(), self._cgroup),
                    close_fds=True,
                    # A session of its own (so its pgid is its pid): none of its descendants can
                    # ever join the launcher's session, which tells them from the caller's children.
                    start_new_session=True,
                )
        except OSError as e:
            raise BackendError(f"could not start task {plan.name} ({plan.argv[0]}): {e}") from e
        task = Task(plan, output, proc, time.time(), process_start_time(proc.pid))
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

    # -- output -----------------------------------------------------------------------------
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

    def _read(self, task: Task, final: bool = False) -> bool:
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
