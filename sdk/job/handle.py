"""The handle of a submitted job (:class:`JobHandle`), and the jobs known: :func:`get_job`,
:func:`list_jobs`. A handle is only ``(backend, id)``, so ``get_job(ID)`` rebuilds it in any
process; a function job's is a :class:`FunctionHandle`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, ParamSpec, TypeVar

from ..backends import BACKENDS, get_backend
from ..model import JobState, JobStatus
from ..errors import (
    JobCancelledError,
    JobFailedError,
    JobNotFoundError,
    SpecError,
)
from ..runtime.lifecycle import poll
from .binding import _the_settings, _the_store, bound_backend

if TYPE_CHECKING:
    from ..platforms import StrPath
    from ..results import Diagnosis, JobMetrics, JobOutputs  # (read when a job has ended: not on a submit's path)
    from ..runtime.settings import Settings
    from ..runtime.store import JobStore
    from .removal import Removal

_P = ParamSpec("_P")
_R = TypeVar("_R")


class JobHandle:
    """A submitted job, known by ``(backend, id)`` alone.

    Args:
        backend: the backend's name, or the backend object itself (with its injected clients).
        id: the job's id on that backend.
        store: the job store the job is recorded in (default: the backend object's, else the
            user's, ``$TFJOB_HOME/jobs.db``).
        settings: the settings its backend finds the job's platform with (project, region,
            endpoint, namespace, poll interval: :class:`tfjob.runtime.settings.Settings`);
            default: the backend object's own, else resolved here, once (flags none: the
            environment, then ``$TFJOB_HOME/config.yaml``). A handle is an edge: the backends
            below it read no settings themselves.
        clock, sleep: injected for tests of :meth:`wait`.
    """

    def __init__(
        self,
        backend: Any,
        id: str,
        *,
        store: JobStore | None = None,
        settings: Settings | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not isinstance(backend, str) and not isinstance(getattr(backend, "name", None), str):
            raise SpecError(f"JobHandle: backend={backend!r:.60} must be a backend's name (e.g. 'vertex') or a backend object")
        if not isinstance(id, str) or not id:
            raise SpecError(f"JobHandle: id={id!r:.60} must be a job's id (text), as `tfjob list` shows it")
        self._backend_object = None if isinstance(backend, str) else backend
        self.backend_name: str = backend if isinstance(backend, str) else backend.name
        self.id = id
        #: The job store the job is recorded in.
        self.store: JobStore = _the_store(store, backend)
        #: The settings its backend is given (resolved once, when the handle was made).
        self.settings: Settings = _the_settings(settings, backend)
        self._bound: tuple[Any, Any] | None = None
        self._clock = clock
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"JobHandle(backend={self.backend_name!r}, id={self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobHandle) and (self.backend_name, self.id) == (other.backend_name, other.id)

    def __hash__(self) -> int:
        return hash((self.backend_name, self.id))

    @property
    def _backend(self) -> Any:
        base = self._backend_object
        if self._bound is None or self._bound[0] is not base:
            self._bound = (base, bound_backend(base, self.backend_name, self.store, self.settings))
        return self._bound[1]

    def status(self) -> JobStatus:
        """The job's status as its backend sees it now."""
        status: JobStatus = self._backend.status(self.id)
        return status

    def _watch(self) -> JobStatus:
        """The status for :meth:`wait`: following the job makes its next attempt where one is due
        (a Vertex AI failover or restart, in whatever process waits), which :meth:`status` does not."""
        status: JobStatus = self._backend.watch(self.id)
        return status

    @property
    def state(self) -> JobState:
        return self.status().state

    def wait(
        self,
        timeout: float | None = None,
        poll_interval: float = 0.2,
        max_interval: float | None = None,
        on_change: Callable[[JobStatus], None] | None = None,
    ) -> JobStatus:
        """Block until the job ends; return its final status.

        Polls with a growing interval (×1.5 up to ``max_interval``; default: the
        backend's ``max_poll_interval``), as :func:`tfjob.runtime.lifecycle.poll` does everywhere.

        Raises:
            JobTimeoutError: ``timeout`` seconds passed first (the job keeps running).
        """
        for name, value in (("poll_interval", poll_interval), ("max_interval", max_interval)):
            # A number of seconds above 0: 0 would poll without pause, a negative one cannot sleep.
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600
            ):  # NaN fails the comparison too
                raise SpecError(f"wait: {name}={value!r:.40} must be a number of seconds above 0 and at most 3600")
        if max_interval is None:
            max_interval = float(self._backend.max_poll_interval)
        if timeout is not None:
            from ..description.limits import check_seconds

            timeout = check_seconds(timeout, "timeout", zero=True)

        def changed(status: JobStatus, state: JobState) -> None:
            if on_change is not None:
                on_change(status)

        return poll(
            self._watch,
            on_change=changed,
            poll_interval=poll_interval,
            max_interval=max_interval,
            timeout=timeout,
            timeout_message=lambda status: (
                f"job {self.id} is still {status.state.value} after {timeout:g}s; "
                f"`tfjob wait {self.id}` waits again, `tfjob cancel {self.id}` stops it"
            ),
            clock=self._clock,
            sleep=self._sleep,
        )

    def result(self) -> JobStatus:
        """The final status if the job SUCCEEDED; raise otherwise.

        Raises:
            JobFailedError: the job failed or was lost.
            JobCancelledError: the job was cancelled.
            JobTimeoutError: never; the job is waited for without limit.
        """
        status = self.wait()
        if status.state is JobState.SUCCEEDED:
            return status
        if status.state is JobState.CANCELLED:
            raise JobCancelledError(f"job {self.id} was cancelled{': ' + status.message if status.message else ''}")
        tail = str(status.extra.get("log_tail", ""))
        message = status.message or "no message"
        if status.failed_task and status.failed_task not in message:
            # Which task failed, and how, when the platform's message does not say.
            code = status.extra.get("task_exit_code")
            message += f" (task {status.failed_task}" + (f" exited with code {code})" if code is not None else " failed)")
        from ..results.diagnosis import explain

        diagnoses = self.diagnose(status)
        if diagnoses:
            message += "\n" + explain(diagnoses)
        raise JobFailedError(
            f"job {self.id} {status.state.value}: {message}",
            job_id=self.id,
            task=status.failed_task,
            exit_code_of_task=status.extra.get("task_exit_code"),
            log_tail=tail,
            diagnoses=diagnoses,
        )

    def job_dir(self) -> str | None:
        """Where the job writes its outputs: its ``--job-dir`` (Vertex AI's
        ``baseOutputDirectory``), as recorded when it was submitted; None if it has none."""
        record = _stored(self.store, self.id)
        if record is None:
            return None
        job_dir = record.spec.get("job_dir")
        return str(job_dir) if job_dir else None

    def spec(self) -> dict[str, Any] | None:
        """The job's description as recorded when it was submitted (:meth:`tfjob.description.spec.JobSpec.to_dict`),
        None when the job store does not have the job."""
        record = _stored(self.store, self.id)
        return dict(record.spec) if record is not None else None

    def events(self) -> list[tuple[float, JobState, str]]:
        """The job's history as its store recorded it, oldest first: (time, state, message)."""
        return self.store.events(self.id)

    def is_study(self) -> bool:
        """Whether the job is a hyperparameter study (its trials are its tasks; see :class:`tfjob.Tuning`)."""
        record = _stored(self.store, self.id)
        return record is not None and record.extra.get("kind") == "study"

    def _storage(self) -> Any:
        """A Cloud Storage client with this backend's credentials (application default without)."""
        from ..after.outputs import storage_client

        record = _stored(self.store, self.id)
        project = record.options.get("project") if record is not None else None
        return storage_client(project, getattr(self._backend_object, "credentials", None))

    def outputs(self) -> JobOutputs:
        """What the job wrote under its job dir: every file with its size and time and kind,
        and where the SavedModel (``model_uri``), the newest checkpoint and the TensorBoard
        logs are — a pipeline needs no knowledge of the layout.

        Local paths are walked; ``gs://`` is listed through google-cloud-storage. A path job
        dir of a Kubernetes job is inside the cluster: ``reachable`` is False and ``note``
        says how to reach it.
        """
        from ..after.outputs import job_outputs

        job_dir = self.job_dir()
        client = self._storage() if job_dir and job_dir.startswith("gs://") else None
        return job_outputs(self.id, self.backend_name, job_dir, client=client)

    def download(self, dest: StrPath, outputs: JobOutputs | None = None, *, notes: list[str] | None = None) -> list[Path]:
        """Copy the job's outputs (``outputs``, default :meth:`outputs`) into ``dest``, their
        layout kept (``gs://`` with this backend's credentials); return the files written.
        What was not copied (more files than listed, a name that is also a folder) is said
        in ``notes`` when given.

        Raises:
            UsageError: the job dir cannot be reached from here (a Kubernetes job's path), or
                ``dest`` is a file or the job dir itself.
            LocalFileError: a file could not be written.
        """
        from ..errors import UsageError
        from ..after.outputs import download

        found = outputs if outputs is not None else self.outputs()
        if not found.reachable:
            raise UsageError(found.note or f"job {self.id}'s outputs cannot be reached from here")
        client = self._storage() if (found.root or "").startswith("gs://") else None
        return download(found, dest, client=client, notes=notes)

    def register_model(self, name: str, *, serving_image: str | None = None) -> dict[str, Any]:
        """Upload the job's SavedModel (:meth:`outputs`' ``model_uri``) to the Vertex AI Model
        Registry as a new version of the model ``name`` (a new model when the registry has none
        of that name), labelled with this job's id, served by the prebuilt TensorFlow prediction
        image of the TensorFlow the job trained with (``serving_image`` chooses another).

        Returns:
            ``{"model": resource name, "version_id", "parent_model" (None for a new model),
            "serving_image", "artifact_uri"}``.

        Raises:
            UsageError: the job is not a Vertex AI job, or left no SavedModel under its job dir.
            BackendError, AuthError: the registry refused or failed.
        """
        from ..errors import UsageError

        registrar = getattr(self._backend, "register_model", None)
        if registrar is None:
            raise UsageError(
                problem=f"job {self.id} ran on {self.backend_name}: models are registered in the Vertex AI Model Registry",
                fix="register a vertex job's model",
            )
        state = self.status().state
        if state is not JobState.SUCCEEDED:
            raise UsageError(
                problem=f"job {self.id} is {state.value}: only the model of a job that SUCCEEDED is registered",
                fix="register the model of a job that finished training",
            )
        outputs = self.outputs()
        if not outputs.model_uri:
            where = f"under its job dir {outputs.root}" if outputs.root else "(it has no --job-dir)"
            raise UsageError(
                problem=f"job {self.id} left no SavedModel (a directory with saved_model.pb) {where}",
                fix="save the model under $AIP_MODEL_DIR (the job dir's model/) and give the job a gs:// --job-dir",
            )
        result: dict[str, Any] = registrar(self.id, name, outputs.model_uri, serving_image=serving_image)
        return result

    def final_metrics(self) -> dict[str, float]:
        """The numbers of the metrics JSON file the job wrote under its job dir (``eval/metrics.json``
        in the templates, else the shortest ``*metric*.json``); {} when there is none."""
        from ..after.outputs import metrics_of_text, read_small_text

        outputs = self.outputs()
        files = [f.path for f in outputs.files if f.kind == "metrics" and f.path.endswith(".json")]
        if not files or not outputs.root:
            return {}
        chosen = "eval/metrics.json" if "eval/metrics.json" in files else min(files, key=len)
        uri = outputs.root.rstrip("/") + "/" + chosen
        return metrics_of_text(read_small_text(uri, self._storage() if uri.startswith("gs://") else None))

    def mirror_event_files(self, log_dir: str, dest: StrPath, seen: dict[str, int] | None = None) -> dict[str, int]:
        """Copy the TensorBoard event files under the job's ``gs://`` ``log_dir`` into ``dest``
        (those changed since ``seen``), for a TensorBoard without Cloud Storage support; return
        the sizes now seen."""
        from ..after.metrics import mirror_event_files

        return mirror_event_files(log_dir, str(dest), self._storage(), seen)

    def report(self) -> str:
        """One self-contained HTML page about the job (``tfjob report``): its spec, a timeline of
        its tasks, its diagnosis, its metric curves (or its study's plots), its outputs and the
        last lines of a failing task; nothing in it is fetched from the network."""
        from ..after.report import gather, render_report

        return render_report(gather(self))

    def metrics(self) -> JobMetrics:
        """The scalars the job logged for TensorBoard, per run (``train``, ``validation``…),
        read with TensorBoard's own reader (no TensorFlow import); ``.final`` holds the last
        value of each. Needs the ``tensorboard`` package (``pip install 'tfjob[tf]'``).

        For a tuning study: its objective per trial (run ``study``, tag the study's metric,
        step the trial's number), from the trials the study recorded.
        """
        from ..after.metrics import read_metrics, study_metrics
        from ..results import JobMetrics

        record = _stored(self.store, self.id)
        if record is not None and record.extra.get("kind") == "study":
            status = self.status()  # the trials as the study's backend has them now
            return study_metrics(status.id, status.extra)
        outputs = self.outputs()
        log_dir = outputs.tensorboard_uri or (outputs.root if outputs.reachable else None)
        if not outputs.reachable:
            result = JobMetrics(self.id, None)
            result.note = outputs.note
            return result
        client = self._storage() if log_dir and log_dir.startswith("gs://") else None
        return read_metrics(self.id, log_dir, client=client)

    def diagnose(self, status: JobStatus | None = None) -> list[Diagnosis]:
        """Why the job failed (or hangs) and the fix, as far as tfjob recognises it in the
        failing task's last lines, the platform's message and the tasks' ends; [] when nothing.

        The same on every backend (:func:`tfjob.results.diagnosis.diagnose`); where the status carries
        no log tail (Vertex AI), the failing task's last lines are read through :meth:`logs`.
        """
        from ..results.diagnosis import diagnose

        status = status if status is not None else self.status()
        record = _stored(self.store, self.id)
        options = record.options if record is not None else {}

        def log_of(task: str) -> str:
            lines: list[str] = []
            for line in self.logs(task=task, tail=_DIAGNOSIS_LINES):
                lines.append(line)
                if len(lines) >= _DIAGNOSIS_LINES:
                    break
            return "\n".join(lines)

        return diagnose(status, dialect=options.get("dialect"), strategy=options.get("strategy"), log_of=log_of)

    def logs(self, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines (``[worker-1] …``), optionally of one task, following until it ends."""
        if task is not None and not isinstance(task, str):
            raise SpecError(f"logs: task={task!r:.40} must be a task's name (text), e.g. 'worker-0'")
        if tail is not None and (isinstance(tail, bool) or not isinstance(tail, int) or tail < 0):
            raise SpecError(f"logs: tail={tail!r:.40} must be a whole number of lines ≥ 0")
        lines: Iterator[str] = self._backend.logs(self.id, task=task, follow=follow, tail=tail)
        return lines

    def preempt(self, task: str, grace: float | str | None = None) -> str:
        """Preempt one task of a running local job as a Spot VM is reclaimed: SIGTERM, the
        grace period (``grace`` seconds, else the job's ``preempt_grace``, 30 by default),
        then SIGKILL; its restart policy then acts. Returns the task's name.

        Raises:
            UsageError: the job is not a local one (the platforms preempt by themselves), has
                ended, or has no such task.
        """
        from ..errors import UsageError

        if not isinstance(task, str):
            raise SpecError(f"preempt: task={task!r:.40} must be a task's name (text), e.g. 'worker-0'")
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, (int, float, str))):
            raise SpecError(f"preempt: grace={grace!r:.40} must be seconds (a number, or text such as '30s')")
        preempt = getattr(self._backend, "preempt", None)
        if preempt is None:
            raise UsageError(
                f"tfjob preempt rehearses a preemption on a local job; job {self.id} runs on {self._backend.name}, "
                "whose platform preempts its Spot VMs or pods by itself"
            )
        target: str = preempt(self.id, task, grace)
        return target

    def cancel(self) -> None:
        """Ask the job to stop (returns at once; :meth:`wait` sees CANCELLED).

        The same on every backend (:meth:`tfjob.runtime.lifecycle.Lifecycle.cancel`): a job that
        has already ended is left as it ended.
        """
        self._backend.cancel(self.id)

    def remove(self, force: bool = False) -> Removal:
        """Remove the ended job's record and tfjob's files of it here (``force``: cancel it first): :mod:`tfjob.job.removal`."""
        from .removal import remove

        return remove(self, force=force)


#: Lines of a failing task read for a diagnosis where its status carries none.
_DIAGNOSIS_LINES = 80


def _stored(store: JobStore, job_id: str) -> Any:
    """The job store's record of ``job_id`` (its spec and options), or None."""
    from ..errors import StoreError

    try:
        return store.get(job_id)
    except StoreError:
        return None


#: The longest job id taken (a Kubernetes ``NAMESPACE/NAME`` is at most 63 + 1 + 253).
MAX_JOB_ID = 512


def list_jobs(
    limit: int | None = 20,
    backend: str | None = None,
    *,
    remote: bool = False,
    store: JobStore | None = None,
    settings: Settings | None = None,
) -> list[JobStatus]:
    """Jobs, newest first (``tfjob list``).

    Args:
        limit: at most this many (None: all).
        backend: only this backend's (a name; a misspelt one is a UsageError).
        remote: ask the backend's service instead of the job store (needs ``backend``: Vertex
            AI's configured project and region, the Kubernetes context's namespace).
        store: the job store read (default: the user's, ``$TFJOB_HOME/jobs.db``).
        settings: the settings the backends are given (default: resolved here, once).

    From the store, each job is shown as its own backend reads its record offline (a local job
    whose launcher died is LOST); last-seen states otherwise.
    """
    from ..errors import UsageError

    store = _the_store(store)
    resolved: dict[str, Settings] = {}

    def settings_of(name: str) -> Settings:
        """The settings ``name``'s backend is given: resolved once, when a backend that reads them is first made."""
        key = "local" if name == "local" else "cloud"
        if key not in resolved:
            resolved[key] = _the_settings(settings, name)
        return resolved[key]

    chosen = get_backend(backend, store, settings_of(backend)) if backend is not None else None  # a misspelt name is a usage error
    if remote:
        if chosen is None:
            raise UsageError("list_jobs(remote=True) needs backend= (vertex or kubeflow): which service to ask")
        listed: list[JobStatus] = chosen.list(limit=limit)
        return listed
    owners: dict[str, Any] = {}
    statuses = []
    for record in store.list(limit=limit, backend=backend):
        if record.backend not in owners:
            owners[record.backend] = get_backend(record.backend, store, settings_of(record.backend)) if record.backend in BACKENDS else None
        owner = owners[record.backend]
        statuses.append(owner.recorded(record) if owner is not None and hasattr(owner, "recorded") else record.to_status())
    return statuses


def get_job(job_id: str, backend: Any = None, *, store: JobStore | None = None, settings: Settings | None = None) -> JobHandle:
    """The handle of a job submitted earlier, from any process.

    The backend is looked up in the job store unless given — by name, or as a backend
    object with its clients (``get_job(ID, backend=VertexBackend(credentials=creds))``);
    an id may be a unique prefix of a stored id. A function job's handle (``tfjob.remote``)
    is a :class:`tfjob.functions.FunctionHandle`: its ``result()`` is the function's return value. ``store`` is the job store to look in
    (default: the backend object's, else the user's, ``$TFJOB_HOME/jobs.db``); ``settings`` those
    its backend is given (default: the backend object's, else resolved here, once).
    """
    if not isinstance(job_id, str):
        raise SpecError(f"get_job: job_id={job_id!r:.60} must be text, a job's id as `tfjob list` shows it, not {type(job_id).__name__}")
    if len(job_id) > MAX_JOB_ID:
        raise SpecError(f"get_job: a job id is at most {MAX_JOB_ID} characters, not {len(job_id)} ({job_id[:40]!r}…)")
    if backend is not None and not isinstance(backend, str) and not isinstance(getattr(backend, "name", None), str):
        raise SpecError(f"get_job: backend={backend!r:.60} must be a backend's name (e.g. 'vertex') or a backend object")
    name = backend if backend is None or isinstance(backend, str) else backend.name
    store = _the_store(store, backend)
    try:
        record = store.resolve(job_id)
    except JobNotFoundError:
        if backend is None:
            raise
        return JobHandle(backend, job_id, store=store, settings=settings)
    if name is not None and name != record.backend:
        raise JobNotFoundError(f"job {record.id} ran on the {record.backend} backend, not {name}")
    if record.spec.get("module") == _FUNCTION_MODULE:
        # A function job: its result() is the function's return value.
        return FunctionHandle(backend if backend is not None else record.backend, record.id, store=store, settings=settings)
    return JobHandle(backend if backend is not None else record.backend, record.id, store=store, settings=settings)


# -- A Python function as a job (tfjob.remote): the API over tfjob.functions ------------------

#: The module a function job runs (tfjob.functions.function.MODULE, the package's runner).
_FUNCTION_MODULE = "tfjob_function.run"


class FunctionHandle(JobHandle, Generic[_R]):
    """The handle of a function job (:func:`remote`): a :class:`JobHandle` whose
    :meth:`result` is the function's return value. ``tfjob.get_job(ID)`` gives one for a
    function job, in any process."""

    def result(self) -> _R:  # type: ignore[override]
        """Wait for the job's end; return the chief's return value.

        Raises:
            the function's own exception (its type, with the remote traceback as its cause and
            a note naming the task), when the chief's call raised one, or the call of the task
            whose failure ended the job before the chief's had;
            JobFailedError: another task failed, or the job failed before the call ended;
            JobCancelledError: the job was cancelled.
        """
        from ..functions.result import load_outcome, raise_outcome, read_result, result_uri
        from ..functions.runner import task_outcome_uri
        from ..functions.retention import removed_note

        status = self.wait()
        spec = self.spec() or {}
        uri = result_uri(spec.get("args"))
        if uri is None:
            raise JobFailedError(f"job {self.id} is not a function job (it has no --result argument)", job_id=self.id)
        data = read_result(uri, self._storage)
        outcome = load_outcome(data, uri) if data is not None else None
        if outcome is None and status.state is not JobState.SUCCEEDED and status.failed_task:
            # Another task's call raised and ended the job before the chief wrote its outcome.
            failed = task_outcome_uri(uri, status.failed_task)
            data = read_result(failed, self._storage)
            outcome = load_outcome(data, failed) if data is not None else None
        if outcome is not None and not outcome["ok"]:
            raise_outcome(outcome, self.id)
        if status.state is JobState.SUCCEEDED:
            if outcome is None:
                note = removed_note(uri)
                raise JobFailedError(f"job {self.id} SUCCEEDED but its chief wrote no result at {uri}{note}", job_id=self.id)
            value: _R = outcome["value"]
            return value
        JobHandle.result(self)  # raises: FAILED, LOST, CANCELLED, with the diagnosis
        raise JobFailedError(f"job {self.id} ended {status.state.value}", job_id=self.id)  # not reached
