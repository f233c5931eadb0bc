"""What a replica asks for in neutral terms, :class:`Resources` (CPUs, memory, an accelerator
and, optionally, a machine type as a hint; the job model's, :mod:`tfjob.description.spec`), in each
platform's terms.

Each platform reads it in its own terms: Vertex AI and AI Platform run Compute Engine machines,
so they check a hinted type against the catalog (:mod:`tfjob.description.machines`) and otherwise choose
the smallest catalog machine that fits (:func:`choose_machine`; a dry run names it);
Kubernetes renders requests and limits as quantities, the accelerator as an extended resource
(``nvidia.com/gpu``, ``google.com/tpu``); the local backend runs the tasks on this machine and
says, in one line, what it ignores.
"""

from __future__ import annotations

from ..errors import SpecError, Word
from .machines import MACHINES, SINGLE_HOST_TOPOLOGY, TPU_VM_FAMILIES, MachineInfo, family_of
from .spec import Accelerator, JobSpec, Machine, Resources

#: An accelerator's Kubernetes extended resource, by the accelerator's maker.
GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
#: GKE's node labels that pick an accelerator's nodes.
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GKE_TPU_LABEL = "cloud.google.com/gke-tpu-accelerator"
GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
#: TPU accelerators a GKE node pool offers (GKE's label value) and the TPU VM family that carries them on Vertex AI.
TPU_SLICES: dict[str, tuple[str, str]] = {
    "TPU_V5_LITEPOD": ("tpu-v5-lite-podslice", "ct5lp-hightpu"),
}


# -- Compute Engine (Vertex AI, AI Platform) -------------------------------------------------


#: The families chosen first, in this order when two machines are the same size: general-purpose
#: and accelerator-optimized ones; a compute- or memory-optimized family only when none of these fits.
PREFERRED_FAMILIES: tuple[str, ...] = ("n1", "n2", "e2", "n2d", "g2", "a2", "a3", "a4", "a4x", "g4", "ct5lp", "ct6e", "cloud")


def _size(info: MachineInfo) -> tuple[int, int, float, int, str]:
    """How a machine ranks among those that fit: preferred families first, then fewest CPUs,
    least memory, the family's order, the name."""
    family = family_of(info.name)
    rank = PREFERRED_FAMILIES.index(family) if family in PREFERRED_FAMILIES else len(PREFERRED_FAMILIES)
    return (rank == len(PREFERRED_FAMILIES), info.vcpus, info.memory_gb, rank, info.name)


def _fits(info: MachineInfo, cpus: float, gib: float) -> bool:
    return info.vcpus >= cpus and info.memory_gb >= gib


def _too_small(field: str, resources: Resources, machine_type: str, info: MachineInfo) -> SpecError:
    return SpecError(
        field=field,
        value=Word(resources.words()),
        problem=f"does not fit machine type {machine_type} ({info.vcpus} CPUs, {info.memory_gb:g} GB)",
        fix="ask for less, or choose a larger machine type (see `tfjob machines`), or leave machine_type out to have one chosen",
    )


