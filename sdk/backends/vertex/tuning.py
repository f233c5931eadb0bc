"""Vertex AI hyperparameter tuning: create, follow, status, cancel, list and logs.

Built on the Vertex backend's plumbing (:mod:`tfjob.backends.vertex`): the same submission plan
(settings, trainer sdist, content-addressed staging, prebuilt image), the same
REST ``JobServiceClient`` facade with bounded retries, translated errors and an
idempotent create (found again by its ``tfjob-submission-id`` label), and the same
job states. A tuning job is recorded in the job store under Vertex AI's id with
backend ``vertex-tuning``, so ``tfjob status / logs / cancel / wait ID`` find it;
its trials (parameters, final metric, state) are kept in the record's ``extra``.

Google libraries are imported only inside the functions that call Google.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, TextIO

from ...model import JobState, JobStatus, SubmitOptions
from ...errors import AuthError, SpecError, UsageError
from .client import VertexClient, job_id_of
from .options import VertexOptions
from .render import SUBMISSION_LABEL
from ...runtime.lifecycle import Lifecycle, record_cancel, say, sync_status
from ...description.spec import JobSpec
from ...runtime.store import JobRecord, JobStore
from ...tuning.study import StudySpec
from ...tuning.trials import StudyResult, Trial, best_trial, render_best

if TYPE_CHECKING:
    from ...runtime.settings import Settings

#: The backend name tuning jobs are recorded under.
BACKEND_NAME = "vertex-tuning"
Echo = Callable[[str], None]

#: Vertex AI ``Trial.State`` → the trials table's states.
TRIAL_STATES = {
    "STATE_UNSPECIFIED": "QUEUED",
    "REQUESTED": "QUEUED",
    "ACTIVE": "RUNNING",
    "STOPPING": "RUNNING",
    "SUCCEEDED": "SUCCEEDED",
    "INFEASIBLE": "INFEASIBLE",
}


def _quiet(message: str) -> None:
    pass


class TuningClient(VertexClient):
    """The Vertex client, with the calls of ``hyperparameterTuningJobs``."""

    def _translate(self, exc: BaseException, action: str, job: str | None, attempts: int | None) -> BaseException:
        # The permission a 403 names is the tuning job's, not the custom job's.
        error = super()._translate(exc, action, job, attempts)
        if isinstance(error, AuthError) and "aiplatform.customJobs." in str(error):
            return AuthError(str(error).replace("aiplatform.customJobs.", "aiplatform.hyperparameterTuningJobs."))
        return error

    def tuning_job_name(self, job: str) -> str:
        """A full resource name from a tuning job's id (a full name is returned as it is)."""
        return job if job.startswith("projects/") else f"{self.parent}/hyperparameterTuningJobs/{job}"

    def create_tuning_job(self, body: dict[str, Any], submission_id: str) -> dict[str, Any]:
        """Create the ``HyperparameterTuningJob`` ``body`` once, whatever the network does.

        As for custom jobs (:meth:`~tfjob.backends.vertex.client.VertexClient.create_once`): after a
        transient failure that may have been acted on, the job is looked up by its
        ``tfjob-submission-id`` label before another try.
        """
        job = self._types.HyperparameterTuningJob.from_json(json.dumps(body))  # strict: unknown fields fail here
        request = self._types.CreateHyperparameterTuningJobRequest(parent=self.parent, hyperparameter_tuning_job=job)
        return self.create_once(
            lambda: self._client.create_hyperparameter_tuning_job(request=request),
            lambda: self.find_tuning_job(submission_id),
            what=f"tuning job {body.get('displayName')!r}",
            submission_id=submission_id,
        )

    def find_tuning_job(self, submission_id: str) -> dict[str, Any] | None:
        """The tuning job labelled ``tfjob-submission-id=<submission_id>``, if there is one."""
        for job in self.list_tuning_jobs(filter=f'labels.{SUBMISSION_LABEL}="{submission_id}"', limit=10):
            if job.get("labels", {}).get(SUBMISSION_LABEL) == submission_id:
                return job
        return None

    def get_tuning_job(self, job: str) -> dict[str, Any]:
        """The tuning job (by id or name) as the service has it now, trials included."""
        name = self.tuning_job_name(job)
        found: dict[str, Any] = self._call(
            "get", lambda: self._to_dict(self._client.get_hyperparameter_tuning_job(name=name)), job=job_id_of(name)
        )
        return found

    def list_tuning_jobs(self, *, filter: str | None = None, page_size: int = 100, limit: int | None = None) -> list[dict[str, Any]]:
        """Tuning jobs matching ``filter``, following every page up to ``limit``."""
        return self.list_pages(
            lambda token: self._client.list_hyperparameter_tuning_jobs(
                request=self._types.ListHyperparameterTuningJobsRequest(
                    parent=self.parent, filter=filter or "", page_size=page_size, page_token=token
                )
            ),
            "hyperparameter_tuning_jobs",
            limit,
        )

    def cancel_tuning_job(self, job: str) -> None:
        """Ask the service to cancel the tuning job and its running trials."""
        name = self.tuning_job_name(job)
        self._call("cancel", lambda: self._client.cancel_hyperparameter_tuning_job(name=name), job=job_id_of(name))


