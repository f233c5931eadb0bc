"""One job lifecycle for every backend: waiting, following, Ctrl-C and cancelling.

A backend implements what only it knows — a pure ``render``, ``logs``, ``list`` and the
small hooks of the lifecycle's templates (create: ``_prepare``, ``_pending``, ``_create``;
fetch: ``_lookup``, ``_fetch``, its native state mapped to :class:`~tfjob.model.JobState`;
delete: ``_cancel``) — and inherits from :class:`Lifecycle` what must be the same everywhere:

- :meth:`Lifecycle.submit`, :meth:`Lifecycle.status` and :meth:`Lifecycle.cancel`, the
  templates: the job created and recorded (first, where a backend says so), its status
  fetched and its record synced (LOST when the platform no longer has it), a job that has
  ended left as it ended, and the record of a cancel kept;

- :func:`poll`, the one wait loop (``JobHandle.wait``, following a job after submit,
  following a Vertex AI job or a tuning study): the pause grows ×1.5 from the first
  interval to the longest and starts again after each change; with a timeout,
  :class:`~tfjob.errors.JobTimeoutError` (the job keeps running);
- :meth:`Lifecycle.run`: submit, then follow to the end, saying each change of state
  and why a job waits (``status.extra["waiting"]``);
- Ctrl-C while following (:func:`interrupted`): with ``cancel_on_interrupt`` the job
  is cancelled and :class:`~tfjob.errors.JobCancelledError` raised (exit 130);
  otherwise the job keeps running, one line says how to reach it, and the
  ``KeyboardInterrupt`` goes on (exit 130);
- :meth:`Lifecycle.cancel`: a job that has already ended is left as it ended, without
  a call to the platform;
- :func:`follow_lines`, the one loop that follows a log, over a backend's :class:`LineFeed`;
- the job store kept in step the same way (:func:`keep_record`, :func:`sync_status`,
  :func:`record_lost`, :func:`record_cancel`; ``Lifecycle.record/sync/lost/cancelled``);
- :meth:`Lifecycle.typed`: whatever options a backend is given, read as its own.

The local backend runs its jobs in the calling process, so its ``run`` is its own; it
raises the same errors on Ctrl-C (there the job cannot outlive the process: it is
cancelled either way).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, TypeVar

from ..errors import JobCancelledError, JobTimeoutError
from ..model import JobState, JobStatus, SubmitOptions, options_as
from ..description.spec import JobSpec

if TYPE_CHECKING:
    from .settings import Settings
    from .store import JobRecord, JobStore

T = TypeVar("T")
L = TypeVar("L", bound="Lifecycle[Any, Any]")
#: The options a backend takes (its :attr:`Lifecycle.options_class`).
O = TypeVar("O", bound=SubmitOptions)
#: What a backend's :meth:`Lifecycle._prepare` plans: what its ``_pending`` and ``_create`` are given.
P = TypeVar("P")

#: The longest pause between two polls unless a backend says otherwise, seconds.
MAX_POLL_INTERVAL = 10.0


def poll(
    get: Callable[[], T],
    *,
    state_of: Callable[[T], JobState] = lambda status: status.state,  # type: ignore[attr-defined]
    on_change: Callable[[T, JobState], None] | None = None,
    changed: Callable[[T], Any] | None = None,
    poll_interval: float = 0.2,
    max_interval: float = MAX_POLL_INTERVAL,
    timeout: float | None = None,
    timeout_message: Callable[[T], str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``get()`` until ``state_of`` its answer is terminal; return that answer.

    ``on_change(answer, state)`` is called for the first answer and whenever the state
    (or ``changed(answer)``, when given) differs from the last; the pause then starts
    again from ``poll_interval``.

    Raises:
        JobTimeoutError: ``timeout`` seconds passed first (``timeout_message`` says why).
    """
    deadline = None if timeout is None else clock() + timeout
    interval = poll_interval
    last: Any = object()
    while True:
        answer = get()
        state = state_of(answer)
        key = (state, changed(answer)) if changed is not None else state
        if key != last:
            last = key
            interval = poll_interval
            if on_change is not None:
                on_change(answer, state)
        if state.is_terminal:
            return answer
        if deadline is not None and clock() >= deadline:
            raise JobTimeoutError(timeout_message(answer) if timeout_message else f"still {state.value} after {timeout:g}s")
        pause = interval if deadline is None else max(0.0, min(interval, deadline - clock()))
        sleep(pause)
        interval = min(interval * 1.5, max_interval)


