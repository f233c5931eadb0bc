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

import difflib
from dataclasses import dataclass

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

#: Every accelerator tfjob knows (names of the Vertex ``AcceleratorType`` enum).
ACCELERATORS: tuple[str, ...] = (
    "NVIDIA_TESLA_T4",
    "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_P100",
    "NVIDIA_TESLA_V100",
    "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB",
    "NVIDIA_L4",
    "NVIDIA_H100_80GB",
    "NVIDIA_H100_MEGA_80GB",
    "TPU_V2",
    "TPU_V3",
)

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


def closest(name: str, choices: object, n: int = 1) -> list[str]:
    """The closest valid names to a misspelt one (possibly none)."""
    return difflib.get_close_matches(name, list(choices), n=n, cutoff=0.5)  # type: ignore[arg-type]


def did_you_mean(name: str, choices: object) -> str:
    """``" (did you mean 'x'?)"`` for the closest choice, or ``""``."""
    match = closest(name, choices)
    return f" (did you mean {match[0]!r}?)" if match else ""


def normalize_accelerator(name: str) -> str:
    """``nvidia-tesla-t4`` / ``nvidia_tesla_t4`` → ``NVIDIA_TESLA_T4`` (gcloud spellings)."""
    return name.strip().upper().replace("-", "_")
