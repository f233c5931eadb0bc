"""A hyperparameter study on this machine: every trial a full local job.

The study is itself a job in the job store (backend ``local``), supervised by the
process that runs it: ``tfjob status STUDY`` shows its trials, ``tfjob logs STUDY
[--task trial-3]`` its progress (or a trial's own log), ``tfjob cancel STUDY`` stops
it, and a killed study shows as LOST. Each trial is a local job of its own, run
exactly like ``tfjob submit`` runs one, with what the platforms give a trial:

- ``trial`` in every task's TF_CONFIG / CLUSTER_SPEC and ``CLOUD_ML_TRIAL_ID``;
- its hyperparameters appended to the trainer's arguments as ``--name=value``;
- its own ``--job-dir JOB_DIR/<trial>`` (and ``AIP_MODEL_DIR`` under it);
- its own metrics file, ``CLOUD_ML_HP_METRIC_FILE``, read back when it ends.

Up to ``parallel_trials`` trials run at once, and no more than the machine's cores
can take (one core per task). A trial that fails, or ends without reporting the
metric (INFEASIBLE), counts against ``max_failed_trials``; reaching it stops the
study, which then FAILS.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TextIO

from ...model import JobState
from .options import LocalOptions
from ...errors import TfjobError
from ...description.spec import JobSpec
from ...runtime.store import JobRecord, JobStore, TaskRecord, process_start_time
from ...tuning.study import StudySpec
from ...tuning.metrics import fetch_trial_metric
from ...tuning.search import Search, plan_trial_count
from ...tuning.trials import StudyResult, Trial, best_trial, render_trial_line, study_outcome
from ...tuning.view import TrialsView

#: The trial's metrics file, as the platforms name it to the trainer.
METRIC_FILE_ENV = "CLOUD_ML_HP_METRIC_FILE"
_TRIAL_STATE = {"QUEUED": JobState.QUEUED, "RUNNING": JobState.RUNNING, "SUCCEEDED": JobState.SUCCEEDED,
                "INFEASIBLE": JobState.FAILED, "FAILED": JobState.FAILED, "CANCELLED": JobState.CANCELLED}  # fmt: skip


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_parallelism(study: StudySpec, tasks_per_trial: int, cores: int) -> tuple[int, str | None]:
    """How many trials run at once: ``parallel_trials``, within ``cores`` (one per task). Pure."""
    fits = max(1, cores // max(1, tasks_per_trial))
    if study.parallel_trials <= fits:
        return study.parallel_trials, None
    return fits, (
        f"{fits} trial{'s' if fits > 1 else ''} at a time, not maxParallelTrials {study.parallel_trials}: "
        f"each trial runs {tasks_per_trial} task{'s' if tasks_per_trial > 1 else ''} and this machine has {cores} cores"
    )


def build_trial_spec(spec: JobSpec, study: StudySpec, trial: Trial, metric_file: Path) -> JobSpec:
    """The job one trial runs: the study's job with the trial's arguments and metrics file. Pure."""
    # Without the default name's date (the study has it), so the trial's job id shows the trial.
    stem = re.sub(r"-\d{8}-\d{6}$", "", spec.name)
    suffix = f"-trial-{trial.id}"
    params = tuple(study.render_args(trial.params))
    # As Vertex AI does, every pool's arguments get the trial's (a pool with its own too).
    pools = tuple(dataclasses.replace(p, args=(*p.args, *params)) if p.args is not None else p for p in spec.pools)
    return spec.replace(
        name=stem[: 128 - len(suffix)] + suffix,
        args=(*spec.args, *params),
        env={**spec.env, METRIC_FILE_ENV: str(metric_file)},
        pools=pools,
    )


class LocalStudy:
    """Runs a study of local trials to its end (see the module's doc).

    Args:
        study: what to tune.
        spec: the job each trial runs (its args come first, then the trial's).
        options: local options (dialect, strategy, python, grace…); ``quiet`` shows
            only the final table.
        seed: makes the search reproducible.
        cores: cores to fit the trials in (default: this machine's).
        stream: where the live table goes (default: stderr as it is when the study
            is made; None: nowhere).
        live: redraw the table in place (default: when ``stream`` is a terminal).
        poll: seconds between looks at a cancel request.
        port_picker: picks free ports for the trials' tasks (tests).
        store: the job store the study and its trials are recorded in (the backend's).
    """

    def __init__(
        self,
        study: StudySpec,
        spec: JobSpec,
        options: LocalOptions,
        *,
        seed: int | None = None,
        cores: int | None = None,
        stream: TextIO | None | str = "stderr",
        live: bool | None = None,
        poll: float = 0.2,
        port_picker: Any = None,
        store: JobStore,
    ) -> None:
        #: The job store the study and each trial's job are recorded in (its backend's).
        self.store = store
        self.study = study
        self.spec = spec
        self.options = dataclasses.replace(options, wait=True, detach=False)
        self.seed = seed
        self.cores = cores or available_cores()
        out = sys.stderr if stream == "stderr" else stream
        self.view = TrialsView(study, out, live=live, quiet=options.quiet)  # type: ignore[arg-type]
        self.poll = poll
        self.port_picker = port_picker
        self.trials: list[Trial] = []
        self.id = ""
        self._log_dir = Path()
        self._stopping: str | None = None
        self._signal: str | None = None
        self._tails: dict[str, str] = {}
        self._failures: list[Trial] = []
        self._published: list[tuple[str, str, float | None]] = []
        self._lock = threading.Lock()

    # -- the study ---------------------------------------------------------------------
    def run(self) -> StudyResult:
        """Run every trial; record and return how the study ended.

        Raises:
            UsageError: the job cannot run locally (before anything starts).
            BackendUnavailableError: Optuna is not installed.
        """
        from .runner import check_job

        check_job(self.spec, self.options)  # a usage error ends it here, before any record
        search = Search(self.study, self.seed)
        count, note = plan_trial_count(self.study)
        parallel, cap = plan_parallelism(self.study, self.spec.task_count, self.cores)
        parallel = min(parallel, count)
        store = self.store
        self._create_record(store, search.algorithm, parallel)
        for text in (note, cap):
            if text:
                self.view.note(text)
                self._log(text)
        self.view.note(
            f"study {self.id}: {count} trials, {parallel} at a time, {search.algorithm} search, "
            f"{self.study.metric.goal.lower()} {self.study.metric.tag}"
        )
        try:
            with self._signals():
                result = self._loop(store, search, count, parallel)
        except BaseException as e:
            self._record_end(store, StudyResult(self.id, JobState.FAILED, f"the study stopped: {type(e).__name__}: {e}"))
            raise
        self._record_end(store, result)
        self.view.finish(self.trials, f"study {self.id} {result.state.value}: {result.message}")
        return result

    def _loop(self, store: JobStore, search: Search, count: int, parallel: int) -> StudyResult:
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="trial") as pool:
            try:
                self._watch(store, search, pool, count, parallel)
            except BaseException as e:
                # Not ours to swallow (a bug): stop the trials before going.
                if self._stopping is None:
                    self._stop(store, f"the study stopped: {type(e).__name__}: {e}")
                raise
        return self._outcome(self._failures)

    def _watch(self, store: JobStore, search: Search, pool: ThreadPoolExecutor, count: int, parallel: int) -> None:
        """Start trials as slots free up and take each one's outcome, until all have ended."""
        numbers: dict[str, int] = {}
        running: dict[Future[Any], Trial] = {}
        while True:
            while self._stopping is None and len(running) < parallel and len(self.trials) < count:
                number, values = search.ask()
                trial = Trial(str(len(self.trials) + 1), values)
                numbers[trial.id] = number
                self.trials.append(trial)
                running[pool.submit(self._run_trial, trial)] = trial
            self._publish(store)
            if not running:
                return
            done, _ = wait(list(running), timeout=self.poll, return_when=FIRST_COMPLETED)
            for future in done:
                trial = running.pop(future)
                self._finish(trial, future.result())
                search.tell(numbers[trial.id], trial.metric if trial.state == "SUCCEEDED" else None)
                self._log(render_trial_line(self.view.layout, trial))
                if trial.failed:
                    self._failures.append(trial)
                    limit = self.study.max_failed_trials
                    if limit and len(self._failures) >= limit and self._stopping is None:
                        self._stop(store, f"{len(self._failures)} trials failed, which reaches maxFailedTrials {limit}")
            if self._stopping is None:
                reason = self._signal or ("`tfjob cancel`" if store.state(self.id) is JobState.CANCELLING else None)
                if reason:
                    self._stop(store, f"cancelled by {reason}")

    def _outcome(self, failures: list[Trial]) -> StudyResult:
        return study_outcome(self.id, self.study, self.trials, failures, self._tails, self._stopping)

    def _stop(self, store: JobStore, reason: str) -> None:
        """Start no more trials and cancel the running ones (each sees CANCELLING within a moment)."""
        self._stopping = reason
        self._log(f"stopping the study: {reason}")
        with self._lock:
            jobs = [t.job_id for t in self.trials if t.job_id and not t.done]
        for job_id in jobs:
            self._cancel_trial_job(store, job_id, reason)

    @staticmethod
    def _cancel_trial_job(store: JobStore, job_id: str, reason: str) -> None:
        store.set_state(
            job_id,
            JobState.CANCELLING,
            f"the study stopped: {reason}",
            only_from=(JobState.QUEUED, JobState.PENDING, JobState.RUNNING),
        )

    def _signals(self) -> Any:
        """Ctrl-C, SIGTERM and SIGHUP stop the study cleanly: running trials are cancelled and recorded."""
        from .runner import on_stop_signals

        def stop(name: str) -> None:
            self._signal = name

        return on_stop_signals(stop)

    # -- one trial (in a worker thread) ----------------------------------------------------
    def _run_trial(self, trial: Trial) -> Any:
        """Run the trial's job to its end; return the launcher's outcome (or a TfjobError)."""
        from .runner import check_job, create_record, run_job
        from .ports import pick_ports

        metric_file = self._log_dir / f"trial-{trial.id}.metrics"
        spec = build_trial_spec(self.spec, self.study, trial, metric_file)
        options = dataclasses.replace(self.options, trial=trial.id, quiet=True)
        try:
            store = self.store
            prepared = check_job(spec, options)
            record = create_record(prepared.spec, options, store, supervisor_pid=os.getpid(), detached=False)
            store.update(record.id, extra={**record.extra, "study": self.id, "trial": trial.id})
            self._link_log(trial, Path(record.log_dir or ""))
            with self._lock:
                trial.job_id, trial.state, trial.started = record.id, "RUNNING", time.time()
            if self._stopping is not None:  # the study stopped while this trial was being set up
                self._cancel_trial_job(store, record.id, self._stopping)
            return run_job(record, store, prepared, console=None, summary=None, port_picker=self.port_picker or pick_ports)
        except TfjobError as e:
            return e

    def _link_log(self, trial: Trial, trial_log_dir: Path) -> None:
        # `tfjob logs STUDY --task trial-3` reads <study log dir>/trial-3.log: the trial's own job log.
        from .logs import JOB_LOG, task_log_name

        link = self._log_dir / task_log_name(f"trial-{trial.id}")
        try:
            link.unlink(missing_ok=True)
            link.symlink_to(trial_log_dir / JOB_LOG)
        except OSError:
            pass

    def _finish(self, trial: Trial, outcome: Any) -> None:
        """Record how a trial ended: its metric, or why it failed."""
        ended = time.time()
        if isinstance(outcome, TfjobError):
            state, message = "FAILED", str(outcome)
        elif outcome.state is JobState.SUCCEEDED:
            reading = fetch_trial_metric(
                self._log_dir / f"trial-{trial.id}.metrics",
                self.study.metric.tag,
                self.study.metric.maximize,
                best=self.study.measurement == "BEST_MEASUREMENT",
            )
            if reading.value is None:
                state = "INFEASIBLE"
                other = f"; it reported {', '.join(reading.tags)}" if reading.tags else ""
                message = (
                    f"the trainer ended without reporting {self.study.metric.tag!r}{other} "
                    f"(report it with tfjob.report_metric({self.study.metric.tag!r}, value) or cloudml-hypertune)"
                )
            else:
                state, message = "SUCCEEDED", ""
                trial.metric, trial.step = reading.value, reading.step
        elif outcome.state is JobState.CANCELLED:
            state, message = "CANCELLED", outcome.message
        else:
            state, message = "FAILED", outcome.message
            if outcome.log_tail:
                self._tails[trial.id] = outcome.log_tail
        with self._lock:
            trial.state, trial.message, trial.ended = state, message, ended

    # -- the record --------------------------------------------------------------------
    def _create_record(self, store: JobStore, algorithm: str, parallel: int) -> None:
        record = JobRecord(
            id="",
            backend="local",
            name=self.spec.name,
            state=JobState.RUNNING,
            spec=self.spec.to_dict(),
            options=dataclasses.asdict(self.options),
            supervisor_pid=os.getpid(),
            supervisor_start=process_start_time(os.getpid()),
            extra={"kind": "study", "study": self.study.to_dict(), "algorithm": algorithm, "parallel": parallel, "trials": []},
        )
        store.add_new(record)
        self.id = record.id
        self._log_dir = store.jobs_dir / record.id
        self._log_dir.mkdir(parents=True, exist_ok=True)
        store.update(record.id, log_dir=str(self._log_dir), started=time.time())

    def _log(self, text: str) -> None:
        from .logs import JOB_LOG

        with open(self._log_dir / JOB_LOG, "a", encoding="utf-8") as f:
            f.write(f"[study] {text}\n")

    def _publish(self, store: JobStore) -> None:
        """Show the trials and keep the store's copy current (for `tfjob status` elsewhere)."""
        with self._lock:
            snapshot = [dataclasses.replace(t) for t in self.trials]
        key = [(t.id, t.state, t.metric) for t in snapshot]
        if key == self._published:
            return  # nothing new: spare the store a write every poll
        self._published = key
        self.view.update(snapshot)
        record = store.get(self.id)
        extra = {**(record.extra if record else {}), "trials": [t.to_dict() for t in snapshot]}
        best = best_trial(snapshot, self.study.metric.maximize)
        extra["best"] = best.to_dict() if best else None
        store.update(self.id, extra=extra)
        store.put_tasks(
            self.id,
            [
                TaskRecord(
                    f"trial-{t.id}",
                    "trial",
                    int(t.id),
                    _TRIAL_STATE[t.state],
                    started=t.started,
                    ended=t.ended,
                    log_path=str(self._log_dir / f"trial-{t.id}.log"),
                )  # fmt: skip
                for t in snapshot
            ],
        )

    def _record_end(self, store: JobStore, result: StudyResult) -> None:
        self._publish(store)
        record = store.get(self.id)
        extra = dict(record.extra if record else {})
        if result.failed_trial and result.state is JobState.FAILED:
            extra["log_tail"] = result.log_tail
        self._log(f"study {result.state.value}: {result.message}")
        store.set_state(
            self.id, result.state, result.message, extra=extra,
            failed_task=result.failed_trial if result.state is JobState.FAILED else None,
        )  # fmt: skip
