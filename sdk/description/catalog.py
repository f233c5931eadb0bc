"""The catalog ``tfjob machines`` shows: every machine type, legacy machine name, scale tier and
accelerator tfjob knows, as plain data (:func:`build_catalog`, for the CLI as
:func:`tfjob._internal.machine_catalog`). Pure; the tables are :mod:`tfjob.description.machines` and :mod:`tfjob.description.spec`'s.
"""

from __future__ import annotations

from typing import Any

#: Legacy names whose GPUs were NVIDIA K80s (retired; tfjob maps them to K80_REPLACEMENT).
_K80_NAMES = ("standard_gpu", "complex_model_m_gpu", "complex_model_l_gpu")


def _matches(words: list[str], pattern: str | None) -> bool:
    from .machines import normalize_accelerator

    if not pattern:
        return True
    # `t4`, `nvidia-tesla-t4` and `NVIDIA_TESLA_T4` all find the T4 rows.
    key = normalize_accelerator(pattern)
    return any(key in normalize_accelerator(word) for word in words)


def build_catalog(pattern: str | None = None) -> dict[str, Any]:
    """Every machine type, legacy name, scale tier and accelerator, as plain data. Pure.

    Args:
        pattern: keep only rows whose names (or accelerators) contain this text,
            case-insensitively, ``-`` and ``_`` alike.
    """
    from .machines import ACCELERATORS, FAMILIES, K80_REPLACEMENT, LEGACY_MACHINES, MACHINES, RETIRED_ACCELERATORS
    from .spec import TIERS, ScaleTier

    machine_types = []
    for info in MACHINES.values():
        gpus: list[dict[str, Any]] = [{"type": name, "counts": list(counts)} for name, counts in info.gpus]
        builtin: dict[str, Any] | None = {"type": info.builtin[0], "count": info.builtin[1]} if info.builtin else None
        words = [info.name, *(name for name, _ in info.gpus), *([info.builtin[0]] if info.builtin else [])]
        if _matches(words, pattern):
            machine_types.append(
                {
                    "name": info.name,
                    "vcpus": info.vcpus,
                    "memory_gb": info.memory_gb,
                    "accelerators": gpus,
                    "builtin_accelerator": builtin,
                }
            )
    legacy = []
    for name, (machine_type, acc, count) in LEGACY_MACHINES.items():
        if _matches([name, machine_type, acc or ""], pattern):
            accelerator = {"type": acc, "count": count} if acc else None
            row: dict[str, Any] = {"name": name, "machine_type": machine_type, "accelerator": accelerator}
            if name in _K80_NAMES:
                row["note"] = f"originally NVIDIA K80 GPUs, which are retired; {K80_REPLACEMENT} today"
            legacy.append(row)
    tiers = []
    for tier in ScaleTier:
        shape = TIERS.get(tier, {})
        pools: list[dict[str, Any]] = [
            {"role": role, "replicas": n, "machine_type": machine, "accelerator": {"type": acc, "count": count} if acc else None}
            for role, (n, machine, acc, count) in shape.items()
        ]
        words = [tier.value, *(machine for _, machine, _, _ in shape.values()), *(acc for _, _, acc, _ in shape.values() if acc)]
        if _matches(words, pattern):
            row = {"name": tier.value, "pools": pools}
            if tier is ScaleTier.CUSTOM:
                row["note"] = "you choose: --chief-machine-type, and --workers/--ps/--evaluators each with its machine type"
            elif tier is ScaleTier.BASIC_GPU:
                row["note"] = f"one NVIDIA K80 originally, which is retired; {K80_REPLACEMENT} today"
            tiers.append(row)
    accelerator_names = [name for name in ACCELERATORS if _matches([name], pattern)]
    retired = {name: use for name, use in RETIRED_ACCELERATORS.items() if _matches([name, use], pattern)}
    families = [{"family": name, "what": what} for name, what in FAMILIES.items() if _matches([name, what], pattern)]
    return {
        "families": families,
        "machine_types": machine_types,
        "legacy_machine_names": legacy,
        "scale_tiers": tiers,
        "accelerators": accelerator_names,
        "retired_accelerators": retired,
    }
