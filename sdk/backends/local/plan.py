"""What each task of a local cluster runs: command line, environment, working directory.

Everything here is pure except :func:`find_source_root`, which looks at the trainer
directory. The environment of a task is what the platform named by the dialect
would set (``TF_CONFIG``, ``CLUSTER_SPEC``, ``AIP_*``), rendered by
:func:`tfjob.cluster.render_task_env`, on top of the caller's environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...errors import SpecError, UsageError
from ...description.machines import did_you_mean
from ...cluster.dispatch import PACKAGES_MOUNT as SHIPPED_MOUNT
from ...description.spec import ROLES, JobSpec
from .ports import HOST

if TYPE_CHECKING:
    from ...model import Strategy, TFConfigMode

#: The platforms whose task environment a local cluster can reproduce.
DIALECTS = ("vertex", "ai-platform", "kubeflow", "gcloud-local")

#: Variables a platform sets per task: never inherited from the caller's environment.
_PLATFORM_VARS = ("TF_CONFIG", "CLUSTER_SPEC", "TFJOB_TASK_TYPE", "TFJOB_TASK_INDEX", "TFJOB_IS_CHIEF", "TFJOB_TRIAL")
_PLATFORM_PREFIXES = ("AIP_", "CLOUD_ML_")

#: Under a job's log directory: the tasks' working directories, one a task (``work/chief-0``).
WORK_DIR = "work"


@dataclass(frozen=True)
class TaskPlan:
    """One task of a local cluster, ready to start.

    Attributes:
        name: ``chief-0``, ``worker-3``…
        role: the canonical role.
        index: the task's index within its role.
        address: ``127.0.0.1:PORT`` it listens on.
        argv: the command line (the bootstrap, then the trainer's arguments).
        env: the task's whole environment.
        cwd: where it runs.
    """

    name: str
    role: str
    index: int
    address: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "."

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])


def task_name(role: str, index: int) -> str:
    """``worker-3``: how a task is named in logs, files and messages."""
    return f"{role}-{index}"


def check_dialect(dialect: str) -> str:
    """The dialect if known; else a SpecError that lists the known ones."""
    if dialect not in DIALECTS:
        raise SpecError(
            field="dialect",
            value=dialect,
            problem=f"is not known{did_you_mean(dialect, DIALECTS)}",
            fix=f"choose one of {', '.join(DIALECTS)}",
        )
    return dialect


def check_chief(spec: JobSpec, dialect: str) -> None:
    """A job without a chief runs locally only in the dialect of a platform that runs one (Kubeflow)."""
    if not spec.has_chief and dialect != "kubeflow":
        raise SpecError(
            field="chief",
            value=False,
            problem=f"(worker 0 as the chief) runs on Kubeflow, not on {dialect}, whose primary replica is always the chief or master",
            fix="add {dialect=kubeflow} to run it as Kubeflow would",
        )


def say_ignored_resources(spec: JobSpec) -> None:
    """One line naming what this machine does not give the tasks: every pool's
    :class:`tfjob.description.resources.Resources` (the tasks run as they are, on this machine's CPUs and memory)."""
    asked = [f"{p.role} ({p.resources.words()})" for p in spec.pools if p.resources is not None]
    if asked:
        import warnings

        warnings.warn(
            f"the local backend runs every task on this machine and ignores the resources asked for: {'; '.join(asked)}", stacklevel=2
        )


def build_cluster(spec: JobSpec, ports: list[int], host: str = HOST) -> dict[str, list[str]]:
    """Canonical roles → ``host:port`` addresses, one port per task in :meth:`JobSpec.tasks` order."""
    tasks = spec.tasks()
    if len(ports) != len(tasks):
        raise ValueError(f"{len(tasks)} tasks need {len(tasks)} ports, got {len(ports)}")
    cluster: dict[str, list[str]] = {}
    for (role, _), port in zip(tasks, ports):
        cluster.setdefault(role, []).append(f"{host}:{port}")
    return cluster


#: The port every task listens on in a container of the job's own network (the platforms' port).
PLATFORM_PORT = 2222
#: Vertex AI's worker pool of each role.
_POOL_OF = {"chief": 0, "worker": 1, "ps": 2, "evaluator": 3}


def build_host_cluster(spec: JobSpec, dialect: str) -> dict[str, list[str]]:
    """Canonical roles → ``host:2222`` with the host names the platform of ``dialect`` gives
    its replicas: Kubeflow's task services ``<job>-<role>-<index>``, Vertex AI's (and the
    other Google dialects') ``workerpool<N>-<index>``. For containers on a private network."""
    import re

    job = re.sub(r"[^a-z0-9-]+", "-", spec.name.lower()).strip("-")[:40] or "job"
    cluster: dict[str, list[str]] = {}
    for role, index in spec.tasks():
        host = f"{job}-{role}-{index}" if dialect == "kubeflow" else f"workerpool{_POOL_OF[role]}-{index}"
        cluster.setdefault(role, []).append(f"{host}:{PLATFORM_PORT}")
    return cluster


def render_job_info(
    spec: JobSpec, dialect: str, strategy: Strategy = "module", tf_config: TFConfigMode = "platform"
) -> dict[str, object] | None:
    """The ``job`` part of TF_CONFIG / CLUSTER_SPEC as the platform of ``dialect`` writes it.

    AI Platform puts the job's ``trainingInput``, Vertex AI its ``CustomJobSpec``,
    ``gcloud ai-platform local train`` the module and arguments; Kubeflow puts none.
    A package job's module there is the bootstrap, with its arguments, as tfjob submits it.
    """
    from ...model import SubmitOptions
    from ...cluster.dispatch import BOOTSTRAP_MODULE, package_args

    submitted = SubmitOptions(strategy=strategy, tf_config=tf_config)
    if dialect == "kubeflow":
        return None
    if dialect == "gcloud-local":
        return {"job_name": spec.module or spec.script, "args": list(spec.args)}
    if dialect == "ai-platform":
        info: dict[str, object] = {"scale_tier": (spec.scale_tier.value if spec.scale_tier else "CUSTOM")}
        info["master_type"] = spec.pools[0].machine.type
        for role, key in (("worker", "worker"), ("ps", "parameter_server"), ("evaluator", "evaluator")):
            pool = spec.pool(role)
            if pool is not None:
                info[f"{key}_type"] = pool.machine.type
                info[f"{key}_count"] = str(pool.replicas)
        info["package_uris"] = [spec.package] if spec.package else []
        info["python_module"] = BOOTSTRAP_MODULE if spec.module else None
        info["args"] = package_args(spec, "chief", submitted) if spec.module else list(spec.args)
        if spec.job_dir:
            info["job_dir"] = spec.job_dir
        info["region"] = spec.region or "local"
        if spec.runtime_version:
            info["runtime_version"] = spec.runtime_version
        return info
    pools: list[dict[str, object]] = []
    for role in ROLES:
        pool = spec.pool(role)
        if pool is None:
            pools.append({})
            continue
        pools.append(
            {
                "machineSpec": {"machineType": pool.machine.type},
                "replicaCount": str(pool.replicas),
                "pythonPackageSpec": {
                    "packageUris": [spec.package] if spec.package else [],
                    "pythonModule": BOOTSTRAP_MODULE if spec.module else None,
                    "args": package_args(spec, role, submitted) if spec.module else list(spec.args_for(role)),
                },
            }
        )
    while pools and not pools[-1]:
        pools.pop()
    vertex: dict[str, object] = {"workerPoolSpecs": pools}
    if spec.job_dir:
        vertex["baseOutputDirectory"] = {"outputUriPrefix": spec.job_dir}
    return vertex


def platform_variables(env: Mapping[str, str]) -> dict[str, str]:
    """Only the per-task variables a platform sets (TF_CONFIG, CLUSTER_SPEC, AIP_*…)."""
    return {k: v for k, v in env.items() if k in _PLATFORM_VARS or k.startswith(_PLATFORM_PREFIXES)}


def base_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without the per-task variables a platform sets."""
    return {k: v for k, v in environ.items() if k not in _PLATFORM_VARS and not k.startswith(_PLATFORM_PREFIXES)}


def _check_mountable(path: str, what: str) -> None:
    """A path a container engine's ``-v SRC:DST[:OPTIONS]`` can carry: no ':' (its separator)."""
    if ":" in path:
        raise SpecError(
            f"{what} {path!r} holds ':', which a container engine's -v takes for its separator, so it cannot be "
            "mounted into the containers; choose a path without ':'"
        )


def build_task_plans(
    spec: JobSpec,
    cluster: Mapping[str, list[str]],
    *,
    dialect: str,
    strategy: Strategy,
    python: str,
    source_root: str | None,
    environ: Mapping[str, str],
    job_id: str,
    cwd: str | None = None,
    work_dir: str | None = None,
    trial: str | None = None,
    tf_config: TFConfigMode = "platform",
    engine: Any = None,
    network: str | None = None,
    shipped: Sequence[str] = (),
) -> list[TaskPlan]:
    """One :class:`TaskPlan` per task, chief first.

    Args:
        spec: the job.
        cluster: canonical roles → addresses (see :func:`build_cluster`).
        dialect: ``vertex``, ``ai-platform`` or ``kubeflow``.
        strategy: ``module`` or ``parameter-server`` (already resolved).
        python: the interpreter that runs the bootstrap and the trainer.
        source_root: the directory the trainer's top-level package is in (prepended
            to PYTHONPATH, as an installed package is on the path: never the working
            directory); None when the trainer is installed in ``python``'s environment.
        environ: the environment the tasks start from (the caller's).
        job_id: the job's id (``TFJOB_JOB_ID`` in every task).
        cwd: where the tasks run without ``work_dir`` (default: ``source_root``: only
            what ``render`` shows when no job exists yet).
        work_dir: the job's working directories: each task runs in ``work_dir/<task>``,
            its own, as each replica starts in its own container's. What a trainer writes
            to a relative path lands there, never in the trainer directory.
        engine: the container engine (:class:`tfjob.runtime.engine.Engine`) that runs the tasks
            whose pool has an image (``--image``): each is then ``<engine> run`` of the
            image with the same bootstrap arguments and the platform's variables.
        network: the job's private container network (:meth:`Engine.create_network`):
            each container is then its ``cluster`` address's host (:func:`build_host_cluster`).
        shipped: host paths of packages for those containers: each is mounted read-only
            at ``/tfjob/packages/<file>`` and given to the bootstrap as ``--package``.
        trial: the hyperparameter-tuning trial id, as the platforms give it: in
            TF_CONFIG's (and CLUSTER_SPEC's) task and ``CLOUD_ML_TRIAL_ID``; the
            trainer's ``--job-dir`` is then the trial's own ``JOB_DIR/<trial>``.
    """
    from ...cluster.render import render_task_envs

    if spec.module is None and spec.script is None and not spec.image:
        raise SpecError(field="module", problem="(or {script}) is required to run a trainer locally")
    base = _base_environment(spec, environ, job_id=job_id, trial=trial, source_root=source_root)
    job_info = render_job_info(spec, dialect, strategy, tf_config)
    tasks = spec.tasks()
    # Every task's platform variables at once: the cluster is checked once, not once a task.
    platforms = render_task_envs(cluster, tasks, dialect, job=job_info, trial=trial, use_chief=spec.use_chief, job_dir=spec.job_dir)
    plans = []
    for (role, index), platform in zip(tasks, platforms):
        address = cluster[role][index]
        boot = _bootstrap_args(spec, role, trial, source_root, strategy=strategy, dialect=dialect, tf_config=tf_config)
        # No --check-port: the launcher checks the task's port as it starts it (a task
        # would load the socket module for it: 1.6 M instructions of every task's start).
        argv = [python, "-m", "tfjob.container.bootstrap", *boot]
        env = dict(base)
        env.update(spec.env_for(role))  # the pool's own variables over the job's
        env.update(platform)
        image = spec.image_for(role)
        if image:
            if engine is None:
                raise SpecError(field="image", problem="runs locally through a container engine (podman or docker)")
            argv = _container_argv(spec, role, index, image, boot, platform, engine, job_id, trial, shipped, network, address)
        name = task_name(role, index)
        where = os.path.join(work_dir, name) if work_dir is not None else cwd or source_root or "."
        plans.append(TaskPlan(name, role, index, address, argv, env, where))
    return plans


def _bootstrap_args(
    spec: JobSpec, role: str, trial: str | None, source_root: str | None, *, strategy: Strategy, dialect: str, tf_config: TFConfigMode
) -> list[str]:
    """The bootstrap's arguments for a task of ``role``: the trainer, its arguments, the cluster's conventions."""
    from ...cluster.dispatch import bootstrap_args

    # A trial writes to its own directory (the platform variables AIP_*_DIR add the trial the same way).
    trial_dir = spec.job_dir.rstrip("/") + f"/{trial}" if spec.job_dir and trial is not None else spec.job_dir
    script = spec.script
    if script is not None and source_root is not None and not spec.image_for(role):
        script = os.path.join(source_root, script)  # the task runs in its own directory, not the trainer's
    return bootstrap_args(
        spec.module, spec.args_for(role), strategy=strategy, dialect=dialect, tf_config=tf_config, job_dir=trial_dir,
        script=script,
    )  # fmt: skip


def _base_environment(
    spec: JobSpec, environ: Mapping[str, str], *, job_id: str, trial: str | None, source_root: str | None
) -> dict[str, str]:
    """The variables every task of the job starts with, before its pool's and its platform's."""
    base = base_environment(environ)
    base.update(spec.env)
    base["PYTHONUNBUFFERED"] = "1"  # live logs: a pipe would make Python buffer by blocks
    # TensorFlow's C++ INFO lines (server start-up, session options, one line per released
    # function) drown the trainer's own lines when 7 tasks share one terminal; warnings
    # and errors still show. Set TF_CPP_MIN_LOG_LEVEL=0 (or --env) to see everything.
    base.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    base["TFJOB_JOB_ID"] = job_id
    if trial is not None:
        base["CLOUD_ML_TRIAL_ID"] = str(trial)
    if source_root is not None:
        base["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, base.get("PYTHONPATH", "")) if p)
    return base


def _container_argv(
    spec: JobSpec,
    role: str,
    index: int,
    image: str,
    boot: list[str],
    platform: Mapping[str, str],
    engine: Any,
    job_id: str,
    trial: str | None,
    shipped: Sequence[str],
    network: str | None,
    address: str,
) -> list[str]:
    """``<engine> run`` of a task whose pool has an image: the platform's variables, the job dir
    and the shipped packages mounted, the same bootstrap arguments."""
    # What the platform gives a replica, and the user's --env: nothing else of this machine's.
    names = sorted({*spec.env_for(role), *platform, "PYTHONUNBUFFERED", "TF_CPP_MIN_LOG_LEVEL", "TFJOB_JOB_ID",
                    *(["CLOUD_ML_TRIAL_ID"] if trial is not None else [])})  # fmt: skip
    volumes = []
    if spec.job_dir and "://" not in spec.job_dir:
        _check_mountable(spec.job_dir, "--job-dir")
        volumes.append(engine.writable_volume(spec.job_dir, spec.job_dir))
    runs_bootstrap = spec.module is not None or spec.script is not None
    # Shipped packages: read-only at the path Kubernetes pods have them, installed first.
    install: list[str] = []
    for path in shipped if runs_bootstrap else ():
        _check_mountable(str(path), "a package")
        inside = f"{SHIPPED_MOUNT}/{Path(path).name}"
        volumes.append(f"{path}:{inside}:ro")
        install += ["--package", inside]
    command = list(spec.command)
    argv: list[str] = engine.run_argv(
        image,
        [*install, "--check-port", *boot] if runs_bootstrap else [*command[1:], *spec.args_for(role)],
        name=f"tfjob-{job_id}-{task_name(role, index)}".lower(),
        job_id=job_id,
        env_names=names,
        volumes=volumes,
        entrypoint="tfjob-bootstrap" if runs_bootstrap else (command[0] if command else None),
        network=network,
        host=address.rsplit(":", 1)[0] if network else None,
    )
    return argv


def find_source_root(package: str | None, module: str) -> str:
    """The directory to put on PYTHONPATH so that ``module`` imports from ``package``.

    ``package`` may be the project directory holding the top-level package
    (``my_trainer/`` with ``my_trainer/trainer/task.py``) or, as gcloud's
    ``--package-path`` is, the package itself (``my_trainer/trainer``).

    Raises:
        UsageError: the directory does not exist or does not hold the module.
    """
    top = module.split(".")[0]
    root = Path(package or ".").expanduser().resolve()
    if package and package.startswith("gs://"):
        raise UsageError(f"package {package!r} is in Cloud Storage; the local backend runs a local trainer directory")
    if not root.is_dir():
        problem = "is not a directory" if root.exists() else "does not exist"
        raise UsageError(f"trainer directory {package!r} {problem}; give the directory that holds {top}/")
    for candidate in (root, root / "src", root.parent):
        if (candidate / top).is_dir() or (candidate / f"{top}.py").is_file():
            if candidate == root.parent and root.name != top:
                break
            return str(candidate)
    raise UsageError(
        f"module {module!r} is not in trainer directory {package or '.'!r}: expected {top}/ or {top}.py in it "
        "(give the directory that holds the package, or the package itself)"
    )
