"""JobSpec → Kubeflow ``TFJob`` (kubeflow.org/v1) manifest, and the operator's admission rules.

Pure functions, no I/O and no ``kubernetes`` import: :func:`render_tfjob` builds the
manifest ``tfjob render --backend kubeflow`` prints and the backend creates;
:func:`validate_tfjob` applies the rules the training operator's validating webhook
enforces, so a manifest it would refuse is refused here, before anything is sent.

What the operator does with the manifest (training-operator 1.9) shapes it:

- one pod per replica, named ``{job}-{type}-{index}`` and labelled
  ``training.kubeflow.org/job-name`` / ``replica-type`` / ``replica-index``;
- ``TF_CONFIG`` in every pod lists each task as ``{job}-{type}-{i}.{ns}.svc:PORT``,
  where PORT is the container port named ``tfjob-port`` (2222 by default), so the
  headless service names must be valid DNS-1035 labels too;
- the job succeeds when the Chief succeeds; with ``cleanPodPolicy: Running`` the
  parameter servers (which never exit) are deleted then, finished pods are kept for logs.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from ...cluster.dispatch import bootstrap_args, job_strategy
from ...errors import SpecError, Word
from ...description.machines import did_you_mean, machine_info, tpu_chips
from ...model import options_as
from ...description.spec import JobSpec, Pool
from .options import KubernetesOptions, TFJobOptions
from ...description.restarts import POLICIES

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TFJob"
PLURAL = "tfjobs"

#: The container the operator looks for in every replica (it injects TF_CONFIG there).
CONTAINER_NAME = "tensorflow"
#: The port name the operator reads the cluster port from, and its default.
PORT_NAME = "tfjob-port"
PORT = 2222

#: Our role → the operator's replica type (the key of ``tfReplicaSpecs``).
REPLICA_TYPES: dict[str, str] = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
#: Every replica type the TFJob controller knows (``Master`` is the legacy chief).
VALID_REPLICA_TYPES: tuple[str, ...] = ("Chief", "Master", "Worker", "PS", "Evaluator")
#: ``restartPolicy`` values of a replica spec.
RESTART_POLICIES: tuple[str, ...] = POLICIES  # tfjob.description.restarts: the same meaning on every backend
#: ``runPolicy.cleanPodPolicy`` values.
CLEAN_POD_POLICIES: tuple[str, ...] = ("None", "Running", "All")
#: ``runPolicy.managedBy`` values the webhook accepts.
MANAGED_BY: tuple[str, ...] = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")

# ExitCode restarts a pod whose container died of a signal (exit 128+: preemption,
# eviction, OOM kill) and fails the job on an ordinary error exit (1-127): a bug in the
# trainer fails fast, as it does locally, while a lost node does not end the job.
DEFAULT_RESTART_POLICY = "ExitCode"
DEFAULT_BACKOFF_LIMIT = 3
# Running: when the chief ends, delete the pods still running (parameter servers never
# exit by themselves) and keep the finished ones, so `tfjob logs` still reads them.
DEFAULT_CLEAN_POD_POLICY = "Running"
# A finished TFJob (with its pods) is garbage-collected after a week.
DEFAULT_TTL_SECONDS = 7 * 24 * 3600

#: Kueue's queue label (a TFJob is admitted by Kueue when it carries it) and GKE's GPU node label.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
#: Label put on every TFJob tfjob creates; ``tfjob list`` selects on it.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "tfjob"
#: The labels the operator puts on each pod.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"

MAX_NAME_LENGTH = 63
_DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_VALUE_RE = re.compile(r"^([a-z0-9]([-a-z0-9_.]*[a-z0-9])?)?\Z")


def suggest_k8s_name(name: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """The closest valid DNS-1035 label to ``name`` (``My_Job.v2`` → ``my-job-v2``)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", name.lower())
    stem = re.sub(r"-{2,}", "-", stem).strip("-")
    if not stem or not stem[0].isalpha():
        stem = "job-" + stem if stem else "job"
    return stem[:max_length].rstrip("-")


