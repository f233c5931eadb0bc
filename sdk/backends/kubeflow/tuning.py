"""A hyperparameter study on Kubernetes (``tfjob tune --backend kubeflow|jobset|trainjob``).

Two ways, one study:

- **Katib** (:mod:`tfjob.tuning.katib`): ``--dry-run`` prints the study as a Katib
  ``Experiment`` whose ``trialTemplate`` is the job this backend renders (a ``TFJob``,
  ``JobSet`` or ``TrainJob``). On a cluster that serves Katib's
  ``experiments.kubeflow.org/v1beta1`` (asked through the API's discovery) the study is that
  experiment: created, then followed to its end, its ``Trial`` objects shown and recorded as
  tfjob's own trials are (:class:`.katib.KatibStudy`); ``--async`` creates it and returns.
- **tfjob's own study** (:class:`KubeStudy`), on a cluster without Katib (or a study Katib
  cannot run, which is said): the trials are jobs of this
  backend, proposed by the same search as the local study (:class:`tfjob.tuning.search.Search`:
  Optuna, the study's algorithm), up to ``parallel_trials`` at once, each with its values
  appended to its trainer's arguments as ``--NAME=VALUE`` and its trial id as
  ``CLOUD_ML_TRIAL_ID``. The trainer reports its metric as on every platform
  (:func:`tfjob.report_metric` or cloudml-hypertune, into ``CLOUD_ML_HP_METRIC_FILE``); as the
  study cannot open a pod's file, the bootstrap echoes that file's reports to the task's log as
  the trainer ends (``TFJOB_ECHO_METRICS``, :func:`tfjob.hypertune.echo_metric_file`) and the
  study reads them from the log of the task that reports — the chief, else worker 0 — the way
  the local study reads the file (:func:`tfjob.tuning.metrics.parse_trial_metric`). A trial that
  fails or reports nothing counts against ``max_failed_trials``, whose reach stops the study
  (its running trials are deleted), as locally. The study is a record of its own in the job
  store, kept by this process (``tfjob status STUDY`` shows its trials; LOST if this process
  died first; ``tfjob cancel STUDY`` stops it).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TextIO

from ...errors import TfjobError, UsageError
from ...hypertune import ECHO_ENV
from ...model import JobState, JobStatus
from ...description.spec import JobSpec
from ...runtime.store import JobRecord, JobStore, TaskRecord, process_alive, process_start_time
from ...tuning.study import StudySpec
from ...tuning.katib import TRIAL_ID_ENV
from ...tuning.trials import StudyResult, Trial, best_trial, render_trial_line, study_outcome
from ...tuning.view import TrialsView
from .render import check_k8s_name
from .render_trainjob import NODE

#: A :class:`~.backend.KubeflowBackend` (named, not imported: the backend imports this module).
KubeflowBackend = Any

_TRIAL_STATE = {"QUEUED": JobState.QUEUED, "RUNNING": JobState.RUNNING, "SUCCEEDED": JobState.SUCCEEDED,
                "INFEASIBLE": JobState.FAILED, "FAILED": JobState.FAILED, "CANCELLED": JobState.CANCELLED}  # fmt: skip


#: The most trials tfjob runs at once on a cluster without Katib (each is a thread here that
#: creates, follows and deletes its job).
MAX_PARALLEL_TRIALS = 512
#: The containers that run the trainer (a TFJob's and a JobSet's, Trainer's node job's).
_TRAINER_CONTAINERS = ("tensorflow", NODE)


def with_trial(spec: JobSpec, args: list[str], name: str | None = None) -> JobSpec:
    """The job with ``args`` after its trainer's (every pool's). Pure."""
    pools = tuple(dataclasses.replace(p, args=(*p.args, *args)) if p.args is not None else p for p in spec.pools)
    changes: dict[str, Any] = {"args": (*spec.args, *args), "pools": pools}
    if name is not None:
        changes["name"] = name
    return spec.replace(**changes)


def unescape(value: Any) -> Any:
    """The manifest with Katib's placeholders as Katib finds them: the render writes a trainer
    argument's ``$`` as ``$$`` (Kubernetes would expand ``$(NAME)``), and ``${…}`` is no
    Kubernetes reference."""
    if isinstance(value, dict):
        return {k: unescape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unescape(v) for v in value]
    if isinstance(value, str):
        return value.replace("$${trialParameters.", "${trialParameters.")
    return value


def add_trial_env(manifest: Any, env: dict[str, str]) -> None:
    """Give every trainer container of a rendered manifest the trial's variables (in place):
    what the platform sets in a trial's tasks, which a job's own ``--env`` may not name."""
    if isinstance(manifest, list):
        for item in manifest:
            add_trial_env(item, env)
        return
    if not isinstance(manifest, dict):
        return
    for key, value in manifest.items():
        if key == "containers" and isinstance(value, list):
            for container in value:
                if isinstance(container, dict) and container.get("name") in _TRAINER_CONTAINERS:
                    kept = [e for e in container.get("env") or [] if e.get("name") not in env]
                    container["env"] = [*kept, *({"name": k, "value": v} for k, v in env.items())]
        else:
            add_trial_env(value, env)


def trial_name(spec: JobSpec, trial_id: str) -> str:
    """A trial's job name: the study's, without the default name's date, ``-trial-N``."""
    stem = re.sub(r"-\d{8}-\d{6}$", "", spec.name)
    suffix = f"-trial-{trial_id}"
    return stem[: 63 - len(suffix)].rstrip("-.") + suffix