class LineFeed:
    """Where a followed job's log lines come from: a backend's log entries, read as they arrive.

    :func:`follow_lines` is the one loop that follows a log; a backend gives it a feed —
    a log file read from where it stopped (local), Cloud Logging entries read again since the
    last one (Vertex AI), the pods' log streams (Kubernetes).
    """

    def read(self, look: bool, final: bool) -> list[str]:
        """The lines that arrived since the last read.

        Args:
            look: it is time to look for new sources (a pod that started; once per interval).
            final: the job has ended: nothing is kept back (a line without its end is given).
        """
        raise NotImplementedError

    def wait(self, seconds: float) -> bool:
        """Wait until more may be there, at most ``seconds``; True when the whole pause passed
        (a look is due), False when a feed that streams returned early because lines came (it
        keeps the rest of the pause for its next wait)."""
        time.sleep(seconds)
        return True

    def drained(self) -> bool:
        """After the job ended: True once nothing more will arrive (a feed that streams waits
        for its open streams to close)."""
        return True

    def close(self) -> None:
        """Stop reading (open streams are closed)."""


def follow_lines(
    feed: LineFeed,
    ended: Callable[[], bool],
    *,
    interval: float,
    drain: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """The lines of a job's log as they are written, until the job has ended and its feed is
    drained (or ``drain`` seconds passed since the end): the one loop every backend's
    ``logs(follow=True)`` runs.

    Once per ``interval`` the job's state is read — before the feed, so what was written before
    the end is read after it — and the feed looks for new sources; a feed that streams gives
    its lines as they come between looks.
    """
    ended_at: float | None = None
    due = True
    try:
        while True:
            look = ended_at is None and due
            if look and ended():
                ended_at = clock()
            yield from feed.read(look, ended_at is not None)
            if ended_at is None:
                due = feed.wait(interval)
            elif feed.drained() or clock() - ended_at >= drain:
                return
            else:
                feed.wait(min(interval, max(0.0, ended_at + drain - clock())))
    finally:
        feed.close()


def interrupted(
    job_id: str,
    options: SubmitOptions,
    *,
    platform: str,
    cancel: Callable[[str], None],
    echo: Callable[[str], None],
    what: str = "job",
    status_hint: str = "shows it",
) -> None:
    """Ctrl-C while following ``job_id``: the same answer on every backend.

    With ``options.cancel_on_interrupt`` the job is cancelled and JobCancelledError
    raised; otherwise one line says the job keeps running and how to reach it, and the
    caller raises the KeyboardInterrupt again.
    """
    if options.cancel_on_interrupt:
        cancel(job_id)
        raise JobCancelledError(f"{what} {job_id} was cancelled on Ctrl-C") from None
    echo(
        f"stopped waiting; {what} {job_id} keeps running on {platform}. "
        f"`tfjob status {job_id}` {status_hint}, `tfjob logs {job_id} --follow` follows it, "
        f"`tfjob cancel {job_id}` stops it"
    )


def say(message: str) -> None:
    """A progress line on stderr, prefixed ``tfjob:``."""
    print(f"tfjob: {message}", file=sys.stderr, flush=True)


# -- the job store, kept in step the same way by every backend ------------------------------
def keep_record(store: JobStore, record: JobRecord) -> str:
    """Record a job its platform just created; a record of the same id is replaced (the
    platform took the name again, so the job that record was about is gone). Returns its id."""
    if store.get(record.id) is not None:
        store.remove(record.id)
    store.add(record)
    return record.id


def sync_status(store: JobStore, record: JobRecord | None, status: JobStatus) -> JobStatus:
    """Bring a job's record up to date with what its platform said — the state and why, when
    it started and ended, the failed task and its exit code — when the state changed (a job
    that has ended keeps its end). Returns ``status``."""
    if record is None or record.state is status.state:
        return status
    values: dict[str, Any] = {}
    if status.started:
        values["started"] = status.started
    if status.ended:
        values["ended"] = status.ended
    if status.failed_task:
        values["failed_task"] = status.failed_task
        if "task_exit_code" in status.extra:
            values["extra"] = {**record.extra, "task_exit_code": status.extra["task_exit_code"]}
    store.set_state(record.id, status.state, status.message, **values)
    return status


def record_lost(store: JobStore, record: JobRecord, why: str) -> JobStatus:
    """The platform no longer has the job: LOST (``why``) unless its record says it ended."""
    if not record.state.is_terminal:
        store.set_state(record.id, JobState.LOST, why)
        record = store.get(record.id) or record
    return record.to_status()


def record_cancel(
    store: JobStore, record: JobRecord | None, state: JobState, message: str, only_from: tuple[JobState, ...] | None = None
) -> None:
    """Record that the job was asked to stop: ``CANCELLING`` until it has ended (``CANCELLED``
    when it is gone at once); a job that ended first keeps its end."""
    if record is not None:
        store.set_state(record.id, state, message, only_from=only_from)


class Lifecycle(Generic[O, P]):
    """The part of a backend that is the same on every backend (see the module's docstring).

    Subclasses set ``name``, ``platform`` and ``options_class``, fill the hooks of
    :meth:`submit` (``_prepare``, ``_pending``, ``_create``, ``_not_created``), :meth:`status`
    (``_lookup``, ``_fetch``, ``_gone``) and :meth:`cancel` (``_ended``, ``_cancel``), and
    implement ``render``, ``logs`` (with :func:`follow_lines` over their :class:`LineFeed`)
    and ``list``; the templates read the options through :meth:`typed` and keep the store in
    step through :meth:`record`, :meth:`sync`, :meth:`lost` and :meth:`cancelled`.

    Args:
        echo: where progress lines go (default: stderr, prefixed ``tfjob:``).
        sleep: how waiting pauses (injected by tests).
        store: the job store the backend records its jobs in and reads them from
            (:class:`tfjob.runtime.store.JobStore`); everything the backend does goes through it.
            Without one the backend renders but keeps no jobs; the edges — the CLI,
            :class:`tfjob.Job`, :func:`tfjob.get_job` — choose the user's store,
            ``$TFJOB_HOME/jobs.db``, and give it.
        settings: what fills the options a job leaves out (project, region, namespace…:
            :class:`tfjob.runtime.settings.Settings`), resolved once by the edge that made the
            backend — the CLI, :class:`tfjob.Job`, :func:`tfjob.get_job` — and given here (or
            later with :meth:`with_settings`). A backend never reads the environment or
            ``config.yaml`` itself: without settings it has none (``Settings()``).
    """

    name: str = ""
    #: Where a job runs, as a user says it: ``Vertex AI``, ``Kubernetes``.
    platform: str = ""
    #: First pause between two polls while following, seconds.
    poll_interval: float = 2.0
    #: Longest pause between two polls (``JobHandle.wait`` uses it too).
    max_poll_interval: float = MAX_POLL_INTERVAL
    #: The options this backend takes (its folder's ``options`` module); the registry's
    #: :func:`tfjob.backends.options_type` names the same class.
    options_class: type[O]

    def __init__(
        self,
        echo: Callable[[str], None] = say,
        sleep: Callable[[float], None] = time.sleep,
        *,
        store: JobStore | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.echo = echo
        self._sleep = sleep
        self._store = store
        self._settings = settings

    @property
    def settings(self) -> Settings:
        """The settings this backend fills options from: as given (``settings=``,
        :meth:`with_settings`), else none (``Settings()``: every setting unset). Nothing is
        read here: the edge that made the backend resolved them."""
        if self._settings is not None:
            return self._settings
        from .settings import Settings

        return Settings()

    @property
    def has_settings(self) -> bool:
        """Whether this backend was given settings (a backend without them has none set)."""
        return self._settings is not None

    def with_settings(self: L, settings: Settings) -> L:
        """This backend (its clients, its store) filling options from ``settings``: a copy,
        unless it has them already."""
        if self._settings is settings:
            return self
        import copy

        other = copy.copy(self)
        other._settings = settings
        return other

    # -- the job store ---------------------------------------------------------------------
    @property
    def store(self) -> JobStore:
        """The job store this backend records in, as it was given (``store=``, :meth:`with_store`).

        Raises:
            UsageError: it was made without one (it renders, but keeps no jobs).
        """
        if self._store is None:
            from ..errors import UsageError

            raise UsageError(
                problem=f"this {self.name} backend object has no job store, so it cannot keep or find jobs",
                fix="give it one: get_backend(name, store=JobStore()), its class's store=, or .with_store(store)",
            )
        return self._store

    @property
    def has_store(self) -> bool:
        """Whether this backend was given a store (a backend without one only renders)."""
        return self._store is not None

    def with_store(self: L, store: JobStore) -> L:
        """This backend (its clients, its settings) recording in ``store``: a copy, unless it
        has that store already."""
        if self._store is store:
            return self
        import copy

        other = copy.copy(self)
        other._store = store
        return other

    def recorded(self, record: JobRecord) -> JobStatus:
        """One of this backend's jobs as its store record says, without asking the platform
        (``tfjob list``); a backend that can tell more from this machine says it here (the local
        backend records a job whose launcher died LOST)."""
        return record.to_status()

    def record(self, record: JobRecord) -> str:
        """Keep a job just created in :attr:`store` (:func:`keep_record`); return its id."""
        return keep_record(self.store, record)

    def sync(self, status: JobStatus, record: JobRecord | None) -> JobStatus:
        """Bring the job's record in :attr:`store` up to date with ``status`` (:func:`sync_status`)."""
        return sync_status(self.store, record, status)

    def lost(self, record: JobRecord, why: str) -> JobStatus:
        """The platform no longer has the job (:func:`record_lost`)."""
        return record_lost(self.store, record, why)

    def cancelled(self, record: JobRecord | None, state: JobState, message: str, only_from: tuple[JobState, ...] | None = None) -> None:
        """Record that the job was asked to stop (:func:`record_cancel`)."""
        record_cancel(self.store, record, state, message, only_from)

    # -- the template: what every backend does, through the hooks it fills --------------------
    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Create the job on its platform and keep its record in :attr:`store`; return its id.

        The options are read as this backend's (:meth:`typed`); :meth:`_prepare` checks and
        plans (nothing is created yet); a backend that records before it creates gives that
        record (:meth:`_pending`: a create whose answer is lost leaves the job findable, a
        launcher reads its job from the store); :meth:`_create` creates the job. The record it
        returns is kept (replacing the pending one); when the create fails, the pending record
        is dealt with by :meth:`_not_created` (default: removed, as no job was made).
        """
        plan = self._prepare(spec, self.typed(options))
        pending = self._pending(plan)
        if pending is not None:
            if pending.id:
                self.store.add(pending)
            else:
                self.store.add_new(pending)  # a fresh id from its name
        try:
            created = self._create(plan, pending)
        except BaseException as error:
            if pending is not None:
                self._not_created(pending, error)
            raise
        if created is None:  # the pending record is the job's
            assert pending is not None
            return pending.id
        if pending is None:
            return self.record(created)
        if pending.id != created.id:
            self.store.remove(pending.id)
        if self.store.get(created.id) is None:  # (else a look-up by its label recorded it first)
            self.store.add(created)
        return created.id

    def _prepare(self, spec: JobSpec, options: O) -> P:
        """Check the job and plan its creation (packages built, request rendered; nothing created
        on the platform): what :meth:`_pending` and :meth:`_create` are given."""
        raise NotImplementedError

    def _pending(self, plan: P) -> JobRecord | None:
        """The record kept before the create (an empty id: a fresh one from the job's name), or
        None: the job is recorded once created."""
        return None

    def _create(self, plan: P, pending: JobRecord | None) -> JobRecord | None:
        """Create the job on the platform; return the record to keep (its id is the job's), or
        None when ``pending`` is the job's record."""
        raise NotImplementedError

    def _not_created(self, pending: JobRecord, error: BaseException) -> None:
        """The create of a job recorded first failed with ``error``: no job was made, so its
        record goes (a backend whose create may have happened unseen says so instead)."""
        self.store.remove(pending.id)

    def status(self, job_id: str) -> JobStatus:
        """The job's current status: its record in :attr:`store` (:meth:`_lookup`), the platform's
        view of it (:meth:`_fetch`), and the record brought up to date with that view (:meth:`sync`).
        A job its platform no longer has is LOST, unless its record says it ended (:meth:`lost`).

        Raises:
            JobNotFoundError: neither the store nor the platform knows the job.
        """
        record = self._lookup(job_id)
        status = self._fetch(job_id, record)
        if status is None:
            if record is None:
                from ..errors import JobNotFoundError

                raise JobNotFoundError(f"no job {job_id!r} on {self.platform}")
            return self.lost(record, self._gone(record))
        current = self.store.get(status.id) if record is not None else None
        return self.sync(status, current)

    def watch(self, job_id: str) -> JobStatus:
        """The job's status for one who follows it to its end (:meth:`JobHandle.wait`): :meth:`status`,
        and where a backend's job goes on after its attempt ended (a Vertex AI failover or
        restart), the next attempt made, once whoever else follows the job. :meth:`status`, a
        one-shot read, makes nothing."""
        return self.status(job_id)

    def _lookup(self, job_id: str) -> JobRecord | None:
        """The store's record of ``job_id`` (None: the store does not know it; a backend that
        can ask its platform by id alone answers for it)."""
        return self.store.get(job_id)

    def _fetch(self, job_id: str, record: JobRecord | None) -> JobStatus | None:
        """The job as its platform sees it now, mapped to a :class:`JobStatus` (None: the
        platform no longer has it). ``record`` is the store's (None: not recorded here)."""
        raise NotImplementedError

    def _gone(self, record: JobRecord) -> str:
        """Why a recorded job its platform no longer has is LOST."""
        return f"{self.platform} no longer has the job and its end was not seen"

    def _ended(self, job_id: str, record: JobRecord | None) -> bool:
        """Whether the job has already ended (then ``cancel`` leaves it as it ended). Default:
        its :meth:`status` says so."""
        return self.status(job_id).state.is_terminal

    def _cancel(self, job_id: str, record: JobRecord | None) -> tuple[JobState, str]:
        """Ask the platform to stop a job that has not ended; return what its record says now:
        ``CANCELLING`` (asked; it ends when its tasks have stopped) or ``CANCELLED`` (gone at
        once), and why."""
        raise NotImplementedError

    # -- what every backend shares ---------------------------------------------------------
    def typed(self, options: SubmitOptions | None) -> O:
        """``options`` as this backend's :attr:`options_class`: the same object when it is
        one; otherwise (a plain :class:`SubmitOptions`, another backend's options, None) the
        values both declare, and this backend's defaults for the rest — where its
        :attr:`settings` (resolved by the edge from ``$TFJOB_PROJECT``, ``config.yaml``…) name
        a project, region, endpoint, namespace or staging bucket, those, as :class:`tfjob.Job`
        fills them."""
        if isinstance(options, self.options_class):
            return options
        typed = options_as(self.options_class, options)
        settings = self.settings
        configured: dict[str, Any] = {
            "project": settings.project, "region": settings.region, "api_endpoint": settings.api_endpoint,
            "namespace": settings.namespace, "default_staging_bucket": settings.staging_bucket,
        }  # fmt: skip
        own = vars(typed)
        return replace(typed, **{k: v for k, v in configured.items() if v is not None and k in own and own[k] is None})

    def run(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Submit, then follow the job to its end (``options.wait``); return its id.

        The outcome is the job's status (``JobHandle.result()`` raises on failure).
        """
        job_id = self.submit(spec, options)
        if options.wait:
            self.follow(job_id, options)
        return job_id

    def follow(self, job_id: str, options: SubmitOptions) -> JobStatus:
        """Wait for the job's end, saying each change of state (not with ``quiet``)."""
        interval = options.poll_interval if options.poll_interval is not None else self.poll_interval
        seen: dict[str, Any] = {"state": None, "waiting": None, "restarts": {}}

        def on_change(status: JobStatus, state: JobState) -> None:
            if options.quiet:
                return
            if state is not seen["state"]:
                seen["state"] = state
                self.echo(f"job {job_id} {state.value}" + (f": {status.message}" if status.message else ""))
            if status.extra.get("waiting") != seen["waiting"]:
                # Why is it Pending (or crash-looping)? Said once per change, not every poll.
                seen["waiting"] = status.extra.get("waiting")
                if seen["waiting"]:
                    self.echo(f"job {job_id} waiting: {seen['waiting']}")
            for task in status.tasks:
                # A replica restarted by its policy (a pod's restartCount): said once per restart.
                if task.restarts > seen["restarts"].get(task.name, 0):
                    seen["restarts"][task.name] = task.restarts
                    last = task.restart_history[-1] if task.restart_history else None
                    how = ""
                    if last is not None and (last.exit_code is not None or last.reason):
                        code = f"exit code {last.exit_code}" if last.exit_code is not None else ""
                        how = f" after {', '.join(x for x in (code, last.reason) if x)}"
                    self.echo(f"job {job_id}: {task.name} restarted{how} (restarts: {task.restarts})")

        try:
            return poll(
                lambda: self.status(job_id),
                on_change=on_change,
                changed=lambda status: (status.extra.get("waiting"), tuple(t.restarts for t in status.tasks)),
                poll_interval=interval,
                max_interval=max(interval, min(self.max_poll_interval, interval * 12)),
                sleep=self._sleep,
            )
        except KeyboardInterrupt:
            interrupted(job_id, options, platform=self.platform, cancel=self.cancel, echo=self.echo)
            raise

    def cancel(self, job_id: str) -> None:
        """Ask the job to stop; a job that has already ended is left as it ended (:meth:`_ended`),
        without a call to stop it. The platform is asked (:meth:`_cancel`) and the job's record
        says so (:meth:`cancelled`): ``CANCELLING`` only from a state that had not moved on."""
        record = self._lookup(job_id)
        if self._ended(job_id, record):
            return
        state, message = self._cancel(job_id, record)
        waiting = (JobState.QUEUED, JobState.PENDING, JobState.RUNNING) if state is JobState.CANCELLING else None
        self.cancelled(self._lookup(job_id) or record, state, message, only_from=waiting)
