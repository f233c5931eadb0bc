"""``TaskInfo``: which task this process is, read from ``TF_CONFIG`` / ``CLUSTER_SPEC``.

:func:`task_info_from_env` understands every dialect tfjob meets (see
:data:`PARSED_DIALECTS`): AI Platform (``master`` or ``chief``), Vertex AI
(``CLUSTER_SPEC`` worker pools and ``TF_CONFIG``), Kubeflow (including the sparse
``sparseCluster`` of dynamic workers), SageMaker's parameter-server layout (host 0 is
``master`` and every host also runs a ``ps``), gcloud local train, TonY, and plain
TensorFlow. As in the platform docs' ``dispatch()`` pattern, no variable, or one
without a task type or index, means a single local process that is the chief.

Anything malformed raises :class:`~tfjob.errors.ClusterConfigError` quoting the
offending part; nothing else escapes (a property test feeds arbitrary JSON).
"""

from __future__ import annotations

import os

from .spec import ROLES, ClusterSpec, config_error

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

#: The dialects :func:`task_info_from_env` recognises (``tf``: plain TensorFlow).
PARSED_DIALECTS: tuple[str, ...] = (
    "vertex",
    "ai-platform",
    "kubeflow",
    "gcloud-local",
    "sagemaker",
    "tony",
    "tf",
    "none",
)

#: A platform's task type → the canonical role.
_ROLE_OF = {"chief": "chief", "master": "chief", "worker": "worker", "ps": "ps", "evaluator": "evaluator"}
#: Vertex AI's worker pool names (a set, not a pattern: ``re`` costs every task's start).
_POOLS = frozenset(f"workerpool{n}" for n in range(4))
_QUOTE_LIMIT = 120


def _quote(value: Any) -> str:
    """A short, printable rendering of the offending part for a one-line message."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + "…"


class TaskInfo:
    """What one task of a distributed job is, in canonical terms.

    Attributes:
        role: ``chief``, ``worker``, ``ps`` or ``evaluator`` (``master`` → ``chief``).
        name: the platform's own task type (``master``, ``workerpool1``…), or
            ``None`` for a local process.
        index: the task's index within its role.
        trial: the hyperparameter-tuning trial id, if any.
        is_chief: the task that writes checkpoints and summaries, as the Estimator's
            ``RunConfig`` decides: the chief (``master``), or worker 0 when the cluster
            has no chief; never a ps or an evaluator. (TensorFlow's
            ``multi_worker_util.is_chief`` also answers True for an evaluator; the
            peers disagree there, and tfjob follows the Estimator.)
        cluster: the cluster with canonical job names (evaluators included when
            the platform lists them); empty for a local process.
        job: the platform's ``job`` entry, as given.
        environment: the platform's ``environment`` entry (``cloud``), if any.
        dialect: which platform's format this came from (:data:`PARSED_DIALECTS`).
        source: ``TF_CONFIG``, ``CLUSTER_SPEC`` or ``None``.
    """

    __slots__ = ("role", "name", "index", "trial", "is_chief", "cluster", "job", "environment", "dialect", "source")

    def __init__(
        self,
        role: str,
        index: int,
        *,
        name: str | None = None,
        trial: str | None = None,
        is_chief: bool | None = None,
        cluster: ClusterSpec | None = None,
        job: Any = None,
        environment: str | None = None,
        dialect: str = "none",
        source: str | None = None,
    ) -> None:
        self.role = role
        self.index = index
        self.name = name
        self.trial = trial
        self.cluster = cluster if cluster is not None else ClusterSpec({})
        if is_chief is None:
            is_chief = role == "chief" or (role == "worker" and index == 0 and "chief" not in self.cluster.jobs)
        self.is_chief = is_chief
        self.job = job
        self.environment = environment
        self.dialect = dialect
        self.source = source

    @property
    def is_distributed(self) -> bool:
        """True when the task belongs to a cluster (not a single local process)."""
        return bool(self.cluster)

    @property
    def address(self) -> str | None:
        """This task's own ``host:port`` in the cluster, if it is listed."""
        if self.role in self.cluster.jobs and self.index in self.cluster.task_indices(self.role):
            address: str = self.cluster.task_address(self.role, self.index)
            return address
        return None

    def tf_config(self) -> dict[str, Any] | None:
        """The ``TF_CONFIG`` TensorFlow 2 strategies accept for this task, or ``None``.

        ``master`` is already ``chief``; evaluators are left out of ``cluster`` (TF's
        strategies count every listed task as a trainer); ``environment`` and ``job``
        are kept for code that reads them. ``None`` for a local process.
        """
        if not self.is_distributed:
            return None
        cluster = {job: tasks for job, tasks in self.cluster.as_dict().items() if job != "evaluator"}
        task: dict[str, Any] = {"type": self.role, "index": self.index}
        if self.trial is not None:
            task["trial"] = self.trial
        out: dict[str, Any] = {"cluster": cluster, "task": task}
        if self.environment is not None:
            out["environment"] = self.environment
        if self.job is not None:
            out["job"] = self.job
        return out

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, s) if s != "cluster" else self.cluster.as_dict() for s in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaskInfo) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"TaskInfo(role={self.role!r}, index={self.index}, name={self.name!r}, is_chief={self.is_chief}, "
            f"trial={self.trial!r}, dialect={self.dialect!r}, cluster={self.cluster!r})"
        )


