"""The job description: pure, validated data.

A :class:`JobSpec` holds up to four :class:`Pool` s (``chief``, ``worker``, ``ps``,
``evaluator``), each a replica count on a :class:`Machine`, plus what every task runs
(a trainer package and module, or a container image) and the job's settings.
Everything is checked on construction; a :class:`~tfjob.errors.SpecError` names the
field, the value and the fix.

The values a role is made of are :mod:`.replicas`'s and the checks :mod:`.checks`'s (both
named here too, where the rest of tfjob imports them from).

:func:`build_spec` is the one way the CLI and :class:`tfjob.Job` turn options (scale
tier, counts, machine types, accelerators) into a spec; config files go through
:mod:`tfjob.config.job`, which ends in the same function.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import SpecError, Word
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
from .machines import (
    DEFAULT_MACHINE,
    tpu_chips,
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


def _machine(role: str, name: str | None, accelerator: Accelerator | None) -> Machine:
    """Role ``role``'s machine: ``name`` (its ``<role>_machine_type``, which an error names) or the default."""
    try:
        return Machine.resolve(name or DEFAULT_MACHINE, accelerator)
    except SpecError as e:
        raise (e.for_field(f"{role}_machine_type") if name else e) from None


def tier_pools(tier: ScaleTier) -> list[Pool]:
    """The pools a predefined tier stands for (not CUSTOM)."""
    pools = []
    for role, (replicas, machine_type, acc, count) in TIERS[tier].items():
        accelerator = Accelerator(acc, count) if acc else None
        pools.append(Pool(role, replicas, Machine(machine_type, accelerator)))
    return pools


@dataclass(frozen=True)
class RoleRequest:
    """What one role was asked to run on, before it is a :class:`Pool`: its count (None: the
    role is not asked for; the chief's is always 1), machine type, own accelerator (the job's
    shared one is :attr:`Shape.accelerator`), image, arguments, variables and resources."""

    count: int | None = None
    machine_type: str | None = None
    accelerator: Accelerator | None = None
    image: str | None = None
    args: Sequence[str] | None = None
    env: Mapping[str, str] | None = None
    resources: Resources | None = None


@dataclass(frozen=True)
class Shape:
    """The job's roles as asked (typed): what :func:`build_pools` makes the pools from.

    Attributes:
        roles: a :class:`RoleRequest` per role (``chief``, ``worker``, ``ps``, ``evaluator``);
            a role left out is not asked for.
        chief: False leaves the chief out (worker 0 leads).
        scale_tier: a legacy tier that fixes the pools (``CUSTOM``: counts and machine types given).
        accelerator: the chief, worker and evaluator pools' accelerator, unless theirs is given.
        tpu_topology: a TPU VM slice's shape, for the pools on a TPU VM machine type.
    """

    roles: Mapping[str, RoleRequest] = field(default_factory=dict)
    chief: bool = True
    scale_tier: ScaleTier | None = None
    accelerator: Accelerator | None = None
    tpu_topology: str | None = None

    def role(self, role: str) -> RoleRequest:
        """What ``role`` was asked (an empty request when it was not)."""
        return self.roles.get(role) or RoleRequest()

    def accelerator_of(self, role: str) -> Accelerator | None:
        """``role``'s accelerator: its own, else the shared one (never a parameter server's)."""
        own = self.role(role).accelerator
        return own if own is not None or role == "ps" else self.accelerator


