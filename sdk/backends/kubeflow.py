"""The kubeflow backend: a job runs on Kubernetes as a Kubeflow ``TFJob``.

``render`` is :func:`tfjob.render.kubeflow.render_tfjob` (pure, validated against the
operator's admission rules before anything is sent). ``submit`` creates the TFJob
with the official ``kubernetes`` client and records it in the job store under the id
``NAMESPACE/NAME``, with the kubeconfig and context it was sent with, so ``tfjob
status / logs / cancel ID`` reach the same cluster from any process. ``status`` reads
the TFJob's conditions and its pods; ``logs`` reads (or follows) the pods;
``cancel`` deletes the TFJob; ``list`` lists the TFJobs tfjob made in the current
namespace.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterator

from ..errors import BackendError, JobCancelledError, JobNotFoundError, UsageError
from ..k8s.status import build_job_status, build_pod_selector, parse_job_id, parse_timestamp, parse_tfjob_state, pod_task_name
from ..render.kubeflow import CONTAINER_NAME, MANAGED_BY_LABEL, MANAGED_BY_VALUE, check_k8s_name, render_tfjob
from ..spec import JobSpec
from ..store import JobRecord, JobStore
from .base import JobState, JobStatus, SubmitOptions

#: Lines of the failed task's log kept in a FAILED status (``JobFailedError.log_tail``).
LOG_TAIL_LINES = 20


class KubeflowBackend:
    """Kubeflow TFJobs through the Kubernetes API.

    Args:
        poll_interval: seconds between looks at a job that is being waited for or
            followed (``SubmitOptions.poll_interval`` overrides it for ``run``).
        sleep: injected for tests of waiting.
    """

    name = "kubeflow"

    def __init__(self, poll_interval: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.poll_interval = poll_interval
        self._sleep = sleep

    #: What the job is on the cluster, in messages.
    kind = "TFJob"
    #: Who acts on a new job (the training operator, or the JobSet controller).
    controller = "the training operator"

    # -- pure ------------------------------------------------------------------------------
    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The TFJob manifest (see :func:`tfjob.render.kubeflow.render_tfjob`)."""
        return render_tfjob(spec, options)

    # -- the resource (a subclass runs another kind of job the same way) ----------------------
    @staticmethod
    def _set_namespace(manifest: dict[str, Any], namespace: str) -> None:
        manifest["metadata"]["namespace"] = namespace

    def _create(self, client: Any, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return client.create_tfjob(namespace, manifest)

    def _get(self, client: Any, namespace: str, name: str) -> dict[str, Any]:
        return client.get_tfjob(namespace, name)

    def _delete(self, client: Any, namespace: str, name: str) -> None:
        client.delete_tfjob(namespace, name)

    def _list_objects(self, client: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
        return client.list_tfjobs(namespace, selector)

    def _selector(self, name: str, task: str | None = None, record: JobRecord | None = None) -> str:
        return build_pod_selector(name, task)

    def _state(self, client: Any, namespace: str, name: str) -> JobState:
        return parse_tfjob_state(self._get(client, namespace, name))[0]

    def _status(self, job_id: str, obj: dict[str, Any], pods: list[dict[str, Any]]) -> JobStatus:
        return build_job_status(job_id, obj, pods)

    # -- plumbing --------------------------------------------------------------------------
    @staticmethod
    def _connect(kubeconfig: str | None, context: str | None) -> Any:
        from ..k8s.client import KubeClient  # imports kubernetes: only on this path

        return KubeClient(kubeconfig, context)

    @staticmethod
    def _record(job_id: str) -> JobRecord | None:
        store = JobStore()
        try:
            return store.get(job_id)
        finally:
            store.close()

    def _locate(self, job_id: str) -> tuple[str | None, str, JobRecord | None]:
        """(namespace or None for the context's, name, the store's record if any)."""
        record = self._record(job_id)
        namespace, name = parse_job_id(job_id)
        if record is not None:
            namespace = record.options.get("namespace") or namespace
        return namespace, name, record

    def _client_for(self, record: JobRecord | None) -> Any:
        options = record.options if record is not None else {}
        return self._connect(options.get("kubeconfig"), options.get("context"))

    @staticmethod
    def _remember(job_id: str, status: JobStatus, record: JobRecord | None) -> None:
        if record is None or record.state is status.state:
            return
        store = JobStore()
        try:
            values: dict[str, Any] = {"failed_task": status.failed_task} if status.failed_task else {}
            if status.started:
                values["started"] = status.started
            if status.ended:
                values["ended"] = status.ended
            store.set_state(job_id, status.state, status.message, **values)
        finally:
            store.close()

    # -- I/O -------------------------------------------------------------------------------
    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Create the TFJob; return its id ``NAMESPACE/NAME``.

        Raises:
            SpecError: the manifest breaks the operator's rules (nothing is sent).
            UsageError: no kubeconfig, a missing namespace, the name is taken (409).
            AuthError: the cluster refused the credentials or the permission (401/403).
            BackendError: the TFJob CRD is not installed, or the API failed.
        """
        manifest = self.render(spec, options)
        client = self._connect(options.kubeconfig, options.context)
        try:
            namespace = options.namespace or client.namespace
            check_k8s_name(namespace, field="namespace", flag="--namespace")
            self._set_namespace(manifest, namespace)
            created = self._create(client, namespace, manifest)
        finally:
            client.close()
        job_id = f"{namespace}/{spec.name}"
        meta = created.get("metadata") or {}
        record = JobRecord(
            id=job_id,
            backend=self.name,
            name=spec.name,
            state=JobState.PENDING,
            spec=spec.to_dict(),
            options={"namespace": namespace, "kubeconfig": client.kubeconfig, "context": options.context},
            message=f"{self.kind} created; waiting for {self.controller}",
            created=parse_timestamp(meta.get("creationTimestamp")) or time.time(),
            extra={"server": client.server, "uid": meta.get("uid")},
        )
        store = JobStore()
        try:
            if store.get(job_id) is not None:
                # The cluster took the name, so the TFJob this record was about is gone.
                store.remove(job_id)
            store.add(record)
        finally:
            store.close()
        return job_id

    def run(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Submit, then wait for the end, printing each state change on stderr; return the id.

        Ctrl-C stops waiting (the job keeps running) unless ``options.cancel_on_interrupt``.
        """
        job_id = self.submit(spec, options)
        interval = options.poll_interval if options.poll_interval is not None else self.poll_interval
        last: JobState | None = None
        waiting: str | None = None
        try:
            while True:
                status = self.status(job_id)
                if status.state is not last:
                    last = status.state
                    if not options.quiet:
                        note = f": {status.message}" if status.message else ""
                        print(f"tfjob: {job_id} {status.state.value}{note}", file=sys.stderr, flush=True)
                if status.extra.get("waiting") != waiting:
                    # Why is it Pending (or crash-looping)? Said once per change, not every poll.
                    waiting = status.extra.get("waiting")
                    if waiting and not options.quiet:
                        print(f"tfjob: {job_id} waiting: {waiting}", file=sys.stderr, flush=True)
                if status.state.is_terminal:
                    return job_id
                self._sleep(interval)
        except KeyboardInterrupt:
            if options.cancel_on_interrupt:
                self.cancel(job_id)
                raise JobCancelledError(f"job {job_id} was cancelled (its {self.kind} deleted) on Ctrl-C") from None
            print(
                f"tfjob: stopped waiting; {job_id} keeps running (tfjob status {job_id}, tfjob cancel {job_id})",
                file=sys.stderr,
                flush=True,
            )
            raise

    def status(self, job_id: str) -> JobStatus:
        """The TFJob's state from its conditions, with a task per pod.

        A FAILED status names the failed task and carries its last log lines
        (``extra["log_tail"]``). A TFJob gone from the cluster keeps the state the job
        store last saw if that was an end (cancelled, finished), else is LOST.
        """
        namespace, name, record = self._locate(job_id)
        client = self._client_for(record)
        try:
            namespace = namespace or client.namespace
            full_id = f"{namespace}/{name}"
            try:
                tfjob = self._get(client, namespace, name)
            except JobNotFoundError:
                if record is None:
                    raise
                return self._gone(record)
            pods = client.list_pods(namespace, self._selector(name))
            status = self._status(full_id, tfjob, pods)
            if record is not None and record.state is JobState.CANCELLED:
                # Deleted by `tfjob cancel`: the object may linger while its pods go.
                status.state, status.message = JobState.CANCELLED, record.message
            if status.state is JobState.FAILED and status.failed_task:
                status.extra["log_tail"] = self._log_tail(client, namespace, pods, status.failed_task)
        finally:
            client.close()
        self._remember(full_id, status, record)
        return status

    @staticmethod
    def _log_tail(client: Any, namespace: str, pods: list[dict[str, Any]], task: str) -> str:
        for pod in pods:
            if pod_task_name(pod) == task:
                try:
                    return client.read_log(namespace, pod["metadata"]["name"], CONTAINER_NAME, tail=LOG_TAIL_LINES)
                except (BackendError, UsageError):
                    return ""  # the tail is a courtesy; the failure itself is already known
        return ""

    def _gone(self, record: JobRecord) -> JobStatus:
        if not record.state.is_terminal:
            store = JobStore()
            try:
                store.set_state(
                    record.id,
                    JobState.LOST,
                    f"the {self.kind} is no longer on the cluster (deleted outside tfjob, or removed after "
                    "ttlSecondsAfterFinished) and its end was not seen",
                )
                record = store.get(record.id) or record
            finally:
                store.close()
        return record.to_status()

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines, ``[worker-1] …``, of one task (``worker-1``) or role (``ps``) if given.

        With ``follow``, lines come as they are written until the job ends.

        Raises:
            UsageError: ``task`` is not ROLE or ROLE-INDEX.
            BackendError: no pod has logs (not started yet, or deleted after the end).
        """
        from ..k8s.logs import follow_logs, read_logs

        namespace, name, record = self._locate(job_id)
        selector = self._selector(name, task, record)
        client = self._client_for(record)
        namespace = namespace or client.namespace
        try:
            if follow:

                def ended() -> bool:
                    try:
                        return self._state(client, namespace, name).is_terminal
                    except JobNotFoundError:
                        return True

                yield from follow_logs(client, namespace, selector, ended, tail=tail, poll_interval=self.poll_interval)
                return
            any_line = False
            for line in read_logs(client, namespace, selector, tail=tail):
                any_line = True
                yield line
            if not any_line and not client.list_pods(namespace, selector):
                what = f"task {task} of {self.kind}" if task else self.kind
                raise BackendError(
                    f"no pods of {what} {namespace}/{name} to read logs from: they are not created yet, or were "
                    f"deleted when the job ended; `tfjob status {namespace}/{name}` shows the job"
                )
        finally:
            client.close()

    def cancel(self, job_id: str) -> None:
        """Delete the TFJob (its pods go with it) and record the job as CANCELLED.

        A job that has already ended is left as it is (nothing is deleted).

        Raises:
            JobNotFoundError: there is no such TFJob.
        """
        namespace, name, record = self._locate(job_id)
        client = self._client_for(record)
        try:
            namespace = namespace or client.namespace
            full_id = f"{namespace}/{name}"
            try:
                state = self._state(client, namespace, name)
                if state.is_terminal:
                    return  # as on every backend: a finished job is left as it ended
                self._delete(client, namespace, name)
            except JobNotFoundError:
                if record is None:
                    raise
                if record.state.is_terminal:
                    raise UsageError(f"job {full_id} has already {record.state.value}; nothing to cancel") from None
        finally:
            client.close()
        if record is not None:
            store = JobStore()
            try:
                store.set_state(record.id, JobState.CANCELLED, f"cancelled: the {self.kind} was deleted by tfjob cancel")
            finally:
                store.close()

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """The TFJobs tfjob created in the current context's namespace, newest first."""
        client = self._connect(None, None)
        try:
            namespace = client.namespace
            tfjobs = self._list_objects(client, namespace, f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
        finally:
            client.close()
        statuses = [self._status(f"{namespace}/{j['metadata']['name']}", j, []) for j in tfjobs]
        statuses.sort(key=lambda s: (s.created or 0.0, s.id), reverse=True)
        return statuses[:limit] if limit is not None else statuses


#: The backend object the registry hands out.
BACKEND = KubeflowBackend()