def choose_machine(resources: Resources, field: str = "resources", tpu_topology: str | None = None) -> Machine:
    """The Compute Engine machine a replica asking for ``resources`` runs on: its
    ``machine_type`` checked against the catalog and what it asks for, else the smallest
    catalog machine that fits (fewest CPUs, then least memory; of a general-purpose or
    accelerator-optimized family unless none fits, :data:`PREFERRED_FAMILIES`) and takes the accelerator.

    Raises:
        SpecError: naming ``field``: a type the catalog refuses, one too small, or nothing that fits.
    """
    cpus = resources.cpus or 0.0
    gib = (resources.memory_bytes or 0) / 2**30
    acc = resources.gpu
    if resources.machine_type is not None:
        try:
            machine = Machine.resolve(resources.machine_type, acc)
        except SpecError as e:
            raise e.for_field(field) from None
        info = MACHINES.get(machine.type)
        if info is not None and info.vcpus and not _fits(info, cpus, gib):
            raise _too_small(field, resources, machine.type, info)
        return machine
    candidates: list[tuple[MachineInfo, Accelerator | None]] = []
    if acc is not None and acc.type in TPU_SLICES:
        prefix = TPU_SLICES[acc.type][1]
        candidates = [(m, None) for m in MACHINES.values() if m.name == f"{prefix}-{acc.count}t"]
    else:
        for m in MACHINES.values():
            if family_of(m.name) in TPU_VM_FAMILIES or (m.name == "cloud-tpu" and acc is None):
                continue
            if acc is None:
                if m.builtin is None:
                    candidates.append((m, None))
            elif acc.count in m.allowed_counts(acc.type):
                candidates.append((m, acc))
    fitting = sorted((c for c in candidates if _fits(c[0], cpus, gib)), key=lambda c: _size(c[0]))
    if not fitting:
        takes = f" with {acc.type}:{acc.count}" if acc is not None else ""
        raise SpecError(
            field=field,
            value=Word(resources.words()),
            problem=f"fits no Compute Engine machine type tfjob knows{takes}",
            fix="ask for less (see `tfjob machines` for what each type offers), or give machine_type=",
        )
    info, accelerator = fitting[0]
    return Machine(info.name, accelerator, tpu_topology if family_of(info.name) in TPU_VM_FAMILIES else None)


# -- Kubernetes ----------------------------------------------------------------------------


def cpu_quantity(value: float | str) -> str:
    """CPUs as a Kubernetes quantity: ``4`` → ``"4"``, ``0.5`` → ``"500m"``, ``"500m"`` as given."""
    if isinstance(value, str):
        return value.strip()
    if float(value).is_integer():
        return str(int(value))
    return f"{round(float(value) * 1000)}m"


def kubernetes_accelerator(acc: Accelerator, field: str = "resources") -> tuple[str, dict[str, str]]:
    """An accelerator as a pod asks for it: its extended resource, and the GKE node labels
    that pick its nodes (used where the cluster is GKE).

    Raises:
        SpecError: an accelerator no Kubernetes node pool offers (the legacy Cloud TPU slices).
    """
    if acc.type.startswith("NVIDIA_"):
        return GPU_RESOURCE, {GKE_ACCELERATOR_LABEL: acc.type.lower().replace("_", "-")}
    if acc.type in TPU_SLICES:
        topology = SINGLE_HOST_TOPOLOGY.get(acc.count)
        if topology is None:
            raise SpecError(
                field=field,
                value=Word(f"{acc.type}:{acc.count}"),
                problem=f"is not a single-host TPU slice (chips per host: {', '.join(map(str, SINGLE_HOST_TOPOLOGY))})",
            )
        return TPU_RESOURCE, {GKE_TPU_LABEL: TPU_SLICES[acc.type][0], GKE_TPU_TOPOLOGY_LABEL: topology}
    raise SpecError(
        field=field,
        value=Word(acc.type),
        problem="is not offered to Kubernetes pods",
        fix=f"use an NVIDIA GPU or {', '.join(TPU_SLICES)} on Kubernetes, or {{backend=vertex}} for Cloud TPUs",
    )


def on_compute_engine(spec: JobSpec) -> tuple[JobSpec, list[str]]:
    """``spec`` with every pool that asks for :class:`Resources` given the Compute Engine
    machine that fits (:func:`choose_machine`), and a line for each naming the machine chosen
    (what Vertex AI and AI Platform render; their dry runs say the lines)."""
    import dataclasses

    pools, notes = [], []
    for pool in spec.pools:
        if pool.resources is None:
            pools.append(pool)
            continue
        machine = choose_machine(pool.resources, f"{pool.role}_resources")
        pools.append(dataclasses.replace(pool, machine=machine))
        if pool.resources.machine_type is None:
            carries = f" with {machine.accelerator.type}:{machine.accelerator.count}" if machine.accelerator is not None else ""
            notes.append(f"{pool.role} replicas run on {machine.type}{carries}, the smallest machine type for {pool.resources.words()}")
    if not notes and all(p is q for p, q in zip(pools, spec.pools)):
        return spec, notes
    return spec.replace(pools=tuple(pools)), notes


__all__ = ["Resources", "choose_machine", "cpu_quantity", "kubernetes_accelerator", "on_compute_engine"]