def check_k8s_name(name: str, field: str = "name", max_length: int = MAX_NAME_LENGTH, suggest_length: int | None = None) -> None:
    """Raise SpecError unless ``name`` (knob ``field``) is a DNS-1035 label of at most ``max_length`` characters.

    The message suggests a valid name (of at most ``suggest_length`` characters).
    """
    if len(name) <= max_length and _DNS1035_RE.match(name):
        return
    why = (
        f"has {len(name)} characters (at most {max_length})"
        if len(name) > max_length
        else "is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter, not ending with '-')"
    )
    raise SpecError(
        field=field,
        value=name,
        problem=f"{why}, as Kubernetes requires for a TFJob",
        fix=f"use {{{field}={suggest_k8s_name(name, suggest_length or max_length)}}}",
    )


def _longest_service_suffix(spec: JobSpec) -> str:
    # The operator names a service per task `{job}-{type}-{index}`; the longest decides.
    return max((f"-{pool.role}-{pool.replicas - 1}" for pool in spec.pools), key=len)


def check_restart_policy(value: str | None) -> str:
    """``--restart-policy`` in the operator's spelling (any case accepted); default ExitCode."""
    if value is None:
        return DEFAULT_RESTART_POLICY
    for policy in RESTART_POLICIES:
        if value.strip().lower() == policy.lower():
            return policy
    raise SpecError(
        field="restart_policy",
        value=value,
        problem=f"is not a restart policy{did_you_mean(value, RESTART_POLICIES)}",
        fix=f"choose one of {', '.join(RESTART_POLICIES)}",
    )


