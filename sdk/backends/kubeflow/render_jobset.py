"""JobSpec → JobSet (jobset.x-k8s.io/v1alpha2): the engine under Kubeflow Trainer v2 and GKE.

Pure functions, no I/O. One replicated job per role (``chief``, ``worker``, ``ps``,
``evaluator``), each a single Indexed Job of as many pods as the role has tasks, with DNS
hostnames on, so task ``worker-1`` of JobSet ``census`` is the pod
``census-worker-0-1.census``. Every pod starts through the tfjob bootstrap, which derives
from the JobSet's variables (:mod:`tfjob.cluster.jobset`) the ``TF_CONFIG`` the Kubeflow
TFJob operator would have written for the same job: a trainer sees the same variable here,
on Kubeflow, on Vertex AI and locally.

What the JobSet does with it (JobSet v0.12):

- the job succeeds when the chief's Job completes (``successPolicy``: the ``chief``
  replicated job, or ``worker`` for a job without a chief); the JobSet then ends the Jobs
  still running (the parameter servers, which never exit by themselves);
- any task failing fails its Job (``backoffLimit: 0``, pods ``restartPolicy: Never``), and
  the JobSet restarts the whole set up to ``failurePolicy.maxRestarts`` times (3, or
  ``--max-restarts``; a parameter-server cluster restarts together), then fails; a role's
  ``--restart-policy`` OnFailure restarts its pods in place (``restartPolicy: OnFailure``)
  and ExitCode makes a pod again at its index unless it exited 1–127
  (``podFailurePolicy``), both up to ``--backoff-limit`` per Job;
- pods carry the labels ``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name`` and
  ``job-index``, and the Job controller's ``batch.kubernetes.io/job-completion-index``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from ...cluster.jobset import (
    JOB_INDEX_LABEL,
    JOB_INDEX_VAR,
    JOBSET_NAME_LABEL,
    JOBSET_NAME_VAR,
    PORT_VAR,
    REPLICATED_JOB_LABEL,
    REPLICATED_JOB_VAR,
    ROLES_VAR,
    render_roles,
)
from ...errors import SpecError, Word
from ...model import options_as
from ...description.spec import JobSpec, Pool
from .options import KubernetesOptions, TFJobOptions
from .render import (
    CONTAINER_NAME,
    DEFAULT_BACKOFF_LIMIT,
    DEFAULT_TTL_SECONDS,
    KUEUE_QUEUE_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    PORT,
    _check_spec,
    _whole,
    check_k8s_name,
    check_name_room,
    render_container,
    render_pod_template,
)

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "JobSet"
PLURAL = "jobsets"


def _hostname_suffix(spec: JobSpec) -> str:
    # The longest pod hostname decides: `{jobset}-{role}-0-{index}`.
    return max((f"-{pool.role}-0-{pool.replicas - 1}" for pool in spec.pools), key=len)


def _downward(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def render_jobset(spec: JobSpec, options: Any = None, backend: str = "jobset") -> dict[str, Any]:
    """The JobSet manifest for ``spec``.

    Args:
        spec: the job (run from ``--image``, as on Kubeflow).
        options: a :class:`~tfjob.backends.base.SubmitOptions`: ``namespace``,
            ``strategy``, ``tf_config``, the pod options (``cpu``, ``memory``, ``gpu``,
            ``pod_template``) and the run policy (``max_restarts``, else ``backoff_limit``, as
            the JobSet's ``maxRestarts``, ``ttl_seconds_after_finished``, ``suspend``, ``queue``).
        backend: the backend an error names (``jobset``; ``trainjob`` for a TrainJob's runtime).

    Raises:
        SpecError: the job cannot run as a JobSet (no image, a name Kubernetes refuses…).
    """
    from ...description.restarts import policy_for
    from .pod import known_roles, load_pod_template, parse_role_values

    options = options_as(KubernetesOptions, options)
    _check_spec(spec, options, backend)
    check_name_room(spec.name, _hostname_suffix(spec), "pods' hostnames")
    policies = _restart_policies(options)
    backoff = _whole(options.backoff_limit, "backoff_limit", DEFAULT_BACKOFF_LIMIT)
    templates = load_pod_template(options.pod_template) if options.pod_template else {}
    known_roles(
        [templates, *(parse_role_values(v, n) for n, v in (("cpu", options.cpu), ("memory", options.memory), ("gpu", options.gpu)))],
        [p.role for p in spec.pools],
        "{pod_template}, {cpu}, {memory} or {gpu}",
    )
    counts = {pool.role: pool.replicas for pool in spec.pools}
    cluster_env = [
        _downward(JOBSET_NAME_VAR, JOBSET_NAME_LABEL),
        _downward(REPLICATED_JOB_VAR, REPLICATED_JOB_LABEL),
        _downward(JOB_INDEX_VAR, JOB_INDEX_LABEL),
        {"name": ROLES_VAR, "value": render_roles(counts)},
        {"name": PORT_VAR, "value": str(PORT)},
    ]
    replicated: list[dict[str, Any]] = []
    for pool in spec.pools:
        job_spec = _replicated_job_spec(spec, pool, options, cluster_env, templates, policy_for(policies, pool.role, "Never"), backoff)
        replicated.append({"name": pool.role, "replicas": 1, "template": {"spec": job_spec}})
    metadata: dict[str, Any] = {"name": spec.name}
    namespace = options.namespace
    if namespace:
        check_k8s_name(namespace, field="namespace")
        metadata["namespace"] = namespace
    metadata["labels"] = job_labels(spec, options)
    body: dict[str, Any] = {
        "network": {"enableDNSHostnames": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": ["chief" if spec.has_chief else "worker"]},
        "failurePolicy": {"maxRestarts": _whole(options.max_restarts, "max_restarts", backoff)},
        "replicatedJobs": replicated,
        "ttlSecondsAfterFinished": _whole(options.ttl_seconds_after_finished, "ttl_seconds_after_finished", DEFAULT_TTL_SECONDS),
    }
    if options.suspend:
        body["suspend"] = True
    if spec.timeout is not None:
        for job in replicated:  # each Job's deadline: the JobSet has none of its own
            job["template"]["spec"]["activeDeadlineSeconds"] = int(math.ceil(spec.timeout))
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": body}


def _restart_policies(options: KubernetesOptions) -> dict[str, str]:
    """The pods' restart policies by role, checked: a JobSet takes no TFJob run policy, and no Always."""
    from ...description.restarts import parse_policies

    if isinstance(options, TFJobOptions):
        given = {
            "clean_pod_policy": options.clean_pod_policy,
            "priority_class": options.priority_class,
            "min_available": options.min_available,
        }
        for name, value in given.items():
            if value is not None:
                raise SpecError(field=name, problem="is a TFJob run policy; a JobSet has none", fix="use {backend=kubeflow}")
    policies = parse_policies(options.restart_policy)
    if "Always" in policies.values():
        raise SpecError(
            field="restart_policy",
            value=Word("Always"),
            problem=": the pods of a JobSet's Jobs may only restart Never or OnFailure (Kubernetes)",
            fix="use {backend=kubeflow} for Always",
        )
    return policies


def _replicated_job_spec(
    spec: JobSpec,
    pool: Pool,
    options: KubernetesOptions,
    cluster_env: list[dict[str, Any]],
    templates: dict[str, dict[str, Any]],
    policy: str,
    backoff: int,
) -> dict[str, Any]:
    """The indexed Job of one pool: its pods (the cluster's variables first), and how a failed pod ends it."""
    clash = sorted(set(spec.env_for(pool.role)) & {str(e["name"]) for e in cluster_env})
    if clash:
        raise SpecError(
            field="env",
            value=Word(clash[0]),
            problem="is set by tfjob in every JobSet pod (the bootstrap derives the cluster from it)",
            fix="choose another name",
        )
    container = render_container(spec, pool, options)
    container["env"] = [*copy.deepcopy(cluster_env), *container.get("env", [])]
    template = render_pod_template(
        spec, pool, container, templates, options, restartPolicy="OnFailure" if policy == "OnFailure" else "Never"
    )
    job_spec: dict[str, Any] = {
        "parallelism": pool.replicas,
        "completions": pool.replicas,
        "completionMode": "Indexed",
        # Never: a failed pod fails its Job, and the JobSet restarts the whole set.
        "backoffLimit": 0 if policy == "Never" else backoff,
        "template": template,
    }
    if policy == "ExitCode":
        # Kubeflow's ExitCode: 1–127 is the program's own error (the Job fails); a pod killed
        # by a signal or ended 128–255 is made again at its index (the same host name).
        job_spec["podFailurePolicy"] = {
            "rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER_NAME, "operator": "In", "values": list(range(1, 128))}}
            ]
        }
    return job_spec


def job_labels(spec: JobSpec, options: KubernetesOptions) -> dict[str, str]:
    """The labels of the job's object: the user's, tfjob's own, and Kueue's queue if given."""
    labels = {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    queue = options.queue
    if queue:
        labels[KUEUE_QUEUE_LABEL] = queue
    return labels
