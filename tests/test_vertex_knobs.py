"""The knobs real Vertex AI jobs set (issue 16.2–16.4): scheduling (Spot, Flex-start,
maxWaitDuration, disableRetries), reservations, persistent resources, boot disks, CMEK,
reserved IP ranges, Private Service Connect and dashboard access — as flags, ``Job``
keywords and ``--config`` keys, each refused in one line where Vertex AI would refuse it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import cli_words

from tfjob._internal import job_from_keywords
from tfjob.backends.vertex.options import VertexOptions
from tfjob.cli.main import app
from tfjob.config.job import parse_job_config
from tfjob.errors import SpecError
from tfjob.job import Job
from tfjob.backends.vertex.render import render_custom_job
from tfjob.description.request import build_spec

KEY = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
ATTACHMENT = "projects/p/regions/us-central1/networkAttachments/att"
RESERVATION = "projects/p/zones/us-central1-a/reservations/h100-pool"


def _strict(body: dict[str, Any]) -> None:
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    json_format.ParseDict(body, aiplatform_v1.types.CustomJob()._pb)


def test_the_issues_h100_spot_line_renders_and_parses_strictly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('hi')\n")
    result = CliRunner().invoke(
        app,
        [
            "submit", str(tmp_path), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--region", "us-central1",
            "--staging-bucket", "gs://b", "--workers", "2", "--worker-machine-type", "a3-highgpu-8g",
            "--worker-accelerator", "type=NVIDIA_H100_80GB,count=8", "--spot", "--boot-disk-size", "500", "--kms-key", KEY,
            "--dry-run",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    _strict(body)
    assert body["jobSpec"]["scheduling"] == {"strategy": "SPOT"}
    assert body["encryptionSpec"] == {"kmsKeyName": KEY}
    assert [p["diskSpec"] for p in body["jobSpec"]["workerPoolSpecs"]] == [{"bootDiskSizeGb": 500}] * 2
    assert body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["acceleratorType"] == "NVIDIA_H100_80GB"


KNOBS: dict[str, dict[str, Any]] = {
    "spot": dict(spot=True, disable_retries=True, boot_disk_type="pd-standard", boot_disk_size=300, kms_key=KEY),
    "flex": dict(flex_start=True, max_wait=5400.0, network_attachment=ATTACHMENT, enable_dashboard_access=True),
    "reserved": dict(
        reservation=RESERVATION,
        persistent_resource_id="team-pool",
        network="projects/1/global/networks/v",
        reserved_ip_ranges=("range-a",),
        worker_boot_disk_size=1000,
    ),  # fmt: skip
    "any-reservation": dict(reservation="any"),
    "no-reservation": dict(reservation="none", scheduling_strategy="STANDARD"),
}


@pytest.mark.parametrize("case", sorted(KNOBS))
def test_knobs_read_back_from_the_rendered_job_as_the_same_job(case: str) -> None:
    job = job_from_keywords(
        None,
        "trainer.task",
        {"name": "j", "image": "gcr.io/p/t:1", "workers": 2, "backend": "vertex", "region": "us-central1", **KNOBS[case]},
    )
    body = render_custom_job(job.spec, job.options)
    _strict(body)
    values = parse_job_config(json.loads(json.dumps(body)), "custom_job.json").values
    again = job_from_keywords(None, None, {**{**values, "backend": "vertex", "region": "us-central1"}})
    assert again.spec == job.spec and render_custom_job(again.spec, again.options) == body


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(spot=True, flex_start=True), r"--spot and --flex-start are two scheduling strategies; choose one"),
        (dict(max_wait=600.0), r"--max-wait is how long a Flex-start job waits .* add --flex-start"),
        (dict(flex_start=True, max_wait=float("inf")), r"--max-wait inf must be a positive duration"),
        (
            dict(scheduling_strategy="SPOTT"),
            r"scheduling_strategy='SPOTT' is not one of STANDARD, SPOT, FLEX_START \(did you mean 'SPOT'\?\)",
        ),
        (dict(boot_disk_size=50), r"--boot-disk-size 50 must be a whole number of GB from 100 to 64000"),
        (dict(boot_disk_size=True), r"--boot-disk-size True must be a whole number"),
        (
            dict(boot_disk_type="pd-ssdd"),
            r"--boot-disk-type 'pd-ssdd' is not one of pd-ssd, pd-standard, hyperdisk-balanced \(did you mean 'pd-ssd'\?\)",
        ),
        (dict(ps_boot_disk_size=200), r"^ps_boot_disk_\* is set but the job has no ps pool$"),
        (dict(reservation="h100-pool"), r"--reservation 'h100-pool' must be any, none, or a reservation's full name"),
        (dict(reservation="any", spot=True), r"--reservation cannot be combined with --spot"),
        (dict(persistent_resource_id="Team_Pool"), r"--persistent-resource 'Team_Pool' must be a persistent resource's id"),
        (dict(kms_key="my-key"), r"--kms-key 'my-key' must be a Cloud KMS key's full name"),
        (dict(reserved_ip_ranges=("r1",)), r"--reserved-ip-range names ranges of the peered VPC network: add --network"),
        (dict(network_attachment="att"), r"--network-attachment 'att' must be a network attachment's full name"),
        (dict(network_attachment=ATTACHMENT, network="projects/1/global/networks/v"), r"are alternatives; give one"),
    ],
)
def test_what_vertex_would_refuse_is_one_error(kwargs: dict[str, Any], message: str) -> None:
    # The Vertex AI knobs are the Vertex options, checked there; the pools' disks are the job's.
    # The Vertex AI knobs are the Vertex options, checked there; a pool's disk is checked against the job's pools at render.
    mine = {k: v for k, v in kwargs.items() if k in {f.name for f in dataclasses.fields(VertexOptions)}}
    with pytest.raises(SpecError, match=message), cli_words():  # as the CLI says them
        options = VertexOptions(**mine)
        render_custom_job(build_spec(dict(name="j", module="trainer.task", image="gcr.io/p/t:1", workers=1)), options)


def test_a_key_or_attachment_in_another_region_is_refused_before_submitting() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image="i"))
    with pytest.raises(SpecError, match=r"--kms-key is in us-central1, but the job runs in europe-west4"), cli_words():
        render_custom_job(spec, VertexOptions(region="europe-west4", kms_key=KEY))


@pytest.mark.parametrize(
    "argv",
    [
        ["--spot"], ["--boot-disk-size", "200"], ["--kms-key", KEY], ["--reservation", "any"], ["--enable-dashboard-access"],
    ],
)  # fmt: skip
def test_vertex_only_flags_are_refused_elsewhere_in_one_line(tmp_path, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "__init__.py").write_text("")
    (tmp_path / "t" / "task.py").write_text("")
    result = CliRunner().invoke(app, ["submit", str(tmp_path), "-m", "t.task", "--backend", "kubeflow", "--image", "i", "--dry-run", *argv])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "vertex" in result.stderr, result.stderr


def test_a_config_with_flex_start_and_disks_reads_as_keywords(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "job.yaml"
    config.write_text(
        "workerPoolSpecs:\n"
        "  - machineSpec: {machineType: n1-standard-8, reservationAffinity: {reservationAffinityType: NO_RESERVATION}}\n"
        "    diskSpec: {bootDiskType: pd-ssd, bootDiskSizeGb: 250}\n"
        "    containerSpec: {imageUri: gcr.io/p/t:1}\n"
        "scheduling: {strategy: FLEX_START, maxWaitDuration: 1800s, disableRetries: true}\n"
        "persistentResourceId: team-pool\n"
        "enableDashboardAccess: true\n"
    )
    job = job_from_keywords(None, None, {"config": str(config), "backend": "vertex"})
    spec, options = job.spec, job.options
    assert isinstance(options, VertexOptions)
    assert options.scheduling_strategy == "FLEX_START" and options.max_wait == 1800 and options.disable_retries
    assert options.reservation == "none" and options.persistent_resource_id == "team-pool" and options.enable_dashboard_access
    assert spec.pool("chief") is not None and options.boot_disk("chief") == ("pd-ssd", 250)


def _location_in(body: dict[str, Any]) -> str:
    """The rendered job's protectedArtifactLocationId, as the API's own CustomJob message reads it."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    message = aiplatform_v1.types.CustomJob()._pb
    json_format.ParseDict(body, message)  # strictly: no unknown field
    return str(message.job_spec.protected_artifact_location_id)


