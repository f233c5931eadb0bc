"""``tfjob machines``: the machine types, accelerators, legacy names and scale tiers tfjob knows."""

from __future__ import annotations

import json
from typing import Any

import click


from .app import CONTEXT_SETTINGS, app

#: Legacy names whose GPUs were NVIDIA K80s (retired; tfjob maps them to K80_REPLACEMENT).
_K80_NAMES = ("standard_gpu", "complex_model_m_gpu", "complex_model_l_gpu")


def _matches(words: list[str], pattern: str | None) -> bool:
    from tfjob.machines import normalize_accelerator

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
    # Loaded here, not with the CLI: `tfjob --help` and other commands do not pay for them.
    from tfjob.machines import ACCELERATORS, FAMILIES, K80_REPLACEMENT, LEGACY_MACHINES, MACHINES, RETIRED_ACCELERATORS
    from tfjob.spec import TIERS, ScaleTier

    machine_types = []
    for info in MACHINES.values():
        accelerators = [{"type": name, "counts": list(counts)} for name, counts in info.gpus]
        builtin = {"type": info.builtin[0], "count": info.builtin[1]} if info.builtin else None
        words = [info.name, *(a["type"] for a in accelerators), *([builtin["type"]] if builtin else [])]
        if _matches(words, pattern):
            machine_types.append(
                {
                    "name": info.name,
                    "vcpus": info.vcpus,
                    "memory_gb": info.memory_gb,
                    "accelerators": accelerators,
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
        pools = [
            {"role": role, "replicas": n, "machine_type": machine, "accelerator": {"type": acc, "count": count} if acc else None}
            for role, (n, machine, acc, count) in TIERS.get(tier, {}).items()
        ]
        words = [tier.value, *(p["machine_type"] for p in pools), *(p["accelerator"]["type"] for p in pools if p["accelerator"])]
        if _matches(words, pattern):
            row = {"name": tier.value, "pools": pools}
            if tier is ScaleTier.CUSTOM:
                row["note"] = "you choose: --chief-machine-type, and --workers/--ps/--evaluators each with its machine type"
            elif tier is ScaleTier.BASIC_GPU:
                row["note"] = f"one NVIDIA K80 originally, which is retired; {K80_REPLACEMENT} today"
            tiers.append(row)
    accelerators = [name for name in ACCELERATORS if _matches([name], pattern)]
    retired = {name: use for name, use in RETIRED_ACCELERATORS.items() if _matches([name, use], pattern)}
    families = [
        {"family": name, "what": what}
        for name, what in FAMILIES.items()
        if _matches([name, what], pattern)
    ]
    return {
        "families": families,
        "machine_types": machine_types,
        "legacy_machine_names": legacy,
        "scale_tiers": tiers,
        "accelerators": accelerators,
        "retired_accelerators": retired,
    }


def _acc(acc: dict[str, Any] | None) -> str:
    return f"{acc['type']} x{acc['count']}" if acc else "-"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    return ["  ".join([*(str(c).ljust(w) for c, w in zip(r, widths)), str(r[-1])]).rstrip() for r in [header, *rows]]


def render_catalog_text(catalog: dict[str, Any]) -> str:
    """The catalog as aligned tables, one section per kind (empty sections left out). Pure."""
    out: list[str] = []
    if catalog.get("families"):
        rows = [[f["family"], f["what"]] for f in catalog["families"]]
        out += _table(["FAMILY", "WHAT (any well-formed size of a family is accepted; an unknown family is warned about)"], rows) + [""]
    if catalog["machine_types"]:
        rows = []
        for m in catalog["machine_types"]:
            if m["builtin_accelerator"]:
                accs = f"{_acc(m['builtin_accelerator'])} (built in)"
            else:
                accs = ", ".join(f"{a['type']} x{'/'.join(map(str, a['counts']))}" for a in m["accelerators"]) or "-"
            rows.append([m["name"], str(m["vcpus"]), f"{m['memory_gb']:g}", accs])
        out += _table(["MACHINE TYPE", "VCPUS", "MEMORY_GB", "ACCELERATORS (count per machine)"], rows) + [""]
    if catalog["legacy_machine_names"]:
        rows = [[r["name"], r["machine_type"], _acc(r["accelerator"]), r.get("note", "")] for r in catalog["legacy_machine_names"]]
        out += _table(["LEGACY NAME", "MACHINE TYPE", "ACCELERATOR", "NOTE"], rows) + [""]
    if catalog["scale_tiers"]:
        rows = []
        for t in catalog["scale_tiers"]:
            by_role = {p["role"]: p for p in t["pools"]}
            cells = []
            for role in ("chief", "worker", "ps"):
                p = by_role.get(role)
                if p is None:
                    cells.append("-")
                    continue
                gpus = f" + {_acc(p['accelerator'])}" if p["accelerator"] else ""
                cells.append(f"{p['replicas']} x {p['machine_type']}{gpus}")
            rows.append([t["name"], *cells, t.get("note", "")])
        out += _table(["SCALE TIER", "CHIEF", "WORKERS", "PS", "NOTE"], rows) + [""]
    if catalog["accelerators"]:
        out.append("ACCELERATORS: " + ", ".join(catalog["accelerators"]))
    for name, use in catalog["retired_accelerators"].items():
        out.append(f"RETIRED: {name} (use {use})")
    return "\n".join(out).rstrip()


@app.command("machines", context_settings=CONTEXT_SETTINGS)
@click.argument("pattern", required=False, metavar="[FILTER]")
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def machines(pattern: str | None, as_json: bool) -> None:
    """List machine types (vCPUs, memory, accelerators), legacy machine names and scale tiers.

    FILTER shows only rows matching this text, e.g. n1-highcpu, t4, gpu, standard_1."""
    catalog = build_catalog(pattern)
    if not any(catalog.values()):
        click.echo(f"tfjob: nothing matches {pattern!r}", err=True)
    if as_json:
        click.echo(json.dumps(catalog, indent=2))
    else:
        click.echo(render_catalog_text(catalog))
