"""The Vertex AI backend: a thin object over :mod:`tfjob.backends.vertex`.

``render`` (what ``--dry-run`` prints) needs no credentials and no network: it builds
the trainer sdist locally to know its digest, and shows a marked placeholder where a
project or bucket is missing. ``submit`` stages the packages (content-addressed, so
unchanged code uploads nothing), creates the ``CustomJob`` and records it in the job
store under Vertex AI's own job id; ``run`` also follows it to its end (the shared
:class:`~tfjob.runtime.lifecycle.Lifecycle`). ``status``,
``logs``, ``cancel`` and ``list`` ask Vertex AI and keep the store up to date.

Google libraries are imported inside the methods that talk to Google.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

from ...description.spec import JobSpec
from ...runtime.lifecycle import Lifecycle, say
from ...model import JobState, JobStatus, SubmitOptions
from .options import VertexOptions

if TYPE_CHECKING:
    from .creation import Submission
    from ...runtime.settings import Settings
    from ...runtime.store import JobRecord, JobStore
    from ...tuning.study import StudySpec
    from ...tuning.trials import StudyResult


class VertexBackend(Lifecycle[VertexOptions, "Submission"]):
    """Vertex AI custom jobs (see :mod:`tfjob.backends.vertex`); waiting, Ctrl-C and cancelling a
    finished job are :class:`~tfjob.runtime.lifecycle.Lifecycle`'s.

    Args:
        credentials: Google credentials for every call (``google.auth.credentials.Credentials``);
            default: application-default credentials, found when a call needs them.
        echo: where progress lines go (default: stderr, prefixed ``tfjob:``).
        sleep: how waiting pauses (injected by tests).
        client: a ready :class:`~tfjob.backends.vertex.client.VertexClient` to create jobs with
            (default: one made for the job's project and region).
        store: the job store its jobs are recorded in (default: the user's).

    ``Job(..., backend=VertexBackend(credentials=creds))`` runs a job with them, as the
    Vertex AI SDK's ``aiplatform.init(credentials=…)`` does.
    """

    name = "vertex"
    platform = "Vertex AI"
    options_class = VertexOptions

    def __init__(
        self,
        echo: Callable[[str], None] = say,
        sleep: Callable[[float], None] = time.sleep,
        *,
        credentials: Any = None,
        client: Any = None,
        store: JobStore | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(echo, sleep, store=store, settings=settings)
        self.credentials = credentials
        #: A ready :class:`~.client.VertexClient` that submitting uses (None: one made for the job's project).
        self.client = client

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The ``CustomJob`` body ``submit`` would send (no credentials, no network)."""
        from .submission import plan_submission

        plan = plan_submission(spec, options, dry_run=True)
        for note in plan.notes:
            self.echo(note)
        self.echo(f"dry run: would create this CustomJob in {plan.parent}")
        for line in plan.estimate.lines(timeout=spec.timeout):
            self.echo(line)
        return plan.body

    def price(self, spec: JobSpec, options: SubmitOptions) -> Any:
        """The job's price per hour, pool by pool (:class:`tfjob.pricing.Estimate`; no credentials, no network)."""
        from .submission import plan_submission

        return plan_submission(spec, options, dry_run=True).estimate

    # -- Lifecycle.submit's hooks: staged, recorded pending, created, recorded -------------
    def _prepare(self, spec: JobSpec, options: VertexOptions) -> Submission:
        """Plan the request and stage the packages (unchanged code uploads nothing)."""
        from .creation import prepare_submission

        return prepare_submission(spec, options, echo=self.echo, client=self.client, credentials=self.credentials)

    def _pending(self, plan: Submission) -> JobRecord:
        """Recorded before the create, so a create whose answer is lost is found by its label."""
        from .creation import pending_record

        return pending_record(plan)

    def _create(self, plan: Submission, pending: JobRecord | None) -> JobRecord:
        """Create the ``CustomJob`` once (in the next region of ``--region A,B`` when one refuses it for
        want of quota or machines: :mod:`.failover`); its record is under Vertex AI's job id."""
        from .failover import create_in_turn
        from .connect import make_client
        from .creation import created_record

        assert pending is not None
        return create_in_turn(plan, pending, self.store, echo=self.echo, make_client=make_client, created_record=created_record)

    def _not_created(self, pending: JobRecord, error: BaseException) -> None:
        from .creation import not_created

        not_created(self.store, pending, error)

    def follow(self, job_id: str, options: SubmitOptions) -> JobStatus:
        """Follow the job to its end with one client (the store updated at each change);
        with ``options.stream_logs`` its log lines are printed as they arrive."""
        from .service import follow_job, stream_job

        options = self.typed(options)
        if options.stream_logs:
            return stream_job(
                job_id, options, echo=self.echo, out=lambda line: print(line, flush=True), credentials=self.credentials,
                store=self.store, settings=self.settings,
            )  # fmt: skip
        return follow_job(
            job_id, options, echo=self.echo, sleep=self._sleep, credentials=self.credentials, store=self.store, settings=self.settings
        )

    def _lookup(self, job_id: str) -> JobRecord | None:
        """The job's record (a pending submission's id leads to the job it became)."""
        from .service import find_record

        return find_record(job_id, store=self.store)

    def _fetch(self, job_id: str, record: JobRecord | None) -> JobStatus | None:
        """The job as Vertex AI sees it now (from its record alone once it has ended)."""
        from .service import read_status

        return read_status(job_id, record, credentials=self.credentials, store=self.store, settings=self.settings)

    def watch(self, job_id: str) -> JobStatus:
        """The job's status for one who follows it (``JobHandle.wait``): where its attempt ended for
        want of machines or quota (a candidate left) or retryably (``max_restarts`` left), the next
        attempt is made, once whoever else follows it (:mod:`.attempts`)."""
        from .service import watch_status

        return watch_status(job_id, echo=self.echo, credentials=self.credentials, store=self.store, settings=self.settings)

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's Cloud Logging lines, ``[worker-1] …``; ``follow`` until the job ends."""
        from .service import fetch_logs

        return fetch_logs(
            job_id, task=task, follow=follow, tail=tail, credentials=self.credentials, store=self.store, settings=self.settings,
            echo=self.echo,
        )  # fmt: skip

    def _cancel(self, job_id: str, record: JobRecord | None) -> tuple[JobState, str]:
        """Ask Vertex AI to cancel the job: CANCELLING until it has ended — CANCELLED at once when it
        is between attempts (nothing runs: :func:`.service.cancel_job`)."""
        from .service import cancel_job

        cancel_job(job_id, echo=self.echo, credentials=self.credentials, store=self.store, settings=self.settings)
        now = self._lookup(job_id)
        if now is not None and now.state is JobState.CANCELLED:
            return JobState.CANCELLED, now.message
        return JobState.CANCELLING, "cancel requested"

    # -- after the job: its model in the Model Registry, its metrics in its Experiment run ----
    def register_model(self, job_id: str, name: str, artifact_uri: str, *, serving_image: str | None = None) -> dict[str, Any]:
        """Upload the job's SavedModel at ``artifact_uri`` as a new version of the model ``name``
        (see :mod:`.models`); return the model, its version and the serving image."""
        from .models import register_model
        from .service import current_attempt

        record, client = self._models_client(job_id)
        attempt = current_attempt(record.id, record)
        registered = register_model(record, attempt, name, artifact_uri, client=client, serving_image=serving_image, echo=self.echo)
        # Kept with the job: `tfjob status ID --json` shows the model its SavedModel became.
        self.store.update(record.id, extra={**(self.store.get(record.id) or record).extra, "registered_model": registered})
        return registered

    def _models_client(self, job_id: str) -> tuple[JobRecord, Any]:
        """The job's record and a :class:`.models.ModelsClient` for its project and region."""
        from ...errors import JobNotFoundError, UsageError
        from .models import ModelsClient
        from .connect import make_client

        record = self._lookup(job_id)
        if record is None:
            raise JobNotFoundError(f"no Vertex AI job {job_id!r} in the job store")
        project, region = record.options.get("project"), record.options.get("region")
        if not project or not region:
            raise UsageError(problem=f"job {record.id} has no recorded project and region", fix="use a job tfjob submitted to Vertex AI")
        client = make_client(project, region, record.options.get("api_endpoint"), self.echo, self.credentials, client_class=ModelsClient)
        return record, client

    def log_run_metrics(self, job_id: str, metrics: dict[str, float], options: SubmitOptions) -> dict[str, Any]:
        """Log ``metrics`` to the job's Experiment run (``options.experiment``, ``experiment_run``;
        without a run, one named after the job); return the run context."""
        from ...errors import UsageError
        from .models import label_value, log_run_metrics
        from .render import experiment_contexts

        experiment, run = experiment_contexts(self.typed(options))
        if experiment is None:
            raise UsageError(field="experiment", problem="is needed to log the metrics to an Experiment run")
        if run is None:
            record = self._lookup(job_id)
            stem = label_value(record.name if record is not None else job_id).strip("-_").replace("_", "-") or "run"
            room = 128 - len(experiment.rsplit("/", 1)[1]) - 1  # a context id is at most 128 characters
            run = f"{experiment}-{stem[:room].rstrip('-')}"
        _, client = self._models_client(job_id)
        return log_run_metrics(metrics, client=client, experiment=experiment, run=run, echo=self.echo)

    # -- tuning (tfjob.backends.base.Tuner): a HyperparameterTuningJob ----------------------
    study_search = ""

    def render_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None]) -> dict[str, Any]:
        """The ``HyperparameterTuningJob`` body (no credentials, no network)."""
        from .tuning import plan_tuning

        plan, body = plan_tuning(study, spec, self.typed(options), dry_run=True)
        for note in plan.notes:
            echo(note)
        echo(f"dry run: would create this HyperparameterTuningJob in {plan.parent}")
        return body

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
        """Create the tuning job and follow it to its end (``options.wait``), its trials on ``stream``."""
        from .tuning import run_tuning

        return run_tuning(
            study, spec, self.typed(options), stream, echo=echo or self.echo, credentials=self.credentials, store=self.store,
            settings=self.settings,
        )  # fmt: skip

    def submit_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None] | None = None) -> str:
        """Create the tuning job; return its id at once."""
        from .tuning import submit_tuning

        return submit_tuning(study, spec, self.typed(options), echo=echo or self.echo, credentials=self.credentials, store=self.store)

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """Jobs tfjob submitted (the ``tfjob`` label) in the configured project and region, newest first."""
        from .service import list_jobs

        return list_jobs(limit, credentials=self.credentials, store=self.store, settings=self.settings)


def submit_job(
    spec: JobSpec,
    options: VertexOptions,
    *,
    echo: Callable[[str], None] = lambda message: None,
    client: Any = None,
    credentials: Any = None,
    store: JobStore,
) -> str:
    """Stage the packages, create the job once, record it in ``store``; return Vertex AI's job id
    (``VertexBackend.submit`` with a ready ``client``; quiet unless given an ``echo``)."""
    return VertexBackend(credentials=credentials, client=client, echo=echo, store=store).submit(spec, options)
