"""``tfjob machines``: what the spec accepts, listed from the same tables it checks against."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tfjob.cli.catalog import build_catalog, render_catalog_text
from tfjob.cli.main import app
from tfjob.description.machines import LEGACY_MACHINES, MACHINES
from tfjob.description.spec import Accelerator, Machine, ScaleTier
from tfjob.description.request import build_spec


def test_json_lists_every_machine_legacy_name_and_tier() -> None:
    result = CliRunner().invoke(app, ["machines", "--json"])
    assert result.exit_code == 0, result.stderr
    catalog = json.loads(result.stdout)
    assert [m["name"] for m in catalog["machine_types"]] == list(MACHINES)
    assert [m["name"] for m in catalog["legacy_machine_names"]] == list(LEGACY_MACHINES)
    assert [t["name"] for t in catalog["scale_tiers"]] == [t.value for t in ScaleTier]
    assert catalog["retired_accelerators"] == {"NVIDIA_TESLA_K80": "NVIDIA_TESLA_T4"}


def test_every_listed_combination_is_one_the_spec_accepts() -> None:
    catalog = build_catalog()
    for m in catalog["machine_types"]:
        for acc in m["accelerators"]:
            for count in acc["counts"]:
                assert Machine(m["name"], Accelerator(acc["type"], count)).accelerator == Accelerator(acc["type"], count)
        if m["builtin_accelerator"]:
            assert Machine(m["name"]).accelerator == Accelerator(m["builtin_accelerator"]["type"], m["builtin_accelerator"]["count"])
    for legacy in catalog["legacy_machine_names"]:
        assert Machine.resolve(legacy["name"]).type == legacy["machine_type"]
    for tier in catalog["scale_tiers"]:
        if tier["name"] != "CUSTOM":
            spec = build_spec(dict(name="t", module="a.b", scale_tier=tier["name"]))
            assert [(p.role, p.replicas, p.machine.type) for p in spec.pools] == [
                (p["role"], p["replicas"], p["machine_type"]) for p in tier["pools"]
            ]


def test_a_machine_row_has_vcpus_memory_and_accelerators() -> None:
    row = next(m for m in build_catalog()["machine_types"] if m["name"] == "n1-highcpu-16")
    assert (row["vcpus"], row["memory_gb"], row["builtin_accelerator"]) == (16, 14.4, None)
    assert {"type": "NVIDIA_TESLA_V100", "counts": [1, 2, 4, 8]} in row["accelerators"]


def test_filter_matches_names_and_accelerators_in_any_spelling() -> None:
    catalog = build_catalog("nvidia-tesla-p100")
    assert catalog["machine_types"] and all(
        any(a["type"] == "NVIDIA_TESLA_P100" for a in m["accelerators"]) for m in catalog["machine_types"]
    )
    assert [r["name"] for r in catalog["legacy_machine_names"]] == ["standard_p100", "complex_model_m_p100"]
    assert catalog["scale_tiers"] == []
    assert [t["name"] for t in build_catalog("standard-1")["scale_tiers"]] == ["STANDARD_1"]


def test_text_output_has_a_section_per_kind() -> None:
    result = CliRunner().invoke(app, ["machines"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    for header in ("MACHINE TYPE", "LEGACY NAME", "SCALE TIER"):
        assert any(line.startswith(header) for line in lines), header
    assert any(line.split()[:2] == ["a2-highgpu-1g", "12"] and "NVIDIA_TESLA_A100 x1 (built in)" in line for line in lines)
    assert any(line.split()[:4] == ["STANDARD_1", "1", "x", "n1-highcpu-8"] for line in lines)
    assert any(line.startswith("standard_gpu ") and "retired" in line for line in lines)


def test_no_match_says_so_on_stderr() -> None:
    result = CliRunner().invoke(app, ["machines", "zz-top"])
    assert (result.exit_code, result.stderr) == (0, "tfjob: nothing matches 'zz-top'\n")
    assert render_catalog_text(build_catalog("zz-top")) == ""
