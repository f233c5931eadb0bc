"""The local backend, the embedded default: a real multi-process cluster on 127.0.0.1.

A thin object over :mod:`tfjob.backends.local`: ``run`` supervises the job in the calling
process (``tfjob submit``, ``Job.run()``); ``submit`` hands it to a detached
supervisor and returns at once (``--detach``, ``Job.submit()``). Jobs are recorded
in the job store, so ``status``, ``logs``, ``cancel`` and ``list`` work from any
process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

from ...errors import UsageError
from ...description.spec import JobSpec
from ...runtime.store import process_start_time
from ...runtime.lifecycle import Lifecycle
from ...model import JobState, JobStatus, SubmitOptions, normalize_task
from .options import LocalOptions

if TYPE_CHECKING:
    from .plan import TaskPlan
    from .runner import Prepared
    from ...runtime.store import JobRecord
    from ...tuning.study import StudySpec
    from ...tuning.trials import StudyResult


#: Up to this many tasks, ``render`` writes each task's environment in full.
FULL_RENDER_TASKS = 16


def _rendered_tasks(plans: list[TaskPlan], dialect: str, strategy: str) -> dict[str, Any]:
    """``render``'s answer: each task in full, or beyond :data:`FULL_RENDER_TASKS` the shared
    variables once and each task's own."""
    if len(plans) <= FULL_RENDER_TASKS:
        return {
            "backend": "local",
            "dialect": dialect,
            "strategy": strategy,
            "tasks": [
                # tf_config: the task's TF_CONFIG parsed, to read at a glance (env holds it as the task gets it, a string).
                {"name": p.name, "address": p.address, "argv": p.argv, "cwd": p.cwd, "env": p.env}
                | ({"tf_config": json.loads(p.env["TF_CONFIG"])} if "TF_CONFIG" in p.env else {})
                for p in plans
            ],
        }
    # Every task's TF_CONFIG / CLUSTER_SPEC repeats the whole cluster: written out for
    # every task, the output would grow with the square of the task count. Beyond a few
    # tasks the shared part is written once and each task gets only what is its own.
    first = plans[0]
    shared = {k: v for k, v in first.env.items() if all(p.env.get(k) == v for p in plans)}
    return {
        "backend": "local",
        "dialect": dialect,
        "strategy": strategy,
        "cluster_variables": {k: first.env[k] for k in ("TF_CONFIG", "CLUSTER_SPEC") if k in first.env},
        "note": (
            f"{len(plans)} tasks: cluster_variables are {first.name}'s; every other task's are the same "
            "with its own task entry (type, index), as each task's `task` says"
        ),
        "env": {k: v for k, v in shared.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")},
        "tasks": [
            {
                "name": p.name,
                "address": p.address,
                "task": {"type": p.role, "index": p.index},
                "argv": p.argv,
                "cwd": p.cwd,
                "env": {k: v for k, v in p.env.items() if k not in shared and k not in ("TF_CONFIG", "CLUSTER_SPEC")},
            }
            for p in plans
        ],
    }


def _check_trainer_dir(spec: JobSpec) -> None:
    """The trainer directory a run would use, by the rule every backend's render applies
    (:func:`tfjob.description.spec.check_trainer`): a package-less directory is refused here as by Vertex
    AI's and a JobSet's renders. A container job without one runs what its image holds."""
    from ...description.spec import BUILT_PACKAGE_SUFFIXES, check_trainer

    package = spec.package
    if spec.module is None or (package is None and spec.image) or (package or "").endswith(BUILT_PACKAGE_SUFFIXES):
        return
    if package is not None and "://" in package:
        return
    source = Path(package or ".").expanduser()
    if source.is_dir():
        check_trainer(source.resolve(), spec.module)


class LocalBackend(Lifecycle[LocalOptions, "tuple[Prepared, LocalOptions]"]):
    """Runs jobs as processes on this machine (see :mod:`tfjob.backends.local`).

    Its ``run`` is its own: the job runs in the calling process, and Ctrl-C (SIGINT,
    SIGTERM, SIGHUP) cancels it — it cannot outlive the process — so the run ends
    CANCELLED and ``Job.run()`` raises JobCancelledError (exit 130).
    """

    name = "local"
    platform = "this machine"
    options_class = LocalOptions
    #: A local job's state is one SQLite read away: waiting polls at least this often.
    max_poll_interval = 0.5

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """What each task would run: command, working directory, cluster variables (pure).

        Ports are illustrative (from 27182, as ``gcloud ai-platform local train``);
        a real run picks free ones.
        """
        options = self.typed(options)
        from ...cluster import GCLOUD_LOCAL_START_PORT
        from ...description.limits import check_local_tasks
        from ...cluster.dispatch import job_strategy
        from ...runtime.settings import tfjob_home
        from .plan import WORK_DIR, build_cluster, build_task_plans, check_chief, check_dialect, say_ignored_resources

        check_local_tasks(spec.task_count)
        check_dialect(options.dialect)
        check_chief(spec, options.dialect)
        say_ignored_resources(spec)
        from ...description.restarts import build_rules

        build_rules(options, [f"{role}-{index}" for role, index in spec.tasks()])
        strategy = job_strategy(spec, options.strategy)
        ports = [GCLOUD_LOCAL_START_PORT + i for i in range(len(spec.tasks()))]
        _check_trainer_dir(spec)
        engine = None
        if any(spec.image_for(role) for role, _ in spec.tasks()):
            from ...runtime.engine import Engine

            name = options.container_engine or "podman"
            engine = Engine(name.rsplit("/", 1)[-1], name)  # what would run them; render looks nothing up
        # Packages a run mounts into the containers (PACKAGE_PATH's sdist is built then:
        # here it is named by a placeholder, as render builds nothing).
        shipped = [
            str(Path(p).expanduser().absolute() / "<sdist>") if Path(p).expanduser().is_dir() else str(Path(p).expanduser().absolute())
            for p in (spec.package, *spec.packages)
            if p and engine is not None
        ]
        plans = build_task_plans(
            spec,
            build_cluster(spec, ports),
            dialect=options.dialect,
            strategy=strategy,
            python=os.fspath(options.python or "python"),
            source_root=str(Path(spec.package or ".").expanduser().absolute()),  # PYTHONPATH: absolute, run from elsewhere
            environ={},
            job_id="<job-id>",
            # Where a run's tasks run: each in its own directory under the job's logs.
            work_dir=str(tfjob_home() / "jobs" / "<job-id>" / WORK_DIR),
            tf_config=options.tf_config,
            engine=engine,
            shipped=shipped,
        )
        return _rendered_tasks(plans, options.dialect, strategy)

    def run(
        self,
        spec: JobSpec,
        options: SubmitOptions,
        *,
        console: TextIO | None = None,
        summary: TextIO | None = None,
        port_picker: Any = None,
    ) -> str:
        """Run the job in this process to its end; return its id whatever the outcome.

        Task lines stream to ``console`` (default stderr; nothing with ``quiet``) and
        the summary to ``summary`` (default stderr). SIGINT/SIGTERM cancel the job.
        """
        from .ports import pick_ports
        from .runner import check_job, create_record, run_job

        options = self.typed(options)
        prepared = check_job(spec, options)
        if options.notice:
            print(options.notice, file=sys.stderr, flush=True)
        store = self.store
        record = create_record(prepared.spec, options, store, supervisor_pid=os.getpid(), detached=False)
        run_job(
            record,
            store,
            prepared,
            console=None if options.quiet else (console or sys.stderr),
            summary=summary or sys.stderr,
            port_picker=port_picker or pick_ports,
        )
        return record.id

    # -- Lifecycle.submit's hooks: recorded first, then handed to a detached supervisor -------
    def _prepare(self, spec: JobSpec, options: LocalOptions) -> tuple[Prepared, LocalOptions]:
        """The job checked and prepared (:func:`.runner.check_job`); its notice said."""
        from .runner import check_job

        prepared = check_job(spec, options)
        if options.notice:
            print(options.notice, file=sys.stderr, flush=True)
        return prepared, options

    def _pending(self, plan: tuple[Prepared, LocalOptions]) -> JobRecord:
        """The job's record, kept before its supervisor starts (it reads the job from the store);
        until then this process answers for the job."""
        from .runner import new_record

        prepared, options = plan
        return new_record(prepared.spec, options, supervisor_pid=os.getpid(), detached=True)

    def _create(self, plan: tuple[Prepared, LocalOptions], pending: JobRecord | None) -> None:
        """Start the job's detached supervisor (it runs the job to its end); ``pending`` stays the
        job's record, now naming the supervisor."""
        from .runner import open_log_dir

        assert pending is not None
        store = self.store
        open_log_dir(store, pending)
        assert pending.log_dir is not None
        with open(Path(pending.log_dir) / "supervisor.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tfjob.backends.local.supervisor", "--store", str(store.path.absolute()), pending.id],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the submitting shell must not reach it
                close_fds=True,
            )
        store.update(pending.id, supervisor_pid=proc.pid, supervisor_start=process_start_time(proc.pid))
        return None

    def _not_created(self, pending: JobRecord, error: BaseException) -> None:
        """No supervisor started: the job's record and its log directory go."""
        import shutil

        if pending.log_dir:
            shutil.rmtree(pending.log_dir, ignore_errors=True)
        super()._not_created(pending, error)

    def _lookup(self, job_id: str) -> JobRecord | None:
        """The job's record (a unique prefix of its id will do); a local job is only in the store."""
        return self.store.resolve(job_id)

    def _fetch(self, job_id: str, record: JobRecord | None) -> JobStatus | None:
        """The job and its tasks as its launcher records them; a job whose launcher died
        unrecorded is recorded LOST first."""
        from .reap import reap_lost

        assert record is not None  # _lookup raises for an unknown id
        reap_lost(self.store, record)
        return self.store.status(record.id)

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines (``[worker-1] …``), of one task if given, following until it ends."""
        from .logs import JOB_LOG, read_lines, task_log_name

        store = self.store
        record = store.resolve(job_id)
        names = [t.name for t in store.tasks(record.id)] or [f"{role}-{i}" for role, i in JobSpec.from_dict(record.spec).tasks()]
        if not record.log_dir:
            raise UsageError(f"job {record.id} has no log directory")
        log_dir = Path(record.log_dir)
        if task is not None:
            task = normalize_task(task)  # as every backend reads it: Worker-0, master-0
        if task is not None and task not in names:
            raise UsageError(field="task", value=task, problem=f"is not a task of job {record.id}; its tasks are {', '.join(names)}")
        path = log_dir / (task_log_name(task) if task else JOB_LOG)
        prefix = f"[{task}] " if task else ""

        from .reap import reap_lost

        def is_done() -> bool:
            current = store.get(record.id)
            return current is None or reap_lost(store, current).state.is_terminal

        return read_lines(path, prefix=prefix, tail=tail, follow=follow, is_done=is_done)

    def _cancel(self, job_id: str, record: JobRecord | None) -> tuple[JobState, str]:
        """The job's supervisor reads the request where it reads the job's state, and stops every
        task within a moment: recording it is the request."""
        return JobState.CANCELLING, "cancel requested"

    def preempt(self, job_id: str, task: str, grace: float | None = None, wait: float = 60.0) -> str:
        """Preempt one task of a running job as a Spot VM is reclaimed — SIGTERM, ``grace``
        seconds (the job's ``--preempt-grace``, 30 by default), then SIGKILL — and let its
        restart policy act. Returns the task's name once the job's launcher has taken the request.

        Raises:
            UsageError: no such task, or the job has ended.
            BackendError: the launcher did not take the request within ``wait`` seconds.
        """
        import time

        from ...errors import BackendError
        from ...description.restarts import parse_seconds
        from .reap import reap_lost

        name = normalize_task(task)
        if grace is not None:
            grace = parse_seconds(grace, "--grace")
        store = self.store
        record = reap_lost(store, store.resolve(job_id))
        if record.state.is_terminal:
            raise UsageError(f"job {record.id} has ended ({record.state.value}); there is nothing to preempt")
        names = [t.name for t in store.tasks(record.id)] or [f"{r}-{i}" for r, i in JobSpec.from_dict(record.spec).tasks()]
        if name not in names:
            raise UsageError(f"{task!r} is not a task of job {record.id}; its tasks are {', '.join(names)}")
        token = os.urandom(4).hex()
        store.request(record.id, "preempt", name, grace, token)
        until = time.monotonic() + wait
        while store.pending_requests(record.id, token):
            # The job may end first (the race of a preemption with the job's own end): then the
            # request is taken back, and that is what is said, at once.
            current = reap_lost(store, store.get(record.id) or record)
            if current.state.is_terminal or time.monotonic() >= until:
                if store.withdraw_request(record.id, token):
                    if current.state.is_terminal:
                        raise UsageError(f"job {record.id} ended ({current.state.value}) before {name} could be preempted")
                    raise BackendError(f"the launcher of job {record.id} did not take the preemption of {name} within {wait:g}s")
                break  # taken just now
            time.sleep(0.05)
        # The launcher's answer goes in the job's history, with the request's token, a moment
        # after it took the request.
        answer_by = time.monotonic() + 10
        while True:
            for _, _, message in reversed(store.events(record.id)):
                if message.endswith(f" (request {token})"):
                    if message.startswith("not preempting"):
                        why = message[: -len(f" (request {token})")].rsplit(": ", 1)[-1]
                        raise UsageError(f"job {record.id}'s launcher did not preempt {name}: {why}")
                    return name
            if time.monotonic() >= answer_by or store.state(record.id).is_terminal:
                return name
            time.sleep(0.05)

    # -- tuning (tfjob.backends.base.Tuner): trials as local jobs, proposed by Optuna ----------
    study_search = "Optuna"

    def render_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None]) -> dict[str, Any]:
        """The study's plan: its search, its counts, each trial's arguments and the job a trial runs."""
        from ...tuning.render import describe_parameter, render_study_spec
        from ...tuning.search import LOCAL_ALGORITHMS, plan_trial_count

        count, _ = plan_trial_count(study)
        return {
            "backend": "local",
            "studySpec": render_study_spec(study),
            "maxTrialCount": count,
            "parallelTrialCount": study.parallel_trials,
            "maxFailedTrialCount": study.max_failed_trials,
            "search": LOCAL_ALGORITHMS[study.algorithm],
            "trialArgs": [describe_parameter(p) for p in study.parameters],
            "trialJob": self.render(spec, options),
        }

    def run_study(
        self,
        study: StudySpec,
        spec: JobSpec,
        options: SubmitOptions,
        *,
        stream: TextIO | None = None,
        seed: int | None = None,
        cores: int | None = None,
        port_picker: Any = None,
        echo: Callable[[str], None] | None = None,
    ) -> StudyResult:
        """Run the study here to its end, recorded in this backend's store (see :mod:`.tuning`)."""
        from .tuning import LocalStudy

        local = LocalStudy(
            study, spec, self.typed(options), seed=seed, cores=cores, stream=stream, port_picker=port_picker, store=self.store
        )
        return local.run()

    def submit_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None] | None = None) -> str:
        raise UsageError(problem="a local study runs in this process to its end", fix="drop --async (or use {backend=vertex})")

    def recorded(self, record: JobRecord) -> JobStatus:
        """The job as recorded; one whose launcher died unrecorded is recorded LOST (and what is
        left of it stopped) first."""
        from .reap import reap_lost

        return reap_lost(self.store, record).to_status()

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """Local jobs, newest first."""
        from .reap import reap_lost

        store = self.store
        return [reap_lost(store, r).to_status() for r in store.list(limit=limit, backend=self.name)]