def build_trial_spec(spec: JobSpec, study: StudySpec, trial: Trial) -> JobSpec:
    """The job one trial runs on the cluster: the trial's values as arguments. Pure."""
    return with_trial(spec, study.render_args(trial.params), trial_name(spec, trial.id))


def trial_job_env(trial: Trial) -> dict[str, str]:
    """A trial job's variables: its id, and its metric reports echoed to its log."""
    return {TRIAL_ID_ENV: trial.id, ECHO_ENV: "1"}


def submit_trial(backend: KubeflowBackend, spec: JobSpec, options: Any, env: dict[str, str]) -> str:
    """Create one trial's job as ``submit`` does (rendered, checked, recorded), with the trial's
    variables in its trainer containers; return its id."""
    plan = backend._prepare(spec, backend.typed(options))
    add_trial_env(plan[2], env)
    return str(backend.record(backend._create(plan, None)))


def reporting_task(spec: JobSpec) -> str:
    """The task whose metric reports count: the chief, else worker 0."""
    role, index = spec.tasks()[0]
    return f"{role}-{index}"


# -- Katib ------------------------------------------------------------------------------------
# -- tfjob's own study: trials as jobs of the backend ------------------------------------------
class KubeStudy:
    """Runs a study whose trials are jobs of ``backend`` (see the module's doc).

    Args:
        backend: the Kubernetes backend the trials run on (its store records the study).
        study, spec, options: what to tune, the job each trial runs, the backend's options.
        seed: makes the search reproducible.
        stream: where the trials are shown (None: nowhere).
        poll: seconds between looks at a running trial (default: the backend's).
    """

    def __init__(
        self,
        backend: KubeflowBackend,
        study: StudySpec,
        spec: JobSpec,
        options: Any,
        *,
        seed: int | None = None,
        stream: TextIO | None = None,
        poll: float | None = None,
    ) -> None:
        self.backend = backend
        self.store: JobStore = backend.store
        self.study = study
        self.spec = spec
        self.options = dataclasses.replace(options, wait=False, quiet=True)
        self.seed = seed
        self.view = TrialsView(study, stream, quiet=options.quiet)
        given = poll if poll is not None else options.poll_interval
        self.poll = float(given) if given is not None else backend.poll_interval
        self.trials: list[Trial] = []
        self.id = ""
        self.parallel = 0
        self._stopping: str | None = None
        self._wake = threading.Event()
        self._failures: list[Trial] = []
        self._tails: dict[str, str] = {}
        self._published: list[tuple[str, str, float | None]] = []
        self._lock = threading.Lock()

    def run(self) -> StudyResult:
        """Run every trial; record and return how the study ended.

        Raises:
            UsageError: a trial's job name would be too long for Kubernetes (before anything starts).
            BackendUnavailableError: Optuna is not installed.
        """
        from ...tuning.search import Search, plan_trial_count

        search = Search(self.study, self.seed)
        count, note = plan_trial_count(self.study)
        check_k8s_name(trial_name(self.spec, str(count)), field="name")
        self.parallel = min(self.study.parallel_trials, count)
        if self.parallel > MAX_PARALLEL_TRIALS:
            raise UsageError(
                problem=(
                    f"--parallel-trials {self.study.parallel_trials}: tfjob runs at most {MAX_PARALLEL_TRIALS} trials "
                    f"at once on {self.backend.name} without Katib (each is followed from this process)"
                ),
                fix=f"lower --parallel-trials to {MAX_PARALLEL_TRIALS} or less, or install Katib in the cluster to run it there",
            )
        self._create_record(search.algorithm)
        if note:
            self.view.note(note)
        self.view.note(
            f"study {self.id}: {count} trials, {self.parallel} at a time on {self.backend.name}, {search.algorithm} search, "
            f"{self.study.metric.goal.lower()} {self.study.metric.tag}"
        )
        try:
            with ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="trial") as pool:
                try:
                    self._watch(search, pool, count)
                except BaseException as e:
                    self._stop("cancelled by Ctrl-C" if isinstance(e, KeyboardInterrupt) else f"the study stopped: {type(e).__name__}: {e}")
                    raise
        except KeyboardInterrupt:
            self._record_end(StudyResult(self.id, JobState.CANCELLED, "cancelled by Ctrl-C; its running trials were deleted"))
            raise
        except BaseException as e:
            self._record_end(StudyResult(self.id, JobState.FAILED, f"the study stopped: {type(e).__name__}: {e}"))
            raise
        result = self._outcome()
        self._record_end(result)
        self.view.finish(self.trials, f"study {self.id} {result.state.value}: {result.message}")
        return result

    def _watch(self, search: Any, pool: ThreadPoolExecutor, count: int) -> None:
        numbers: dict[str, int] = {}
        running: dict[Future[Any], Trial] = {}
        while True:
            while self._stopping is None and len(running) < self.parallel and len(self.trials) < count:
                number, values = search.ask()
                trial = Trial(str(len(self.trials) + 1), values)
                numbers[trial.id] = number
                with self._lock:
                    self.trials.append(trial)
                running[pool.submit(self._run_trial, trial)] = trial
            self._publish()
            if not running:
                return
            done, _ = wait(list(running), timeout=max(self.poll, 0.05), return_when=FIRST_COMPLETED)
            for future in done:
                trial = running.pop(future)
                future.result()
                search.tell(numbers[trial.id], trial.metric if trial.state == "SUCCEEDED" else None)
                self._log(render_trial_line(self.view.layout, trial))
                if trial.failed:
                    self._failures.append(trial)
                    limit = self.study.max_failed_trials
                    if limit and len(self._failures) >= limit and self._stopping is None:
                        self._stop(f"{len(self._failures)} trials failed, which reaches maxFailedTrials {limit}")
            if self._stopping is None and self.store.state(self.id) is JobState.CANCELLING:
                self._stop("cancelled by `tfjob cancel`")

    def _stop(self, reason: str) -> None:
        """Start no more trials; the running ones delete their jobs (each trial's thread)."""
        self._stopping = reason
        self._wake.set()

    # -- one trial (in a worker thread) ----------------------------------------------------
    def _run_trial(self, trial: Trial) -> None:
        spec = build_trial_spec(self.spec, self.study, trial)
        try:
            job_id = submit_trial(self.backend, spec, self.options, trial_job_env(trial))
        except TfjobError as e:
            self._end(trial, "FAILED", f"the trial's job was not created: {e}")
            return
        with self._lock:
            trial.job_id, trial.state, trial.started = job_id, "RUNNING", time.time()
        self.store.update(job_id, extra={**(self._extra(job_id)), "study": self.id, "trial": trial.id})
        status: JobStatus | None = None
        while True:
            if self._stopping is not None:
                try:
                    self.backend.cancel(job_id)
                except TfjobError:
                    pass  # gone already: nothing left to stop
                self._end(trial, "CANCELLED", f"the study stopped: {self._stopping}")
                return
            try:
                status = self.backend.status(job_id)
            except TfjobError as e:
                self._end(trial, "FAILED", f"its job could not be read: {e}")
                return
            if status.state.is_terminal:
                break
            self._wake.wait(self.poll)
        if status.state is JobState.SUCCEEDED:
            self._read_metric(trial, job_id, spec)
        elif status.state is JobState.CANCELLED:
            self._end(trial, "CANCELLED", status.message)
        else:
            self._tails[trial.id] = str(status.extra.get("log_tail") or "")
            self._end(trial, "FAILED", status.message)

    def _extra(self, job_id: str) -> dict[str, Any]:
        record = self.store.get(job_id)
        return dict(record.extra) if record is not None else {}

    def _read_metric(self, trial: Trial, job_id: str, spec: JobSpec) -> None:
        from ...errors import BackendError
        from ...hypertune import metric_text_from_log
        from ...tuning.metrics import parse_trial_metric

        task = reporting_task(spec)
        try:
            text = metric_text_from_log(self.backend.logs(job_id, task=task))
        except (BackendError, UsageError) as e:
            self._end(trial, "INFEASIBLE", f"the log of its {task} could not be read, so neither its metric: {e}")
            return
        tag = self.study.metric.tag
        reading = parse_trial_metric(text, tag, self.study.metric.maximize, best=self.study.measurement == "BEST_MEASUREMENT")
        if reading.value is None:
            other = f"; it reported {', '.join(reading.tags)}" if reading.tags else ""
            self._end(
                trial,
                "INFEASIBLE",
                f"the trainer ended without reporting {tag!r}{other} (report it with tfjob.report_metric({tag!r}, value) or cloudml-hypertune)",
            )
            return
        with self._lock:
            trial.metric, trial.step = reading.value, reading.step
        self._end(trial, "SUCCEEDED", "")

    def _end(self, trial: Trial, state: str, message: str) -> None:
        with self._lock:
            trial.state, trial.message, trial.ended = state, message, time.time()

    # -- the outcome and the record ----------------------------------------------------------
    def _outcome(self) -> StudyResult:
        return study_outcome(self.id, self.study, self.trials, self._failures, self._tails, self._stopping)

    def _create_record(self, algorithm: str) -> None:
        options = self.options
        record = JobRecord(
            id="",
            backend=self.backend.name,
            name=self.spec.name,
            state=JobState.RUNNING,
            spec=self.spec.to_dict(),
            options={"namespace": options.namespace, "kubeconfig": options.kubeconfig, "context": options.context},
            supervisor_pid=os.getpid(),
            supervisor_start=process_start_time(os.getpid()),
            extra={"kind": "study", "study": self.study.to_dict(), "algorithm": algorithm, "parallel": self.parallel, "trials": []},
        )
        self.store.add_new(record)
        self.id = record.id
        self.store.update(record.id, started=time.time())

    def _publish(self) -> None:
        with self._lock:
            snapshot = [dataclasses.replace(t) for t in self.trials]
        key = [(t.id, t.state, t.metric) for t in snapshot]
        if key == self._published:
            return
        self._published = key
        self.view.update(snapshot)
        record = self.store.get(self.id)
        extra = {**(record.extra if record else {}), "trials": [t.to_dict() for t in snapshot]}
        best = best_trial(snapshot, self.study.metric.maximize)
        extra["best"] = best.to_dict() if best else None
        self.store.update(self.id, extra=extra)
        tasks = [TaskRecord(f"trial-{t.id}", "trial", int(t.id), _TRIAL_STATE[t.state], started=t.started, ended=t.ended) for t in snapshot]
        self.store.put_tasks(self.id, tasks)

    def _log(self, text: str) -> None:
        """News of the study in its record's events (``tfjob events STUDY``)."""
        self.store.note(self.id, text)

    def _record_end(self, result: StudyResult) -> None:
        self._publish()
        record = self.store.get(self.id)
        extra = dict(record.extra if record else {})
        if result.failed_trial and result.state is JobState.FAILED:
            extra["log_tail"] = result.log_tail
        self.store.set_state(
            self.id, result.state, result.message, extra=extra,
            failed_task=result.failed_trial if result.state is JobState.FAILED else None,
        )  # fmt: skip


def study_status(record: JobRecord) -> JobStatus | None:
    """A study's status from its record; None when the process that ran it died before it
    recorded an end (the study is then LOST)."""
    if not record.state.is_terminal and record.supervisor_pid and not process_alive(record.supervisor_pid, record.supervisor_start):
        return None
    return record.to_status()


# -- Katib runs the study: followed as tfjob follows its own --------------------------------------
