"""Machine types, accelerators, legacy machine names and scale tiers: pure data.

Facts from the platform documentation:

- Vertex AI custom training runs on Compute Engine machine types. GPUs attach to
  N1 machines; A2, A3 and G2 machines come with a fixed set of GPUs; ``cloud-tpu``
  takes a TPU slice (8 cores).
- Legacy AI Platform machine names (``standard``, ``complex_model_m_gpu``, …) are
  Compute Engine types with (for the ``*_gpu``/``*_p100``/``*_v100`` names) GPUs.
  The K80 GPUs of the old names reached end of support on Google Cloud, so tfjob maps
  them to today's closest N1 GPU, the NVIDIA T4 (:data:`K80_REPLACEMENT`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Iterable

#: The GPU that stands in for the retired NVIDIA K80 of legacy tiers and machine names.
K80_REPLACEMENT = "NVIDIA_TESLA_T4"

#: Accelerator names (Vertex ``AcceleratorType`` enum) → allowed counts per machine,
#: for the accelerators that attach to N1 machines.
N1_GPUS: dict[str, tuple[int, ...]] = {
    "NVIDIA_TESLA_T4": (1, 2, 4),
    "NVIDIA_TESLA_P4": (1, 2, 4),
    "NVIDIA_TESLA_P100": (1, 2, 4),
    "NVIDIA_TESLA_V100": (1, 2, 4, 8),
}

#: Every accelerator Vertex AI takes: the installed ``google.cloud.aiplatform_v1``
#: ``AcceleratorType`` enum, less UNSPECIFIED and the retired K80. Kept here as data so the
#: CLI never imports Google's libraries; ``tests/test_machines_catalog.py`` fails when the
#: installed enum and this list drift apart.
ACCELERATORS: tuple[str, ...] = (
    "NVIDIA_TESLA_P100",
    "NVIDIA_TESLA_V100",
    "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_T4",
    "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB",
    "NVIDIA_L4",
    "NVIDIA_H100_80GB",
    "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB",
    "NVIDIA_B200",
    "NVIDIA_GB200",
    "NVIDIA_RTX_PRO_6000",
    "TPU_V2",
    "TPU_V3",
    "TPU_V4_POD",
    "TPU_V5_LITEPOD",
)

#: Compute Engine machine families, by the prefix before the first ``-``: what each is.
#: A well-formed type of a known family is accepted even when its exact size is not in
#: :data:`MACHINES`; a type of an unknown family is accepted with a warning (Compute
#: Engine adds families faster than any catalog), never refused.
FAMILIES: dict[str, str] = {
    "n1": "general purpose; takes NVIDIA T4, P4, P100, V100 GPUs",
    "n2": "general purpose", "n2d": "general purpose (AMD)", "n4": "general purpose",
    "e2": "cost-optimized", "c2": "compute-optimized", "c2d": "compute-optimized (AMD)",
    "c3": "compute-optimized", "c3d": "compute-optimized (AMD)", "c4": "compute-optimized",
    "c4a": "compute-optimized (Arm)", "c4d": "compute-optimized (AMD)", "h3": "HPC",
    "m1": "memory-optimized", "m2": "memory-optimized", "m3": "memory-optimized", "z3": "storage-optimized",
    "t2a": "scale-out (Arm)", "t2d": "scale-out (AMD)",
    "a2": "accelerator-optimized: NVIDIA A100", "a3": "accelerator-optimized: NVIDIA H100 / H200",
    "a4": "accelerator-optimized: NVIDIA B200", "a4x": "accelerator-optimized: NVIDIA GB200",
    "g2": "accelerator-optimized: NVIDIA L4", "g4": "accelerator-optimized: NVIDIA RTX PRO 6000",
    "ct4p": "TPU v4 VM", "ct5lp": "TPU v5e VM", "ct5p": "TPU v5p VM", "ct6e": "TPU v6e (Trillium) VM",
    "cloud": "cloud-tpu: a legacy TPU slice (TPU_V2 / TPU_V3)",
}  # fmt: skip

#: The series words of Compute Engine machine types (``highmem`` of ``n2-highmem-8``): a type
#: of a known family is refused only when its series is none of these (a typo such as
#: ``n1-standrd-8``), never for an unlisted size.
SERIES: frozenset[str] = frozenset({
    "standard", "highmem", "highcpu", "custom", "megamem", "ultramem", "hypermem", "micro", "small", "medium",
    "highgpu", "megagpu", "ultragpu", "edgegpu", "hightpu", "node",
})  # fmt: skip

#: TPU VM machine types: chips per host by the ``-Nt`` suffix, and the topology of one host.
TPU_VM_FAMILIES: tuple[str, ...] = ("ct4p", "ct5lp", "ct5p", "ct6e")
SINGLE_HOST_TOPOLOGY: dict[int, str] = {1: "1x1", 4: "2x2", 8: "2x4"}

#: Accelerators that existed but cannot be had any more, with what to use instead.
RETIRED_ACCELERATORS: dict[str, str] = {"NVIDIA_TESLA_K80": K80_REPLACEMENT}


@dataclass(frozen=True)
class MachineInfo:
    """What a machine type offers.

    Attributes:
        name: the Compute Engine machine type.
        vcpus: virtual CPUs.
        memory_gb: memory in GB.
        gpus: accelerators that attach to it, name → allowed counts (N1 family).
        builtin: the accelerator the machine always comes with, as (name, count).
    """

    name: str
    vcpus: int
    memory_gb: float
    gpus: tuple[tuple[str, tuple[int, ...]], ...] = ()
    builtin: tuple[str, int] | None = None

    def allowed_counts(self, accelerator: str) -> tuple[int, ...]:
        """Counts of ``accelerator`` this machine can take (empty: none)."""
        if self.builtin is not None:
            return (self.builtin[1],) if accelerator == self.builtin[0] else ()
        return dict(self.gpus).get(accelerator, ())


def _family(prefix: str, sizes: tuple[int, ...], gb_per_cpu: float, gpus: bool = False) -> list[MachineInfo]:
    attach = tuple(N1_GPUS.items()) if gpus else ()
    return [MachineInfo(f"{prefix}-{n}", n, round(n * gb_per_cpu, 2), attach) for n in sizes]


def _builtin(names: dict[str, tuple[int, float, str, int]]) -> list[MachineInfo]:
    return [MachineInfo(n, cpu, mem, builtin=(acc, count)) for n, (cpu, mem, acc, count) in names.items()]


_MACHINES: list[MachineInfo] = [
    *_family("n1-standard", (4, 8, 16, 32, 64, 96), 3.75, gpus=True),
    *_family("n1-highmem", (2, 4, 8, 16, 32, 64, 96), 6.5, gpus=True),
    *_family("n1-highcpu", (8, 16, 32, 64, 96), 0.9, gpus=True),
    *_family("e2-standard", (4, 8, 16, 32), 4.0),
    *_family("e2-highmem", (2, 4, 8, 16), 8.0),
    *_family("e2-highcpu", (16, 32), 1.0),
    *_family("n2-standard", (4, 8, 16, 32, 48, 64, 80), 4.0),
    *_family("n2-highmem", (2, 4, 8, 16, 32, 48, 64, 80), 8.0),
    *_family("n2-highcpu", (16, 32, 48, 64, 80, 96), 1.0),
    *_family("n2d-standard", (4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 4.0),
    *_family("c2-standard", (4, 8, 16, 30, 60), 4.0),
    *_family("c3-standard", (4, 8, 22, 44, 88, 176), 4.0),
    *_family("c3-highmem", (4, 8, 22, 44, 88, 176), 8.0),
    *_family("c4-standard", (2, 4, 8, 16, 32, 48, 96, 192), 3.75),
    *_family("n2-standard", (2,), 4.0),
    *[
        MachineInfo(f"{f}-{kind}-{n}t", 4 * n * (2 if f == "ct6e" else 1), 16.0 * n * (3 if f == "ct6e" else 1))
        for f, kind in (("ct5lp", "hightpu"), ("ct6e", "standard"))
        for n in (1, 4, 8)
    ],
    *_family("m1-ultramem", (40, 80, 160), 24.025),
    *_builtin(
        {
            "a2-highgpu-1g": (12, 85, "NVIDIA_TESLA_A100", 1),
            "a2-highgpu-2g": (24, 170, "NVIDIA_TESLA_A100", 2),
            "a2-highgpu-4g": (48, 340, "NVIDIA_TESLA_A100", 4),
            "a2-highgpu-8g": (96, 680, "NVIDIA_TESLA_A100", 8),
            "a2-megagpu-16g": (96, 1360, "NVIDIA_TESLA_A100", 16),
            "a2-ultragpu-1g": (12, 170, "NVIDIA_A100_80GB", 1),
            "a2-ultragpu-2g": (24, 340, "NVIDIA_A100_80GB", 2),
            "a2-ultragpu-4g": (48, 680, "NVIDIA_A100_80GB", 4),
            "a2-ultragpu-8g": (96, 1360, "NVIDIA_A100_80GB", 8),
            "a3-highgpu-1g": (26, 234, "NVIDIA_H100_80GB", 1),
            "a3-highgpu-2g": (52, 468, "NVIDIA_H100_80GB", 2),
            "a3-highgpu-4g": (104, 936, "NVIDIA_H100_80GB", 4),
            "a3-highgpu-8g": (208, 1872, "NVIDIA_H100_80GB", 8),
            "a3-megagpu-8g": (208, 1872, "NVIDIA_H100_MEGA_80GB", 8),
            "a3-ultragpu-8g": (224, 2952, "NVIDIA_H200_141GB", 8),
            "a4-highgpu-8g": (224, 3968, "NVIDIA_B200", 8),
            "a4x-highgpu-4g": (140, 884, "NVIDIA_GB200", 4),
            "g4-standard-48": (48, 180, "NVIDIA_RTX_PRO_6000", 1),
            "g4-standard-96": (96, 360, "NVIDIA_RTX_PRO_6000", 2),
            "g4-standard-192": (192, 720, "NVIDIA_RTX_PRO_6000", 4),
            "g4-standard-384": (384, 1440, "NVIDIA_RTX_PRO_6000", 8),
            "g2-standard-4": (4, 16, "NVIDIA_L4", 1),
            "g2-standard-8": (8, 32, "NVIDIA_L4", 1),
            "g2-standard-12": (12, 48, "NVIDIA_L4", 1),
            "g2-standard-16": (16, 64, "NVIDIA_L4", 1),
            "g2-standard-24": (24, 96, "NVIDIA_L4", 2),
            "g2-standard-32": (32, 128, "NVIDIA_L4", 1),
            "g2-standard-48": (48, 192, "NVIDIA_L4", 4),
            "g2-standard-96": (96, 384, "NVIDIA_L4", 8),
        }
    ),
    # A Cloud TPU slice of 8 cores; its accelerator type (v2 or v3) is the user's choice.
    MachineInfo("cloud-tpu", 96, 335, gpus=(("TPU_V2", (8,)), ("TPU_V3", (8,)))),
]

#: Compute Engine machine types tfjob accepts, by name.
MACHINES: dict[str, MachineInfo] = {m.name: m for m in _MACHINES}

#: Legacy AI Platform machine names → (Compute Engine type, accelerator, count).
LEGACY_MACHINES: dict[str, tuple[str, str | None, int]] = {
    "standard": ("n1-standard-4", None, 0),
    "large_model": ("n1-highmem-8", None, 0),
    "complex_model_s": ("n1-highcpu-8", None, 0),
    "complex_model_m": ("n1-highcpu-16", None, 0),
    "complex_model_l": ("n1-highcpu-32", None, 0),
    "standard_gpu": ("n1-standard-8", K80_REPLACEMENT, 1),
    "complex_model_m_gpu": ("n1-standard-16", K80_REPLACEMENT, 4),
    # 8 K80s in the original; a T4 attaches at most 4 to one machine.
    "complex_model_l_gpu": ("n1-standard-32", K80_REPLACEMENT, 4),
    "standard_p100": ("n1-standard-8", "NVIDIA_TESLA_P100", 1),
    "complex_model_m_p100": ("n1-standard-16", "NVIDIA_TESLA_P100", 4),
    "standard_v100": ("n1-standard-8", "NVIDIA_TESLA_V100", 1),
    "large_model_v100": ("n1-highmem-8", "NVIDIA_TESLA_V100", 1),
    "complex_model_m_v100": ("n1-standard-16", "NVIDIA_TESLA_V100", 4),
    "complex_model_l_v100": ("n1-standard-32", "NVIDIA_TESLA_V100", 8),
    # The worker of a legacy CUSTOM TPU job; its acceleratorConfig picks TPU_V2 or TPU_V3.
    "cloud_tpu": ("cloud-tpu", "TPU_V2", 8),
}

#: The machine type used when none is given.
DEFAULT_MACHINE = "n1-standard-4"


_MACHINE_TYPE_RE = __import__("re").compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+){1,3}\Z")


def family_of(machine_type: str) -> str:
    """The family of a Compute Engine machine type (``a3`` of ``a3-highgpu-8g``)."""
    return machine_type.split("-", 1)[0]


def well_formed_machine_type(name: str) -> bool:
    """Whether ``name`` is spelt like a Compute Engine machine type (``c3-standard-4``)."""
    return len(name) <= 63 and bool(_MACHINE_TYPE_RE.match(name))


def machine_info(name: str) -> MachineInfo | None:
    """What tfjob knows of a machine type: exact, or the family's shape for an unlisted size."""
    info = MACHINES.get(name)
    if info is not None or not well_formed_machine_type(name):
        return info
    family = family_of(name)
    if family in TPU_VM_FAMILIES:
        return MachineInfo(name, 0, 0.0)
    if family == "n1":
        return MachineInfo(name, 0, 0.0, tuple(N1_GPUS.items()))
    return None


def tpu_chips(machine_type: str) -> int | None:
    """Chips of one TPU VM host (``ct5lp-hightpu-4t`` → 4), or None for other types."""
    if family_of(machine_type) not in TPU_VM_FAMILIES:
        return None
    last = machine_type.rsplit("-", 1)[-1]
    return int(last[:-1]) if last.endswith("t") and last[:-1].isascii() and last[:-1].isdigit() else None


def closest(name: str, choices: Iterable[str], n: int = 1) -> list[str]:
    """The closest valid names to a misspelt one (possibly none)."""
    import difflib  # only for a mistake

    return difflib.get_close_matches(name, list(choices), n=n, cutoff=0.5)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest choice, or ``""``."""
    match = closest(name, choices)
    return f" (did you mean {match[0]!r}?)" if match else ""


def normalize_accelerator(name: str) -> str:
    """``nvidia-tesla-t4`` / ``nvidia_tesla_t4`` → ``NVIDIA_TESLA_T4`` (gcloud spellings)."""
    return name.strip().upper().replace("-", "_")