def render_resources(pool: Pool, explicit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Requests and limits of one replica: ``explicit`` amounts (``--cpu``/``--memory``/``--gpu``)
    where given, the rest from its machine type.

    CPU and memory are the machine's (memory in MiB, as Compute Engine's "GB" are
    GiB); GPUs become ``nvidia.com/gpu`` limits. Requests equal limits, so every task
    gets the whole machine it asked for (Guaranteed QoS), as on Vertex AI.

    Raises:
        SpecError: the pool asks for a Cloud TPU, which a TFJob cannot schedule.
    """
    explicit = dict(explicit or {})
    if pool.resources is not None:
        return _asked_resources(pool, explicit)
    acc = pool.machine.accelerator
    if acc is not None and acc.type.startswith("TPU_"):
        raise SpecError(
            problem=f"the {pool.role} pool asks for {acc.type} on {pool.machine.type}: Cloud TPUs cannot run in a Kubeflow TFJob",
            fix="use {backend=vertex} for TPUs, or a GPU accelerator (type=NVIDIA_TESLA_T4,count=1)",
        )
    amounts: dict[str, Any] = {k: explicit[k] for k in ("cpu", "memory") if k in explicit}
    if len(amounts) < 2:  # what --cpu/--memory leave out comes from the machine type
        info = machine_info(pool.machine.type)
        if info is None or not info.vcpus or tpu_chips(pool.machine.type) is not None:
            raise SpecError(
                field=f"{pool.role}_machine_type",
                value=Word(pool.machine.type),
                problem="has no CPU and memory tfjob knows, or is a TPU VM: a Kubeflow pod needs them",
                fix="choose a listed type (`tfjob machines`), or give {cpu} and {memory}",
            )
        amounts = {"cpu": str(info.vcpus), "memory": f"{int(round(info.memory_gb * 1024))}Mi", **amounts}
    resources: dict[str, Any] = {"requests": dict(amounts), "limits": dict(amounts)}
    gpus = explicit.get("nvidia.com/gpu", acc.count if acc is not None else None)
    if gpus:
        # Extended resources are given as limits; Kubernetes sets the request equal.
        resources["limits"]["nvidia.com/gpu"] = gpus
    return resources


def _asked_resources(pool: Pool, explicit: dict[str, Any]) -> dict[str, Any]:
    """Requests and limits of a replica that asked for :class:`tfjob.description.resources.Resources`: its
    CPUs and memory as Kubernetes quantities (``--cpu``/``--memory`` over them), requests equal
    to limits, and its accelerator as an extended resource (``nvidia.com/gpu``, ``google.com/tpu``)."""
    from ...description.resources import cpu_quantity, kubernetes_accelerator

    asked = pool.resources
    assert asked is not None
    amounts: dict[str, Any] = {}
    if asked.cpu is not None:
        amounts["cpu"] = cpu_quantity(asked.cpu)
    if asked.memory is not None:
        amounts["memory"] = asked.memory.strip()
    amounts.update({k: explicit[k] for k in ("cpu", "memory") if k in explicit})
    resources: dict[str, Any] = {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {"limits": {}}
    if asked.gpu is not None:
        name, _ = kubernetes_accelerator(asked.gpu, f"{pool.role}_resources")
        resources["limits"][name] = asked.gpu.count
    if "nvidia.com/gpu" in explicit:
        resources["limits"]["nvidia.com/gpu"] = explicit["nvidia.com/gpu"]
    if not resources["limits"]:
        del resources["limits"]
    return resources


def render_container(spec: JobSpec, pool: Pool, options: KubernetesOptions) -> dict[str, Any]:
    """The ``tensorflow`` container of one replica type."""
    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": spec.image_for(pool.role)}
    if spec.module is not None or spec.script is not None:
        # Every task starts through the bootstrap with the arguments every backend gives it
        # (tfjob.cluster.dispatch); the operator passes no --job-dir, so neither does tfjob.
        strategy = job_strategy(spec, options.strategy)
        container["command"] = ["tfjob-bootstrap"]
        container["args"] = bootstrap_args(
            spec.module,
            spec.args_for(pool.role),
            strategy=strategy,
            dialect="kubeflow",
            tf_config=options.tf_config or "platform",
            script=spec.script,
        )
    else:
        # A custom container keeps its own entrypoint (unless --command replaces it); the args replace its CMD.
        if spec.command:
            container["command"] = list(spec.command)
        if spec.args_for(pool.role):
            container["args"] = list(spec.args_for(pool.role))
    from .pod import kubelet_literal, parse_role_values, role_resources

    for key in ("command", "args"):
        if key in container:
            container[key] = [kubelet_literal(arg) for arg in container[key]]
    env = spec.env_for(pool.role)
    if env:
        container["env"] = [{"name": k, "value": str(v)} for k, v in sorted(env.items())]
    container["ports"] = [{"name": PORT_NAME, "containerPort": PORT}]

    explicit = role_resources(
        pool.role,
        *(parse_role_values(value, name) for name, value in (("cpu", options.cpu), ("memory", options.memory), ("gpu", options.gpu))),
    )
    container["resources"] = render_resources(pool, explicit)
    if not container["resources"]:
        del container["resources"]
    return container


def check_name_room(name: str, suffix: str, what: str) -> None:
    """``name`` is a DNS-1035 label that still is one with ``suffix`` (a task's service or
    pod hostname) appended; else one error naming the longest and a shorter name."""
    room = MAX_NAME_LENGTH - len(suffix)
    check_k8s_name(name, suggest_length=room)
    if len(name) > room:
        raise SpecError(
            field="name",
            value=name,
            problem=f"is too long for its {what} ({name}{suffix} has {len(name) + len(suffix)} characters, Kubernetes allows {MAX_NAME_LENGTH})",
            fix=f"use {{name={suggest_k8s_name(name, room)}}}",
        )


def _check_spec(spec: JobSpec, options: KubernetesOptions, backend: str = "kubeflow") -> None:
    check_name_room(spec.name, _longest_service_suffix(spec), "task services")
    missing = [pool.role for pool in spec.pools if not spec.image_for(pool.role)]
    if missing:
        pools = f"{' and '.join(missing)} pool{'s have' if len(missing) > 1 else ' has'}"
        raise SpecError(
            field="backend",
            value=Word(backend),
            problem=f"runs container images, and the {pools} none: pass {{image}} (a trainer image built FROM the tfjob base image, or the base image itself with PACKAGE_PATH)",
        )
    if spec.package or spec.packages:
        what = "PACKAGE_PATH" if spec.package else "{packages}"
        raise SpecError(
            problem=f"the manifest alone cannot ship {what}: the Kubernetes backends do (tfjob render/submit --backend "
            "kubeflow puts the packages in a ConfigMap the pods install from)"
        )
    if spec.service_account and not (len(spec.service_account) <= 253 and _DNS1123_SUBDOMAIN_RE.match(spec.service_account)):
        raise SpecError(
            field="service_account",
            value=spec.service_account,
            problem="is not a Kubernetes service account name",
            fix="on Kubeflow give the name of a ServiceAccount in the namespace (e.g. trainer), not a Google account e-mail",
        )
    from ...description.spec import is_kubernetes_label_key
    from .pod import reserved_label

    for key, value in spec.labels.items():
        if reserved_label(key):
            raise SpecError(f"label {key!r} is set by the operator or the Job controller on the job's objects and pods; choose another key")
        if is_kubernetes_label_key(key):
            continue  # a prefixed Kubernetes key, checked with its value by the spec
        # Vertex takes a trailing '-' or '_'; Kubernetes wants both ends alphanumeric.
        if not _LABEL_VALUE_RE.match(key) or not _LABEL_VALUE_RE.match(value):
            raise SpecError(
                f"label {key}={value!r} is not valid on Kubernetes: keys and values must start and end with a "
                f"letter or digit; use {suggest_k8s_name(key)}={value.strip('-_')}"
            )
    check_queue(options.queue)
    job_strategy(spec, options.strategy)


def check_queue(queue: Any) -> None:
    """``--queue``: a Kueue LocalQueue (or scheduler queue) name, the value of a label."""
    if queue is None or queue == "":
        return
    if not isinstance(queue, str) or len(queue) > 63 or not _DNS1123_SUBDOMAIN_RE.match(queue):
        raise SpecError(
            field="queue",
            value=queue,
            problem="is not a queue name: a LocalQueue's name, lower-case letters, digits, '-' and '.', at most 63 characters",
        )


def render_tfjob(spec: JobSpec, options: Any = None) -> dict[str, Any]:
    """The TFJob manifest for ``spec``.

    Args:
        spec: the job.
        options: a :class:`~tfjob.backends.base.SubmitOptions` (``namespace``,
            ``restart_policy`` and ``strategy`` are read); None for the defaults.

    Returns:
        A JSON-able dict, already checked by :func:`validate_tfjob`.

    Raises:
        SpecError: the job cannot run as a TFJob (no image, a name Kubernetes refuses,
            a TPU, a trainer package to ship); the message says what to change.
        UsageError: a bad ``--restart-policy`` or ``--strategy``.
    """
    options = options_as(TFJobOptions, options)
    _check_spec(spec, options)
    from .pod import parse_role_values

    restart_policy = check_restart_policy(parse_role_values(options.restart_policy, "restart_policy").get("default"))
    labels = {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    metadata: dict[str, Any] = {"name": spec.name}
    namespace = options.namespace
    if namespace:
        check_k8s_name(namespace, field="namespace")
        metadata["namespace"] = namespace
    metadata["labels"] = labels

    from .pod import known_roles, load_pod_template, parse_role_values

    templates = load_pod_template(options.pod_template) if options.pod_template else {}
    policies = parse_role_values(options.restart_policy, "restart_policy")
    known_roles(
        [
            templates,
            policies,
            *(parse_role_values(v, n) for n, v in (("cpu", options.cpu), ("memory", options.memory), ("gpu", options.gpu))),
        ],
        [p.role for p in spec.pools],
        "{pod_template}, {restart_policy}, {cpu}, {memory} or {gpu}",
    )
    replica_specs: dict[str, Any] = {}
    for pool in spec.pools:
        template = render_pod_template(spec, pool, render_container(spec, pool, options), templates, options)
        policy = policies.get(pool.role, policies.get("default"))
        replica_specs[REPLICA_TYPES[pool.role]] = {
            "replicas": pool.replicas,
            "restartPolicy": check_restart_policy(policy) if policy is not None else restart_policy,
            "template": template,
        }

    run_policy = render_run_policy(spec, options)
    queue = options.queue
    if queue:
        labels[KUEUE_QUEUE_LABEL] = queue
    manifest = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {"runPolicy": run_policy, "tfReplicaSpecs": replica_specs},
    }
    validate_tfjob(manifest)
    return manifest


#: The kinds of cluster ``cluster_kind`` names: GKE picks an accelerator's nodes by its node
#: labels; elsewhere the accelerator's extended resource alone places the pod.
CLUSTER_KINDS: tuple[str, ...] = ("gke", "generic")


def cluster_kind(options: KubernetesOptions | None) -> str:
    """The job's ``cluster_kind`` (default ``gke``), checked."""
    kind = (options.cluster_kind if options is not None else None) or "gke"
    if kind not in CLUSTER_KINDS:
        raise SpecError(
            field="cluster_kind", value=kind, problem=f"is not known{did_you_mean(str(kind), CLUSTER_KINDS)}", fix="choose gke or generic"
        )
    return str(kind)


