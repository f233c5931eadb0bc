"""The job model every layer shares: job and task states, a job's status, and the options a
submission carries. At the bottom: it imports nothing of tfjob, so the store, the clients,
the renderers and the backends all build on it without importing each other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class JobState(str, Enum):
    """The states a job goes through, on every backend."""

    QUEUED = "QUEUED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    #: The process that supervised a local job died without recording an end.
    LOST = "LOST"
    #: Tasks only: stopped by the launcher because the job ended (e.g. parameter servers,
    #: which never exit on their own, after the chief finished), not failed.
    STOPPED = "STOPPED"

    @property
    def is_terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST, JobState.STOPPED)


@dataclass
class TaskStatus:
    """One task of a job (``worker-1``) as last seen."""

    name: str
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    started: float | None = None
    ended: float | None = None
    log_path: str | None = None
    #: Why the task is not running, as its platform says (``Unschedulable: 0/3 nodes are
    #: available: 3 Insufficient cpu``, ``ImagePullBackOff: …``, ``CrashLoopBackOff``).
    reason: str | None = None


@dataclass
class JobStatus:
    """A job as last seen by its backend."""

    id: str
    backend: str
    name: str
    state: JobState
    message: str = ""
    created: float | None = None
    started: float | None = None
    ended: float | None = None
    failed_task: str | None = None
    tasks: list[TaskStatus] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (for ``--json``)."""
        out = {k: v for k, v in self.__dict__.items() if k != "tasks"}
        out["state"] = self.state.value
        out["tasks"] = [{**t.__dict__, "state": t.state.value} for t in self.tasks]
        return out


@dataclass
class SubmitOptions:
    """Where and how to submit, beyond the job description itself.

    Each backend reads the fields it knows and ignores the rest.
    """

    # cloud settings (vertex)
    project: str | None = None
    region: str | None = None
    staging_bucket: str | None = None
    #: The bucket from the environment or $TFJOB_HOME/config.yaml, used after the --job-dir bucket.
    default_staging_bucket: str | None = None
    api_endpoint: str | None = None
    executor_image: str | None = None
    # kubeflow
    namespace: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    #: ``Never``/``OnFailure``/``ExitCode``/``Always``, or a list with ``ROLE=POLICY`` entries.
    restart_policy: Any = None
    #: Explicit resources: ``VALUE`` for every role, ``ROLE=VALUE`` entries, or ``{role: value}``.
    cpu: Any = None
    memory: Any = None
    gpu: Any = None
    #: A YAML pod template (or role → pod template) merged into every replica.
    pod_template: str | None = None
    clean_pod_policy: str | None = None
    backoff_limit: int | None = None
    ttl_seconds_after_finished: int | None = None
    suspend: bool = False
    #: Kueue's LocalQueue (label and runPolicy.schedulingPolicy.queue).
    queue: str | None = None
    priority_class: str | None = None
    min_available: int | None = None
    # local
    dialect: str = "vertex"
    python: str | None = None
    #: ``podman`` or ``docker`` (or a path): what runs ``--image`` tasks locally.
    container_engine: str | None = None
    install: bool = False
    #: What the bootstrap does (tfjob.cluster.dispatch): ``module`` (every task runs the
    #: trainer module, the default), ``parameter-server``, ``auto`` or ``multi-worker``.
    strategy: str = "module"
    #: ``platform`` (TF_CONFIG / CLUSTER_SPEC as the platform writes them) or ``tf2``.
    tf_config: str = "platform"
    grace: float = 5.0
    quiet: bool = False
    detach: bool = False
    #: The hyperparameter-tuning trial this job is (``tfjob tune``): its id goes in every
    #: task's TF_CONFIG / CLUSTER_SPEC task and CLOUD_ML_TRIAL_ID, and its --job-dir is DIR/<trial>.
    trial: str | None = None
    #: Print the job's log lines inline while waiting (vertex; local tasks always stream).
    stream_logs: bool = False
    # all
    wait: bool = True
    cancel_on_interrupt: bool = False
    poll_interval: float | None = None
    dry_run: bool = False
    #: Package files that look like credentials too (each is still named in a warning).
    include_secrets: bool = False
    #: A line for stderr once the backend has accepted the job (checked, not yet
    #: started), e.g. why this backend was chosen; a rejected job prints only its error.
    notice: str | None = None