def local_task(dialect: str = "none", *, source: str | None = None, job: Any = None, environment: Any = None) -> TaskInfo:
    """The single local process: the chief of a cluster of one, with no cluster."""
    env = environment if isinstance(environment, str) else None
    return TaskInfo("chief", 0, is_chief=True, dialect=dialect, source=source, job=job, environment=env)


def _load(variable: str, text: str) -> dict[str, Any]:
    import json

    try:
        data = json.loads(text)
    except ValueError as e:  # JSONDecodeError; also lone surrogates and the like
        raise config_error(f"{variable} is not valid JSON ({e}): {_quote(text)}") from None
    except RecursionError:
        raise config_error(f"{variable} is nested too deeply to read: {_quote(text[:60])}") from None
    if not isinstance(data, dict):
        raise config_error(f'{variable} must be a JSON object with "cluster" and "task", not {_quote(data)}')
    return data


def _parse_index(variable: str, task: Mapping[str, Any]) -> int:
    index = task.get("index")
    if isinstance(index, str) and index.isdigit() and index.isascii():
        return int(index)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise config_error(f'{variable} task index must be a whole number ≥ 0: "task": {_quote(task)}')
    return index


def _parse_jobs(variable: str, cluster: Any, key: str = "cluster") -> dict[str, list[str] | dict[int, str]]:
    """Job name → list of addresses or sparse dict, every part type-checked."""
    if cluster is None:
        return {}
    if not isinstance(cluster, dict):
        raise config_error(f'{variable} "{key}" must be an object of job name → addresses: {_quote(cluster)}')
    jobs: dict[str, list[str] | dict[int, str]] = {}
    for name, tasks in cluster.items():
        if tasks is None:  # Go writes a nil slice as null (a Kubeflow job without ps)
            continue
        if isinstance(tasks, list):
            if not all(isinstance(a, str) for a in tasks):
                raise config_error(f"{variable} job {name!r} has a non-string address: {_quote(tasks)}")
            jobs[name] = list(tasks)
        elif isinstance(tasks, dict):
            sparse: dict[int, str] = {}
            for i, address in tasks.items():
                if not (i.isdigit() and i.isascii()) or not isinstance(address, str):
                    raise config_error(f"{variable} job {name!r} must map task indices (0, 1, …) to addresses: {_quote(tasks)}")
                sparse[int(i)] = address
            jobs[name] = sparse
        else:
            raise config_error(f"{variable} job {name!r} must list its addresses: {_quote({name: tasks})}")
    return jobs


def _canonical(variable: str, jobs: dict[str, Any], rename: Mapping[str, str]) -> ClusterSpec:
    """The jobs under canonical names, as a ClusterSpec; two chiefs are an error."""
    out: dict[str, Any] = {}
    for name, tasks in jobs.items():
        role = rename.get(name, name)
        if role in out:
            raise config_error(f"{variable} names the same role twice ({role!r}): {_quote(list(jobs))}; a job has one chief")
        out[role] = tasks
    chief = out.get("chief")
    if chief is not None and len(chief) > 1:
        raise config_error(f"{variable} lists {len(chief)} chiefs: {_quote(chief)}; a job has exactly one")
    try:
        return ClusterSpec(out)
    except (TypeError, ValueError) as e:
        raise config_error(f"{variable} cluster is not a valid TensorFlow cluster ({e}): {_quote(jobs)}") from None


