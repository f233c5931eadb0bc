"""The job's roles as asked, and the pools they make.

A :class:`Shape` holds a :class:`RoleRequest` per role (``chief``, ``worker``, ``ps``,
``evaluator``: its count, machine type, accelerator, image, arguments, variables and neutral
:class:`~.replicas.Resources`) and what the job asks of them all (a legacy scale tier, one
accelerator, a TPU topology). :func:`build_pools` checks it and makes the
:class:`~.replicas.Pool` s of a :class:`~.spec.JobSpec`; a :class:`~tfjob.errors.SpecError`
names the knob (``worker_machine_type``), which each front end spells its own way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import SpecError, Word
from .checks import check_count
from .machines import DEFAULT_MACHINE, tpu_chips
from .replicas import COUNT_FIELDS, ROLES, TIERS, Accelerator, Machine, Pool, Resources, ScaleTier


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
        chief: False leaves the chief out (worker 0 leads); None (not said) and True keep it.
        scale_tier: a legacy tier that fixes the pools (``CUSTOM``: counts and machine types given).
        accelerator: the chief, worker and evaluator pools' accelerator, unless theirs is given.
        tpu_topology: a TPU VM slice's shape, for the pools on a TPU VM machine type.
    """

    roles: Mapping[str, RoleRequest] = field(default_factory=dict)
    chief: bool | None = None
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


def as_accelerator(value: Accelerator | str | None, field: str) -> Accelerator | None:
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
        if own.env is not None and not isinstance(own.env, Mapping):
            raise SpecError(field=f"{role}_env", value=own.env, problem="must be a mapping", fix="e.g. {'KEY': 'value'}")
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
    if shape.chief is False:
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


def accelerators_as_resources(shape: Shape) -> Shape:
    """``shape`` as this machine reads it: an accelerator given without a machine type
    (``--worker-accelerator NVIDIA_L4:1``, ``accelerator=``) is what the role asks for, not a
    Compute Engine machine to check it against (the default n1 takes no L4): it becomes the
    role's :class:`~.replicas.Resources`, which the local backend says it ignores."""
    if shape.scale_tier is not None:
        return shape
    shared = shape.accelerator
    if any(shape.role(r).machine_type is not None for r in ("chief", "worker", "evaluator")):
        shared = None  # a machine type names the machine the job-wide accelerator is checked against
    present = {"chief": shape.chief is not False, **{r: bool(shape.role(r).count) for r in ("worker", "ps", "evaluator")}}
    roles = dict(shape.roles)
    for role in ROLES:
        own = shape.role(role)
        acc = own.accelerator if own.accelerator is not None else (shared if role != "ps" else None)
        if acc is None or not present[role] or own.machine_type is not None or own.resources is not None:
            continue
        roles[role] = dataclasses.replace(own, accelerator=None, resources=Resources(accelerator=acc))
    return dataclasses.replace(shape, roles=roles, accelerator=None if shared is not None else shape.accelerator)
