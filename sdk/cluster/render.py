"""Render the cluster variables each platform sets for a task (pure; no I/O).

The local backend reproduces a platform faithfully by starting every task with
exactly the environment that platform would give it. The formats, from the
platforms' documentation and the Kubeflow training operator's source:

* **Vertex AI** sets ``CLUSTER_SPEC`` on every replica: worker pools named
  ``workerpool0``..``workerpool3`` (chief, workers, parameter servers, evaluators;
  an unused pool is absent), the task as ``{"type": "workerpoolN", "index": i}``
  (plus ``trial`` when tuning), ``"environment": "cloud"`` and the CustomJobSpec as
  ``job``. For a distributed job it also sets ``TF_CONFIG`` with TensorFlow's names
  (``chief``, ``worker``, ``ps``); evaluators get ``"type": "evaluator"`` but are not
  in ``cluster``. A single-replica job gets no ``TF_CONFIG`` at all. With a base
  output directory it sets ``AIP_MODEL_DIR``, ``AIP_CHECKPOINT_DIR`` and
  ``AIP_TENSORBOARD_LOG_DIR`` (under ``<trial>/`` for a tuning trial).
* **AI Platform Training (legacy)** sets ``TF_CONFIG`` on every VM: the primary
  replica is ``master`` (``chief`` with runtime ≥ 2.1 or ``useChiefInTfConfig``),
  evaluators are never in ``cluster``, ``job`` is the TrainingInput and
  ``environment`` is ``cloud``. Custom containers also get ``CLUSTER_SPEC``, the
  framework-neutral view: always ``master``, evaluators included.
* **Kubeflow TFJob** (training operator ``genTFConfigJSONStr``): lower-case replica
  types, every type in ``cluster`` (evaluators too), ``"environment": "cloud"``,
  serialised by Go (compact, sorted map keys). A job of one replica in all (one
  worker, one ps or a lone chief) gets **no** ``TF_CONFIG`` (the operator's
  ``isDistributed``). With ``enableDynamicWorker`` the operator writes a sparse
  cluster: a worker sees the ps list and only its own worker entry (a map of index
  → address), a ps only its own address, a chief neither, and there is no
  ``environment``. Training-operator v1.7.0 and later write it under ``"cluster"``
  (rendered here); v1.6 and earlier wrote ``"sparseCluster"``. Both are read.
* **gcloud ai-platform local train**: ``{"job": {"job_name", "args"}, "task",
  "cluster", "environment": "cloud"}``; ``chief`` (with TensorFlow 2) first, then
  ``ps`` and ``worker`` (always present, maybe empty); evaluators not in ``cluster``;
  a non-distributed run has empty ``task`` and ``cluster``.
"""

from __future__ import annotations

from .spec import ROLES, config_error

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Sequence

#: The dialects :func:`render_task_env` can produce.
DIALECTS: tuple[str, ...] = ("vertex", "ai-platform", "kubeflow", "gcloud-local")
#: Where ``gcloud ai-platform local train --distributed`` starts numbering ports.
GCLOUD_LOCAL_START_PORT = 27182
#: The port every Kubeflow TFJob replica listens on unless the pod says otherwise.
KUBEFLOW_DEFAULT_PORT = 2222


