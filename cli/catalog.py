"""``tfjob machines``: the machine types, accelerators, legacy names and scale tiers tfjob knows."""

from __future__ import annotations

import json
from typing import Any

import click

from .app import CONTEXT_SETTINGS, app


def build_catalog(pattern: str | None = None) -> dict[str, Any]:
    """The catalog as plain data (:func:`tfjob._internal.machine_catalog`)."""
    from tfjob._internal import machine_catalog

    return machine_catalog(pattern)


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
