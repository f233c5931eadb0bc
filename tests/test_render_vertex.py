"""The Vertex AI CustomJob renderer: golden files and the strict protobuf contract.

Golden files live in tests/golden/vertex/; after an intended change, regenerate them
with ``pytest --update-golden tests/test_render_vertex.py`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import cli_words, golden_text

from tfjob.backends.vertex.options import VertexOptions
from tfjob.errors import SpecError
from tfjob.backends.vertex.render import (
    SUBMISSION_LABEL,
    prebuilt_image,
    prebuilt_tf_version,
    render_custom_job,
    render_duration,
)
from tfjob.description.request import build_spec

GOLDEN = Path(__file__).parent / "golden" / "vertex"
PKG = "gs://b/tfjob/packages/0123abcd/trainer-0.0.0.tar.gz"
SUB_ID = "5f1b3c9e2d7a4e8f9a0b1c2d3e4f5a6b"
#: The tfjob-bootstrap wheel's staged place (its real digest changes with every bootstrap edit).
BOOT = "gs://b/tfjob/packages/b007b007/tfjob_bootstrap-0.1.0-py3-none-any.whl"


def strict_roundtrip(body: dict[str, Any]) -> dict[str, Any]:
    """Parse ``body`` strictly into the library's CustomJob and write it back."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    message = aiplatform_v1.types.CustomJob()._pb
    json_format.ParseDict(body, message)  # no ignore_unknown_fields: any stray key fails
    return json_format.MessageToDict(message)