def render_pod_template(
    spec: JobSpec, pool: Pool, container: dict[str, Any], templates: Mapping[str, Any], options: KubernetesOptions | None = None, **pod: Any
) -> dict[str, Any]:
    """One role's pod template: its ``tensorflow`` container, the service account, the
    accelerator's node selector (a GKE cluster's, :func:`cluster_kind`), the job's labels, then
    the user's ``--pod-template`` merged in; ``pod`` adds fields of the pod spec (a JobSet's
    ``restartPolicy``)."""
    from .pod import apply_template, gke_accelerator_label

    kind = cluster_kind(options)
    pod_spec: dict[str, Any] = {**pod, "containers": [container]}
    if spec.service_account:
        pod_spec["serviceAccountName"] = spec.service_account
    if pool.resources is not None:
        # The accelerator's node is a choice only a GKE cluster labels its nodes for.
        if pool.resources.gpu is not None and kind == "gke":
            from ...description.resources import kubernetes_accelerator

            pod_spec["nodeSelector"] = kubernetes_accelerator(pool.resources.gpu, f"{pool.role}_resources")[1]
    elif pool.machine.accelerator is not None and pool.machine.accelerator.type.startswith("NVIDIA_"):
        # The GPU type is a node choice: GKE labels its GPU nodes with it.
        if kind == "gke":
            pod_spec["nodeSelector"] = {GKE_ACCELERATOR_LABEL: gke_accelerator_label(pool.machine.accelerator.type)}
    template: dict[str, Any] = {"spec": pod_spec}
    if spec.labels:
        template = {"metadata": {"labels": dict(spec.labels)}, **template}
    template = apply_template(template, templates, pool.role)
    if templates.get("default") or templates.get(pool.role):
        from .podschema import check_pod_template

        source = getattr(templates, "source", "")
        check_pod_template(template, f"--pod-template {repr(source) + ' ' if source else ''}({pool.role} pods)")
    if spec.job_dir and "://" not in spec.job_dir:
        _job_dir_volume(spec.job_dir, template["spec"], pool.role)
    return template


