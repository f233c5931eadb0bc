"""Restarts and preemptions of a local job's tasks, as the platforms do them
(:mod:`tfjob.description.restarts`): a task restarted in place after its policy's delay, the
whole job started again (``max_restarts``), a preemption as SIGTERM, the grace period, SIGKILL."""

from __future__ import annotations

import signal
import time

from ...description.restarts import restart_delay, retryable
from ...model import JobState, TaskRestart
from .processes import TaskProcesses
from .tasks import TASKS_FILE, Outcome, Task, write_task_manifest


class Recovery(TaskProcesses):
    """The launcher's restarts and preemptions, and what a failed task tells of the job."""

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

    def _restart_task(self, old: Task) -> None:
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

    def _restart_or_fail(self, task: Task, how: str) -> bool:
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

    # -- a failed task ----------------------------------------------------------------------
    def _failure(self, task: Task, what: str) -> Outcome:
        return Outcome(
            JobState.FAILED,
            f"{what}; its log: {task.output.path}",
            failed_task=task.plan.name,
            task_exit_code=task.exit_code,
            log_tail="\n".join(task.tail),
            retryable=task.preempted or retryable(task.exit_code, task.signal),
            oom_evidence=self._oom_evidence(task) if task.signal == signal.SIGKILL and not task.stopped else "",
        )

    def _oom_evidence(self, task: Task) -> str:
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