def _task_info(
    variable: str,
    data: Mapping[str, Any],
    jobs: dict[str, Any],
    rename: Mapping[str, str],
    task: Mapping[str, Any],
    dialect: str,
    *,
    sparse: bool = False,
) -> TaskInfo:
    """The TaskInfo of a cluster and a task that has both type and index.

    ``sparse``: Kubeflow's ``sparseCluster``, which lists only what the task needs
    (a chief or a ps of a dynamic-worker job may be absent from it).
    """
    task_type = task.get("type")
    if not isinstance(task_type, str):
        raise config_error(f'{variable} task type must be a string: "task": {_quote(task)}')
    role = rename.get(task_type)
    if role is None:
        raise config_error(f'{variable} task type {task_type!r} is not one of {", ".join(sorted(rename))}: "task": {_quote(task)}')
    index = _parse_index(variable, task)
    trial = task.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, (str, int))):
        raise config_error(f'{variable} task trial must be a string: "task": {_quote(task)}')
    environment = data.get("environment")
    if environment is not None and not isinstance(environment, str):
        raise config_error(f'{variable} "environment" must be a string: {_quote(environment)}')
    cluster = _canonical(variable, jobs, rename)
    if task_type not in jobs:
        # TensorFlow lets an evaluator sit outside the cluster; nothing else.
        if role != "evaluator" and not sparse:
            raise config_error(
                f'{variable} task type {task_type!r} is not in the cluster (jobs: {_quote(list(jobs))}): "task": {_quote(task)}'
            )
    elif index not in cluster.task_indices(role) and not sparse:
        # (A sparse cluster lists a ps by its own address alone, whatever its index.)
        raise config_error(
            f"{variable} task index {index} is out of range for {task_type!r}, which has tasks "
            f'{_quote(cluster.task_indices(role))}: "task": {_quote(task)}'
        )
    return TaskInfo(
        role,
        index,
        name=task_type,
        trial=str(trial) if trial not in (None, "") else None,
        cluster=cluster,
        job=data.get("job"),
        environment=environment,
        dialect=dialect,
        source=variable,
    )


def parse_tf_config(text: str, env: Mapping[str, str] | None = None) -> TaskInfo:
    """The TaskInfo described by a ``TF_CONFIG`` value.

    Args:
        text: the variable's value (JSON).
        env: the rest of the environment, used only to tell the dialect apart.

    Raises:
        ClusterConfigError: malformed JSON or structure, an index out of range,
            a task type absent from the cluster, two chiefs.
    """
    env = {} if env is None else env
    data = _load("TF_CONFIG", text)
    key = "sparseCluster" if "cluster" not in data and "sparseCluster" in data else "cluster"
    task = data.get("task")
    if task is None:
        task = {}
    if not isinstance(task, dict):
        raise config_error(f'TF_CONFIG "task" must be an object with type and index: {_quote(task)}')
    jobs = _parse_jobs("TF_CONFIG", data.get(key), key)
    # Kubeflow's dynamic workers: a sparse worker map (training-operator ≤ v1.6 under
    # "sparseCluster", v1.7+ under "cluster"); a chief or ps of such a job is not in it.
    sparse = key == "sparseCluster" or any(isinstance(tasks, dict) for tasks in jobs.values())
    dialect = _tf_config_dialect(data, jobs, env)
    if not _local_or_complete("TF_CONFIG", task, jobs, sparse):
        return local_task(dialect, source="TF_CONFIG", job=data.get("job"), environment=data.get("environment"))
    return _task_info("TF_CONFIG", data, jobs, _ROLE_OF, task, dialect, sparse=sparse)


def _task_count(jobs: Mapping[str, Any]) -> int:
    return sum(len(tasks) for tasks in jobs.values())


def _local_or_complete(variable: str, task: Mapping[str, Any], jobs: Mapping[str, Any], sparse: bool) -> bool:
    """False for a single local process; True for a task of a cluster; else ClusterConfigError.

    As TensorFlow and the Estimator decide: no cluster (whatever the task says) is a local
    process, and so is a one-task cluster without a task; a cluster of several tasks
    needs the task's type and index (otherwise N machines would each train alone).
    """
    if not jobs or (_task_count(jobs) == 0 and not sparse):
        return False
    has_type, has_index = task.get("type") not in (None, ""), task.get("index") is not None
    if has_type and has_index:
        return True
    if _task_count(jobs) <= 1 and not has_type and not has_index and not sparse:
        return False
    missing = "type and index" if not (has_type or has_index) else ("index" if has_type else "type")
    raise config_error(
        f'{variable} lists a cluster of {_task_count(jobs)} tasks but its "task" has no {missing} '
        f'("task": {_quote(dict(task))}): every task of a cluster must say which one it is'
    )