#: The tfjob base image's user and group (``tfjob``, uid/gid 1000).
IMAGE_GID = 1000


def _job_dir_volume(job_dir: str, pod_spec: dict[str, Any], role: str) -> None:
    """A path ``--job-dir`` on Kubernetes: a volume every pod mounts, writable by the image's user.

    Each pod has its own filesystem, so a job dir that no volume holds would be a private
    directory per pod (the workers could not read what the chief wrote) that uid 1000
    cannot even create. The volume comes from ``--pod-template``; ``securityContext.fsGroup``
    (the base image's gid) makes Kubernetes give it to that user, unless the template sets one.
    """
    if not job_dir.startswith("/"):
        raise SpecError(
            field="job_dir",
            value=Word(job_dir),
            problem=": on Kubernetes the job dir is a path in every pod",
            fix="give an absolute path on a shared volume (e.g. /job) or gs://BUCKET/PATH",
        )
    target = job_dir.rstrip("/") or "/"
    mounts = [
        m.get("mountPath", "").rstrip("/") or "/"
        for c in pod_spec.get("containers", [])
        if c.get("name") in (CONTAINER_NAME, "node")
        for m in c.get("volumeMounts") or []
    ]
    if not any(target == m or target.startswith(m.rstrip("/") + "/") for m in mounts if m != "/"):
        raise SpecError(
            field="job_dir",
            value=Word(job_dir),
            problem=f": no volume is mounted there in the {role} pods, so each pod would write its own filesystem and the others could not read it",
            fix=f"mount a shared volume (a ReadWriteMany PersistentVolumeClaim) at {target} with {{pod_template}} (volumes and volumeMounts), "
            "or give {job_dir=gs://BUCKET/PATH}",
        )
    security = pod_spec.setdefault("securityContext", {})
    security.setdefault("fsGroup", IMAGE_GID)