CASES: dict[str, Callable[[], tuple[Any, VertexOptions, list[str]]]] = {
    "a3_h100_workers": lambda: (
        build_spec(
            dict(
                name="h100-job",
                module="trainer.task",
                workers=2,
                chief_machine_type="a3-highgpu-8g",
                worker_machine_type="a3-highgpu-8g",
                worker_accelerator="type=NVIDIA_H100_80GB,count=8",
            )
        ),  # fmt: skip
        VertexOptions(region="us-central1"),
        [PKG],
    ),
    "spot_h100_disk_cmek": lambda: (
        # The issue's own line: an H100 job on Spot VMs, 500 GB boot disks, a customer-managed key.
        build_spec(
            dict(
                name="spot-job",
                module="trainer.task",
                workers=2,
                worker_machine_type="a3-highgpu-8g",
                worker_accelerator="type=NVIDIA_H100_80GB,count=8",
            )
        ),  # fmt: skip
        VertexOptions(
            region="us-central1", spot=True, boot_disk_size=500, kms_key="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
        ),
        [PKG],
    ),
    "flex_start_reserved_psc": lambda: (
        build_spec(
            dict(
                name="flex-job",
                module="trainer.task",
                workers=1,
                ps=1,
            )
        ),  # fmt: skip
        VertexOptions(
            region="us-central1",
            flex_start=True,
            max_wait=7200,
            disable_retries=True,
            ps_boot_disk_type="pd-standard",
            worker_boot_disk_type="hyperdisk-balanced",
            worker_boot_disk_size=200,
            network_attachment="projects/p/regions/us-central1/networkAttachments/att",
            enable_dashboard_access=True,
        ),  # fmt: skip
        [PKG],
    ),
    "reservation_persistent_peered": lambda: (
        build_spec(
            dict(
                name="reserved-job",
                module="trainer.task",
                workers=2,
            )
        ),  # fmt: skip
        VertexOptions(
            region="us-central1",
            reservation="projects/p/zones/us-central1-a/reservations/h100-pool",
            persistent_resource_id="team-pool",
            network="projects/123/global/networks/vpc",
            reserved_ip_ranges=("range-a", "range-b"),
        ),  # fmt: skip
        [PKG],
    ),
    "per_pool_args_env_command": lambda: (
        build_spec(
            dict(
                name="own-command",
                image="gcr.io/p/t:1",
                workers=2,
                ps=1,
                command=("python", "-m", "trainer.task"),
                args=("--steps", "100"),
                env={"A": "job"},
                worker_args=("--steps", "100", "--shard", "auto"),
                ps_env={"A": "ps"},
            )
        ),  # fmt: skip
        VertexOptions(region="us-central1"),
        [],
    ),
    "tpu_v5e_vm": lambda: (
        build_spec(dict(name="tpu-job", module="trainer.task", chief_machine_type="ct5lp-hightpu-4t", tpu_topology="2x2")),
        VertexOptions(region="us-west4"),
        [PKG],
    ),
    "ps_4_workers_2_ps": lambda: (
        build_spec(dict(name="ps-job", module="trainer.task", workers=4, ps=2)),
        VertexOptions(region="us-central1"),
        [PKG],
    ),
    "tier_standard_1": lambda: (
        build_spec(dict(name="tier-job", module="trainer.task", scale_tier="STANDARD_1", args=("--steps", "100"))),
        VertexOptions(region="europe-west4"),
        [PKG],
    ),
    "tier_basic_gpu": lambda: (
        build_spec(dict(name="gpu-job", module="trainer.task", scale_tier="BASIC_GPU")),
        VertexOptions(region="asia-east1"),
        [PKG],
    ),
    "gpus_mixed_pools": lambda: (
        build_spec(
            dict(
                name="gpu-workers",
                module="trainer.task",
                workers=2,
                ps=1,
                chief_machine_type="n1-standard-8",
                worker_machine_type="standard_v100",
                ps_machine_type="n1-highmem-8",
                accelerator="type=nvidia-tesla-t4,count=2",
                worker_accelerator="type=NVIDIA_TESLA_V100,count=4",
            )
        ),
        VertexOptions(region="us-central1"),
        [PKG, "gs://b/tfjob/packages/9999/extra-1.0-py3-none-any.whl"],
    ),
    "container_bootstrap": lambda: (
        build_spec(
            dict(
                name="container-job",
                module="trainer.task",
                image="us-docker.pkg.dev/p/repo/trainer:1",
                workers=3,
                env={"MODE": "train", "EMPTY": ""},
                args=("--epochs", "2"),
            )
        ),
        VertexOptions(),
        [],
    ),
    "container_entrypoint": lambda: (
        build_spec(
            dict(
                name="entry-job",
                image="gcr.io/p/trainer@sha256:abababababababababababababababababababababababababababababababab",
                workers=1,
            )
        ),
        VertexOptions(),
        [],
    ),
    "evaluators_only_gap_pools": lambda: (
        build_spec(
            dict(
                name="eval-job",
                module="trainer.task",
                evaluators=1,
                evaluator_machine_type="n1-highcpu-8",
                job_dir="gs://b/runs/eval",
                labels={"team": "ml", "run": "a1"},
                service_account="trainer@p.iam.gserviceaccount.com",
                timeout=5400.5,
                env={"TF_CPP_MIN_LOG_LEVEL": "2"},
            )
        ),
        VertexOptions(
            executor_image="us-docker.pkg.dev/p/repo/custom-tf:2.21",
            network="projects/12345/global/networks/vpc",
            restart_job_on_worker_restart=True,
            enable_web_access=True,
            tensorboard="projects/p/locations/us-central1/tensorboards/42",
        ),
        [PKG],
    ),
    "per_pool_images": lambda: (
        build_spec(
            dict(
                name="mixed-job",
                module="trainer.task",
                workers=2,
                ps=1,
                ps_image="us-docker.pkg.dev/p/repo/ps:1",
                job_dir="gs://b/out",
            )
        ),
        VertexOptions(region="us-east1"),
        [PKG],
    ),
    "spot_never_retried": lambda: (
        # Issue 29: --restart-policy Never on Spot VMs is Vertex AI's disableRetries.
        build_spec(dict(name="spot-never", module="trainer.task", workers=2, ps=1)),
        VertexOptions(region="us-central1", restart_policy=["Never"], spot=True),
        [PKG],
    ),
    "tier_basic_tpu": lambda: (
        build_spec(dict(name="tpu-job", module="trainer.task", scale_tier="BASIC_TPU")),
        VertexOptions(),
        [PKG],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    spec, options, uris = CASES[case]()
    body = render_custom_job(spec, options, uris, submission_id=SUB_ID, tf_version=(2, 15), version="0.1.0", bootstrap_uri=BOOT)
    path = GOLDEN / f"{case}.json"
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    assert text == golden_text(path, text), f"{case} changed; regenerate with `pytest --update-golden` and review the diff"


@pytest.mark.parametrize("case", sorted(CASES))
def test_strict_protobuf_contract(case: str) -> None:
    spec, options, uris = CASES[case]()
    body = render_custom_job(spec, options, uris, submission_id=SUB_ID)
    assert strict_roundtrip(body) == body


def test_golden_files_pass_the_contract_too() -> None:
    files = sorted(GOLDEN.glob("*.json"))
    assert len(files) == len(CASES)
    for path in files:
        body = json.loads(path.read_text())
        assert strict_roundtrip(body) == body, path.name


def test_pools_sit_at_their_positions() -> None:
    spec = build_spec(dict(name="gap", module="trainer.task", evaluators=2))
    pools = render_custom_job(spec, package_uris=[PKG])["jobSpec"]["workerPoolSpecs"]
    assert [p.get("replicaCount") for p in pools] == ["1", None, None, "2"]
    assert pools[1] == {} and pools[2] == {}


def test_ps_job_replicas_and_labels() -> None:
    spec = build_spec(dict(name="ps", module="trainer.task", workers=4, ps=2, labels={"team": "ml"}))
    body = render_custom_job(spec, package_uris=[PKG], submission_id=SUB_ID)
    assert [p["replicaCount"] for p in body["jobSpec"]["workerPoolSpecs"]] == ["1", "4", "2"]
    assert body["labels"] == {"team": "ml", "tfjob": "0-1-0", SUBMISSION_LABEL: SUB_ID}


def test_gpu_pools_get_the_gpu_image_and_cpu_pools_the_cpu_one() -> None:
    spec = build_spec(dict(name="g", module="trainer.task", workers=1, ps=1, accelerator="type=NVIDIA_TESLA_T4,count=1"))
    pools = render_custom_job(spec, package_uris=[PKG], tf_version=(2, 14))["jobSpec"]["workerPoolSpecs"]
    images = [p["pythonPackageSpec"]["executorImageUri"] for p in pools]
    assert images == [
        "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-14.py310:latest",
        "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-14.py310:latest",
        "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
    ]


@pytest.mark.parametrize(
    "version, expected",
    [((2, 15), (2, 15)), ((2, 21), (2, 17)), ((2, 9), (2, 11)), (None, (2, 17)), ((3, 0), (2, 17))],
)
def test_prebuilt_version_choice(version: tuple[int, int] | None, expected: tuple[int, int]) -> None:
    assert prebuilt_tf_version(version) == expected


@pytest.mark.parametrize(
    "region, prefix", [("us-central1", "us-"), ("europe-west4", "europe-"), ("asia-northeast1", "asia-"), (None, "us-")]
)
def test_image_registry_follows_region(region: str | None, prefix: str) -> None:
    assert prebuilt_image((2, 15), gpu=False, region=region).startswith(prefix + "docker.pkg.dev/vertex-ai/training/tf-cpu.2-15")


@pytest.mark.parametrize("seconds", [1, 90, 7200, 5400.5, 0.25, 1.000001, 3.123456789])
def test_duration_matches_protobuf(seconds: float) -> None:
    from google.protobuf import duration_pb2, json_format

    rendered = render_duration(seconds)
    parsed = json_format.Parse(json.dumps(rendered), duration_pb2.Duration())
    assert json_format.MessageToJson(parsed) == json.dumps(rendered)
    assert abs(parsed.ToTimedelta().total_seconds() - seconds) < 1e-6


@pytest.mark.parametrize(
    "settings, match",
    [
        ({"job_dir": "/tmp/out"}, r"--job-dir '/tmp/out': Vertex AI writes its output to Cloud Storage; give gs://BUCKET/PATH"),
        ({"tensorboard": "my-board"}, r"--tensorboard 'my-board' is not a TensorBoard resource name"),
        (
            {"tensorboard": "projects/p/locations/r/tensorboards/1"},
            r"--tensorboard needs --job-dir gs://… and --service-account",
        ),
    ],
)
def test_what_vertex_would_refuse(settings: dict[str, Any], match: str) -> None:
    mine = {k: settings.pop(k) for k in list(settings) if k in {f.name for f in dataclasses.fields(VertexOptions)}}
    spec = build_spec(dict(name="bad", module="trainer.task", **settings))
    with pytest.raises(SpecError, match=match), cli_words():
        render_custom_job(spec, VertexOptions(**mine), package_uris=[PKG])


def test_package_pool_without_package_uri() -> None:
    spec = build_spec(dict(name="nopkg", module="trainer.task"))
    with pytest.raises(SpecError, match=r"the chief pool runs the trainer package, but no package URI was given"):
        render_custom_job(spec)


def test_renderer_imports_no_google() -> None:
    import subprocess
    import sys

    # The namespace packages google / google.cloud are made at start-up by .pth files.
    code = (
        "import sys; before = set(sys.modules); import tfjob.backends.vertex.render; "
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('google')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
