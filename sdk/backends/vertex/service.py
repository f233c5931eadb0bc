"""The Vertex AI backend's I/O: follow, status, cancel, list, logs — and the job store.

Every job tfjob creates on Vertex AI is recorded in the local job store under
Vertex AI's own job id (the number the console and ``gcloud ai custom-jobs`` show),
with the project, region and endpoint it lives in, so ``tfjob status / logs /
cancel ID`` work from any process. The store follows Vertex AI: each status read
updates it, and a job that ended there is answered from the store without a call.

Every call takes the caller's ``credentials`` (default: application-default ones,
:mod:`.auth`) and a ready ``client`` where it has one: :class:`~.backend.VertexBackend`
passes what it was made with, so a pipeline (or a test) injects them instead of
setting the environment. Where a job's record does not say where it lives, the configured
project, region, endpoint and poll interval are the ``settings`` the backend was given (the
edge resolved them once); none is read here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ...model import JobState, JobStatus, SubmitOptions
from ...errors import UsageError
from ...runtime.store import JobRecord, JobStore
from ...runtime.lifecycle import poll, record_cancel, sync_status
from .follow import MAX_POLL_INTERVAL, job_status, parse_state
from .options import VertexOptions
from .submission import DEFAULT_REGION

from .attempts import advance, attempts_of, current_attempt, end_attempt, end_cancelled, next_step, what_following_does
from .connect import Echo, make_client, poll_interval, quiet, settings_or_none
from .creation import created_record

__all__ = ["current_attempt"]  # (kept here for its importers)

if TYPE_CHECKING:
    from ...runtime.settings import Settings


def _record_created(store: JobStore, pending: JobRecord, job: dict[str, Any], extra: dict[str, Any]) -> str:
    """Replace a pending record by the created job's record; return the job's id."""
    record = created_record(pending, job, extra)
    store.remove(pending.id)
    if store.get(record.id) is None:
        store.add(record)
    return record.id


def resolve_pending(record: JobRecord, *, client: Any = None, credentials: Any = None, store: JobStore) -> JobStatus:
    """Find a pending submission's job by its label: re-record it under its id, or fail it.

    Returns:
        The created job's status (its ``id`` is Vertex AI's), or the pending record
        FAILED with "never created" when the service has no job with that label.
    """
    opts = record.options
    client = client or make_client(opts["project"], opts.get("region") or DEFAULT_REGION, opts.get("api_endpoint"), credentials=credentials)
    submission = record.extra["submission_id"]
    found = client.find_by_submission_id(submission, display_name=record.name)
    if found is None:
        store.set_state(
            record.id, JobState.FAILED, "Vertex AI has no job with this submission's label: it was never created; submit it again"
        )
        return store.status(record.id)
    job_id = _record_created(store, record, found, dict(record.extra))
    return _record_status(store, job_id, found, store.get(job_id))


# -- records ----------------------------------------------------------------------------
def find_record(job_id: str, backend: str = "vertex", *, store: JobStore) -> JobRecord | None:
    """The store's record of a ``backend`` job (a custom job, or a tuning job), if any; a pending
    submission resolved since is found under its Vertex AI id."""
    record = store.get(job_id)
    if record is None and job_id.startswith("pending-"):
        # A pending submission resolved since: its record now has Vertex AI's id.
        submission = job_id[len("pending-") :]
        record = next((r for r in store.list(backend=backend) if r.extra.get("submission_id") == submission), None)
    return record if record is not None and record.backend == backend else None


def where(job_id: str, record: JobRecord | None, what: str = "job", *, settings: Settings | None = None) -> tuple[str, str, str | None]:
    """The project, region and endpoint a job lives in: its record's, else the configured ones
    (``settings``, as the edge resolved them)."""
    settings = settings_or_none(settings)
    if record is not None:
        opts = record.options

        def text(key: str) -> str | None:
            value = opts.get(key)
            return value if isinstance(value, str) and value else None

        if text("project"):
            return str(text("project")), text("region") or DEFAULT_REGION, text("api_endpoint")
        # A record without its project (written by another version, or damaged): the configured one.
        if not settings.project:
            raise UsageError(
                f"{what} {job_id}: its job store record names no project (another version wrote it, or it is damaged); "
                "set GOOGLE_CLOUD_PROJECT (or project in $TFJOB_HOME/config.yaml) to the job's project"
            )
        return settings.project, text("region") or settings.region or DEFAULT_REGION, text("api_endpoint") or settings.api_endpoint
    if not settings.project:
        raise UsageError(
            problem=f"{what} {job_id} is not in the job store and no project is set", fix="pass {project} or set GOOGLE_CLOUD_PROJECT"
        )
    return settings.project, settings.region or DEFAULT_REGION, settings.api_endpoint


def locate(
    job_id: str, backend: str = "vertex", what: str = "job", *, store: JobStore, settings: Settings | None = None
) -> tuple[JobRecord | None, str, str, str | None]:
    """The record (if any) of a ``backend`` job — a custom job, or a tuning job — and the
    project, region and endpoint it lives in: its own, else the configured ones (``settings``)."""
    record = find_record(job_id, backend, store=store)
    return (record, *where(job_id, record, what, settings=settings))


def view_status(store: JobStore, job_id: str, job: dict[str, Any], record: JobRecord | None) -> JobStatus:
    """What Vertex AI's ``job`` says of ``job_id``, with what its record keeps (attempts, links);
    an attempt that failed with a next one to make (a candidate to fail over to, ``max_restarts``
    left) is not the job's end: RUNNING, and the message says what following the job does —
    unless a cancel was asked for: with no attempt running, the job ends CANCELLED now
    (:func:`.attempts.end_cancelled`, recorded)."""
    status = job_status(job, job_id)
    if record is None:
        return status
    if status.state is JobState.FAILED:
        end_cancelled(store, job_id, job)
        ended = store.get(job_id)
        if ended is not None and ended.state is JobState.CANCELLED:
            return store.status(job_id)  # a cancel stopped its next attempt: the record's end
    goes_on = what_following_does(job_id, job, store.get(job_id)) if status.state is JobState.FAILED else None
    if goes_on is not None:
        # Not the job's end: whoever follows it (`tfjob wait`) makes its next attempt (:mod:`.attempts`).
        status.state = JobState.RUNNING
        status.ended = None
        status.message = goes_on
        return status
    current = store.get(job_id)
    if current is not None:
        status.extra = {**current.extra, **status.extra}
        status.created = status.created or current.created
    return status


def _record_status(store: JobStore, job_id: str, job: dict[str, Any], record: JobRecord | None) -> JobStatus:
    """Bring the store up to date with what Vertex AI said; return the status."""
    status = view_status(store, job_id, job, record)
    if record is not None and not (status.state is JobState.RUNNING and parse_state(job.get("state")) is JobState.FAILED):
        sync_status(store, store.get(job_id) or record, status)  # (an attempt about to be retried is not recorded)
    return status


def _finish(store: JobStore, job_id: str, final: dict[str, Any], record: JobRecord | None) -> JobStatus:
    """The job ended with its attempt ``final``: its record brought up to date (the last
    attempt's end among its attempts); return its status."""
    status = _record_status(store, job_id, final, record)
    current = store.get(job_id) if record is not None else None
    if current is not None and current.extra.get("attempts"):
        end_attempt(store, job_id, status.state, status.ended)
        status.extra["attempts"] = attempts_of(store, job_id)
    return status


# -- status / follow / cancel / list -------------------------------------------------------
def read_status(
    job_id: str,
    record: JobRecord | None,
    *,
    client: Any = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> JobStatus:
    """The job as Vertex AI has it now (:func:`view_status`; the store is not brought up to date),
    from its record alone once it has ended. A pending submission is looked up by its label
    first, and re-recorded under its Vertex AI id (or failed: never created)."""
    if record is not None and record.state.is_terminal:
        return record.to_status()
    project, region, endpoint = where(job_id, record, settings=settings)
    client = client or make_client(project, region, endpoint, credentials=credentials)
    if record is not None and record.extra.get("pending"):
        return resolve_pending(record, client=client, store=store)
    job_id = record.id if record is not None else job_id
    return view_status(store, job_id, client.get_custom_job(current_attempt(job_id, record)), record)


def fetch_status(
    job_id: str, *, client: Any = None, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> JobStatus:
    """The job as Vertex AI has it (from the store alone once the job has ended), its record
    brought up to date: what ``VertexBackend.status`` does, with a given client."""
    record = find_record(job_id, store=store)
    status = read_status(job_id, record, client=client, credentials=credentials, store=store, settings=settings)
    return sync_status(store, store.get(status.id), status) if record is not None else status


def _settled(store: JobStore, job_id: str, client: Any) -> tuple[str, JobRecord | None]:
    """The Vertex AI id of ``job_id`` (a pending submission is looked up first) and its record."""
    record = find_record(job_id, store=store)
    if record is not None and record.extra.get("pending") and not record.state.is_terminal:
        status = resolve_pending(record, client=client, store=store)
        if status.id == record.id:
            raise UsageError(f"job {job_id}: {status.message}")
        record = find_record(status.id, store=store)
    return (record.id if record is not None else job_id), record


def interrupted(
    job_id: str,
    options: SubmitOptions,
    *,
    echo: Echo = quiet,
    client: Any = None,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> None:
    """Ctrl-C while following a job: :func:`tfjob.runtime.lifecycle.interrupted` on Vertex AI."""
    from ...runtime.lifecycle import interrupted as on_interrupt

    def cancel(job: str) -> None:
        cancel_job(job, echo=echo, client=client, credentials=credentials, store=store, settings=settings)

    on_interrupt(job_id, options, platform="Vertex AI", cancel=cancel, echo=echo)


def stream_job(
    job_id: str,
    options: VertexOptions,
    *,
    echo: Echo = quiet,
    out: Callable[[str], None] = print,
    credentials: Any = None,
    store: JobStore,
    settings: Settings | None = None,
) -> JobStatus:
    """``--stream-logs``: the job's log lines as they arrive (``[worker-1] …``, as ``tfjob
    logs --follow`` prints them) until it ends, then its final state as :func:`follow_job`."""
    try:
        interval = poll_interval(options, settings)
        for line in fetch_logs(job_id, follow=True, credentials=credentials, interval=interval, store=store, settings=settings):
            out(line)
    except KeyboardInterrupt:
        interrupted(job_id, options, echo=echo, credentials=credentials, store=store, settings=settings)
        raise
    return follow_job(job_id, options, echo=echo, credentials=credentials, store=store, settings=settings)


def follow_job(
    job_id: str,
    options: VertexOptions,
    *,
    echo: Echo = quiet,
    client: Any = None,
    credentials: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    store: JobStore,
    settings: Settings | None = None,
) -> JobStatus:
    """Wait for the job to end, printing each change of state; return the final status.

    Ctrl-C stops the waiting, not the job: it keeps running on Vertex AI and the
    commands to follow or cancel it are printed and the KeyboardInterrupt is raised
    again; with ``cancel_on_interrupt`` the job is cancelled and JobCancelledError
    raised, as on every backend.
    """
    _, project, region, endpoint = locate(job_id, store=store, settings=settings)
    client = client or make_client(project, region, endpoint, echo, credentials)
    job_id, record = _settled(store, job_id, client)
    interval = poll_interval(options, settings)
    from ...description.restarts import _count

    given = record.extra.get("max_restarts") if record is not None else None
    max_restarts = _count(given if given is not None else (options.max_restarts or 0), "--max-restarts", 0)

    def on_change(job: dict[str, Any], state: JobState) -> None:
        message = (job.get("error") or {}).get("message", "")
        if not (state is JobState.FAILED and next_step(job, store.get(job_id), max_restarts) is not None):
            _record_status(store, job_id, job, record)  # (a failure about to be retried is not the job's end)
        echo(f"job {job_id} {state.value}" + (f": {message}" if message and state.is_terminal else ""))

    while True:
        record = store.get(job_id) if record is not None else None
        attempt = current_attempt(job_id, record)
        try:
            final = poll(
                lambda: client.get_custom_job(attempt),
                state_of=lambda job: parse_state(job.get("state")),
                on_change=on_change,
                poll_interval=interval,
                max_interval=min(MAX_POLL_INTERVAL, interval * 12),
                sleep=sleep,
            )
        except KeyboardInterrupt:
            interrupted(job_id, options, echo=echo, client=client, store=store, settings=settings)
            raise
        step = None
        if record is not None:  # the next attempt (a failover, a restart), made once whoever else follows the job
            step = advance(store, job_id, final, echo=echo, client=client, make_client=make_client, max_restarts=max_restarts)
        if step is None:
            return _finish(store, job_id, final, record)
        if step == "held":
            sleep(interval)  # another follower is making it
        else:
            client = step[1]


def watch_status(
    job_id: str, *, echo: Echo = quiet, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> JobStatus:
    """The job's status for one who follows it to its end (``JobHandle.wait``, ``tfjob wait``,
    ``tfjob logs --follow``): :func:`fetch_status`, and when its current attempt ended but the
    job goes on (a failover, a restart), its next attempt made — here, or by another follower,
    exactly once (:mod:`.attempts`). ``tfjob status`` (:func:`fetch_status`) makes none."""
    record = find_record(job_id, store=store)
    if record is None or record.state.is_terminal or record.extra.get("pending"):
        return fetch_status(job_id, credentials=credentials, store=store, settings=settings)
    project, region, endpoint = where(record.id, record, settings=settings)
    client = make_client(project, region, endpoint, echo, credentials)
    job = client.get_custom_job(current_attempt(record.id, record))
    if not parse_state(job.get("state")).is_terminal:
        return _record_status(store, record.id, job, record)
    step = advance(store, record.id, job, echo=echo, client=client, make_client=make_client)
    if step is None:
        return _finish(store, record.id, job, record)
    if step == "held":  # another follower is making the next attempt: not the end
        return view_status(store, record.id, job, record)
    return fetch_status(record.id, credentials=credentials, store=store, settings=settings)


def cancel_job(
    job_id: str, *, echo: Echo = quiet, client: Any = None, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> None:
    """Ask Vertex AI to cancel the job; the store shows CANCELLING until it has ended. A job between
    attempts (its attempt ended, the next not made) has nothing running: it ends CANCELLED now
    (:func:`.attempts.end_cancelled`)."""
    record, ended = request_cancel(job_id, echo=echo, client=client, credentials=credentials, store=store, settings=settings)
    record_cancel(store, record, JobState.CANCELLING, "cancel requested", only_from=(JobState.QUEUED, JobState.PENDING, JobState.RUNNING))
    if record is not None and ended is not None:
        end_cancelled(store, record.id, ended)


def request_cancel(
    job_id: str, *, echo: Echo = quiet, client: Any = None, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> tuple[JobRecord | None, dict[str, Any] | None]:
    """Ask Vertex AI to cancel the job's current attempt (a pending submission is looked up first);
    return its record (None: not recorded here) and, for a job that may go on after an attempt
    (a failover candidate or restarts left) whose current attempt has ended, that attempt: then
    nothing runs and nothing is asked. The record is not changed."""
    _, project, region, endpoint = locate(job_id, store=store, settings=settings)
    client = client or make_client(project, region, endpoint, echo, credentials)
    job_id, record = _settled(store, job_id, client)
    attempt = current_attempt(job_id, record)
    if record is not None and (record.extra.get("failover") or record.extra.get("max_restarts")):
        job = client.get_custom_job(attempt)
        if parse_state(job.get("state")).is_terminal:
            return record, job
    client.cancel_custom_job(attempt)
    echo(f"asked Vertex AI to cancel job {job_id}")
    return record, None


def list_jobs(
    limit: int | None = None, *, client: Any = None, credentials: Any = None, store: JobStore, settings: Settings | None = None
) -> list[JobStatus]:
    """Jobs carrying the ``tfjob`` label in the configured project and region (``settings``), newest first.

    Without a configured project, the Vertex AI jobs of the job store.
    """
    from .render import TFJOB_LABEL
    from .client import job_id_of

    settings = settings_or_none(settings)
    if client is None:
        if not settings.project:
            return [r.to_status() for r in store.list(limit=limit, backend="vertex")]
        client = make_client(settings.project, settings.region or DEFAULT_REGION, settings.api_endpoint, credentials=credentials)
    jobs = client.list_custom_jobs(filter=f"labels.{TFJOB_LABEL}:*", limit=limit)
    statuses = [job_status(job, job_id_of(job.get("name", ""))) for job in jobs]
    # A job submitted again (max_restarts) is one row: its current attempt under its own id.
    owner: dict[str, str | None] = {}
    for record in store.list(backend="vertex"):
        for attempt in record.extra.get("attempts") or []:
            name = attempt.get("resource_name", "") if isinstance(attempt, dict) else ""
            owner[job_id_of(name)] = record.id if job_id_of(name) == current_attempt(record.id, record) else None
    kept = []
    for job, s in zip(jobs, statuses):
        if s.id in owner:
            if owner[s.id] is None:
                continue  # an earlier attempt
            s.id = str(owner[s.id])
        if store.get(s.id) is not None and s.state is JobState.FAILED and end_cancelled(store, s.id, job):
            s = store.status(s.id)  # a cancel stopped its next attempt: CANCELLED, not its attempt's FAILED
        kept.append(s)
        if store.get(s.id) is not None and not (s.state is JobState.FAILED and next_step(job, store.get(s.id)) is not None):
            store.set_state(s.id, s.state, s.message)
    statuses = kept
    return sorted(statuses, key=lambda s: s.created or 0.0, reverse=True)


# -- logs -----------------------------------------------------------------------------
def logging_endpoint(api_endpoint: str | None) -> str | None:
    """Where to read Cloud Logging: Google's, unless the Vertex AI endpoint is not Google's
    (a private or local stand-in answers for both services)."""
    from .auth import is_google_endpoint

    if api_endpoint and not is_google_endpoint(api_endpoint):
        return api_endpoint  # a local test server answers for both services
    return None


def fetch_logs(
    job_id: str,
    task: str | None = None,
    follow: bool = False,
    tail: int | None = None,
    *,
    credentials: Any = None,
    interval: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    store: JobStore,
    settings: Settings | None = None,
    echo: Echo = quiet,
) -> Iterator[str]:
    """The job's log lines, ``[worker-1] text``; with ``follow``, until the job ends (reading
    again every ``interval`` seconds, default :func:`poll_interval` of ``settings``): following
    it makes its next attempt where one is due, as ``tfjob wait`` does (:func:`watch_status`),
    and goes on with that attempt's lines."""
    from .auth import ready_credentials
    from .client import is_translatable
    from .errors import translate
    from ...runtime.lifecycle import follow_lines
    from .logs import EntryFeed, build_filter, entry_line, format_time, logging_client, read_entries

    record, project, region, endpoint = locate(job_id, store=store, settings=settings)
    build_filter(job_id, task)  # a bad --task is a usage error before any call
    log_endpoint = logging_endpoint(endpoint)
    credentials = ready_credentials(credentials)
    client = logging_client(project, credentials, log_endpoint)
    # A job writes nothing before it was created; a minute of slack for clock skew.
    start = format_time(record.created - 60) if record is not None and record.created else None

    def read(since: str | None, tail_: int | None = None) -> list[Any]:
        logged = current_attempt(record.id, store.get(record.id)) if record is not None else job_id  # (the attempt of now)
        try:
            return read_entries(client, project, logged, task, tail=tail_, since=since or start)
        except Exception as e:
            if not is_translatable(e):
                raise
            raise translate(e, action="logs", project=project, endpoint=log_endpoint) from e

    first = read(None, tail)
    if not follow:
        for entry in first:
            yield entry_line(entry)
        return

    def is_done() -> bool:
        return watch_status(job_id, echo=echo, credentials=credentials, store=store, settings=settings).state.is_terminal

    yield from follow_lines(EntryFeed(read, first=first, sleep=sleep), is_done, interval=interval or poll_interval(None, settings))