def render_run_policy(spec: JobSpec, options: TFJobOptions) -> dict[str, Any]:
    """``runPolicy``: tfjob's defaults, or the ``--clean-pod-policy``, ``--backoff-limit``,
    ``--ttl``, ``--suspend``, ``--queue``, ``--priority-class``, ``--min-available`` given."""
    clean = options.clean_pod_policy
    if clean is not None:
        match = [p for p in CLEAN_POD_POLICIES if p.lower() == str(clean).strip().lower()]
        if not match:
            raise SpecError(
                field="clean_pod_policy",
                value=clean,
                problem=f"is not one of {', '.join(CLEAN_POD_POLICIES)}{did_you_mean(str(clean), CLEAN_POD_POLICIES)}",
            )
        clean = match[0]
    if options.max_restarts is not None:
        raise SpecError(
            field="max_restarts",
            problem=": a TFJob restarts its replicas ({restart_policy}, up to {backoff_limit}), not the whole job",
            fix="{backend=jobset} restarts the whole set (failurePolicy.maxRestarts)",
        )
    run_policy: dict[str, Any] = {
        "cleanPodPolicy": clean or DEFAULT_CLEAN_POD_POLICY,
        "backoffLimit": _whole(options.backoff_limit, "backoff_limit", DEFAULT_BACKOFF_LIMIT),
        "ttlSecondsAfterFinished": _whole(options.ttl_seconds_after_finished, "ttl_seconds_after_finished", DEFAULT_TTL_SECONDS),
    }
    if spec.timeout is not None:
        run_policy["activeDeadlineSeconds"] = int(math.ceil(spec.timeout))
    if options.suspend:
        run_policy["suspend"] = True
    scheduling: dict[str, Any] = {}
    queue = options.queue
    if queue:
        check_queue(queue)
        scheduling["queue"] = queue
    priority = options.priority_class
    if priority:
        if len(priority) > 253 or not _DNS1123_SUBDOMAIN_RE.match(priority):
            raise SpecError(field="priority_class", value=priority, problem="is not a PriorityClass name")
        scheduling["priorityClass"] = priority
    min_available = options.min_available
    if min_available is not None:
        total = spec.task_count
        value = _whole(min_available, "min_available", 0)
        if not 1 <= value <= total:
            raise SpecError(field="min_available", value=value, problem=f"must be from 1 to the job's {total} tasks (gang scheduling)")
        scheduling["minAvailable"] = value
    if scheduling:
        run_policy["schedulingPolicy"] = scheduling
    return run_policy