def build_spec(
    *,
    name: str,
    module: str | None = None,
    package: str | None = None,
    packages: Sequence[str] = (),
    image: str | None = None,
    scale_tier: str | ScaleTier | None = None,
    workers: int | None = None,
    ps: int | None = None,
    evaluators: int | None = None,
    chief_machine_type: str | None = None,
    worker_machine_type: str | None = None,
    ps_machine_type: str | None = None,
    evaluator_machine_type: str | None = None,
    accelerator: Accelerator | str | None = None,
    chief_accelerator: Accelerator | str | None = None,
    worker_accelerator: Accelerator | str | None = None,
    ps_accelerator: Accelerator | str | None = None,
    evaluator_accelerator: Accelerator | str | None = None,
    chief_image: str | None = None,
    worker_image: str | None = None,
    ps_image: str | None = None,
    evaluator_image: str | None = None,
    chief: bool = True,
    tpu_topology: str | None = None,
    chief_args: Sequence[str] | None = None,
    worker_args: Sequence[str] | None = None,
    ps_args: Sequence[str] | None = None,
    evaluator_args: Sequence[str] | None = None,
    chief_env: Mapping[str, str] | None = None,
    worker_env: Mapping[str, str] | None = None,
    ps_env: Mapping[str, str] | None = None,
    evaluator_env: Mapping[str, str] | None = None,
    chief_resources: Resources | None = None,
    worker_resources: Resources | None = None,
    ps_resources: Resources | None = None,
    evaluator_resources: Resources | None = None,
    **settings: Any,
) -> JobSpec:
    """Build a :class:`JobSpec` from the flat keywords the CLI's flags and config files give
    (the parser at the edge: the roles become a typed :class:`Shape` once, whose pools
    :func:`build_pools` makes).

    Without a tier every pool defaults to ``n1-standard-4``. A predefined tier
    (BASIC … BASIC_TPU) fixes the pools; counts or machine types next to it are an
    error. ``CUSTOM`` takes counts and requires a machine type for each pool used, as
    AI Platform did. ``accelerator`` applies to the chief, worker and evaluator pools;
    the ``<role>_accelerator`` options to one pool.

    ``chief=False`` (``--no-chief``) leaves the chief out: worker 0 is the chief, as in
    TensorFlow's multi-worker tutorials and Kubeflow's examples (Kubeflow and JobSet run
    such jobs; Vertex AI and AI Platform always have a chief and refuse them).

    ``settings`` are the remaining :class:`JobSpec` fields (args, env, job_dir, …).
    """
    tier = ScaleTier.parse(scale_tier) if scale_tier is not None else None
    shared = _as_accelerator(accelerator, "accelerator")
    given = {
        "chief": (None, chief_machine_type, chief_accelerator, chief_image, chief_args, chief_env, chief_resources),
        "worker": (workers, worker_machine_type, worker_accelerator, worker_image, worker_args, worker_env, worker_resources),
        "ps": (ps, ps_machine_type, ps_accelerator, ps_image, ps_args, ps_env, ps_resources),
        "evaluator": (evaluators, evaluator_machine_type, evaluator_accelerator, evaluator_image, evaluator_args, evaluator_env,
                      evaluator_resources),
    }  # fmt: skip
    roles = {
        role: RoleRequest(count, machine, _as_accelerator(acc, f"{role}_accelerator"), img, args, env, resources)
        for role, (count, machine, acc, img, args, env, resources) in given.items()
    }
    shape = Shape(roles, chief=chief, scale_tier=tier, accelerator=shared, tpu_topology=tpu_topology)
    return JobSpec(
        name=name, pools=build_pools(shape), module=module, package=package, packages=tuple(packages), image=image,
        scale_tier=tier, **settings,
    )  # fmt: skip


def _as_accelerator(value: Accelerator | str | None, field: str) -> Accelerator | None:
    return Accelerator.parse(value, field) if isinstance(value, str) else value


def build_pools(shape: Shape) -> tuple[Pool, ...]:
    """The pools ``shape`` asks for, each checked (a :class:`SpecError` names the keyword)."""
    for role in ("worker", "ps", "evaluator"):
        n = shape.role(role).count
        if n is not None:
            check_count(COUNT_FIELDS[role], n)
    tier = shape.scale_tier
    if tier is not None and tier is not ScaleTier.CUSTOM:
        _check_fixed_tier(shape, tier)
        pools = [dataclasses.replace(p, image=shape.role(p.role).image) for p in tier_pools(tier)]
    else:
        pools = _custom_pools(shape)
    if shape.tpu_topology is not None:
        pools = _on_tpu_topology(pools, shape.tpu_topology)
    present = [p.role for p in pools]
    for role in ROLES:
        own = shape.role(role)
        if (own.args is not None or own.env) and role not in present:
            raise SpecError(
                field=f"{role}_args" if own.args is not None else f"{role}_env", problem=f"is set but the job has no {role} pool"
            )
    pools = [
        dataclasses.replace(p, args=_args(shape.role(p.role).args, p.args), env={**p.env, **(shape.role(p.role).env or {})}) for p in pools
    ]
    pools = [_with_resources(p, shape.role(p.role).resources, shape.role(p.role).machine_type, shape.accelerator_of(p.role), tier)
             for p in pools]  # fmt: skip
    for role in ROLES:
        if shape.role(role).resources is not None and role not in present:
            raise SpecError(field=f"{role}_resources", problem=f"is set but the job has no {role} pool")
    return tuple(pools)