def parse_cluster_spec(text: str, env: Mapping[str, str] | None = None) -> TaskInfo:
    """The TaskInfo described by a ``CLUSTER_SPEC`` value.

    Vertex AI and AI Platform custom containers write ``{"cluster", "task", ...}``
    (Vertex with ``workerpoolN`` pools); TonY writes the bare job → addresses map
    and names the task in ``JOB_NAME`` / ``TASK_INDEX``.

    Raises:
        ClusterConfigError: as :func:`parse_tf_config`.
    """
    env = {} if env is None else env
    data = _load("CLUSTER_SPEC", text)
    if "cluster" not in data:
        return _parse_tony(data, env)
    jobs = _parse_jobs("CLUSTER_SPEC", data.get("cluster"))
    task = data.get("task")
    if task is None:
        task = {}
    if not isinstance(task, dict):
        raise config_error(f'CLUSTER_SPEC "task" must be an object with type and index: {_quote(task)}')
    pools = [name for name in jobs if name in _POOLS]
    if pools:
        if len(pools) != len(jobs):
            others = [name for name in jobs if name not in pools]
            raise config_error(
                f"CLUSTER_SPEC mixes Vertex worker pools with other jobs: {_quote(others)}; Vertex names its pools workerpool0..workerpool3"
            )
        rename = {f"workerpool{n}": role for n, role in enumerate(ROLES)}
        dialect = "vertex"
    else:
        rename, dialect = _ROLE_OF, "ai-platform"
    if not _local_or_complete("CLUSTER_SPEC", task, jobs, False):
        return local_task(dialect, source="CLUSTER_SPEC", job=data.get("job"), environment=data.get("environment"))
    return _task_info("CLUSTER_SPEC", data, jobs, rename, task, dialect)


def _parse_tony(data: dict[str, Any], env: Mapping[str, str]) -> TaskInfo:
    jobs = _parse_jobs("CLUSTER_SPEC", data)
    job_name, task_index = env.get("JOB_NAME"), env.get("TASK_INDEX")
    if not job_name or task_index is None:
        return local_task("tony", source="CLUSTER_SPEC")
    task: dict[str, Any] = {"type": job_name, "index": task_index}
    if not (task_index.isascii() and task_index.isdigit()):
        raise config_error(f"TASK_INDEX must be a whole number ≥ 0, not {task_index!r}")
    return _task_info("CLUSTER_SPEC", {}, jobs, _ROLE_OF, task, "tony")


def _is_sagemaker_layout(jobs: Mapping[str, Any]) -> bool:
    # SageMaker's parameter-server distribution: master = host 0, worker = the other
    # hosts on port 2222, and a ps on port 2223 of every host, in the same order.
    hosts = [*jobs.get("master", ()), *jobs.get("worker", ())]
    ps = jobs.get("ps")
    if not isinstance(ps, list) or not all(isinstance(h, str) for h in hosts) or len(ps) != len(hosts):
        return False
    return all(h.endswith(":2222") and p == h[: -len("2222")] + "2223" for h, p in zip(hosts, ps))


