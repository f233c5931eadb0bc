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

import os
import signal
import time
from typing import Any

from ...errors import BackendError
from ...model import JobState, SummaryRow, describe_exit, render_summary
from . import contain
from .recovery import Recovery
from .tasks import PORT_TAKEN_EXIT, SIGNALS, ClusterRestart, Outcome, Task

__all__ = ["Launcher", "Outcome"]


class Launcher(Recovery):
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

    # -- the whole run ---------------------------------------------------------------------
    def run(self) -> Outcome:
        """Start the cluster, follow it to its end, tear it down; record and return the outcome."""
        # Descendants that leave their task's process group are re-parented here, not to PID 1.
        self._children_before = contain.children()
        self._subreaper = contain.become_subreaper()
        self._cgroup = None
        self._lifeline = None
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

    def _run_ports(self, deadline: float | None) -> None:
        for attempt in range(1, self.max_attempts + 1):
            try:
                self._start()
                self.store.set_state(self.job_id, JobState.RUNNING, "", only_from=(JobState.QUEUED, JobState.PENDING))
                self._watch(deadline)
                return
            except ClusterRestart as e:
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

    def _on_exit(self, task: Task, watching: bool) -> None:
        rc = task.proc.returncode
        task.ended = time.time()
        if rc < 0:
            task.signal = -rc
        elif rc > 128 and self._in_container(task) and rc - 128 in SIGNALS:
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
            raise ClusterRestart(f"{name}'s port {task.plan.port} was taken before it could listen")
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
