"""The job description: pure, validated data.

A :class:`JobSpec` holds up to four :class:`Pool` s (``chief``, ``worker``, ``ps``,
``evaluator``), each a replica count on a :class:`Machine`, plus what every task runs
(a trainer package and module, or a container image) and the job's settings.
Everything is checked on construction; a :class:`~tfjob.errors.SpecError` names the
field, the value and the fix.

The values a role is made of are :mod:`.replicas`'s and the checks :mod:`.checks`'s (both
named here too, where the rest of tfjob imports them from).

A spec is made from the typed job as asked (:class:`tfjob.description.request.JobRequest`,
its roles a :class:`tfjob.description.shape.Shape`): :class:`tfjob.Job`, the CLI's flags and
config files all end there (:func:`tfjob.description.request.build_spec` from the flat
keywords the CLI and config files name).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import SpecError
from .checks import (
    BUILT_PACKAGE_SUFFIXES as BUILT_PACKAGE_SUFFIXES,
    RESERVED_ENV as RESERVED_ENV,
    RESERVED_ENV_PREFIXES as RESERVED_ENV_PREFIXES,
    RESERVED_LABELS as RESERVED_LABELS,
    _MODULE_RE,
    _check_labels,
    check_count as check_count,
    check_env as check_env,
    check_image as check_image,
    check_job_name as check_job_name,
    check_trainer as check_trainer,
    is_kubernetes_label_key as is_kubernetes_label_key,
    module_exists as module_exists,
    parse_duration as parse_duration,
    parse_key_values as parse_key_values,
)
from .replicas import (
    COUNT_FIELDS as COUNT_FIELDS,
    ROLES as ROLES,
    TIERS as TIERS,
    Accelerator as Accelerator,
    Machine as Machine,
    Pool as Pool,
    Resources as Resources,
    ScaleTier as ScaleTier,
    check_boot_disk as check_boot_disk,
)


_TYPES = {
    "name": (str,),
    "module": (str, type(None)),
    "script": (str, type(None)),
    "package": (str, os.PathLike, type(None)),
    "image": (str, type(None)),
    "job_dir": (str, os.PathLike, type(None)),
    "service_account": (str, type(None)),
    "region": (str, type(None)),
}


def _check_types(spec: "JobSpec") -> None:
    """The Python API's values are the types the CLI gives: say which keyword is wrong."""
    for name, types in _TYPES.items():
        value = getattr(spec, name)
        if not isinstance(value, types):
            want = " or ".join(t.__name__ for t in types if t is not type(None) and t is not os.PathLike)
            raise SpecError(field=name, value=value, problem=f"must be {want}, not {type(value).__name__}")
    for name in ("args", "packages"):
        value = getattr(spec, name)
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            example = '["--steps", "100"]' if name == "args" else '["dist/extra-1.0.tar.gz"]'
            raise SpecError(field=name, value=value, problem="must be a list of strings", fix=f"e.g. {name}={example}")
        bad = [v for v in value if isinstance(v, bool) or not isinstance(v, (str, int, float, os.PathLike))]
        if bad:
            raise SpecError(field=name, problem=f": {bad[0]!r} is not text")
    for name in ("env", "labels"):
        value = getattr(spec, name)
        if not isinstance(value, Mapping):
            raise SpecError(field=name, value=value, problem="must be a mapping", fix=f"e.g. {name}={{'key': 'value'}}")
    if spec.timeout is not None and (isinstance(spec.timeout, bool) or not isinstance(spec.timeout, (int, float))):
        raise SpecError(field="timeout", value=spec.timeout, problem="must be a number of seconds")


def check_cloud_labels(spec: "JobSpec", platform: str) -> None:
    """Refuse a prefixed Kubernetes label key: Google Cloud label keys have no prefix."""
    for key in spec.labels:
        if is_kubernetes_label_key(key):
            raise SpecError(
                what="label key",
                value=key,
                problem=f"is a Kubernetes label: {platform} label keys are lower-case letters, digits, '_' and '-' without a prefix",
                fix="use a plain key, or {backend=kubeflow} / jobset / trainjob",
            )