def make_tuning_client(project: str, region: str, api_endpoint: str | None, echo: Echo = _quiet, credentials: Any = None) -> TuningClient:
    """A :class:`TuningClient` made as the Vertex backend makes its client (:func:`~.connect.make_client`)."""
    from .connect import make_client

    client: TuningClient = make_client(project, region, api_endpoint, echo, credentials, client_class=TuningClient)
    return client


# -- pure: a tuning job as tfjob sees it ------------------------------------------------------
def study_of(job: dict[str, Any]) -> StudySpec:
    """The study a ``HyperparameterTuningJob`` dict describes."""
    from ...tuning.hparams import parse_document

    doc: dict[str, Any] = {
        "studySpec": job.get("studySpec", {}),
        **{k: job[k] for k in ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount") if k in job},
    }
    return parse_document(doc, f"tuning job {job.get('name', '')}").study


def parse_trials(job: dict[str, Any], study: StudySpec) -> list[Trial]:
    """The job's ``trials`` as :class:`Trial` records (values typed as the study says)."""
    from ...model import parse_time

    trials = []
    for item in job.get("trials", []):
        params: dict[str, Any] = {}
        for p in item.get("parameters", []):
            name, value = p.get("parameterId"), p.get("value")
            try:
                spec = study.parameter(name)
            except KeyError:
                params[name] = value
                continue
            params[name] = int(value) if spec.type == "INTEGER" else float(value) if spec.type in ("DOUBLE", "DISCRETE") else str(value)
        metric = step = None
        final = item.get("finalMeasurement") or {}
        for m in final.get("metrics", []):
            if m.get("metricId") == study.metric.tag and m.get("value") is not None:
                metric = float(m["value"])
        if final.get("stepCount") is not None:
            step = int(final["stepCount"])
        state = TRIAL_STATES.get(item.get("state", ""), "QUEUED")
        if state == "SUCCEEDED" and metric is None:
            state = "INFEASIBLE"
        trials.append(
            Trial(
                id=str(item.get("id", "")),
                params=params,
                state=state,
                metric=metric,
                step=step,
                job_id=job_id_of(item["customJob"]) if item.get("customJob") else None,
                message=str(item.get("infeasibleReason", "")),
                started=parse_time(item.get("startTime")),
                ended=parse_time(item.get("endTime")),
            )
        )
    return trials


def tuning_status(job: dict[str, Any], job_id: str, study: StudySpec | None = None) -> JobStatus:
    """A ``HyperparameterTuningJob`` dict as a :class:`JobStatus` with its trials in ``extra``."""
    from .follow import job_status

    status = job_status(job, job_id)
    status.backend = BACKEND_NAME
    study = study or study_of(job)
    trials = parse_trials(job, study)
    best = best_trial(trials, study.metric.maximize)
    status.extra.update(
        kind="study",
        study=study.to_dict(),
        trials=[t.to_dict() for t in trials],
        best=best.to_dict() if best else None,
    )
    if status.state is JobState.SUCCEEDED and not status.message:
        status.message = f"{len(trials)} trials; {render_best(study, best)}"
    return status


# -- I/O ----------------------------------------------------------------------------------
def plan_tuning(study: StudySpec, spec: JobSpec, options: SubmitOptions, *, dry_run: bool) -> tuple[Any, dict[str, Any]]:
    """The submission plan of the trial job (packages, settings) and the tuning job's body."""
    from .submission import plan_submission
    from .render_tuning import wrap_tuning_job

    plan = plan_submission(spec, options, dry_run=dry_run)
    return plan, wrap_tuning_job(study, plan.body)


def submit_tuning(
    study: StudySpec,
    spec: JobSpec,
    options: VertexOptions,
    *,
    echo: Echo = _quiet,
    client: TuningClient | None = None,
    credentials: Any = None,
    store: JobStore,
) -> str:
    """Stage the packages, create the tuning job once and record it in ``store``; return its id."""
    from .connect import client_credentials
    from .staging import stage_packages, storage_client

    plan, body = plan_tuning(study, spec, options, dry_run=False)
    for note in plan.notes:
        echo(note)
    client = client or make_tuning_client(plan.project, plan.region, options.api_endpoint, echo, credentials)
    if plan.uploads:
        stage_packages(plan.uploads, region=plan.region, client=storage_client(plan.project, client_credentials(client)), echo=echo)
    job = client.create_tuning_job(body, plan.submission_id)
    job_id = job_id_of(job["name"])
    status = tuning_status(job, job_id, study)
    record = JobRecord(
        id=job_id,
        backend=BACKEND_NAME,
        name=spec.name,
        state=status.state,
        spec=spec.to_dict(),
        options={"project": plan.project, "region": plan.region, "api_endpoint": options.api_endpoint},
        created=status.created or time.time(),
        extra={**status.extra, "resource_name": job["name"], "submission_id": plan.submission_id},
    )
    if store.get(job_id) is None:
        store.add(record)
    echo(f"submitted Vertex AI hyperparameter tuning job {job_id} ({spec.name}): {job['name']}")
    return job_id


def run_tuning(
    study: StudySpec,
    spec: JobSpec,
    options: VertexOptions,
    stream: TextIO | None,
    *,
    echo: Echo = _quiet,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> StudyResult:
    """Create the tuning job and, with ``options.wait``, follow it to its end showing its trials
    on ``stream``; how it ended (QUEUED: submitted, not followed)."""
    from ...tuning.view import TrialsView

    view = TrialsView(study, stream, quiet=options.quiet)
    job_id = submit_tuning(study, spec, options, echo=echo, credentials=credentials, store=store)
    if not options.wait:
        return StudyResult(job_id, JobState.QUEUED, "submitted")
    final = follow_tuning(job_id, options, on_trials=view.update, echo=echo, credentials=credentials, store=store, settings=settings)
    trials = [Trial.from_dict(t) for t in final.extra.get("trials", [])]
    view.finish(trials, f"tuning job {job_id} {final.state.value}: {final.message or 'no message'}")
    failed = [t for t in trials if t.failed]
    return StudyResult(
        job_id,
        final.state,
        final.message,
        trials,
        best_trial(trials, study.metric.maximize),
        failed_trial=f"trial-{failed[-1].id}" if failed else None,
    )


def _location(store: JobStore, job_id: str, settings: Settings | None) -> tuple[JobRecord | None, str, str, str | None]:
    """The tuning job's record (if any) and its project, region and endpoint (its record's, else ``settings``')."""
    from .service import locate

    return locate(job_id, BACKEND_NAME, "tuning job", store=store, settings=settings)


def view_tuning(store: JobStore, job_id: str, job: dict[str, Any], record: JobRecord | None) -> JobStatus:
    """What Vertex AI's tuning ``job`` says of ``job_id``, its trials read against the recorded
    study, with what its record keeps."""
    study = StudySpec.from_dict(record.extra["study"]) if record is not None and "study" in record.extra else None
    status = tuning_status(job, job_id, study)
    if record is not None:
        current = store.get(job_id)
        status.extra = {**(current.extra if current else {}), **status.extra}
    return status


def keep_tuning(store: JobStore, record: JobRecord | None, status: JobStatus) -> JobStatus:
    """Bring the tuning job's record up to date with ``status``: its trials, then its state."""
    if record is not None:
        store.update(record.id, extra=status.extra)
        sync_status(store, store.get(record.id) or record, status)
    return status


def _record(store: JobStore, job_id: str, job: dict[str, Any], record: JobRecord | None) -> JobStatus:
    """Bring the store up to date with what Vertex AI said; return the status."""
    return keep_tuning(store, record, view_tuning(store, job_id, job, record))


def fetch_tuning_status(
    job_id: str, *, client: TuningClient | None = None, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> JobStatus:
    """The tuning job as Vertex AI has it (from the store alone once it has ended), its record
    brought up to date: what ``VertexTuningBackend.status`` does, with a given client."""
    from .service import find_record

    record = find_record(job_id, BACKEND_NAME, store=store)
    status = fetch_tuning(job_id, record, client=client, credentials=credentials, store=store, settings=settings)
    return status if record is None or record.state.is_terminal else keep_tuning(store, record, status)


def fetch_tuning(
    job_id: str,
    record: JobRecord | None,
    *,
    client: TuningClient | None = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> JobStatus:
    """The tuning job as Vertex AI has it now (:func:`view_tuning`; the store is not changed),
    from its record alone once it has ended."""
    from .service import where

    if record is not None and record.state.is_terminal:
        return record.to_status()
    project, region, endpoint = where(job_id, record, "tuning job", settings=settings)
    client = client or make_tuning_client(project, region, endpoint, credentials=credentials)
    return view_tuning(store, job_id, client.get_tuning_job(job_id), record)


def follow_tuning(
    job_id: str,
    options: SubmitOptions,
    *,
    on_trials: Callable[[list[Trial]], None] | None = None,
    echo: Echo = _quiet,
    client: TuningClient | None = None,
    credentials: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    store: JobStore,
    settings: Settings | None = None,
) -> JobStatus:
    """Poll the tuning job until it ends, showing its trials as they change; return the final status.

    Ctrl-C stops the waiting, not the job (unless ``cancel_on_interrupt``); the
    KeyboardInterrupt is raised again.
    """
    from .follow import MAX_POLL_INTERVAL
    from .connect import poll_interval
    from ...runtime.lifecycle import interrupted, poll

    record, project, region, endpoint = _location(store, job_id, settings)
    client = client or make_tuning_client(project, region, endpoint, echo, credentials)
    first = poll_interval(options, settings)
    last: dict[str, Any] = {"state": None, "trials": None}

    def on_change(status: JobStatus, state: JobState) -> None:
        # A change of state or of the trials: the pause starts again from the first.
        trials = status.extra.get("trials", [])
        if on_trials is not None and trials != last["trials"]:
            last["trials"] = trials
            on_trials([Trial.from_dict(t) for t in trials])
        if state is not last["state"]:
            last["state"] = state
            echo(f"tuning job {job_id} {state.value}" + (f": {status.message}" if status.message and state.is_terminal else ""))

    try:
        return poll(
            lambda: _record(store, job_id, client.get_tuning_job(job_id), record),
            on_change=on_change,
            changed=(lambda status: status.extra.get("trials", [])) if on_trials is not None else None,
            poll_interval=first,
            max_interval=MAX_POLL_INTERVAL,
            sleep=sleep,
        )
    except KeyboardInterrupt:
        interrupted(
            job_id, options, platform="Vertex AI", what="tuning job", status_hint="shows its trials",
            cancel=lambda j: cancel_tuning(j, echo=echo, client=client, store=store, settings=settings), echo=echo,
        )  # fmt: skip
        raise


def cancel_tuning(
    job_id: str,
    *,
    echo: Echo = _quiet,
    client: TuningClient | None = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> None:
    """Ask Vertex AI to cancel the tuning job; the store shows CANCELLING until it has ended."""
    record = request_tuning_cancel(job_id, echo=echo, client=client, credentials=credentials, store=store, settings=settings)
    record_cancel(store, record, JobState.CANCELLING, "cancel requested")


def request_tuning_cancel(
    job_id: str,
    *,
    echo: Echo = _quiet,
    client: TuningClient | None = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> JobRecord | None:
    """Ask Vertex AI to cancel the tuning job; return its record (None: not recorded here), unchanged."""
    record, project, region, endpoint = _location(store, job_id, settings)
    client = client or make_tuning_client(project, region, endpoint, echo, credentials)
    client.cancel_tuning_job(job_id)
    echo(f"asked Vertex AI to cancel tuning job {job_id}")
    return record


def list_tunings(
    limit: int | None = None,
    *,
    client: TuningClient | None = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> list[JobStatus]:
    """Tuning jobs carrying the ``tfjob`` label in the configured project and region (``settings``), newest first."""
    from .submission import DEFAULT_REGION
    from .render import TFJOB_LABEL
    from .connect import settings_or_none

    settings = settings_or_none(settings)
    if client is None and not settings.project:
        return [r.to_status() for r in store.list(limit=limit, backend=BACKEND_NAME)]
    client = client or make_tuning_client(
        settings.project or "", settings.region or DEFAULT_REGION, settings.api_endpoint, credentials=credentials
    )
    statuses = [
        tuning_status(job, job_id_of(job.get("name", ""))) for job in client.list_tuning_jobs(filter=f"labels.{TFJOB_LABEL}:*", limit=limit)
    ]
    return sorted(statuses, key=lambda s: s.created or 0.0, reverse=True)


def fetch_tuning_logs(
    job_id: str,
    task: str | None = None,
    follow: bool = False,
    tail: int | None = None,
    *,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> Iterator[str]:
    """Log lines of a tuning job; ``--task trial-3`` reads that trial's own CustomJob."""
    from .service import fetch_logs

    if task is None:
        raise UsageError(f"name a trial: `tfjob logs {job_id} --task trial-N` (`tfjob status {job_id}` lists them)")
    if not task.startswith("trial-"):
        raise UsageError(field="task", value=task, problem=": the tasks of a tuning job are its trials, trial-1, trial-2…")
    status = fetch_tuning_status(job_id, credentials=credentials, store=store, settings=settings)
    trial = next((t for t in status.extra.get("trials", []) if f"trial-{t['id']}" == task), None)
    if trial is None or not trial.get("job_id"):
        raise UsageError(field="task", value=task, problem=f": tuning job {job_id} has no such trial with a job yet")
    record, project, region, endpoint = _location(store, job_id, settings)
    # The trial's CustomJob lives where its study does: record it so the Vertex backend finds it.
    if store.get(trial["job_id"]) is None:
        store.add(
            JobRecord(
                id=trial["job_id"],
                backend="vertex",
                name=f"{status.name}-{task}",
                state=JobState.RUNNING,
                options={"project": project, "region": region, "api_endpoint": endpoint},
                extra={"study": job_id, "trial": trial["id"]},
            )  # fmt: skip
        )
    return fetch_logs(trial["job_id"], follow=follow, tail=tail, credentials=credentials, store=store, settings=settings)


class VertexTuningBackend(Lifecycle[VertexOptions, NoReturn]):
    """``tfjob status / logs / cancel / list`` for Vertex AI tuning jobs (``tfjob tune`` creates them)."""

    name = BACKEND_NAME
    platform = "Vertex AI"
    max_poll_interval = 60.0
    options_class = VertexOptions

    def __init__(
        self,
        echo: Callable[[str], None] = say,
        sleep: Callable[[float], None] = time.sleep,
        *,
        credentials: Any = None,
        store: JobStore | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(echo, sleep, store=store, settings=settings)
        #: Google credentials for every call (None: application-default credentials).
        self.credentials = credentials

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        raise SpecError("a tuning job needs a study: use `tfjob tune --hparams FILE --backend vertex`")

    def _prepare(self, spec: JobSpec, options: VertexOptions) -> NoReturn:
        raise SpecError("a tuning job needs a study: use `tfjob tune --hparams FILE --backend vertex`")

    def _lookup(self, job_id: str) -> JobRecord | None:
        from .service import find_record

        return find_record(job_id, BACKEND_NAME, store=self.store)

    def _fetch(self, job_id: str, record: JobRecord | None) -> JobStatus | None:
        return fetch_tuning(job_id, record, credentials=self.credentials, store=self.store, settings=self.settings)

    def sync(self, status: JobStatus, record: JobRecord | None) -> JobStatus:
        """The record's trials, then its state, brought up to date (:func:`keep_tuning`)."""
        if record is not None and record.state.is_terminal:
            return status  # answered from the record: nothing new
        return keep_tuning(self.store, record, status)

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        return fetch_tuning_logs(job_id, task, follow, tail, credentials=self.credentials, store=self.store, settings=self.settings)

    def _cancel(self, job_id: str, record: JobRecord | None) -> tuple[JobState, str]:
        request_tuning_cancel(job_id, echo=self.echo, credentials=self.credentials, store=self.store, settings=self.settings)
        return JobState.CANCELLING, "cancel requested"

    def list(self, limit: int | None = None) -> list[JobStatus]:
        return list_tunings(limit, credentials=self.credentials, store=self.store, settings=self.settings)