def _tf_config_dialect(data: Mapping[str, Any], jobs: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Which platform wrote this TF_CONFIG: a best guess from its shape and neighbours."""
    job = data.get("job")
    if "sparseCluster" in data and "cluster" not in data:
        return "kubeflow"
    if any(isinstance(tasks, dict) for tasks in jobs.values()):
        return "kubeflow"  # dynamic workers, training-operator v1.7+
    if isinstance(job, dict) and "job_name" in job and "args" in job:
        return "gcloud-local"
    if env.get("JOB_NAME") and env.get("TASK_INDEX") is not None:
        return "tony"
    if any(k.startswith("SM_") for k in env) or ("master" in jobs and _is_sagemaker_layout(jobs)):
        return "sagemaker"
    if (
        "workerpool" in env.get("CLUSTER_SPEC", "")
        or any(k.startswith("AIP_") for k in env)
        or (isinstance(job, dict) and ("workerPoolSpecs" in job or "worker_pool_specs" in job))
    ):
        return "vertex"
    if "master" in jobs or "job" in data:
        return "ai-platform"
    addresses = [a for tasks in jobs.values() for a in (tasks.values() if isinstance(tasks, dict) else tasks)]
    if data.get("environment") == "cloud" or any(".svc" in a for a in addresses):
        return "kubeflow"
    return "tf"


def task_info_from_env(env: Mapping[str, str] | None = None) -> TaskInfo:
    """This process's task, from ``TF_CONFIG``, else ``CLUSTER_SPEC``, else local.

    Args:
        env: the environment to read (default ``os.environ``).

    Raises:
        ClusterConfigError: a variable is set but cannot be understood.
    """
    env = os.environ if env is None else env
    tf_config = env.get("TF_CONFIG", "")
    if tf_config.strip():
        return parse_tf_config(tf_config, env)
    cluster_spec = env.get("CLUSTER_SPEC", "")
    if cluster_spec.strip():
        return parse_cluster_spec(cluster_spec, env)
    return local_task("none")


#: How the bootstrap treats the platform's variables: ``platform`` keeps them as written
#: (the default: what a program reads is what the platform wrote); ``tf2`` rewrites them
#: into the form TensorFlow 2 strategies accept (``master`` → ``chief``, evaluators out).
TF_CONFIG_MODES: tuple[str, ...] = ("platform", "tf2")


def render_bootstrap_env(info: TaskInfo, env: Mapping[str, str] | None = None, mode: str = "platform") -> dict[str, str | None]:
    """The variables the bootstrap exports for the trainer (``None``: unset it).

    Always ``TFJOB_TASK_TYPE``, ``TFJOB_TASK_INDEX``, ``TFJOB_IS_CHIEF`` (``1``/``0``)
    and ``TFJOB_TRIAL``, for code that does not parse the platform's variables.

    With ``mode="platform"`` (the default) ``TF_CONFIG`` and ``CLUSTER_SPEC`` are left
    exactly as the platform wrote them. With ``mode="tf2"`` ``TF_CONFIG`` is rewritten
    for TensorFlow 2 strategies (:meth:`TaskInfo.tf_config`; every key tfjob does not
    rewrite, such as ``rpc_layer`` and ``session_master``, is kept), or unset for a
    local process; and an AI Platform ``CLUSTER_SPEC`` names the primary ``chief`` too,
    so the two variables never disagree.
    """
    if mode not in TF_CONFIG_MODES:
        raise config_error(f"TF_CONFIG mode {mode!r} is not one of {', '.join(TF_CONFIG_MODES)}")
    env = {} if env is None else env
    out: dict[str, str | None] = {
        "TFJOB_TASK_TYPE": info.role,
        "TFJOB_TASK_INDEX": str(info.index),
        "TFJOB_IS_CHIEF": "1" if info.is_chief else "0",
        "TFJOB_TRIAL": info.trial,
    }
    if mode == "platform":
        return out
    import json

    tf_config = info.tf_config()
    if tf_config is None:
        out["TF_CONFIG"] = None
    else:
        original = _extra_keys(env.get("TF_CONFIG", ""))
        out["TF_CONFIG"] = json.dumps({**original, **tf_config})
    cluster_spec = env.get("CLUSTER_SPEC", "")
    if cluster_spec.strip() and info.dialect == "ai-platform":
        data = _load("CLUSTER_SPEC", cluster_spec)
        cluster = data.get("cluster")
        if isinstance(cluster, dict) and "master" in cluster:
            data["cluster"] = {("chief" if k == "master" else k): v for k, v in cluster.items()}
        task = data.get("task")
        if isinstance(task, dict) and task.get("type") == "master":
            data["task"] = {**task, "type": "chief"}
        out["CLUSTER_SPEC"] = json.dumps(data)
    return out


def _extra_keys(text: str) -> dict[str, Any]:
    """The keys of a TF_CONFIG that :meth:`TaskInfo.tf_config` does not write (rpc_layer…)."""
    if not text.strip():
        return {}
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if k not in ("cluster", "sparseCluster", "task", "environment", "job")}


def render_tf2_env(info: TaskInfo) -> dict[str, str | None]:
    """``render_bootstrap_env(info, mode="tf2")`` for a process with no other variables."""
    return render_bootstrap_env(info, {}, mode="tf2")