def _check_cluster(cluster: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The cluster with canonical roles only, empty roles dropped; else ClusterConfigError."""
    out: dict[str, list[str]] = {}
    for role, addresses in cluster.items():
        if role not in ROLES:
            raise config_error(f"cluster role {role!r} is not one of {', '.join(ROLES)}; name the primary replica 'chief'")
        if isinstance(addresses, (str, bytes)) or not all(isinstance(a, str) and a for a in addresses):
            raise config_error(f"cluster[{role!r}] = {addresses!r}: give a list of 'host:port' strings")
        if addresses:
            out[role] = list(addresses)
    if "chief" in out and len(out["chief"]) != 1:
        raise config_error(f"cluster['chief'] has {len(out['chief'])} addresses; a job has exactly one chief")
    return out


def _check_task(cluster: dict[str, list[str]], role: str, index: int) -> None:
    if role not in ROLES:
        raise config_error(f"task role {role!r} is not one of {', '.join(ROLES)}")
    if isinstance(index, bool) or not isinstance(index, int):
        raise config_error(f"task index {index!r} must be a whole number ≥ 0")
    count = len(cluster.get(role, ()))
    if not 0 <= index < count:
        raise config_error(
            f"task {role}-{index} is not in the cluster: {role!r} has {count} task(s)" + (f", indices 0..{count - 1}" if count else "")
        )


def _dump(value: Any) -> str:
    # Google's services write TF_CONFIG with Python's default JSON separators.
    import json  # here: the bootstrap imports this module and renders nothing

    return json.dumps(value)


def _dump_go(value: Any) -> str:
    # The Kubeflow operator is Go: encoding/json writes compact JSON, struct fields in
    # declaration order (callers build dicts in that order) and map keys sorted
    # (callers sort the cluster map).
    import json

    return json.dumps(value, separators=(",", ":"))


class _Shared:
    """What every task of one cluster shares in its variables — the cluster as the platform
    names it, the job entry — made and written as JSON once for all of them
    (:func:`render_task_envs`): written once a task, it made a local cluster's start grow
    with the square of its size."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._texts: dict[str, str] = {}

    def value(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._values:
            self._values[key] = make()
        return self._values[key]

    def text(self, key: str, make: Callable[[], Any], compact: bool = False) -> str:
        """``make()``'s JSON (Google's layout, or the Go operator's when ``compact``), once."""
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = (_dump_go if compact else _dump)(self.value(key, make))
        return text


def _object(fields: Sequence[tuple[str, str]], compact: bool = False) -> str:
    """The JSON object of ``fields`` (key, the value's JSON text), laid out as ``json.dumps``
    lays out a dict (``compact``: with ``separators=(",", ":")``); keys are tfjob's own."""
    colon, comma = (":", ",") if compact else (": ", ", ")
    return "{" + comma.join(f'"{key}"{colon}{text}' for key, text in fields) + "}"


_CLOUD = '"cloud"'


def _primary(use_chief: bool | None, default: bool) -> str:
    return "chief" if (default if use_chief is None else use_chief) else "master"


def _rename(cluster: dict[str, list[str]], primary: str, *, evaluators: bool) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for role in ROLES:
        if role in cluster and (evaluators or role != "evaluator"):
            out[primary if role == "chief" else role] = list(cluster[role])
    return out


def _task(task_type: str, index: int, trial: str | None) -> dict[str, Any]:
    task: dict[str, Any] = {"type": task_type, "index": index}
    if trial is not None:
        task["trial"] = str(trial)
    return task


def render_task_env(
    cluster: Mapping[str, Sequence[str]],
    role: str,
    index: int,
    dialect: str,
    *,
    job: Mapping[str, Any] | None = None,
    trial: str | None = None,
    use_chief: bool | None = None,
    job_dir: str | None = None,
    dynamic_workers: bool = False,
) -> dict[str, str]:
    """The cluster environment variables a platform would set for one task.

    Args:
        cluster: canonical role → addresses, e.g. ``{"chief": ["127.0.0.1:4001"],
            "worker": [...], "ps": [...], "evaluator": [...]}``; empty roles may be
            left out. Evaluators need addresses too (Kubeflow lists them).
        role: this task's canonical role (``chief``, ``worker``, ``ps``, ``evaluator``).
        index: this task's index within its role.
        dialect: ``vertex``, ``ai-platform``, ``kubeflow`` or ``gcloud-local``.
        job: the platform's ``job`` entry (Vertex CustomJobSpec, AI Platform
            TrainingInput, gcloud's ``{"job_name": module, "args": [...]}``).
        trial: the hyperparameter-tuning trial id (Vertex and AI Platform only).
        use_chief: the primary replica's name: ``chief`` (True) or ``master``
            (False). ``None`` means the platform's default: ``master`` on AI
            Platform, ``chief`` on Kubeflow and gcloud local train (TensorFlow 2).
        job_dir: Vertex's base output directory, from which the ``AIP_*_DIR``
            variables are derived.
        dynamic_workers: Kubeflow's ``enableDynamicWorker`` (sparse TF_CONFIG).

    Returns:
        Variable name → value, exactly the cluster variables the platform sets.

    Raises:
        ClusterConfigError: an unknown dialect or role, an index outside the
            cluster, or a cluster that is not role → list of addresses.
    """
    return render_task_envs(
        cluster, [(role, index)], dialect, job=job, trial=trial, use_chief=use_chief, job_dir=job_dir, dynamic_workers=dynamic_workers
    )[0]


def render_task_envs(
    cluster: Mapping[str, Sequence[str]],
    tasks: Sequence[tuple[str, int]],
    dialect: str,
    *,
    job: Mapping[str, Any] | None = None,
    trial: str | None = None,
    use_chief: bool | None = None,
    job_dir: str | None = None,
    dynamic_workers: bool = False,
) -> list[dict[str, str]]:
    """:func:`render_task_env` for each ``(role, index)`` of ``tasks``, in order, the cluster
    checked once: a local launcher renders every task of its cluster, and a check of the
    whole cluster for each task made its start grow with the square of the cluster's size.

    Raises:
        ClusterConfigError: as :func:`render_task_env`, for the first task it cannot render.
    """
    if dialect not in DIALECTS:
        raise config_error(f"dialect {dialect!r} is not one of {', '.join(DIALECTS)}")
    roles = _check_cluster(cluster)
    shared = _Shared()
    return [
        _render_checked(
            roles,
            role,
            index,
            dialect,
            shared,
            job=job,
            trial=trial,
            use_chief=use_chief,
            job_dir=job_dir,
            dynamic_workers=dynamic_workers,
        )  # fmt: skip
        for role, index in tasks
    ]


def _render_checked(
    roles: dict[str, list[str]],
    role: str,
    index: int,
    dialect: str,
    shared: _Shared,
    *,
    job: Mapping[str, Any] | None,
    trial: str | None,
    use_chief: bool | None,
    job_dir: str | None,
    dynamic_workers: bool,
) -> dict[str, str]:
    """One task's variables, ``roles`` already checked (:func:`_check_cluster`); what the
    cluster's tasks share comes from ``shared``."""
    _check_task(roles, role, index)
    if dialect == "vertex":
        return _render_vertex(roles, role, index, shared, job=job, trial=trial, job_dir=job_dir)
    if "chief" not in roles and dialect != "kubeflow":
        raise config_error(
            f"a job without a chief (worker 0 as chief) runs only where the platform allows it: the kubeflow dialect, "
            f"not {dialect} (whose primary replica is always the chief or master)"
        )
    if dialect == "ai-platform":
        return _render_ai_platform(roles, role, index, shared, job=job, trial=trial, use_chief=use_chief)
    if dialect == "kubeflow":
        return _render_kubeflow(roles, role, index, shared, use_chief=use_chief, dynamic_workers=dynamic_workers)
    return _render_gcloud_local(roles, role, index, job=job, use_chief=use_chief)


def _render_vertex(
    cluster: dict[str, list[str]],
    role: str,
    index: int,
    shared: _Shared,
    *,
    job: Mapping[str, Any] | None,
    trial: str | None,
    job_dir: str | None,
) -> dict[str, str]:
    if "chief" not in cluster:
        raise config_error("a Vertex AI job needs a chief: worker pool 0 (workerPoolSpecs[0]) runs the primary replica")
    pools = shared.text("pools", lambda: {f"workerpool{n}": cluster[r] for n, r in enumerate(ROLES) if r in cluster})
    job_entry = shared.text("job", lambda: dict(job) if job is not None else {})
    pool_task = _dump(_task(f"workerpool{ROLES.index(role)}", index, trial))
    env = {"CLUSTER_SPEC": _object([("cluster", pools), ("environment", _CLOUD), ("task", pool_task), ("job", job_entry)])}
    if sum(len(addresses) for addresses in cluster.values()) > 1:
        renamed = shared.text("chief", lambda: _rename(cluster, "chief", evaluators=False))
        task = _dump(_task(role, index, trial))
        env["TF_CONFIG"] = _object([("cluster", renamed), ("task", task), ("job", job_entry), ("environment", _CLOUD)])
    if job_dir:
        base = job_dir.rstrip("/") + "/" + (f"{trial}/" if trial is not None else "")
        env["AIP_MODEL_DIR"] = base + "model/"
        env["AIP_CHECKPOINT_DIR"] = base + "checkpoints/"
        env["AIP_TENSORBOARD_LOG_DIR"] = base + "logs/"
    return env


def _render_ai_platform(
    cluster: dict[str, list[str]],
    role: str,
    index: int,
    shared: _Shared,
    *,
    job: Mapping[str, Any] | None,
    trial: str | None,
    use_chief: bool | None,
) -> dict[str, str]:
    primary = _primary(use_chief, default=False)
    job_entry = shared.text("job", lambda: dict(job) if job is not None else {})
    renamed = shared.text(primary, lambda: _rename(cluster, primary, evaluators=False))
    every = shared.text("master+evaluators", lambda: _rename(cluster, "master", evaluators=True))
    task = _dump(_task(primary if role == "chief" else role, index, trial))
    master_task = _dump(_task("master" if role == "chief" else role, index, trial))
    return {
        "TF_CONFIG": _object([("cluster", renamed), ("task", task), ("job", job_entry), ("environment", _CLOUD)]),
        "CLUSTER_SPEC": _object([("cluster", every), ("environment", _CLOUD), ("task", master_task), ("job", job_entry)]),
    }


def _render_kubeflow(
    cluster: dict[str, list[str]], role: str, index: int, shared: _Shared, *, use_chief: bool | None, dynamic_workers: bool
) -> dict[str, str]:
    primary = _primary(use_chief, default=True)
    task_type = primary if role == "chief" else role
    full: dict[str, list[str]] = shared.value(f"{primary}+evaluators", lambda: _rename(cluster, primary, evaluators=True))
    task = {"type": task_type, "index": index}
    if sum(len(addresses) for addresses in full.values()) == 1:
        return {}  # the operator's isDistributed(): one replica in all gets no TF_CONFIG
    if not dynamic_workers:
        body = shared.text("sorted", lambda: dict(sorted(full.items())), compact=True)
        return {"TF_CONFIG": _object([("cluster", body), ("task", _dump_go(task)), ("environment", _CLOUD)], compact=True)}
    # The operator's SparseClusterSpec: a Go struct (worker, then ps) whose nil ps
    # slice is written as null when the job has no parameter servers.
    sparse: dict[str, Any] = {"worker": {}, "ps": []}
    if task_type == "ps":
        sparse["ps"] = [full["ps"][index]]
    elif task_type == "worker":
        sparse["ps"] = full.get("ps")
        sparse["worker"] = {str(index): full["worker"][index]}
    return {"TF_CONFIG": _dump_go({"cluster": sparse, "task": task})}


def _render_gcloud_local(
    cluster: dict[str, list[str]], role: str, index: int, *, job: Mapping[str, Any] | None, use_chief: bool | None
) -> dict[str, str]:
    primary = _primary(use_chief, default=True)
    job_entry = dict(job) if job is not None else {"job_name": None, "args": []}
    distributed = any(r != "chief" for r in cluster)
    if not distributed:
        config: dict[str, Any] = {"job": job_entry, "task": {}, "cluster": {}, "environment": "cloud"}
    else:
        config = {
            "job": job_entry,
            "task": {"type": primary if role == "chief" else role, "index": index},
            "cluster": {
                primary: list(cluster.get("chief", ())),
                "ps": list(cluster.get("ps", ())),
                "worker": list(cluster.get("worker", ())),
            },
            "environment": "cloud",
        }
    return {"TF_CONFIG": _dump(config)}


def device_filters(role: str, index: int) -> list[str]:
    """The device filters the platform docs give a task (empty: no filter).

    The primary replica talks only to the parameter servers and itself; worker
    ``i`` only to the parameter servers and itself, so a job survives a worker that
    goes away. Parameter servers and evaluators get no filter.

    Args:
        role: ``chief``, ``master``, ``worker``, ``ps`` or ``evaluator``.
        index: the task's index within its role.

    Raises:
        ClusterConfigError: an unknown role or a negative index.
    """
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise config_error(f"task index {index!r} must be a whole number ≥ 0")
    if role in ("chief", "master"):
        return ["/job:ps", f"/job:{role}"]
    if role == "worker":
        return ["/job:ps", f"/job:worker/task:{index}"]
    if role in ("ps", "evaluator"):
        return []
    raise config_error(f"task role {role!r} is not one of chief, master, worker, ps, evaluator")


def render_kubeflow_cluster(
    job_name: str,
    namespace: str,
    replicas: Mapping[str, int],
    *,
    port: int = KUBEFLOW_DEFAULT_PORT,
    cluster_domain: str | None = None,
) -> dict[str, list[str]]:
    """The addresses the Kubeflow operator gives a TFJob's replicas.

    Each replica ``i`` of type ``t`` is reached through its headless service
    ``{job}-{t}-{i}.{namespace}.svc[.{cluster_domain}]:{port}``.

    Args:
        job_name: the TFJob's ``metadata.name``.
        namespace: its namespace.
        replicas: canonical role → replica count.
        port: the replicas' ``tfjob-port`` (2222 by default).
        cluster_domain: the operator's ``CUSTOM_CLUSTER_DOMAIN``, if set.
    """
    out: dict[str, list[str]] = {}
    for role, count in replicas.items():
        hosts = []
        for i in range(count):
            host = f"{job_name}-{role}-{i}".replace("/", "-") + f".{namespace}.svc"
            if cluster_domain:
                host += f".{cluster_domain}"
            hosts.append(f"{host}:{port}")
        out[role] = hosts
    return out


def render_gcloud_local_cluster(workers: int, ps: int, *, start_port: int = GCLOUD_LOCAL_START_PORT) -> dict[str, list[str]]:
    """The addresses ``gcloud ai-platform local train --distributed`` assigns.

    One contiguous block of ``localhost`` ports from ``start_port``: the chief
    first, then the parameter servers, then the workers (evaluators get none).
    """
    ports = list(range(start_port, start_port + ps + workers + 1))
    out = {"chief": [f"localhost:{ports[0]}"]}
    if ps:
        out["ps"] = [f"localhost:{p}" for p in ports[1 : ps + 1]]
    if workers:
        out["worker"] = [f"localhost:{p}" for p in ports[ps + 1 :]]
    return out