def test_protected_artifact_location_reaches_the_custom_job_from_flag_settings_and_config(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """docs/architecture.md's knob-addition example: declared in backends/vertex alone."""
    from tfjob import Vertex

    cloud = ["--backend", "vertex", "--project", "p", "--region", "us-central1"]
    flag = CliRunner().invoke(app, ["render", "--image", "gcr.io/p/t:1", *cloud, "--protected-artifact-location-id", "europe-west4"])
    assert flag.exit_code == 0, flag.stderr
    assert _location_in(json.loads(flag.stdout)) == "europe-west4"
    typed = Job(image="gcr.io/p/t:1", backend=Vertex(project="p", region="us-central1", protected_artifact_location_id="europe-west4"))
    assert _location_in(typed.render()) == "europe-west4"
    config = tmp_path / "job.yaml"
    config.write_text(
        "workerPoolSpecs:\n  - machineSpec: {machineType: n1-standard-4}\n    containerSpec: {imageUri: gcr.io/p/t:1}\n"
        "protectedArtifactLocationId: europe-west4\n"
    )
    from_file = Job(config=str(config), backend=Vertex(project="p", region="us-central1"))
    assert _location_in(from_file.render()) == "europe-west4"
    assert (
        "protectedArtifactLocationId"
        not in Job(image="gcr.io/p/t:1", backend=Vertex(project="p", region="us-central1")).render()["jobSpec"]
    )
    # A wrong value is one error in each face's words; another backend refuses the flag.
    with pytest.raises(
        SpecError, match=r"^protected_artifact_location_id='Europe' is not a Google Cloud region; give one such as europe-west4$"
    ):
        Job(image="gcr.io/p/t:1", backend=Vertex(protected_artifact_location_id="Europe"))
    bad = CliRunner().invoke(app, ["render", "--image", "gcr.io/p/t:1", *cloud, "--protected-artifact-location-id", "Europe"])
    assert bad.exit_code == 2 and bad.stderr.splitlines()[-1] == (
        "error: --protected-artifact-location-id 'Europe' is not a Google Cloud region; give one such as europe-west4"
    )
    local = CliRunner().invoke(
        app, ["render", "--image", "gcr.io/p/t:1", "--backend", "local", "--protected-artifact-location-id", "europe-west4"]
    )
    assert local.exit_code == 2 and "--protected-artifact-location-id is for the vertex backend, not local" in local.stderr
