"""The job as asked: typed data from the user's call (or the CLI's flags, or a config file's
keys) to the :class:`~.spec.JobSpec` every backend renders.

A :class:`JobRequest` is what was *given*, before defaults: a field left ``None`` was not
said, so a request can be laid over another (a ``--config`` file's, an hparams file's trial
job) key by key, as gcloud merges flags over a file (:meth:`JobRequest.over`). Its roles are
a :class:`~.shape.Shape` of :class:`~.shape.RoleRequest` s. :meth:`JobRequest.spec` makes the
checked :class:`~.spec.JobSpec`.

Where each knob's value lands in this model is declared with the knob
(:attr:`tfjob.description.knobs.Knob.lands`); :func:`place` puts a value there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import SpecError
from .replicas import ROLES, Resources, ScaleTier
from .shape import RoleRequest, Shape, as_accelerator, build_pools
from .spec import JobSpec


@dataclass(frozen=True)
class JobRequest:
    """A job's description as given: what runs, its roles, and what every task gets.

    Attributes:
        name: the job's name (the front end gives a default before :meth:`spec`).
        module, script, image, command: the entry point: a module of ``package`` run as
            ``python -m``, a Python file, or a container image (``command`` replacing its
            entrypoint).
        package, packages, requirements: the trainer source (a directory, an sdist or a
            ``gs://`` URI), extra built packages, the trainer's requirements file.
        shape: the roles and what the job asks of them all.
        args, env, job_dir, labels, service_account, timeout: what every task gets.
        region, runtime_version, python_version, use_chief: a legacy AI Platform job's.

    Every field is ``None`` when it was not given.
    """

    name: str | None = None
    module: str | None = None
    script: str | None = None
    image: str | None = None
    command: Sequence[str] | None = None
    package: str | None = None
    packages: Sequence[str] | None = None
    requirements: str | None = None
    shape: Shape = field(default_factory=Shape)
    args: Sequence[str] | None = None
    env: Mapping[str, str] | None = None
    job_dir: str | None = None
    labels: Mapping[str, str] | None = None
    service_account: str | None = None
    timeout: float | None = None
    region: str | None = None
    runtime_version: str | None = None
    python_version: str | None = None
    use_chief: bool | None = None

    def role(self, role: str) -> RoleRequest:
        """What ``role`` was asked (an empty request when it was not)."""
        return self.shape.role(role)

    def over(self, base: JobRequest) -> JobRequest:
        """This request laid over ``base`` (a config file's): what this one says wins, field by
        field and role by role. A value that stands for several replaces them all: a predefined
        scale tier drops ``base``'s counts, machine types and role accelerators; the job's
        ``accelerator`` drops the chief's, workers' and evaluators' own (not the parameter
        servers', which it does not cover); the job's ``image`` drops the roles' own."""
        roles = dict(base.shape.roles)
        tier = self.shape.scale_tier
        if tier is not None and tier is not ScaleTier.CUSTOM:
            roles = {r: dataclasses.replace(q, count=None, machine_type=None, accelerator=None) for r, q in roles.items()}
        if self.shape.accelerator is not None:
            roles = {r: dataclasses.replace(q, accelerator=None) if r != "ps" else q for r, q in roles.items()}
        if self.image is not None:
            roles = {r: dataclasses.replace(q, image=None) for r, q in roles.items()}
        for role, mine in self.shape.roles.items():
            roles[role] = _over(mine, roles.get(role) or RoleRequest())
        shape: Shape = _over(dataclasses.replace(self.shape, roles={}), dataclasses.replace(base.shape, roles={}))
        merged: JobRequest = _over(self, base)
        return dataclasses.replace(merged, shape=dataclasses.replace(shape, roles=roles))

    def spec(self) -> JobSpec:
        """The checked :class:`~.spec.JobSpec` (a :class:`~tfjob.errors.SpecError` names the knob).

        Without a tier every pool defaults to ``n1-standard-4``. A predefined tier (BASIC …
        BASIC_TPU) fixes the pools; counts or machine types next to it are an error. ``CUSTOM``
        takes counts and requires a machine type for each pool used, as AI Platform did."""
        if self.name is None:
            raise SpecError(field="name", problem="is required")
        for name in ("args", "packages"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (list, tuple)):
                example = '["--steps", "100"]' if name == "args" else '["dist/extra-1.0.tar.gz"]'
                raise SpecError(field=name, value=value, problem="must be a list of strings", fix=f"e.g. {name}={example}")
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "shape" and getattr(self, f.name) is not None}
        for name in ("args", "packages"):
            if name in given:
                given[name] = tuple(given[name])
        return JobSpec(pools=build_pools(self.shape), scale_tier=self.shape.scale_tier, **given)


def _over(mine: Any, base: Any) -> Any:
    """``mine`` (a dataclass) with its unset (None) fields taken from ``base``."""
    return dataclasses.replace(mine, **{f.name: getattr(base, f.name) for f in dataclasses.fields(mine) if getattr(mine, f.name) is None})


#: The parts of the model a knob can land in (:attr:`tfjob.description.knobs.Knob.lands`):
#: ``job.<JobRequest field>``, ``shape.<Shape field>``, ``<role>.<RoleRequest field>`` (a
#: role's resources by their own fields: ``worker.resources.cpu``), ``options.<field>`` (the
#: chosen backend's options), ``settings.<field>`` (:class:`tfjob.runtime.settings.Settings`),
#: and ``config`` (the ``--config`` file itself).
PLACES = ("job", "shape", *ROLES, "options", "settings", "config")


def place(request: JobRequest, path: str, value: Any, name: str) -> JobRequest:
    """``request`` with ``value`` (knob ``name``'s, which an error names) at ``path``, a
    ``job.``, ``shape.`` or ``<role>.`` path; a role's accelerator and the job's are parsed,
    and a scale tier. (Resources' own fields are gathered by the caller: see
    :func:`with_role_resources`.)"""
    part, _, rest = path.partition(".")
    if part == "job":
        return dataclasses.replace(request, **{rest: value})
    if part == "shape":
        if rest == "accelerator":
            value = as_accelerator(value, name)
        elif rest == "chief" and not isinstance(value, bool):
            raise SpecError(field="chief", value=value, problem="must be True, False (no chief: worker 0 leads) or a Replicas")
        elif rest == "scale_tier" and value is not None:
            value = ScaleTier.parse(value)
        return dataclasses.replace(request, shape=dataclasses.replace(request.shape, **{rest: value}))
    if part in ROLES and "." not in rest:
        if rest == "accelerator":
            value = as_accelerator(value, name)
        return with_role(request, part, **{rest: value})
    raise ValueError(f"knob {name} lands at {path!r}, which is no place in a JobRequest")


def with_role(request: JobRequest, role: str, **changes: Any) -> JobRequest:
    """``request`` with ``role``'s request changed."""
    roles = dict(request.shape.roles)
    roles[role] = dataclasses.replace(roles.get(role) or RoleRequest(), **changes)
    return dataclasses.replace(request, shape=dataclasses.replace(request.shape, roles=roles))


def with_role_resources(request: JobRequest, role: str, cpu: Any, memory: Any) -> JobRequest:
    """``request`` with ``role`` asking for ``cpu`` and ``memory`` (the CLI's ``--worker-cpu``,
    ``--worker-memory``): its :class:`~.replicas.Resources`, which take the role's accelerator
    and machine type with them."""
    own = request.role(role)
    if own.resources is not None:
        raise SpecError(field=f"{role}_cpu" if cpu is not None else f"{role}_memory", problem=f"is given twice: {role} resources say it")
    try:
        resources = Resources(cpu=cpu, memory=memory, accelerator=own.accelerator, machine_type=own.machine_type)
    except SpecError as e:
        raise (SpecError(field=f"{role}_{e.field}", value=e.value, problem=e.problem, fix=e.fix) if e.field else e) from None
    return with_role(request, role, resources=resources, accelerator=None, machine_type=None)


def named_values(request: JobRequest) -> dict[str, Any]:
    """Every value ``request`` was given, by the knob that names it (``worker_machine_type``,
    ``workers``, ``args``): for the checks whose messages name the knob."""
    from .replicas import COUNT_FIELDS

    out = {f.name: getattr(request, f.name) for f in dataclasses.fields(request) if f.name != "shape"}
    shape = request.shape
    out.update(scale_tier=shape.scale_tier, accelerator=shape.accelerator, tpu_topology=shape.tpu_topology, chief=shape.chief)
    for role, asked in shape.roles.items():
        for f in dataclasses.fields(asked):
            key = COUNT_FIELDS[role] if f.name == "count" else f"{role}_{f.name}"
            if f.name != "count" or role != "chief":
                out[key] = getattr(asked, f.name)
    return {k: v for k, v in out.items() if v is not None}


#: The keywords no knob declares (no flag of their own: the CLI gives ``args`` after ``--``,
#: a config file a role's ``args`` and ``env``, :class:`tfjob.Job` a role's resources) and
#: where they land.
UNFLAGGED: dict[str, str] = {
    "package": "job.package",
    "args": "job.args",
    "poll_interval": "options.poll_interval",
    **{f"{role}_{what}": f"{role}.{what}" for role in ROLES for what in ("args", "env", "resources")},
}


def keyword_lands() -> dict[str, str]:
    """Where each keyword of the job description lands: the knobs every backend takes
    (:data:`tfjob.description.knobs.JOB_KNOBS`, as declared) and :data:`UNFLAGGED`."""
    from .knobs import JOB_KNOBS, PYTHON_VERSION, RUNTIME_VERSION

    table = {k.name: k.lands for k in (*JOB_KNOBS, RUNTIME_VERSION, PYTHON_VERSION)}
    table.update(UNFLAGGED)
    return table


@dataclass(frozen=True)
class Given:
    """A job as given, each value where it lands: the typed :class:`JobRequest`, the submission
    options and platform knobs (by the options field each sets; the chosen backend's options
    class checks them), the settings (:class:`tfjob.runtime.settings.Settings`), the
    ``--config`` file, the machine fallback lists (:mod:`.fallbacks`) and the knobs that
    were named (a knob another backend takes is refused by name)."""

    request: JobRequest = field(default_factory=JobRequest)
    options: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    config: Any = None
    fallbacks: tuple[str, ...] = ()
    named: frozenset[str] = frozenset()

    def over(self, base: Given) -> Given:
        """This over ``base`` (a config file's, an hparams file's trial job): see :meth:`JobRequest.over`."""
        return Given(
            self.request.over(base.request),
            {**base.options, **self.options},
            {**base.settings, **self.settings},
            self.config if self.config is not None else base.config,
            (*self.fallbacks, *(e for e in base.fallbacks if e.partition("=")[0] not in self.named)),
            self.named,
        )

    def values(self) -> dict[str, Any]:
        """Every value given, by the knob that names it: for the checks whose messages name it."""
        return {**named_values(self.request), **self.options, **self.settings}


def sort_keywords(values: Mapping[str, Any], lands: Mapping[str, str], fallbacks: tuple[str, ...] = ()) -> Given:
    """Flat keywords (the CLI's flags, a config file's keys) where each lands, by ``lands`` (a
    keyword → its place; one not in it is an option of the chosen backend's). Pure."""
    request, options, settings, config = JobRequest(), {}, {}, None
    resources: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        if value is None:
            continue
        path = lands.get(name) or "options." + name
        part, _, rest = path.partition(".")
        if part == "options":
            options[rest] = value
        elif part == "settings":
            settings[rest] = value
        elif part == "config":
            config = value
        elif rest.startswith("resources."):
            resources.setdefault(part, {})[rest.partition(".")[2]] = value
        else:
            request = place(request, path, value, name)
    for role, asked in resources.items():
        request = with_role_resources(request, role, asked.get("cpu"), asked.get("memory"))
    named = frozenset(k for k, v in values.items() if v is not None and v is not False)
    return Given(request, options, settings, config, fallbacks, named)


def build_spec(keywords: Mapping[str, Any]) -> JobSpec:
    """A :class:`~.spec.JobSpec` from the job description's flat keywords, as the CLI's flags and
    config files name them (``name``, ``workers``, ``worker_machine_type``, ``accelerator``…;
    ``region`` the spec's own): each is put where its knob lands in the typed model, which
    makes the spec. ``chief=False`` leaves the chief out (worker 0 leads).

    Without a tier every pool defaults to ``n1-standard-4``; a predefined tier (BASIC …
    BASIC_TPU) fixes the pools; ``CUSTOM`` takes counts and a machine type for each pool used."""
    given = sort_keywords(keywords, {**keyword_lands(), "region": "job.region"})
    stray = sorted({*given.options, *given.settings} | ({"config"} if given.config is not None else set()))
    if stray:
        raise TypeError(f"build_spec() got a keyword that is not the job description's: {stray[0]!r}")
    return given.request.spec()


__all__ = [
    "PLACES", "UNFLAGGED", "Given", "build_spec", "JobRequest", "keyword_lands", "place", "named_values", "sort_keywords",
    "with_role", "with_role_resources",
]  # fmt: skip
