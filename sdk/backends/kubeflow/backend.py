"""The kubeflow backend: a job runs on Kubernetes as a Kubeflow ``TFJob``.

``render`` is :func:`tfjob.backends.kubeflow.render.render_tfjob` (pure, validated against the
operator's admission rules before anything is sent). ``submit`` creates the TFJob
with the official ``kubernetes`` client and records it in the job store under the id
``NAMESPACE/NAME``, with the kubeconfig and context it was sent with, so ``tfjob
status / logs / cancel ID`` reach the same cluster from any process. ``status`` reads
the TFJob's conditions and its pods; ``logs`` reads (or follows) the pods;
``cancel`` deletes the TFJob; ``list`` lists the TFJobs tfjob made in the current
namespace.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

from ...errors import BackendError, JobNotFoundError, SpecError, UsageError
from ...model import parse_time
from .kinds import TFJOB_KIND, JobKind
from .status import build_job_status, object_name, parse_job_id, pod_task_name
from .render import CONTAINER_NAME, MANAGED_BY_LABEL, MANAGED_BY_VALUE, check_k8s_name
from .shipment import MAX_BYTES as MAX_SHIPPED_BYTES
from .shipment import Shipment, check_size, configmap_name, owner_reference, raise_too_big, render_configmap, ship_into
from ...description.spec import JobSpec
from ...runtime.store import JobRecord, JobStore
from ...model import JobState, JobStatus, SubmitOptions
from .options import KubernetesOptions, TFJobOptions
from ...runtime.lifecycle import Lifecycle, say

if TYPE_CHECKING:
    from typing import TypeAlias

    from .client import KubeClient
    from ...description.knobs import StrPath
    from ...runtime.settings import Settings
    from ...tuning.study import StudySpec
    from ...tuning.trials import StudyResult

    #: What :meth:`KubeflowBackend._prepare` plans: the job, its options, its manifest and its
    #: packages' ConfigMap (None: it ships none).
    _Plan: TypeAlias = tuple[JobSpec, KubernetesOptions, dict[str, Any], dict[str, Any] | None]

#: What a ConfigMap key may be (the packages are its keys).
_CONFIGMAP_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")

#: Lines of the failed task's log kept in a FAILED status (``JobFailedError.log_tail``).
LOG_TAIL_LINES = 20
#: The label naming the job a shipped-packages ConfigMap belongs to.
JOB_NAME_LABEL = "tfjob.dev/job-name"


def build_shipment(spec: JobSpec, options: SubmitOptions) -> tuple[JobSpec, Shipment | None]:
    """The spec with its packages taken out, and what ships them to the pods (None: nothing).

    A trainer directory is built into its sdist (the build cache reuses an unchanged one;
    files that look like secrets stay out, as for Vertex AI); a built archive is read as it
    is; a ``gs://`` URI is downloaded by the bootstrap in the pod.

    Raises:
        PackagingError: the trainer cannot be built, or its module is not in it.
        UsageError: a package path that does not exist.
        SpecError: the packages are more than a ConfigMap holds, or two share a file name.
    """
    if not (spec.package or spec.packages):
        return spec, None
    from dataclasses import replace

    from ...packaging import gather_packages

    paths, uris = gather_packages(
        spec.package, spec.packages, module=spec.module, requirements=spec.requirements,
        include_secrets=options.include_secrets, quiet=options.quiet,
    )  # fmt: skip
    files: list[tuple[str, bytes]] = []
    for path in paths:
        if not _CONFIGMAP_KEY_RE.fullmatch(path.name) or len(path.name) > 253:
            raise SpecError(
                field="packages",
                value=str(path),
                problem=f": a ConfigMap key is letters, digits, '-', '_' and '.' (at most 253), so {path.name!r} cannot be shipped to the pods",
                fix="rename the file",
            )
        if path.stat().st_size > MAX_SHIPPED_BYTES:  # refused without reading it
            raise_too_big([*files, (path.name, b"")], path.stat().st_size)
        files.append((path.name, path.read_bytes()))
    shipment = Shipment(configmap_name(spec.name) if files else "", tuple(files), tuple(uris))
    check_size(shipment)
    return replace(spec, package=None, packages=()), shipment


def split_configmap(manifest: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the job's manifest as the backend creates it, the packages' ConfigMap or None)."""
    items = manifest.get("items") if manifest.get("kind") == "List" else None
    if not items or items[0].get("kind") != "ConfigMap":
        return manifest, None
    rest = items[1:]
    return (rest[0] if len(rest) == 1 else {**manifest, "items": rest}), items[0]