def _check_fixed_tier(shape: Shape, tier: ScaleTier) -> None:
    """A predefined tier fixes the cluster: no counts, machine types or accelerators beside it."""
    given = [COUNT_FIELDS[r] for r in ("worker", "ps", "evaluator") if shape.role(r).count is not None]
    given += [f"{r}_machine_type" for r in ROLES if shape.role(r).machine_type is not None]
    given += ["accelerator"] if any(shape.accelerator_of(r) for r in ROLES) else []
    if given:
        raise SpecError(
            field="scale_tier",
            value=Word(tier.value),
            problem=f"fixes the cluster, so {', '.join('{' + g + '}' for g in given)} cannot be set",
            fix="use {scale_tier=CUSTOM} to choose counts and machine types",
        )


def _custom_pools(shape: Shape) -> list[Pool]:
    """The pools of a job without a tier (or ``CUSTOM``): each role asked for, on its machine."""
    counts = {r: shape.role(r).count for r in ("worker", "ps", "evaluator")}
    machines = {r: shape.role(r).machine_type for r in ROLES}
    if shape.scale_tier is ScaleTier.CUSTOM:
        if machines["chief"] is None:
            raise SpecError(field="scale_tier", value=Word("CUSTOM"), problem="needs {chief_machine_type}")
        for role, n in counts.items():
            if n is not None and machines[role] is None:
                raise SpecError(
                    field="scale_tier", value=Word("CUSTOM"), problem=f"with {{{COUNT_FIELDS[role]}={n}}} needs {{{role}_machine_type}}"
                )
    else:
        for role, n in counts.items():
            machine = machines[role]
            if machine is not None and n is None:
                raise SpecError(field=f"{role}_machine_type", value=Word(machine), problem=f"is set but {{{COUNT_FIELDS[role]}}} is not")
    chief = shape.role("chief")
    pools = [Pool("chief", 1, _machine("chief", machines["chief"], shape.accelerator_of("chief")), chief.image)]
    if not shape.chief:
        given = [
            f
            for f, v in (("chief_machine_type", chief.machine_type), ("chief_accelerator", chief.accelerator), ("chief_image", chief.image))
            if v
        ]
        if given or shape.scale_tier is not None:
            given = given or ["scale_tier"]
            raise SpecError(
                field="chief", value=False, problem=f"leaves the chief out, so {', '.join('{' + g + '}' for g in given)} cannot be set"
            )
        if not counts["worker"]:
            raise SpecError(field="chief", value=False, problem="needs {workers} ≥ 1: worker 0 is then the chief")
        pools = []
    for role, n in counts.items():
        if n is not None:
            pools.append(Pool(role, n, _machine(role, machines[role], shape.accelerator_of(role)), shape.role(role).image))
    return pools


def _on_tpu_topology(pools: list[Pool], tpu_topology: str) -> list[Pool]:
    """The pools on a TPU VM machine type given ``tpu_topology`` (one is needed)."""
    tpu_pools = [p for p in pools if tpu_chips(p.machine.type) is not None]
    if not tpu_pools:
        raise SpecError(
            field="tpu_topology",
            value=Word(tpu_topology),
            problem="needs a TPU VM machine type (e.g. {worker_machine_type=ct5lp-hightpu-4t})",
        )
    return [
        dataclasses.replace(p, machine=dataclasses.replace(p.machine, tpu_topology=tpu_topology)) if p in tpu_pools else p for p in pools
    ]


def _args(given: Sequence[str] | None, current: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A pool's own arguments: those given (checked by the pool), else what it has."""
    return current if given is None else given  # type: ignore[return-value]  # a list given is made a tuple by Pool


def _with_resources(pool: Pool, resources: Resources | None, machine_type: str | None, acc: Accelerator | None, tier: Any) -> Pool:
    """``pool`` asking for ``resources`` (its machine the default: each platform reads the
    resources in its own terms); a machine type or accelerator given beside them is refused."""
    if resources is None:
        return pool
    field = f"{pool.role}_resources"
    if not isinstance(resources, Resources):
        raise SpecError(field=field, value=resources, problem="must be a Resources(cpu=…, memory=…, accelerator=…)")
    given = (
        [f"{pool.role}_machine_type"] * (machine_type is not None)
        + ["accelerator"] * (acc is not None)
        + ["scale_tier"] * (tier is not None)
    )
    if given:
        raise SpecError(
            field=field,
            problem=f"and {', '.join('{' + g + '}' for g in given)} both say what {pool.role} replicas run on",
            fix="give the machine type and accelerator in Resources(machine_type=…, accelerator=…)",
        )
    return dataclasses.replace(pool, resources=resources)