@dataclass(frozen=True)
class JobSpec:
    """A whole training job.

    Attributes:
        name: display name (Vertex), job id stem (AI Platform), object name (Kubeflow).
        pools: the pools, in role order; the chief is required.
        module: the trainer's Python module (``trainer.task``).
        script: or the trainer's Python file, run as ``python PATH`` (relative to the
            trainer directory locally, to the working directory in an image).
        package: the trainer source directory, an sdist path, or a ``gs://`` URI.
        packages: extra already-built tarballs or wheels installed next to the trainer.
        image: a container image every pool runs (unless the pool names its own).
        args: arguments given to every task's trainer.
        env: environment variables set in every task.
        job_dir: where the trainer writes (passed as ``--job-dir``; Vertex ``baseOutputDirectory``).
        labels: labels for the cloud resource.
        service_account: the service account the tasks run as.
        timeout: maximum running time in seconds.
        scale_tier: the tier the pools came from, if any.
        region: the region from a config file (flags and settings may override it).
        runtime_version, python_version: legacy AI Platform runtime settings.
        use_chief: name the primary task ``chief`` (True) or ``master`` (False) in the
            legacy AI Platform TF_CONFIG; None leaves it to the runtime version.

    What only one platform has (Vertex AI's scheduling, encryption, networking, TensorBoard,
    experiments; Kubernetes' namespace and pod template…) is not here: it is that backend's
    options, declared and validated in its folder (:mod:`tfjob.description.knobs`).
    """

    name: str
    pools: tuple[Pool, ...]
    module: str | None = None
    package: str | None = None
    packages: tuple[str, ...] = ()
    script: str | None = None
    image: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    job_dir: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    service_account: str | None = None
    timeout: float | None = None
    scale_tier: ScaleTier | None = None
    region: str | None = None
    runtime_version: str | None = None
    python_version: str | None = None
    use_chief: bool | None = None
    requirements: str | None = None
    #: A container image's entrypoint, replaced (``--command``; image jobs without a module).
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_job_name(self.name)
        pools = tuple(self.pools)
        roles = [p.role for p in pools]
        for role in set(roles):
            if roles.count(role) > 1:
                what = "two chiefs" if role == "chief" else f"two {role} pools"
                raise SpecError(f"the job has {what}; give each role one pool")
        if "chief" not in roles and "worker" not in roles:
            raise SpecError(
                problem="the job has no chief and no workers", fix="give it a chief (Vertex worker pool 0) or, with {chief=False}, workers"
            )
        pools = tuple(sorted(pools, key=lambda p: ROLES.index(p.role)))
        object.__setattr__(self, "pools", pools)
        if "ps" in roles and "worker" not in roles:
            raise SpecError(field="ps", problem="needs {workers} ≥ 1: a parameter-server job has no one to serve")
        _check_types(self)
        for name in ("package", "job_dir"):
            if isinstance(getattr(self, name), os.PathLike):
                object.__setattr__(self, name, os.fspath(getattr(self, name)))
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "packages", tuple(self.packages))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "labels", dict(self.labels))
        if self.scale_tier is not None:
            object.__setattr__(self, "scale_tier", ScaleTier.parse(self.scale_tier))
        check_image(self.image, "image")
        for pool in pools:
            check_image(pool.image, f"{pool.role}_image")
        has_image = bool(self.image) or all(p.image for p in pools)
        if self.module is not None and self.script is not None:
            raise SpecError(problem="give the trainer once: {module} (run as python -m) or {script} (run as python PATH), not both")
        if self.module is None and self.script is None and not has_image:
            raise SpecError(field="module", problem="is required to run a trainer package (or {script}, or {image} for a container)")
        if self.script is not None and (not isinstance(self.script, str) or not self.script.strip() or "\0" in self.script):
            raise SpecError(field="script", value=self.script, problem="must be the path of a Python file, e.g. dist_mnist.py")
        if self.module is not None and not _MODULE_RE.match(self.module):
            raise SpecError(
                field="module",
                value=self.module,
                problem="is not a module `python -m` can run (dotted names like trainer.task; for a file path use {script})",
            )
        check_env(self.env, "env")
        if not isinstance(self.command, (tuple, list)) or not all(isinstance(c, str) and c for c in self.command):
            raise SpecError(field="command", value=self.command, problem="must be a list of non-empty strings (the container's entrypoint)")
        object.__setattr__(self, "command", tuple(self.command))
        if self.command and (self.module is not None or self.script is not None or not has_image):
            raise SpecError(
                field="command",
                problem="replaces a container image's entrypoint; a {module} or {script} job starts through tfjob-bootstrap instead",
                fix="drop {command}, or give {image} without {module}",
            )
        _check_labels(self.labels)
        for key in self.labels:
            if key in RESERVED_LABELS:
                raise SpecError(
                    what="label",
                    value=key,
                    problem=f"is set by tfjob on every job (reserved: {', '.join(RESERVED_LABELS)})",
                    fix="choose another key",
                )
        if self.timeout is not None:
            from .limits import check_seconds

            object.__setattr__(self, "timeout", check_seconds(self.timeout, "timeout"))
        if isinstance(self.requirements, os.PathLike):
            object.__setattr__(self, "requirements", os.fspath(self.requirements))
        if self.requirements is not None and has_image and not self.package:
            raise SpecError(
                field="requirements",
                problem="lists a trainer directory's dependencies; an {image} brings its own (install them in the image)",
            )

    # -- views -------------------------------------------------------------------
    def pool(self, role: str) -> Pool | None:
        """The pool of ``role``, or None."""
        for p in self.pools:
            if p.role == role:
                return p
        return None

    def count(self, role: str) -> int:
        """How many tasks of ``role`` the job has (0 when none)."""
        p = self.pool(role)
        return p.replicas if p else 0

    @property
    def has_chief(self) -> bool:
        """False for a chief-less job (``--no-chief``), where worker 0 is the chief."""
        return any(p.role == "chief" for p in self.pools)

    @property
    def task_count(self) -> int:
        """How many tasks the job has (counted, not listed: a count is checked before any task is built)."""
        return sum(p.replicas for p in self.pools)

    def tasks(self) -> list[tuple[str, int]]:
        """Every task as (role, index), chief (or worker 0) first."""
        return [(p.role, i) for p in self.pools for i in range(p.replicas)]

    def args_for(self, role: str) -> tuple[str, ...]:
        """The trainer arguments tasks of ``role`` get: their pool's, else the job's."""
        p = self.pool(role)
        return p.args if p is not None and p.args is not None else self.args

    def env_for(self, role: str) -> dict[str, str]:
        """The variables tasks of ``role`` get: the job's, with their pool's over them."""
        p = self.pool(role)
        return {**self.env, **(p.env if p is not None else {})}

    @property
    def per_pool(self) -> bool:
        """True when a pool has arguments or variables of its own."""
        return any(p.args is not None or p.env for p in self.pools)

    def image_for(self, role: str) -> str | None:
        """The container image tasks of ``role`` run, if any."""
        p = self.pool(role)
        return (p.image if p else None) or self.image

    def replace(self, **changes: Any) -> "JobSpec":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # -- serialization (job store, detached supervisor) -----------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_dict` rebuilds an equal spec."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "pools":
                value = [p.to_dict() for p in value]
            elif isinstance(value, ScaleTier):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "JobSpec":
        known = {f.name for f in dataclasses.fields(cls)}
        # A record written before the Vertex AI knobs moved to the backends' options holds them
        # (a record's spec is rebuilt for the local and Kubernetes backends, which never read them).
        data = {k: v for k, v in data.items() if k not in _MOVED_TO_OPTIONS}
        unknown = set(data) - known
        if unknown:
            raise SpecError(f"unknown job spec fields: {', '.join(sorted(unknown))[:200]}")
        values = dict(data)
        values["pools"] = tuple(Pool.from_dict(p) for p in data["pools"])
        for name in ("args", "packages", "command"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)


#: JobSpec fields that are now a backend's options (Vertex AI's, Google Cloud's).

_MOVED_TO_OPTIONS = frozenset({
    "network", "restart_job_on_worker_restart", "enable_web_access", "tensorboard", "experiment", "experiment_run",
    "scheduling_strategy", "max_wait", "disable_retries", "reservation", "persistent_resource_id", "kms_key",
    "reserved_ip_ranges", "network_attachment", "enable_dashboard_access",
})  # fmt: skip