def _whole(value: Any, field: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise SpecError(field=field, value=value, problem=f"must be a whole number from 0 to {2**31 - 1}")
    return value


def find_tfjob_problems(manifest: Mapping[str, Any]) -> list[str]:
    """Every rule of the operator's TFJob webhook that ``manifest`` breaks (empty: none).

    The rules: the name is a DNS-1035 label; ``tfReplicaSpecs`` is there; every
    replica type is one the controller knows and has containers, each with an image,
    one of them named ``tensorflow``; at most one Chief or Master; restart policies,
    ``cleanPodPolicy`` and ``managedBy`` take known values; counts are not negative.
    """
    problems: list[str] = []
    if manifest.get("apiVersion") != API_VERSION or manifest.get("kind") != KIND:
        problems.append(f"apiVersion/kind is {manifest.get('apiVersion')!r}/{manifest.get('kind')!r}, not {API_VERSION}/{KIND}")
    name = (manifest.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        problems.append("metadata.name is missing")
    elif len(name) > MAX_NAME_LENGTH or not _DNS1035_RE.match(name):
        problems.append(
            f"metadata.name {name!r} is not a DNS-1035 label of at most {MAX_NAME_LENGTH} characters (try {suggest_k8s_name(name)!r})"
        )
    spec = manifest.get("spec") or {}
    replica_specs = spec.get("tfReplicaSpecs")
    if not isinstance(replica_specs, Mapping) or not replica_specs:
        problems.append("spec.tfReplicaSpecs is required (at least a Chief or a Worker)")
        replica_specs = {}
    chiefs = [rtype for rtype in replica_specs if rtype in ("Chief", "Master")]
    if len(chiefs) > 1:
        problems.append(f"spec.tfReplicaSpecs has {' and '.join(chiefs)}: at most one Chief or Master role")
    for rtype, rspec in replica_specs.items():
        path = f"spec.tfReplicaSpecs.{rtype}"
        if rtype not in VALID_REPLICA_TYPES:
            problems.append(
                f"{path}: {rtype!r} is not a replica type{did_you_mean(rtype, VALID_REPLICA_TYPES)}; use {', '.join(VALID_REPLICA_TYPES)}"
            )
        rspec = rspec or {}
        replicas = rspec.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            problems.append(f"{path}.replicas {replicas!r} must be a whole number ≥ 0")
        elif rtype in ("Chief", "Master") and replicas > 1:
            problems.append(f"{path}.replicas is {replicas}: a {rtype} runs at most 1 replica")
        policy = rspec.get("restartPolicy")
        if policy is not None and policy not in RESTART_POLICIES:
            problems.append(f"{path}.restartPolicy {policy!r} is not one of {', '.join(RESTART_POLICIES)}")
        containers = (((rspec.get("template") or {}).get("spec")) or {}).get("containers") or []
        if not containers:
            problems.append(f"{path}.template.spec.containers must be specified")
        for i, container in enumerate(containers):
            if not (container or {}).get("image"):
                problems.append(f"{path}.template.spec.containers[{i}].image is required")
        if containers and not any((c or {}).get("name") == CONTAINER_NAME for c in containers):
            problems.append(f"{path}.template.spec.containers must have a container named {CONTAINER_NAME!r}")
    run_policy = spec.get("runPolicy") or {}
    clean = run_policy.get("cleanPodPolicy")
    if clean is not None and clean not in CLEAN_POD_POLICIES:
        problems.append(f"spec.runPolicy.cleanPodPolicy {clean!r} is not one of {', '.join(CLEAN_POD_POLICIES)}")
    managed = run_policy.get("managedBy")
    if managed is not None and managed not in MANAGED_BY:
        problems.append(f"spec.runPolicy.managedBy {managed!r} is not one of {', '.join(MANAGED_BY)}")
    for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        value = run_policy.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            problems.append(f"spec.runPolicy.{key} {value!r} must be a whole number ≥ 0")
    return problems


def validate_tfjob(manifest: Mapping[str, Any]) -> None:
    """Raise SpecError if the training operator's webhook would refuse ``manifest``.

    Raises:
        SpecError: names every broken rule (see :func:`find_tfjob_problems`).
    """
    problems = find_tfjob_problems(manifest)
    if problems:
        name = (manifest.get("metadata") or {}).get("name", "?")
        raise SpecError(f"TFJob {name!r} would be refused by the training operator: {'; '.join(problems)}")