class KubeflowBackend(Lifecycle[KubernetesOptions, "_Plan"]):
    """Kubeflow TFJobs through the Kubernetes API (waiting, Ctrl-C and cancelling a
    finished job are :class:`~tfjob.runtime.lifecycle.Lifecycle`'s).

    Args:
        poll_interval: seconds between looks at a job that is being waited for or
            followed (``SubmitOptions.poll_interval`` overrides it for ``run``).
        sleep: injected for tests of waiting.
        echo: where progress lines go (default: stderr, prefixed ``tfjob:``).
        api_client: a configured ``kubernetes.client.ApiClient`` that every call uses
            instead of the kubeconfig (``Job(backend=KubeflowBackend(api_client=api))``).
        namespace: where a job goes with ``api_client`` when it names no namespace.
        store: the job store its jobs are recorded in (default: the user's).
    """

    name = "kubeflow"
    platform = "Kubernetes"
    options_class: type[KubernetesOptions] = TFJobOptions
    #: What a job runs as on the cluster (the ``jobset`` and ``trainjob`` backends name theirs).
    kind: JobKind = TFJOB_KIND

    def __init__(
        self,
        poll_interval: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        echo: Callable[[str], None] = say,
        *,
        api_client: Any = None,
        namespace: str | None = None,
        store: JobStore | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(echo=echo, sleep=sleep, store=store, settings=settings)
        self.poll_interval = poll_interval
        #: A configured ``kubernetes.client.ApiClient`` for every call (None: the kubeconfig's),
        #: and the namespace a job without one goes to with it (default ``default``).
        self.api_client = api_client
        self.namespace = namespace

    # -- render ----------------------------------------------------------------------------
    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The job's manifest; with packages to ship, a ``List`` of their ConfigMap and the job.

        Pure but for the trainer's build: a trainer directory given as PACKAGE_PATH is built
        into its sdist (from the build cache when unchanged), as a Vertex AI dry run does.
        """
        options = self.typed(options)
        bare, shipment = build_shipment(spec, options)
        manifest = self.kind.render(bare, options)
        if shipment is None:
            return manifest
        ship_into(manifest, shipment)
        if not shipment.files:
            return manifest
        labels = {MANAGED_BY_LABEL: MANAGED_BY_VALUE, JOB_NAME_LABEL: spec.name}
        configmap = render_configmap(shipment, labels, options.namespace)
        items = manifest["items"] if manifest.get("kind") == "List" else [manifest]
        return {"apiVersion": "v1", "kind": "List", "items": [configmap, *items]}

    # -- the job's resource, as its JobKind describes it ------------------------------------
    def _create_object(self, client: Any, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the job (its companions first) in ``namespace``; return it as stored."""
        *companions, job = manifest["items"] if manifest.get("kind") == "List" else [manifest]
        for obj in companions:
            companion = next(c for c in self.kind.companions if c.resource.kind == obj.get("kind"))
            self._make_companion(client, companion.resource, obj)
        job["metadata"]["namespace"] = namespace
        return client.create(self.kind.resource, namespace, job)  # type: ignore[no-any-return]

    @staticmethod
    def _make_companion(client: Any, resource: Any, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        try:
            existing = client.get(resource, None, name)
        except JobNotFoundError:
            existing = None
        if existing is None:
            client.create(resource, None, obj)
        elif existing.get("spec") != obj["spec"]:
            raise UsageError(
                problem=f"{resource.kind} {name} exists with another spec (a job of this name ran with another shape or image)",
                fix=f"pick another {{name}}, or delete it first (kubectl delete {resource.kind.lower()} {name})",
            )

    def _get(self, client: Any, namespace: str, name: str) -> dict[str, Any]:
        return client.get(self.kind.resource, namespace, name)  # type: ignore[no-any-return]

    def _delete(self, client: Any, namespace: str, name: str) -> None:
        """Delete the job (its pods go with it), then its companions."""
        client.delete(self.kind.resource, namespace, name)
        for companion in self.kind.companions:
            try:
                client.delete(companion.resource, None, companion.name_of(name))
            except JobNotFoundError:
                pass  # already gone: nothing else used it

    def _selector(self, name: str, task: str | None = None, record: JobRecord | None = None) -> str:
        spec = JobSpec.from_dict(record.spec) if task is not None and record is not None else None
        return self.kind.pods(name, task, spec)

    def _state(self, client: Any, namespace: str, name: str) -> JobState:
        # Whether it ended is in the object's conditions; its pods only tell PENDING from RUNNING.
        return self.kind.state(self._get(client, namespace, name))[0]

    def _status(self, job_id: str, obj: dict[str, Any], pods: list[dict[str, Any]]) -> JobStatus:
        return build_job_status(job_id, obj, pods, backend=self.name)

    # -- plumbing --------------------------------------------------------------------------
    def _connect(self, kubeconfig: StrPath | None, context: str | None) -> KubeClient:
        from .client import KubeClient  # imports kubernetes: only on this path

        if self.api_client is not None:
            return KubeClient(api_client=self.api_client, namespace=self.namespace)
        return KubeClient(kubeconfig, context, backend=self.name)

    def _locate(self, job_id: str) -> tuple[str | None, str, JobRecord | None]:
        """(namespace or None for the context's, name, the store's record if any)."""
        record = self._lookup(job_id)
        return (*self._place(job_id, record), record)

    @staticmethod
    def _place(job_id: str, record: JobRecord | None) -> tuple[str | None, str]:
        """(namespace or None for the context's, name): the record's namespace, else the id's."""
        namespace, name = parse_job_id(job_id)
        if record is not None:
            namespace = record.options.get("namespace") or namespace
        return namespace, name

    def _client_for(self, record: JobRecord | None) -> Any:
        options = record.options if record is not None else {}
        return self._connect(options.get("kubeconfig"), options.get("context"))

    # -- I/O -------------------------------------------------------------------------------
    def _prepare(self, spec: JobSpec, options: KubernetesOptions) -> _Plan:
        """The job's manifest and its packages' ConfigMap (:meth:`render`: checked against the
        operator's rules, the trainer built; nothing sent)."""
        return (spec, options, *split_configmap(self.render(spec, options)))

    def _create(self, plan: _Plan, pending: JobRecord | None) -> JobRecord:
        """Create the job (its kind's resource, its companions, its packages' ConfigMap); return
        its record, id ``NAMESPACE/NAME`` (``Lifecycle.submit`` keeps it in the store).

        Raises:
            SpecError: the manifest breaks the operator's rules (nothing is sent).
            UsageError: no kubeconfig, a missing namespace, the name is taken (409).
            AuthError: the cluster refused the credentials or the permission (401/403).
            BackendError: the TFJob CRD is not installed, or the API failed.
        """
        spec, options, manifest, configmap = plan
        client = self._connect(options.kubeconfig, options.context)
        try:
            namespace = options.namespace or client.namespace
            check_k8s_name(namespace, field="namespace")
            created = self._create_object(client, namespace, manifest)
            if configmap is not None:
                self._ship(client, namespace, spec.name, configmap, created)
        finally:
            client.close()
        job_id = f"{namespace}/{spec.name}"
        meta = created.get("metadata") or {}
        return JobRecord(
            id=job_id,
            backend=self.name,
            name=spec.name,
            state=JobState.PENDING,
            spec=spec.to_dict(),
            options={"namespace": namespace, "kubeconfig": client.kubeconfig, "context": options.context},
            message=f"{self.kind.name} created; waiting for {self.kind.controller}",
            created=parse_time(meta.get("creationTimestamp")) or time.time(),
            extra={"server": client.server, "uid": meta.get("uid")},
        )

    def _ship(self, client: Any, namespace: str, name: str, configmap: dict[str, Any], created: dict[str, Any]) -> None:
        """Create the packages' ConfigMap, owned by the job just created (deleted with it).

        The pods wait for it (their volume) and start once it exists. A ConfigMap of this
        name left by an earlier job of the same name (tfjob's, not yet collected) is
        replaced; anyone else's is not touched. If it cannot be created, the job is deleted
        again, so nothing is left half-made.
        """
        configmap["metadata"]["namespace"] = namespace
        configmap["metadata"]["ownerReferences"] = [owner_reference(created)]
        cm_name = configmap["metadata"]["name"]
        try:
            try:
                client.create_configmap(namespace, configmap)
            except UsageError:  # 409: the name is taken
                existing = client.get_configmap(namespace, cm_name)
                if ((existing.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
                    raise UsageError(
                        problem=f"ConfigMap {namespace}/{cm_name} exists and is not tfjob's; the job's packages need that name",
                        fix=f"pick another {{name}}, or delete it (kubectl delete configmap {cm_name} -n {namespace})",
                    ) from None
                client.delete_configmap(namespace, cm_name)
                client.create_configmap(namespace, configmap)
        except BaseException:
            try:
                self._delete(client, namespace, name)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            raise

    def _fetch(self, job_id: str, record: JobRecord | None) -> JobStatus | None:
        """The job's state from its object's conditions, with a task per pod (None: the object
        is gone from the cluster; ``status`` then keeps an end the store saw, else LOST).

        A FAILED status names the failed task and carries its last log lines
        (``extra["log_tail"]``); a job ``tfjob cancel`` deleted stays CANCELLED while its
        object lingers.
        """
        if record is not None and record.extra.get("kind") == "study":
            from .tuning import study_status

            return study_status(record)
        namespace, name = self._place(job_id, record)
        client = self._client_for(record)
        try:
            namespace = namespace or client.namespace
            full_id = f"{namespace}/{name}"
            try:
                tfjob = self._get(client, namespace, name)
            except JobNotFoundError:
                if record is None:
                    raise
                return None
            pods = client.list_pods(namespace, self._selector(name))
            status = self._status(full_id, tfjob, pods)
            if record is not None and record.state is JobState.CANCELLED:
                # Deleted by `tfjob cancel`: the object may linger while its pods go.
                status.state, status.message = JobState.CANCELLED, record.message
            if status.state is JobState.FAILED and status.failed_task:
                status.extra["log_tail"] = self._log_tail(client, namespace, pods, status.failed_task)
        finally:
            client.close()
        return status

    @staticmethod
    def _log_tail(client: KubeClient, namespace: str, pods: list[dict[str, Any]], task: str) -> str:
        for pod in pods:
            if pod_task_name(pod) == task:
                try:
                    return client.read_log(namespace, object_name(pod), CONTAINER_NAME, tail=LOG_TAIL_LINES)
                except (BackendError, UsageError):
                    return ""  # the tail is a courtesy; the failure itself is already known
        return ""

    def _gone(self, record: JobRecord) -> str:
        if record.extra.get("kind") == "study":
            return f"the process that ran the study (pid {record.supervisor_pid}) ended without recording how it ended"
        return (
            f"the {self.kind.name} is no longer on the cluster (deleted outside tfjob, or removed after "
            "ttlSecondsAfterFinished) and its end was not seen"
        )

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines, ``[worker-1] …``, of one task (``worker-1``) or role (``ps``) if given.

        With ``follow``, lines come as they are written until the job ends.

        Raises:
            UsageError: ``task`` is not ROLE or ROLE-INDEX.
            BackendError: no pod has logs (not started yet, or deleted after the end).
        """
        from .logs import follow_logs, read_logs

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
                what = f"task {task} of {self.kind.name}" if task else self.kind.name
                raise BackendError(
                    f"no pods of {what} {namespace}/{name} to read logs from: they are not created yet, or were "
                    f"deleted when the job ended; `tfjob status {namespace}/{name}` shows the job"
                )
        finally:
            client.close()

    def _ended(self, job_id: str, record: JobRecord | None) -> bool:
        """One read of the job object decides (its conditions), without listing its pods as
        :meth:`status` would; a job gone from the cluster has ended if its record says so.

        Raises:
            JobNotFoundError: there is no such job, on the cluster or in the store.
        """
        if record is not None and record.extra.get("kind") == "study":
            return self.status(job_id).state.is_terminal
        namespace, name = self._place(job_id, record)
        client = self._client_for(record)
        try:
            return self._state(client, namespace or client.namespace, name).is_terminal
        except JobNotFoundError:
            if record is None:
                raise
            return record.state.is_terminal  # ended and cleaned up since: left as it ended
        finally:
            client.close()

    def _cancel(self, job_id: str, record: JobRecord | None) -> tuple[JobState, str]:
        """Delete the job object (its pods go with it, then its companions): CANCELLED at once."""
        if record is not None and record.extra.get("kind") == "study":
            return JobState.CANCELLING, "cancel requested: the study deletes its running trials and starts no more"
        namespace, name = self._place(job_id, record)
        client = self._client_for(record)
        try:
            self._delete(client, namespace or client.namespace, name)
        except JobNotFoundError:
            if record is None:
                raise
        finally:
            client.close()
        return JobState.CANCELLED, f"cancelled: the {self.kind.name} was deleted by tfjob cancel"

    # -- tuning (tfjob.backends.base.Tuner): Katib, or trials as jobs of this backend ------------
    study_search = "Optuna, or Katib"

    def render_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None]) -> dict[str, Any]:
        """The study as a Katib ``Experiment`` whose trial template is this backend's job (see
        :mod:`.tuning`); no credentials, nothing sent."""
        from .katib import render_katib

        echo(f"dry run: the study as a Katib Experiment running {self.kind.name} trials (without Katib, tfjob runs the trials itself)")
        return render_katib(self, study, spec, self.typed(options))

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
        """Run the study to its end: as a Katib ``Experiment`` where the cluster serves Katib, else
        each trial a job of this backend (see :mod:`.tuning`)."""
        from .katib import run_kubernetes_study

        return run_kubernetes_study(self, study, spec, self.typed(options), seed=seed, stream=stream)

    def submit_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None] | None = None) -> str:
        """Create the study's Katib ``Experiment`` (the cluster must serve Katib); return its id."""
        from .katib import submit_katib

        return submit_katib(self, study, spec, self.typed(options), echo or self.echo)

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """The TFJobs tfjob created in the current context's namespace, newest first."""
        client = self._connect(None, None)
        try:
            namespace = client.namespace
            tfjobs = client.list(self.kind.resource, namespace, f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
        finally:
            client.close()
        statuses = [self._status(f"{namespace}/{object_name(j)}", j, []) for j in tfjobs]
        statuses.sort(key=lambda s: (s.created or 0.0, s.id), reverse=True)
        return statuses[:limit] if limit is not None else statuses
