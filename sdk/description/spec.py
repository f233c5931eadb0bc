"""The job description: pure, validated data.

A :class:`JobSpec` holds up to four :class:`Pool` s (``chief``, ``worker``, ``ps``,
``evaluator``), each a replica count on a :class:`Machine`, plus what every task runs
(a trainer package and module, or a container image) and the job's settings.
Everything is checked on construction; a :class:`~tfjob.errors.SpecError` names the
field, the value and the fix.

:func:`build_spec` is the one way the CLI and :class:`tfjob.Job` turn options (scale
tier, counts, machine types, accelerators) into a spec; config files go through
:mod:`tfjob.config.job`, which ends in the same function.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import SpecError, Word
from ..lazy import LazyPattern
from .limits import check_platform_count
from .machines import (
    ACCELERATORS,
    DEFAULT_MACHINE,
    K80_REPLACEMENT,
    LEGACY_MACHINES,
    MACHINES,
    RETIRED_ACCELERATORS,
    did_you_mean,
    normalize_accelerator,
    FAMILIES,
    SINGLE_HOST_TOPOLOGY,
    SERIES,
    family_of,
    tpu_chips,
    well_formed_machine_type,
)


#: The canonical roles, in the order of Vertex worker pools 0..3.
ROLES: tuple[str, ...] = ("chief", "worker", "ps", "evaluator")

#: The knob that sets each role's replica count (named in messages).
COUNT_FIELDS = {"chief": "chief", "worker": "workers", "ps": "ps", "evaluator": "evaluators"}

# \Z, not $: "$" would also match before a trailing newline, which the platforms refuse.
# What `python -m` takes: dot-separated names of files and directories (`multi_worker-with-keras`
# too: the import system does not require identifiers), never a path or an empty part.
_TOPOLOGY_RE = LazyPattern(r"^[1-9][0-9]{0,3}(x[1-9][0-9]{0,3}){1,2}\Z")
_MODULE_RE = LazyPattern(r"^[^\s./\\:][^\s./\\:]{0,127}(\.[^\s./\\:]{1,128}){0,31}\Z")
_LABEL_KEY_RE = LazyPattern(r"^[a-z][a-z0-9_-]{0,62}\Z")
_LABEL_VALUE_RE = LazyPattern(r"^[a-z0-9_-]{0,63}\Z")
_ENV_RE = LazyPattern(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME_LENGTH = 128

#: Built distributions pip installs as they are: what ``--packages`` takes, and a package
#: path that is an archive rather than a trainer directory.
BUILT_PACKAGE_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".whl")


class ScaleTier(str, Enum):
    """Legacy AI Platform scale tiers; each expands to pools (see :func:`tier_pools`)."""

    BASIC = "BASIC"
    STANDARD_1 = "STANDARD_1"
    PREMIUM_1 = "PREMIUM_1"
    BASIC_GPU = "BASIC_GPU"
    BASIC_TPU = "BASIC_TPU"
    CUSTOM = "CUSTOM"

    @classmethod
    def parse(cls, value: "str | ScaleTier") -> "ScaleTier":
        """Accept any case and ``-`` for ``_`` (``standard-1`` → ``STANDARD_1``)."""
        if isinstance(value, ScaleTier):
            return value
        key = str(value).strip().upper().replace("-", "_")
        try:
            return cls(key)
        except ValueError:
            names = [t.value for t in cls]
            raise SpecError(
                field="scale_tier",
                value=value,
                problem=f"is not a scale tier{did_you_mean(key, names)}",
                fix=f"choose one of {', '.join(names)}",
            ) from None


#: What each predefined tier means: role → (replicas, machine type, accelerator, count).
#: BASIC_GPU had one NVIDIA K80; K80s are retired, so it gets an NVIDIA T4 today.
TIERS: dict[ScaleTier, dict[str, tuple[int, str, str | None, int]]] = {
    ScaleTier.BASIC: {"chief": (1, "n1-standard-4", None, 0)},
    ScaleTier.STANDARD_1: {
        "chief": (1, "n1-highcpu-8", None, 0),
        "worker": (4, "n1-highcpu-8", None, 0),
        "ps": (3, "n1-standard-4", None, 0),
    },
    ScaleTier.PREMIUM_1: {
        "chief": (1, "n1-highcpu-16", None, 0),
        "worker": (19, "n1-highcpu-16", None, 0),
        "ps": (11, "n1-highmem-8", None, 0),
    },
    ScaleTier.BASIC_GPU: {"chief": (1, "n1-standard-8", K80_REPLACEMENT, 1)},
    ScaleTier.BASIC_TPU: {
        "chief": (1, "n1-standard-4", None, 0),
        "worker": (1, "cloud-tpu", "TPU_V2", 8),
    },
}


@dataclass(frozen=True)
class Accelerator:
    """An accelerator attached to each machine of a pool.

    Attributes:
        type: a Vertex ``AcceleratorType`` name, e.g. ``NVIDIA_TESLA_T4``.
        count: how many per machine.
    """

    type: str
    count: int = 1

    def __post_init__(self) -> None:
        name = normalize_accelerator(self.type)
        if name in RETIRED_ACCELERATORS:
            raise SpecError(
                what="accelerator", value=self.type, problem="is retired on Google Cloud", fix=f"use {RETIRED_ACCELERATORS[name]} instead"
            )
        if name not in ACCELERATORS:
            raise SpecError(
                what="accelerator",
                value=self.type,
                problem=f"is not known{did_you_mean(name, ACCELERATORS)}",
                fix=f"choose one of {', '.join(ACCELERATORS)}",
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise SpecError(what="accelerator", value=self.type, problem=f": count {self.count!r} must be a whole number ≥ 1")
        object.__setattr__(self, "type", name)

    @classmethod
    def parse(cls, text: str, field: str = "accelerator") -> "Accelerator":
        """Parse gcloud's ``type=nvidia-tesla-t4,count=2``, ``NVIDIA_TESLA_T4:2`` or just
        ``NVIDIA_TESLA_T4``, given as knob ``field`` (which an error names)."""
        given, text = text, text.strip()
        form = "write it as type=NVIDIA_TESLA_T4,count=1"
        if not text:
            raise SpecError(field=field, problem="is empty", fix=form)
        try:
            if "=" not in text:
                kind, colon, count_text = text.partition(":")
                if not colon:
                    return cls(text, 1)
                if not (count_text.strip().isascii() and count_text.strip().isdigit()):
                    raise SpecError(field=field, value=given, problem=f": count {count_text!r} is not a whole number ≥ 1")
                return cls(kind.strip(), int(count_text))
            fields: dict[str, str] = {}
            for part in text.split(","):
                key, sep, value = part.partition("=")
                key = key.strip().lower()
                if not sep or key not in ("type", "count") or key in fields:
                    raise SpecError(field=field, value=given, problem=f": cannot read {part!r}", fix=form)
                fields[key] = value.strip()
            if "type" not in fields:
                raise SpecError(field=field, value=given, problem="has no type=", fix=form)
            count_text = fields.get("count", "1")
            if not (count_text.isascii() and count_text.isdigit()):  # "²".isdigit() too, but int() refuses it
                raise SpecError(field=field, value=given, problem=f": count={count_text!r} is not a whole number ≥ 1")
            return cls(fields["type"], int(count_text))
        except SpecError as e:
            raise e.for_field(field) from None


#: Binary and decimal suffixes of a Kubernetes memory quantity → bytes.
_MEMORY_UNITS = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
_MEMORY_RE = LazyPattern(r"^([0-9]+(?:\.[0-9]+)?)(|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)\Z")
_CPU_RE = LazyPattern(r"^([0-9]+(?:\.[0-9]+)?)(m?)\Z")
#: The most a replica may ask for: more than any machine has (bounds what is read).
MAX_CPUS = 100_000
MAX_MEMORY_BYTES = 2**60


def _cpus(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(field="cpu", value=value, problem="must be a number of CPUs (4, 0.5) or a Kubernetes quantity (500m)")
    if isinstance(value, str):
        m = _CPU_RE.match(value.strip())
        if not m:
            raise SpecError(field="cpu", value=value, problem="is not a number of CPUs (4, 0.5) or a Kubernetes quantity (500m)")
        cpus = float(m.group(1)) / (1000 if m.group(2) else 1)
    else:
        cpus = float(value)
    if not 0 < cpus <= MAX_CPUS:  # NaN too
        raise SpecError(field="cpu", value=value, problem=f"must be more than 0 and at most {MAX_CPUS} CPUs")
    return cpus


def _memory_bytes(value: object) -> int:
    if not isinstance(value, str):
        raise SpecError(field="memory", value=value, problem="must be a Kubernetes quantity such as 16Gi or 512Mi")
    m = _MEMORY_RE.match(value.strip())
    if not m:
        raise SpecError(field="memory", value=value, problem="is not a Kubernetes quantity (16Gi, 512Mi, 8G)")
    amount = int(float(m.group(1)) * _MEMORY_UNITS[m.group(2)])
    if not 0 < amount <= MAX_MEMORY_BYTES:
        raise SpecError(field="memory", value=value, problem="must be more than 0 bytes and at most 1Ei")
    return amount


@dataclass(frozen=True)
class Resources:
    """What each replica of a role asks for, in terms every platform reads.

    ``Replicas(2, resources=Resources(cpu=4, memory="16Gi", accelerator="NVIDIA_L4:1"))``.

    Args:
        cpu: CPUs (``4``, ``0.5``, or a Kubernetes quantity such as ``"500m"``).
        memory: memory as a Kubernetes quantity (``"16Gi"``, ``"512Mi"``, ``"8G"``).
        accelerator: ``NVIDIA_L4:1``, ``type=NVIDIA_TESLA_T4,count=1`` or an :class:`Accelerator`.
        machine_type: a Compute Engine machine type for Vertex AI and AI Platform, checked
            against the catalog there (default: the smallest that fits); other platforms ignore it.

    Raises:
        SpecError: a value no platform could read (naming the field, the value and the form).
    """

    cpu: float | str | None = None
    memory: str | None = None
    accelerator: str | Accelerator | None = None
    machine_type: str | None = None

    def __post_init__(self) -> None:
        if self.cpu is not None:
            _cpus(self.cpu)
        if self.memory is not None:
            _memory_bytes(self.memory)
        if isinstance(self.accelerator, str):
            object.__setattr__(self, "accelerator", Accelerator.parse(self.accelerator))
        elif self.accelerator is not None and not isinstance(self.accelerator, Accelerator):
            raise SpecError(field="accelerator", value=self.accelerator, problem="must be an accelerator, such as 'NVIDIA_L4:1'")
        if self.machine_type is not None:
            if not isinstance(self.machine_type, str) or not self.machine_type.strip():
                raise SpecError(field="machine_type", value=self.machine_type, problem="must be a machine type such as g2-standard-8")
            object.__setattr__(self, "machine_type", self.machine_type.strip().lower())

    @property
    def cpus(self) -> float | None:
        """The CPUs as a number (None: not given)."""
        return None if self.cpu is None else _cpus(self.cpu)

    @property
    def memory_bytes(self) -> int | None:
        """The memory in bytes (None: not given)."""
        return None if self.memory is None else _memory_bytes(self.memory)

    @property
    def gpu(self) -> Accelerator | None:
        """The accelerator (typed: :meth:`__post_init__` parsed a string)."""
        return self.accelerator if isinstance(self.accelerator, Accelerator) else None

    def words(self) -> str:
        """``cpu=4, memory=16Gi, accelerator=NVIDIA_L4:1``: what was asked for, as given."""
        parts = [f"cpu={self.cpu:g}" if isinstance(self.cpu, (int, float)) else f"cpu={self.cpu}"] if self.cpu is not None else []
        parts += [f"memory={self.memory}"] if self.memory is not None else []
        parts += [f"accelerator={self.gpu.type}:{self.gpu.count}"] if self.gpu is not None else []
        parts += [f"machine_type={self.machine_type}"] if self.machine_type is not None else []
        return ", ".join(parts) or "nothing"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.cpu is not None:
            out["cpu"] = self.cpu
        if self.memory is not None:
            out["memory"] = self.memory
        if self.gpu is not None:
            out["accelerator"] = {"type": self.gpu.type, "count": self.gpu.count}
        if self.machine_type is not None:
            out["machine_type"] = self.machine_type
        return out

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> "Resources":
        acc = data.get("accelerator")
        accelerator = Accelerator(str(acc["type"]), int(acc["count"])) if isinstance(acc, dict) else None
        return cls(data.get("cpu"), data.get("memory"), accelerator, data.get("machine_type"))  # type: ignore[arg-type]


#: Boot disk types Vertex AI takes (``diskSpec.bootDiskType``).
BOOT_DISK_TYPES: tuple[str, ...] = ("pd-ssd", "pd-standard", "hyperdisk-balanced")
#: Boot disk sizes in GB Vertex AI takes: its default is the smallest, a persistent disk's
#: largest size the largest.
BOOT_DISK_SIZE_GB: tuple[int, int] = (100, 64000)


def check_boot_disk(disk_type: Any, size_gb: Any) -> None:
    """Refuse a boot disk type or size Vertex AI would refuse, naming the flag."""
    if disk_type is not None and disk_type not in BOOT_DISK_TYPES:
        raise SpecError(
            field="boot_disk_type",
            value=disk_type,
            problem=f"is not one of {', '.join(BOOT_DISK_TYPES)}{did_you_mean(str(disk_type), BOOT_DISK_TYPES)}",
        )
    low, high = BOOT_DISK_SIZE_GB
    if size_gb is not None and (isinstance(size_gb, bool) or not isinstance(size_gb, int) or not low <= size_gb <= high):
        raise SpecError(field="boot_disk_size", value=size_gb, problem=f"must be a whole number of GB from {low} to {high}")


@dataclass(frozen=True)
class Machine:
    """A Compute Engine machine type, with the accelerator each machine carries.

    Use :meth:`resolve` to accept legacy AI Platform names too.
    """

    type: str
    accelerator: Accelerator | None = None
    #: A TPU VM's slice shape (Vertex ``machineSpec.tpuTopology``, e.g. ``2x2``); TPU VMs only.
    tpu_topology: str | None = None

    def __post_init__(self) -> None:
        info = MACHINES.get(self.type)
        chips = tpu_chips(self.type)
        if self.tpu_topology is not None:
            if chips is None:
                raise SpecError(
                    field="tpu_topology",
                    value=self.tpu_topology,
                    problem=f"is for TPU VM machine types (ct5lp-hightpu-4t, ct6e-standard-4t…), not {self.type}",
                )
            if not isinstance(self.tpu_topology, str) or not _TOPOLOGY_RE.match(self.tpu_topology):
                raise SpecError(field="tpu_topology", value=self.tpu_topology, problem="must be a shape like 2x2 or 2x2x4")
        if info is None:
            if not well_formed_machine_type(self.type):
                raise SpecError(
                    what="machine type",
                    value=self.type,
                    problem=f"is not known{did_you_mean(self.type, [*MACHINES, *LEGACY_MACHINES])}",
                    fix="use a Compute Engine type such as n1-standard-4 (see `tfjob machines`)",
                )
            series = self.type.split("-")[1]
            if family_of(self.type) in FAMILIES and series not in SERIES:
                family = [m for m in [*MACHINES, *LEGACY_MACHINES] if family_of(m) == family_of(self.type)]
                raise SpecError(
                    what="machine type",
                    value=self.type,
                    problem=f"is not known{did_you_mean(self.type, family or MACHINES)}: "
                    f"{series!r} is not a series of Compute Engine types (standard, highmem, highcpu…; see `tfjob machines`)",
                )
            if family_of(self.type) not in FAMILIES:
                import warnings

                warnings.warn(
                    f"machine type {self.type!r} is of a family tfjob does not know ({family_of(self.type)}); "
                    "it is passed on as it is, and the platform decides (see `tfjob machines`)",
                    stacklevel=2,
                )
            if self.accelerator is not None and chips is not None:
                raise SpecError(
                    problem=f"{self.type} is a TPU VM: its chips come with it", fix="drop the accelerator (set {tpu_topology} instead)"
                )
            gpu_families = ("n1", "a2", "a3", "a4", "a4x", "g2", "g4")
            if self.accelerator is not None and family_of(self.type) not in gpu_families and family_of(self.type) in FAMILIES:
                raise SpecError(
                    what="machine type",
                    value=self.type,
                    problem=f"cannot take accelerator {self.accelerator.type}: GPUs attach to n1-* types",
                    fix="accelerator-optimized types (a2, a3, a4, g2, g4) come with theirs",
                )
            return  # an unlisted size: the platform checks it
        acc = self.accelerator
        if chips is not None and acc is not None:
            raise SpecError(
                problem=f"{self.type} is a TPU VM: its chips come with it", fix="drop the accelerator (set {tpu_topology} instead)"
            )
        if acc is None:
            if info.builtin is not None:
                # A2/A3/G2 machines always carry their GPUs; Vertex wants them spelt out.
                object.__setattr__(self, "accelerator", Accelerator(*info.builtin))
            elif info.name == "cloud-tpu":
                raise SpecError("machine type 'cloud-tpu' needs an accelerator: type=TPU_V2,count=8 or type=TPU_V3,count=8")
            return
        counts = info.allowed_counts(acc.type)
        if not counts:
            takes = sorted({name for name, _ in info.gpus} | ({info.builtin[0]} if info.builtin else set()))
            fix = (
                f"it takes only {', '.join(takes)}"
                if takes
                else "use an n1-* machine type (e.g. n1-standard-8) for NVIDIA T4/P4/P100/V100, "
                "or an accelerator-optimized type (a2-highgpu-1g, g2-standard-8)"
            )
            raise SpecError(what="machine type", value=self.type, problem=f"cannot take accelerator {acc.type}: {fix}")
        if acc.count not in counts:
            raise SpecError(f"{self.type} takes {acc.type} in counts of {', '.join(map(str, counts))}, not {acc.count}")

    @classmethod
    def resolve(cls, name: str, accelerator: Accelerator | None = None) -> "Machine":
        """A machine from a Compute Engine type or a legacy name (``complex_model_m_gpu``).

        A legacy GPU name brings its accelerator; an explicit ``accelerator`` wins.
        """
        key = name.strip()
        legacy = LEGACY_MACHINES.get(key.lower())
        if legacy is not None:
            machine_type, acc_type, count = legacy
            if accelerator is None and acc_type is not None:
                accelerator = Accelerator(acc_type, count)
            return cls(machine_type, accelerator)
        return cls(key.lower(), accelerator)

    @property
    def topology(self) -> str | None:
        """The TPU topology to render: the given one, else the single host's (None: not a TPU VM)."""
        chips = tpu_chips(self.type)
        if chips is None:
            return None
        return self.tpu_topology or SINGLE_HOST_TOPOLOGY.get(chips)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.accelerator is not None:
            out["accelerator"] = {"type": self.accelerator.type, "count": self.accelerator.count}
        if self.tpu_topology is not None:
            out["tpu_topology"] = self.tpu_topology
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Machine":
        acc = data.get("accelerator")
        # (A record from before the boot disks became Vertex AI options may name them: they are not the machine's.)
        return cls(data["type"], Accelerator(acc["type"], acc["count"]) if acc else None, data.get("tpu_topology"))


