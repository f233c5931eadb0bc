"""Today's hardware: accelerators from the client library's own enum, any well-formed Compute
Engine machine type, TPU VMs with their topology (issue 16.1)."""

from __future__ import annotations

import subprocess

import pytest
from helpers import BIN

from tfjob.errors import SpecError
from tfjob.description.machines import ACCELERATORS, RETIRED_ACCELERATORS
from tfjob.description.spec import Accelerator, Machine
from tfjob.description.request import build_spec


def test_the_catalog_has_exactly_the_installed_enum() -> None:
    # Fails when google-cloud-aiplatform adds (or drops) an accelerator: update machines.ACCELERATORS.
    from google.cloud.aiplatform_v1.types import AcceleratorType

    installed = {a.name for a in AcceleratorType} - {"ACCELERATOR_TYPE_UNSPECIFIED"} - set(RETIRED_ACCELERATORS)
    assert set(ACCELERATORS) == installed


@pytest.mark.parametrize(
    "machine, accelerator",
    [
        ("a3-highgpu-8g", "type=NVIDIA_H100_80GB,count=8"),
        ("a3-ultragpu-8g", None),
        ("a4-highgpu-8g", None),
        ("c3-standard-4", None),
        ("n2-standard-2", None),
        ("c4-highcpu-16", None),  # a size tfjob does not list, of a family it knows
        ("ct5lp-hightpu-4t", None),
        ("ct6e-standard-4t", None),
        ("a3-ultragpu-8g", "type=NVIDIA_H200_141GB,count=8"),
    ],
)
def test_current_hardware_renders_and_passes_the_strict_parse(machine: str, accelerator: str | None) -> None:
    from test_render_vertex import strict_roundtrip

    from tfjob.backends.vertex.options import VertexOptions
    from tfjob.backends.vertex.render import render_custom_job

    spec = build_spec(dict(name="j", module="t.task", workers=1, worker_machine_type=machine, worker_accelerator=accelerator))
    body = render_custom_job(spec, VertexOptions(region="us-central1"), ["gs://b/p.tar.gz"])
    assert strict_roundtrip(body) == body
    assert body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["machineType"] == machine


def test_tpu_vms_get_their_topology() -> None:
    assert Machine("ct5lp-hightpu-4t").topology == "2x2"
    assert Machine("ct6e-standard-8t").topology == "2x4"
    assert Machine("ct5lp-hightpu-4t", tpu_topology="4x4").topology == "4x4"
    with pytest.raises(SpecError, match="its chips come with it"):
        Machine("ct5lp-hightpu-4t", Accelerator("TPU_V5_LITEPOD", 4))
    with pytest.raises(SpecError, match="is for TPU VM machine types"):
        Machine("n1-standard-4", tpu_topology="2x2")
    with pytest.raises(SpecError, match="must be a shape like 2x2"):
        Machine("ct5lp-hightpu-4t", tpu_topology="big")


def test_unknown_families_are_warned_about_never_refused() -> None:
    with pytest.warns(UserWarning, match="family tfjob does not know"):
        Machine("zz9-standard-8")
    for bad in ("N1 STANDARD", "a3_highgpu", "x", "-n1-standard-4"):
        with pytest.raises(SpecError, match="is not known"):
            Machine(bad)


def test_the_machines_command_shows_the_families() -> None:
    done = subprocess.run([str(BIN / "tfjob"), "machines", "ct6e"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "FAMILY" in done.stdout and "TPU v6e" in done.stdout and "ct6e-standard-4t" in done.stdout


def test_the_issue_command_renders(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    done = subprocess.run(
        [str(BIN / "tfjob"), "submit", str(pkg), "-m", "trainer.task", "--backend", "vertex", "--workers", "2",
         "--worker-machine-type", "a3-highgpu-8g", "--worker-accelerator", "type=NVIDIA_H100_80GB,count=8", "--dry-run"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"acceleratorType": "NVIDIA_H100_80GB"' in done.stdout
