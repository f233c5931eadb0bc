"""A role's replicas as values: the roles, the scale tiers, an :class:`Accelerator`, neutral
:class:`Resources`, a :class:`Machine` and a :class:`Pool` (a replica count on a machine). Pure;
each value is checked when it is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from ..errors import SpecError
from ..lazy import LazyPattern
from .checks import _TOPOLOGY_RE, check_count, check_env
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