@dataclass(frozen=True)
class Pool:
    """``replicas`` tasks of one role on one kind of machine.

    Attributes:
        role: ``chief``, ``worker``, ``ps`` or ``evaluator``.
        replicas: how many tasks (≥ 1; exactly 1 for the chief).
        machine: what each task runs on.
        image: a container image for this pool only (else the job's image or package).
    """

    role: str
    replicas: int
    machine: Machine = field(default_factory=lambda: Machine(DEFAULT_MACHINE))
    image: str | None = None
    #: This pool's trainer arguments, instead of the job's (None: the job's).
    args: tuple[str, ...] | None = None
    #: Variables for this pool's tasks, over the job's ``env``.
    env: Mapping[str, str] = field(default_factory=dict)
    #: What each task asks for in neutral terms (:class:`Resources`): each
    #: platform reads it in its own (None: the machine type's amounts, as before).
    resources: Resources | None = None

    def __post_init__(self) -> None:
        if self.args is not None:
            if isinstance(self.args, str) or not all(isinstance(a, (str, int, float)) for a in self.args):
                raise SpecError(field=f"{self.role}_args", value=self.args, problem="must be a list of arguments")
            object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        if not isinstance(self.env, Mapping):
            raise SpecError(field=f"{self.role}_env", value=self.env, problem="must be a mapping of names to values")
        check_env(self.env, f"{self.role}_env")
        object.__setattr__(self, "env", dict(self.env))
        if self.role not in ROLES:
            raise SpecError(f"pool role {self.role!r} is not one of {', '.join(ROLES)}{did_you_mean(self.role, ROLES)}")
        check_count(COUNT_FIELDS[self.role], self.replicas)
        if self.role == "chief" and self.replicas != 1:
            raise SpecError(problem=f"the chief runs exactly 1 replica, not {self.replicas}", fix="add the others as {workers}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "replicas": self.replicas, "machine": self.machine.to_dict()}
        if self.image:
            out["image"] = self.image
        if self.args is not None:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = dict(self.env)
        if self.resources is not None:
            out["resources"] = self.resources.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Pool":
        args = data.get("args")
        resources = Resources.from_dict(data["resources"]) if data.get("resources") is not None else None
        return cls(
            data["role"], data["replicas"], Machine.from_dict(data["machine"]), data.get("image"),
            tuple(args) if args is not None else None, data.get("env") or {}, resources,
        )  # fmt: skip


#: Environment variables the platforms and tfjob set in every task; a user's would be
#: dropped on one backend and win on another, so they are refused everywhere.
RESERVED_ENV = ("TF_CONFIG", "CLUSTER_SPEC", "CLOUD_ML_TRIAL_ID", "CLOUD_ML_JOB_ID")
RESERVED_ENV_PREFIXES = ("AIP_", "TFJOB_")
#: Labels tfjob puts on every cloud job (the version, and the submission id it is found by).
RESERVED_LABELS = ("tfjob", "tfjob-submission-id", "app.kubernetes.io/managed-by")

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


def check_env(env: Mapping[str, Any], field: str = "env") -> None:
    """Names a shell takes, not reserved for the platform or tfjob, and text values (knob ``field``)."""
    for key in env:
        if not isinstance(key, str) or not _ENV_RE.match(key):
            raise SpecError(field=field, value=key, problem="is not a valid environment variable name")
        if key in RESERVED_ENV or key.startswith(RESERVED_ENV_PREFIXES):
            raise SpecError(
                field=field,
                value=Word(key),
                problem=f"is set by the platform and by tfjob in every task (reserved: "
                f"{', '.join(RESERVED_ENV)}, {', '.join(p + '*' for p in RESERVED_ENV_PREFIXES)})",
                fix="choose another name, or pick the dialect with {dialect}",
            )
        if not isinstance(env[key], str):
            raise SpecError(field=field, value=Word(key), problem=f": the value {env[key]!r} must be text")


#: A Kubernetes label key with a prefix (``app.kubernetes.io/part-of``, ``kueue.x-k8s.io/queue-name``)
#: and a Kubernetes label value: taken for the Kubernetes backends, refused by Vertex AI's renderer.
_K8S_PREFIXED_KEY_RE = LazyPattern(
    r"^(?=.{1,253}/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)
_K8S_LABEL_VALUE_RE = LazyPattern(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z")


def is_kubernetes_label_key(key: str) -> bool:
    """True for a prefixed Kubernetes label key (``app.kubernetes.io/part-of``)."""
    return isinstance(key, str) and bool(_K8S_PREFIXED_KEY_RE.match(key))


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


def _check_labels(labels: Mapping[str, str]) -> None:
    if len(labels) > 64:
        raise SpecError(field="labels", problem=f"has {len(labels)} labels; Vertex AI and Kubernetes allow at most 64")
    for key, value in labels.items():
        if is_kubernetes_label_key(key):
            if not isinstance(value, str) or not _K8S_LABEL_VALUE_RE.match(value):
                raise SpecError(
                    what="label", problem=f"{key}={value!r}: a Kubernetes label value is up to 63 letters, digits, '-', '_' or '.'"
                )
            continue
        if not isinstance(key, str) or not _LABEL_KEY_RE.match(key):
            raise SpecError(
                what="label key",
                value=key,
                problem="is not valid",
                fix="start with a lower-case letter, then up to 62 lower-case letters, digits, '_' or '-' "
                "(or, for Kubernetes, a prefixed key such as app.kubernetes.io/part-of)",
            )
        if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
            raise SpecError(what="label", problem=f"{key}={value!r}: values are up to 63 lower-case letters, digits, '_' or '-'")


def check_job_name(name: str) -> None:
    """Raise SpecError unless Vertex AI would take ``name`` as a display name."""
    if not isinstance(name, str) or not name.strip():
        raise SpecError(field="name", value=name, problem="is empty", fix="give the job a name ({name=NAME})")
    if len(name) > MAX_NAME_LENGTH:
        raise SpecError(field="name", value=name, problem=f"has {len(name)} characters; Vertex AI allows at most {MAX_NAME_LENGTH}")
    bad = [c for c in name if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise SpecError(field="name", value=name, problem="contains control characters", fix="use letters, digits, '-' and '_'")


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


def check_count(field: str, n: Any) -> None:
    """A replica count given as knob ``field``: a whole number ≥ 1 a platform can carry."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise SpecError(field=field, value=n, problem="must be a whole number")
    if n < 1:
        raise SpecError(field=field, value=n, problem="must be ≥ 1", fix=f"leave {{{field}}} out for a job without that role")
    check_platform_count(field, n)


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


def parse_key_values(items: Iterable[str] | str | None, field: str) -> dict[str, str]:
    """``["a=1,b=2", "c=3"]`` → ``{"a": "1", "b": "2", "c": "3"}`` for knob ``field`` (labels, env)."""
    if items is None:
        return {}
    if isinstance(items, str):
        items = [items]
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(",") if field == "labels" else [item]:
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise SpecError(field=field, value=part, problem="must be KEY=VALUE")
            out[key.strip()] = value
    return out


# A container image reference as registries, podman, docker and Kubernetes read it:
# [host[:port]/]path[:tag][@digest], path components in lower case.
_IMAGE_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_IMAGE_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_RE = LazyPattern(
    rf"^(?:{_IMAGE_HOST}/)?{_IMAGE_PATH}(?:/{_IMAGE_PATH})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z"
)
#: The longest image reference taken (a registry's name limit is 255; a tag and digest follow).
MAX_IMAGE_LENGTH = 512


def check_image(image: str | None, field: str = "image") -> None:
    """Refuse what no registry or container engine takes as an image reference: an empty
    name, spaces or control characters, upper case in the path, or a leading ``-`` (which
    a container engine would read as an option of its own).

    Raises:
        SpecError: naming the knob ``field`` and the form expected.
    """
    if image is None:
        return
    if not isinstance(image, str) or not image.strip():
        raise SpecError(field=field, problem="is empty", fix="give an image such as us-docker.pkg.dev/my-project/trainers/census:1")
    if len(image) > MAX_IMAGE_LENGTH or not _IMAGE_RE.fullmatch(image):
        raise SpecError(
            field=field,
            value=image,
            problem="is not an image reference",
            fix="write [REGISTRY/]NAME[:TAG][@sha256:DIGEST], the name in lower case (e.g. us-docker.pkg.dev/my-project/trainers/census:1)",
        )


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
    """Build a :class:`JobSpec` from the options users give.

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
    counts = {"worker": workers, "ps": ps, "evaluator": evaluators}
    machines = {
        "chief": chief_machine_type,
        "worker": worker_machine_type,
        "ps": ps_machine_type,
        "evaluator": evaluator_machine_type,
    }
    images = {"chief": chief_image, "worker": worker_image, "ps": ps_image, "evaluator": evaluator_image}

    def as_acc(value: Accelerator | str | None, field: str) -> Accelerator | None:
        return Accelerator.parse(value, field) if isinstance(value, str) else value

    shared = as_acc(accelerator, "accelerator")
    accs = {
        "chief": as_acc(chief_accelerator, "chief_accelerator") or shared,
        "worker": as_acc(worker_accelerator, "worker_accelerator") or shared,
        "ps": as_acc(ps_accelerator, "ps_accelerator"),
        "evaluator": as_acc(evaluator_accelerator, "evaluator_accelerator") or shared,
    }
    for role, n in counts.items():
        if n is not None:
            check_count(COUNT_FIELDS[role], n)

    if tier is not None and tier is not ScaleTier.CUSTOM:
        given = [COUNT_FIELDS[r] for r, n in counts.items() if n is not None]
        given += [f"{r}_machine_type" for r, m in machines.items() if m is not None]
        given += ["accelerator"] if any(accs.values()) else []
        if given:
            raise SpecError(
                field="scale_tier",
                value=Word(tier.value),
                problem=f"fixes the cluster, so {', '.join('{' + g + '}' for g in given)} cannot be set",
                fix="use {scale_tier=CUSTOM} to choose counts and machine types",
            )
        pools = [dataclasses.replace(p, image=images[p.role]) for p in tier_pools(tier)]
    else:
        if tier is ScaleTier.CUSTOM:
            if machines["chief"] is None:
                raise SpecError(field="scale_tier", value=Word("CUSTOM"), problem="needs {chief_machine_type}")
            for role, n in counts.items():
                if n is not None and machines[role] is None:
                    raise SpecError(
                        field="scale_tier", value=Word("CUSTOM"), problem=f"with {{{COUNT_FIELDS[role]}={n}}} needs {{{role}_machine_type}}"
                    )
        else:
            for role, machine in machines.items():
                if role != "chief" and machine is not None and counts[role] is None:
                    raise SpecError(
                        field=f"{role}_machine_type", value=Word(machine), problem=f"is set but {{{COUNT_FIELDS[role]}}} is not"
                    )
        pools = [Pool("chief", 1, _machine("chief", machines["chief"], accs["chief"]), images["chief"])]
        if not chief:
            given = [
                f
                for f, v in (
                    ("chief_machine_type", machines["chief"]),
                    ("chief_accelerator", chief_accelerator),
                    ("chief_image", images["chief"]),
                )
                if v
            ]
            if given or tier is not None:
                given = given or ["scale_tier"]
                raise SpecError(
                    field="chief", value=False, problem=f"leaves the chief out, so {', '.join('{' + g + '}' for g in given)} cannot be set"
                )
            if not counts["worker"]:
                raise SpecError(field="chief", value=False, problem="needs {workers} ≥ 1: worker 0 is then the chief")
            pools = []
        for role, n in counts.items():
            if n is not None:
                pools.append(Pool(role, n, _machine(role, machines[role], accs[role]), images[role]))
    if tpu_topology is not None:
        tpu_pools = [p for p in pools if tpu_chips(p.machine.type) is not None]
        if not tpu_pools:
            raise SpecError(
                field="tpu_topology",
                value=Word(tpu_topology),
                problem="needs a TPU VM machine type (e.g. {worker_machine_type=ct5lp-hightpu-4t})",
            )
        pools = [
            dataclasses.replace(p, machine=dataclasses.replace(p.machine, tpu_topology=tpu_topology)) if p in tpu_pools else p
            for p in pools
        ]
    own = {
        "chief": (chief_args, chief_env), "worker": (worker_args, worker_env),
        "ps": (ps_args, ps_env), "evaluator": (evaluator_args, evaluator_env),
    }  # fmt: skip
    for role, (args, env) in own.items():
        if (args is not None or env) and role not in [p.role for p in pools]:
            raise SpecError(field=f"{role}_args" if args is not None else f"{role}_env", problem=f"is set but the job has no {role} pool")
    pools = [dataclasses.replace(p, args=_args(own[p.role][0], p.args), env={**p.env, **(own[p.role][1] or {})}) for p in pools]
    asked = {"chief": chief_resources, "worker": worker_resources, "ps": ps_resources, "evaluator": evaluator_resources}
    pools = [_with_resources(p, asked[p.role], machines[p.role], accs[p.role], tier) for p in pools]
    for role, resources in asked.items():
        if resources is not None and role not in [p.role for p in pools]:
            raise SpecError(field=f"{role}_resources", problem=f"is set but the job has no {role} pool")
    return JobSpec(
        name=name,
        pools=tuple(pools),
        module=module,
        package=package,
        packages=tuple(packages),
        image=image,
        scale_tier=tier,
        **settings,
    )


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


# ASCII digits only: `\d` would take '٥' (Arabic-Indic five) as a 5.
_DURATION_RE = LazyPattern(r"([0-9]+(?:\.[0-9]+)?)\s*([dhms]?)", re.IGNORECASE)
_DURATION_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(text: str | float | int, field: str = "timeout") -> float:
    """``"7200"``, ``"7200s"`` (Google's Duration), ``"2h"``, ``"1h30m"`` → seconds, for knob ``field``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:  # an int beyond any float
            value = math.inf
    else:
        s = str(text).strip().replace(" ", "")
        pos, value = 0, 0.0
        while pos < len(s):
            m = _DURATION_RE.match(s, pos)
            if not m or m.end() == pos:
                raise SpecError(field=field, value=text, problem="is not a duration", fix="write seconds (3600) or 1h30m, 45m, 90s")
            value += float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
            pos = m.end()
        if not s:
            raise SpecError(field=field, problem="is empty", fix="write seconds (3600) or 1h30m, 45m, 90s")
    if not value > 0:  # NaN too
        raise SpecError(field=field, value=text, problem="must be longer than 0 seconds")
    from .limits import check_seconds

    return check_seconds(value, field, given=text)


def module_exists(base: Path, module: str) -> bool:
    """Whether ``python -m module`` finds a file or package of it under ``base``."""
    rel = Path(*module.split("."))
    return (base / rel.with_suffix(".py")).is_file() or (base / rel / "__init__.py").is_file()
