"""Pure parsing of TFJob and pod objects (plain dicts, as the API returns them).

The training operator reports a TFJob's progress as conditions (``Created``,
``Running``, ``Restarting``, ``Succeeded``, ``Failed``, ``Suspended``), each with
``status: "True"`` or ``"False"``; :func:`parse_tfjob_state` maps them to
:class:`~tfjob.backends.base.JobState` in one place. Pods carry the labels
``training.kubeflow.org/replica-type`` and ``replica-index``, from which a task is
named ``worker-1`` as everywhere else in tfjob.

Objects come from outside (an API server, a proxy, a controller of another version): a
reader that meets a field of the wrong shape raises :class:`~tfjob.errors.BackendError`
naming what it read, never a ``TypeError`` (:func:`_from_the_api`).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterable, Mapping, TypeVar

from ...results.diagnosis import evaluator_hang
from ...model import JobState, JobStatus, TaskRestart, TaskStatus, normalize_task, parse_time
from ...errors import BackendError, ClusterConfigError, UsageError
from ...cluster.jobset import COMPLETION_INDEX_LABEL, JOBS_VAR, JOBSET_NAME_LABEL, parse_jobs
from ...cluster.jobset import REPLICATED_JOB_LABEL as JOBSET_ROLE_LABEL
from .render import CONTAINER_NAME, JOB_NAME_LABEL, KUEUE_QUEUE_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

_F = TypeVar("_F", bound=Callable[..., Any])


def _from_the_api(what: str) -> Callable[[_F], _F]:
    """A reader of API objects: a field of the wrong shape is a BackendError naming ``what``."""

    def wrap(fn: _F) -> _F:
        @functools.wraps(fn)
        def read(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (ClusterConfigError, UsageError):
                raise  # said on purpose (ClusterConfigError is a ValueError too)
            except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
                raise BackendError(
                    f"the Kubernetes API answered with {what} tfjob cannot read ({type(e).__name__}: {' '.join(str(e).split())[:200]}); "
                    "is the controller one tfjob supports (training operator v1, JobSet v1alpha2, Trainer v2)?"
                ) from e

        return read  # type: ignore[return-value]

    return wrap


#: Our roles in the order tasks are shown; ``master`` is the operator's legacy chief.
_ROLE_ORDER = ("chief", "worker", "ps", "evaluator")
_ROLE_ALIASES = {"chief": "chief", "master": "chief", "worker": "worker", "ps": "ps", "evaluator": "evaluator"}
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_TASK_RE = re.compile(r"^(?P<role>[a-z]+)(?:-(?P<index>\d+))?\Z")
_FAILED_REPLICA_RE = re.compile(r"\b\d+\s+(?P<type>Chief|Master|Worker|PS|Evaluator)\s+replica\(s\) failed", re.I)
_POD_STATES = {
    "Pending": JobState.PENDING,
    "Running": JobState.RUNNING,
    "Succeeded": JobState.SUCCEEDED,
    "Failed": JobState.FAILED,
}


def parse_job_id(job_id: str) -> tuple[str | None, str]:
    """``"ml/census-ps"`` → ``("ml", "census-ps")``; a bare name has no namespace (None).

    Raises:
        UsageError: the id is not ``[NAMESPACE/]NAME`` with Kubernetes names.
    """
    namespace, sep, name = job_id.strip().rpartition("/")
    if not _NAME_RE.match(name) or (sep and not _NAME_RE.match(namespace)):
        raise UsageError(
            f"job id {job_id!r} is not NAMESPACE/NAME of a TFJob (each a DNS label: lower-case letters, digits "
            "and '-'); `tfjob list` shows the known jobs"
        )
    return (namespace or None), name


@_from_the_api("an object without a name")
def object_name(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` of an object the API returned."""
    name = obj["metadata"]["name"]
    if not isinstance(name, str) or not name:
        raise ValueError(f"metadata.name is {name!r}")
    return name


def suspended(obj: Mapping[str, Any], said: str, what: str) -> str:
    """Why a suspended job waits: Kueue has not admitted it (it carries a queue's label), else its own words."""
    queue = ((obj.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE_LABEL)
    if isinstance(queue, str) and queue:
        return f"Kueue has not admitted the {what} yet (LocalQueue {queue[:63]}): its Workload waits for quota in the queue's ClusterQueue"
    return said or f"the {what} is suspended"


@_from_the_api("a TFJob")
def parse_tfjob_state(tfjob: Mapping[str, Any]) -> tuple[JobState, str]:
    """The job state and its message, from a TFJob's conditions.

    Precedence among the conditions that are ``True``: Succeeded, Failed, Restarting
    (still RUNNING: the operator is recreating pods), Running, Suspended (QUEUED),
    Created (PENDING: pods are being scheduled). No condition yet means the operator
    has not seen the job: PENDING. A TFJob being deleted is CANCELLING.
    """
    metadata = tfjob.get("metadata") or {}
    conditions = (tfjob.get("status") or {}).get("conditions") or []
    true = {c.get("type"): c.get("message") or "" for c in conditions if str(c.get("status")) == "True"}
    if "Succeeded" in true:
        return JobState.SUCCEEDED, true["Succeeded"]
    if "Failed" in true:
        return JobState.FAILED, true["Failed"]
    if metadata.get("deletionTimestamp"):
        return JobState.CANCELLING, "the TFJob is being deleted"
    if "Restarting" in true:
        return JobState.RUNNING, f"restarting: {true['Restarting']}".rstrip(": ")
    if "Running" in true:
        return JobState.RUNNING, true["Running"]
    if "Suspended" in true:
        return JobState.QUEUED, suspended(tfjob, true["Suspended"], "TFJob")
    if "Created" in true:
        return JobState.PENDING, true["Created"]
    return JobState.PENDING, "waiting for the training operator to pick the TFJob up"


@_from_the_api("a JobSet or its pods")
def parse_jobset_state(jobset: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> tuple[JobState, str]:
    """The job state and its message, from a JobSet's conditions (and its pods).

    Completed: SUCCEEDED; Failed: FAILED; being deleted: CANCELLING; Suspended: QUEUED;
    else RUNNING once a pod runs, PENDING before (pods being made or scheduled).
    """
    metadata = jobset.get("metadata") or {}
    conditions = (jobset.get("status") or {}).get("conditions") or []
    true = {c.get("type"): c.get("message") or "" for c in conditions if str(c.get("status")) == "True"}
    if "Completed" in true:
        return JobState.SUCCEEDED, true["Completed"] or "the JobSet completed"
    if "Failed" in true:
        return JobState.FAILED, true["Failed"] or "the JobSet failed"
    if metadata.get("deletionTimestamp"):
        return JobState.CANCELLING, "the JobSet is being deleted"
    if "Suspended" in true:
        return JobState.QUEUED, suspended(jobset, true["Suspended"], "JobSet")
    if any((p.get("status") or {}).get("phase") == "Running" for p in pods):
        return JobState.RUNNING, "the JobSet is running"
    return JobState.PENDING, "waiting for the JobSet's pods to be made and scheduled"


@_from_the_api("a TrainJob or its pods")
def parse_trainjob_state(trainjob: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> tuple[JobState, str]:
    """The job state of a Kubeflow Trainer v2 TrainJob: its Complete/Failed/Suspended
    conditions, else its JobSet's pods (RUNNING once one runs)."""
    conditions = (trainjob.get("status") or {}).get("conditions") or []
    true = {c.get("type"): c.get("message") or "" for c in conditions if str(c.get("status")) == "True"}
    if "Complete" in true:
        return JobState.SUCCEEDED, true["Complete"] or "the TrainJob completed"
    if "Failed" in true:
        return JobState.FAILED, true["Failed"] or "the TrainJob failed"
    state, message = parse_jobset_state({"metadata": trainjob.get("metadata") or {}}, pods)
    if "Suspended" in true and state is JobState.PENDING:
        return JobState.QUEUED, suspended(trainjob, true["Suspended"], "TrainJob")
    return state, message.replace("JobSet", "TrainJob")


@_from_the_api("a pod")
def jobset_pod_task_name(pod: Mapping[str, Any]) -> str:
    """``worker-1`` for the pod of index 1 of a JobSet's ``worker`` replicated job (a
    Trainer v2 ``node`` job is named back by the role tfjob rendered it for)."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    index = labels.get(COMPLETION_INDEX_LABEL) or (metadata.get("annotations") or {}).get(COMPLETION_INDEX_LABEL, "0")
    job = labels.get(JOBSET_ROLE_LABEL, "task")
    for container in (pod.get("spec") or {}).get("containers") or []:
        for item in container.get("env") or []:
            if item.get("name") == JOBS_VAR:
                try:
                    renamed = {j: r for r, j in parse_jobs(str(item.get("value", ""))).items()}
                except ClusterConfigError:
                    renamed = {}  # not one tfjob rendered: the job's own name stands
                job = renamed.get(job, job)
    return f"{job}-{index}"


def build_jobset_selector(name: str, task: str | None = None) -> str:
    """The label selector of a JobSet's pods, or of one task's (``worker-1``) or role's (``ps``)."""
    return _selector((JOBSET_NAME_LABEL, JOBSET_ROLE_LABEL, COMPLETION_INDEX_LABEL), name, task)


@_from_the_api("a pod")
def pod_task_name(pod: Mapping[str, Any]) -> str:
    """``worker-1`` for the pod of Worker replica 1 (``chief-0`` for a Master); a JobSet
    pod's from its replicated job and completion index."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if JOBSET_ROLE_LABEL in labels:
        return jobset_pod_task_name(pod)
    role = _ROLE_ALIASES.get(str(labels.get(REPLICA_TYPE_LABEL, "")).lower(), labels.get(REPLICA_TYPE_LABEL, "task"))
    return f"{role}-{labels.get(REPLICA_INDEX_LABEL, '0')}"


def _task_sort_key(name: str) -> tuple[int, int, str]:
    role, _, index = name.rpartition("-")
    order = _ROLE_ORDER.index(role) if role in _ROLE_ORDER else len(_ROLE_ORDER)
    return order, int(index) if index.isascii() and index.isdigit() else 0, name


@_from_the_api("pods")
def sort_pods(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods chief first, then workers, ps and evaluators, each by index."""
    return sorted(pods, key=lambda p: _task_sort_key(pod_task_name(p)))


def _container_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status: Mapping[str, Any]
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == CONTAINER_NAME:
            return status
    return {}


@_from_the_api("a pod")
def pod_restarts(pod: Mapping[str, Any]) -> int:
    """How many times the ``tensorflow`` container of the pod has restarted."""
    return int(_container_status(pod).get("restartCount") or 0)


@_from_the_api("a pod")
def pod_has_logs(pod: Mapping[str, Any]) -> bool:
    """True once the ``tensorflow`` container has started (before that, logs are refused)."""
    state = _container_status(pod).get("state") or {}
    return "running" in state or "terminated" in state or (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")


#: Container waiting reasons worth saying: the pod will not start, or keeps failing, until
#: someone acts (``ContainerCreating`` and ``PodInitializing`` are normal and left out).
STUCK_REASONS = (
    "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull", "CrashLoopBackOff",
    "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
)  # fmt: skip
MAX_REASON_CHARS = 300


@_from_the_api("a pod")
def pod_reason(pod: Mapping[str, Any]) -> str | None:
    """Why a pod is not running, from the scheduler, the kubelet or an eviction; None if
    nothing is wrong (or it is running or done)."""
    status = pod.get("status") or {}

    def said(reason: str, message: str | None) -> str:
        text = f"{reason}: {' '.join(str(message).split())}" if message else reason
        return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"

    if status.get("reason") == "Evicted":
        return said("Evicted", status.get("message"))
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and str(condition.get("status")) == "False":
            return said(condition.get("reason") or "Unschedulable", condition.get("message"))
    container = _container_status(pod)
    waiting = (container.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") in STUCK_REASONS:
        return said(waiting["reason"], waiting.get("message"))
    terminated = (container.get("lastState") or {}).get("terminated") or (container.get("state") or {}).get("terminated") or {}
    if terminated.get("reason") == "OOMKilled":
        return "OOMKilled: the container used more memory than its limit (raise --memory)"
    return None


@_from_the_api("a pod")
def parse_pod_task(pod: Mapping[str, Any]) -> TaskStatus:
    """A pod as a :class:`TaskStatus` (state from its phase, exit code of ``tensorflow``)."""
    status = pod.get("status") or {}
    state = _POD_STATES.get(status.get("phase", ""), JobState.PENDING)
    if (pod.get("metadata") or {}).get("deletionTimestamp") and not state.is_terminal:
        state = JobState.CANCELLING
    container = _container_status(pod)
    terminated = (container.get("state") or {}).get("terminated") or {}
    exit_code = terminated.get("exitCode")
    restarts = pod_restarts(pod)
    last = (container.get("lastState") or {}).get("terminated") or {}
    history = []
    if restarts and last:
        # The kubelet keeps only the last ended run of a restarted container.
        code = last.get("exitCode") if isinstance(last.get("exitCode"), int) else None
        history.append(
            TaskRestart(
                time=parse_time(last.get("finishedAt")) or 0.0,
                exit_code=code,
                signal=code - 128 if code is not None and code > 128 else None,
                reason=str(last.get("reason") or "")[:MAX_REASON_CHARS],
            )
        )
    return TaskStatus(
        name=pod_task_name(pod),
        state=state,
        exit_code=exit_code,
        # A container killed by a signal exits 128 + the signal number.
        signal=exit_code - 128 if isinstance(exit_code, int) and exit_code > 128 else None,
        started=parse_time(status.get("startTime")),
        ended=parse_time(terminated.get("finishedAt")),
        reason=pod_reason(pod),
        restarts=restarts,
        restart_history=history,
    )


@_from_the_api("a job or its pods")
def build_job_status(
    job_id: str, tfjob: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = (), *, backend: str = "kubeflow"
) -> JobStatus:
    """The :class:`JobStatus` of a TFJob and (optionally) its pods.

    ``failed_task`` is the first failed pod's task, else the replica type the
    operator's Failed message names.
    """
    metadata = tfjob.get("metadata") or {}
    status = tfjob.get("status") or {}
    pods = list(pods)
    if backend == "jobset":
        state, message = parse_jobset_state(tfjob, pods)
    elif backend == "trainjob":
        state, message = parse_trainjob_state(tfjob, pods)
    else:
        state, message = parse_tfjob_state(tfjob)
    tasks = [parse_pod_task(p) for p in sort_pods(pods)]
    failed_task = None
    if state is JobState.FAILED:
        failed = [t for t in tasks if t.state is JobState.FAILED]
        if failed:
            failed_task = failed[0].name
        else:
            match = _FAILED_REPLICA_RE.search(message)
            if match:
                failed_task = _ROLE_ALIASES.get(match.group("type").lower())
    extra: dict[str, Any] = {
        "namespace": metadata.get("namespace"),
        "conditions": [c.get("type") for c in status.get("conditions") or [] if str(c.get("status")) == "True"],
    }
    if status.get("replicaStatuses"):
        extra["replica_statuses"] = status["replicaStatuses"]
    stuck = [t for t in tasks if t.reason]
    if stuck and not state.is_terminal:
        # Why is it Pending? The first stuck task says, and how many others are.
        others = f" (and {len(stuck) - 1} more task{'s' if len(stuck) > 2 else ''})" if len(stuck) > 1 else ""
        extra["waiting"] = f"{stuck[0].name} {stuck[0].reason}{others}"
    failed_exit = next((t.exit_code for t in tasks if t.name == failed_task), None)
    if failed_exit is not None:
        extra["task_exit_code"] = failed_exit
    job = JobStatus(
        id=job_id,
        backend=backend,
        name=metadata.get("name", job_id.rpartition("/")[2]),
        state=state,
        message=message,
        created=parse_time(metadata.get("creationTimestamp")),
        started=parse_time(status.get("startTime")),
        ended=parse_time(status.get("completionTime")),
        failed_task=failed_task,
        tasks=tasks,
        extra=extra,
    )
    if "waiting" not in extra:
        # Kubeflow's TF_CONFIG puts evaluators in the cluster: a parameter-server chief can wait
        # for one that has ended. Said as why the job waits, so the follow loop says it once.
        hang = evaluator_hang(job)
        if hang is not None:
            extra["waiting"] = f"{hang.task} {hang.cause}; fix: {hang.fix}"
    return job


def build_pod_selector(job_name: str, task: str | None = None) -> str:
    """The label selector of a job's pods, or of one task's (``worker-1``) or role's (``ps``).

    Raises:
        UsageError: ``task`` is not ROLE or ROLE-INDEX.
    """
    return _selector((JOB_NAME_LABEL, REPLICA_TYPE_LABEL, REPLICA_INDEX_LABEL), job_name, task)


def _selector(labels: tuple[str, str, str], name: str, task: str | None) -> str:
    """``name_label=name[,role_label=ROLE[,index_label=INDEX]]`` for a job, a role or a task."""
    name_label, role_label, index_label = labels
    selector = [f"{name_label}={name}"]
    if task is not None:
        role, index = parse_task(task)
        selector.append(f"{role_label}={role}")
        if index is not None:
            selector.append(f"{index_label}={index}")
    return ",".join(selector)


def parse_task(task: str) -> tuple[str, int | None]:
    """``worker-1`` → ("worker", 1), ``ps`` → ("ps", None) (``master`` is the chief).

    Raises:
        UsageError: ``task`` is not ROLE or ROLE-INDEX.
    """
    match = _TASK_RE.match(normalize_task(task))
    role = _ROLE_ALIASES.get(match.group("role")) if match else None
    if role is None or match is None:
        raise UsageError(
            field="task",
            value=task,
            problem="is not a task",
            fix=f"write ROLE or ROLE-INDEX with ROLE one of {', '.join(_ROLE_ORDER)} (e.g. worker-1)",
        )
    return role, (int(match.group("index")) if match.group("index") is not None else None)
