"""``tfjob submit --dry-run`` / ``tfjob render`` with the legacy AI Platform backend: flags, aliases, --config, user args."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tfjob import __version__
from tfjob.cli.main import app
from tfjob.config.job import parse_job_config
from tfjob.description.request import build_spec

CONFIGS = Path(__file__).parent / "data" / "configs"
LEGACY = ["--backend", "ai-platform", "--name", "census", "--region", "us-central1", "--staging-bucket", "gs://census-bucket"]


def run(argv: list[str]) -> dict[str, Any]:
    """Run the CLI in-process; the rendered body on stdout."""
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def trainer_args(args: list[str]) -> list[str]:
    """The trainer's own arguments: what follows the bootstrap's ``--``."""
    return args[args.index("--") + 1 :]


def test_submit_dry_run_prints_the_legacy_job_body() -> None:
    body = run(["submit", "trainer/", "--module-name", "trainer.task", "--workers", "4", "--ps", "2", "--dry-run", *LEGACY])
    assert body == {
        "jobId": "census",
        "trainingInput": {
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-4",
            "workerType": "n1-standard-4",
            "workerCount": "4",
            "parameterServerType": "n1-standard-4",
            "parameterServerCount": "2",
            # Every replica starts through tfjob's bootstrap, staged beside the trainer as its own wheel.
            "packageUris": [
                "gs://census-bucket/census/packages/trainer.tar.gz",
                f"gs://census-bucket/census/packages/tfjob_bootstrap-{__version__}-py3-none-any.whl",
            ],
            "pythonModule": "tfjob.container.bootstrap",
            "args": ["--module", "trainer.task", "--"],
            "region": "us-central1",
        },
    }


def test_render_prints_the_same_body_as_a_dry_run_in_json_or_yaml() -> None:
    argv = ["trainer/", "-m", "trainer.task", "--workers", "4", "--ps", "2", *LEGACY]
    as_json = run(["render", *argv])
    assert as_json == run(["submit", *argv, "--dry-run"])
    result = CliRunner().invoke(app, ["render", *argv, "--output", "yaml"])
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load(result.stdout) == as_json


def test_standard_1_gives_1_4_3_with_the_tiers_machine_types() -> None:
    body = run(["render", "trainer/", "-m", "trainer.task", "--scale-tier", "STANDARD_1", *LEGACY])
    assert body["trainingInput"]["scaleTier"] == "STANDARD_1"
    # The tier is the whole cluster description: read back, it expands to the tier's pools.
    values = parse_job_config(body, "rendered").values
    values.pop("region")
    spec = build_spec(values)
    assert [(p.role, p.replicas, p.machine.type) for p in spec.pools] == [
        ("chief", 1, "n1-highcpu-8"),
        ("worker", 4, "n1-highcpu-8"),
        ("ps", 3, "n1-standard-4"),
    ]


def test_gcloud_spellings_are_aliases() -> None:
    gcloud = run(
        [
            "render",
            "--package-path",
            "trainer/",
            "--module-name",
            "trainer.task",
            "--scale-tier",
            "custom",
            "--master-machine-type",
            "complex_model_m",
            "--master-accelerator",
            "type=nvidia-tesla-t4,count=2",
            "--worker-count",
            "3",
            "--worker-machine-type",
            "n1-highcpu-16",
            "--parameter-server-count",
            "2",
            "--parameter-server-machine-type",
            "large_model",
            "--evaluator-count",
            "1",
            "--evaluator-machine-type",
            "n1-standard-4",
            "--use-chief-in-tf-config",
            *LEGACY,
        ]
    )
    tfjob = run(
        [
            "render",
            "trainer/",
            "-m",
            "trainer.task",
            "--scale-tier",
            "CUSTOM",
            "--chief-machine-type",
            "n1-highcpu-16",
            "--chief-accelerator",
            "type=NVIDIA_TESLA_T4,count=2",
            "--workers",
            "3",
            "--worker-machine-type",
            "n1-highcpu-16",
            "--ps",
            "2",
            "--ps-machine-type",
            "n1-highmem-8",
            "--evaluators",
            "1",
            "--evaluator-machine-type",
            "n1-standard-4",
            "--use-chief",
            *LEGACY,
        ]
    )
    assert gcloud == tfjob
    ti = gcloud["trainingInput"]
    assert (ti["masterType"], ti["masterConfig"], ti["parameterServerType"]) == (
        "n1-highcpu-16",
        {"acceleratorConfig": {"count": "2", "type": "NVIDIA_TESLA_T4"}},
        "n1-highmem-8",
    )
    assert (ti["workerCount"], ti["parameterServerCount"], ti["evaluatorCount"], ti["useChiefInTfConfig"]) == ("3", "2", "1", True)


def test_gcloud_image_spellings_are_aliases() -> None:
    gcloud = run(
        [
            "render",
            "--master-image-uri",
            "gcr.io/p/t:1",
            "--worker-count",
            "1",
            "--worker-image-uri",
            "gcr.io/p/w:1",
            "--worker-machine-type",
            "n1-standard-4",
            *LEGACY,
        ]
    )
    tfjob = run(["render", "--chief-image", "gcr.io/p/t:1", "--workers", "1", "--worker-image", "gcr.io/p/w:1", *LEGACY])
    assert gcloud == tfjob
    assert gcloud["trainingInput"]["masterConfig"] == {"imageUri": "gcr.io/p/t:1"}
    assert gcloud["trainingInput"]["workerConfig"] == {"imageUri": "gcr.io/p/w:1"}
    assert "pythonModule" not in gcloud["trainingInput"]


def test_the_config_file_alone() -> None:
    body = run(["render", "--config", str(CONFIGS / "legacy_full.json"), "--backend", "ai-platform"])
    ti = body["trainingInput"]
    assert body["jobId"] == "census_gpu_v2" and body["labels"] == {"team": "census"}
    assert (ti["masterType"], ti["workerCount"], ti["region"], ti["runtimeVersion"]) == ("n1-standard-16", "2", "europe-west1", "2.11")
    assert ti["packageUris"] == [
        "gs://census-bucket/staging/trainer-0.2.tar.gz",
        "gs://census-bucket/staging/utils-1.0.tar.gz",
        f"gs://census-bucket/output/census_gpu_v2/packages/tfjob_bootstrap-{__version__}-py3-none-any.whl",
    ]
    assert ti["pythonModule"] == "tfjob.container.bootstrap"
    assert trainer_args(ti["args"]) == ["--train-steps", "5000", "--verbosity", "DEBUG"]


def test_flags_override_config_values() -> None:
    body = run(
        [
            "render",
            "--config",
            str(CONFIGS / "legacy_full.json"),
            "--backend",
            "ai-platform",
            "--worker-count",
            "5",
            "--region",
            "us-east1",
            "--name",
            "override",
            "--labels",
            "team=infra",
            "--runtime-version",
            "2.15",
            "--timeout",
            "1h",
            "--no-use-chief-in-tf-config",
            "--",
            "--train-steps",
            "10",
        ]
    )
    ti = body["trainingInput"]
    assert (body["jobId"], body["labels"]) == ("override", {"team": "infra"})
    assert (ti["workerCount"], ti["region"], ti["runtimeVersion"]) == ("5", "us-east1", "2.15")
    assert ti["scheduling"] == {"maxRunningTime": "3600s"}
    assert ti["useChiefInTfConfig"] is False
    assert trainer_args(ti["args"]) == ["--train-steps", "10"]
    # What no flag touched stays as the file says.
    assert (ti["workerType"], ti["workerConfig"]["acceleratorConfig"]["type"], ti["jobDir"]) == (
        "n1-standard-8",
        "NVIDIA_TESLA_V100",
        "gs://census-bucket/output",
    )


def test_a_vertex_config_renders_as_the_legacy_body_of_the_same_cluster() -> None:
    legacy = run(
        [
            "render",
            "--config",
            str(CONFIGS / "legacy_custom.yaml"),
            "-m",
            "trainer.task",
            "--package-path",
            "gs://census-bucket/staging/trainer-0.1.tar.gz",
            *LEGACY,
        ]
    )
    # The legacy API has no restart-on-worker-restart: the flag turns the file's setting off.
    vertex = run(["render", "--config", str(CONFIGS / "vertex_custom.yaml"), "--no-restart-job-on-worker-restart", *LEGACY])
    pools = ("masterType", "workerType", "workerCount", "parameterServerType", "parameterServerCount", "evaluatorType", "evaluatorCount")
    assert {k: vertex["trainingInput"][k] for k in pools} == {k: legacy["trainingInput"][k] for k in pools}


def test_everything_after_the_double_dash_reaches_the_trainer() -> None:
    user_args = ["--train-steps", "1000", "--workers", "7", "-m", "not.this", "--", "--literal"]
    body = run(["submit", "trainer/", "-m", "trainer.task", "--dry-run", *LEGACY, "--", *user_args])
    assert body["trainingInput"]["args"] == ["--module", "trainer.task", "--", *user_args]
    assert body["trainingInput"]["pythonModule"] == "tfjob.container.bootstrap"
    assert "workerCount" not in body["trainingInput"]


def test_submitting_to_the_retired_service_fails_with_one_line_and_exit_1() -> None:
    result = CliRunner().invoke(app, ["submit", "gs://b/t.tar.gz", "-m", "trainer.task", *LEGACY])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: cannot submit job 'census': legacy AI Platform Training shut down on 2025-01-31; --backend ai-platform "
        "only renders the request (--dry-run, `tfjob render`). Use --backend vertex, its successor, to run the job"
    ]


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"tfjob {__version__}\n")


@pytest.mark.parametrize("command", ["submit", "render"])
def test_help_shows_the_gcloud_aliases(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0
    for flag in ("--master-machine-type", "--parameter-server-count", "--worker-count", "--scale-tier", "--config", "--dry-run"):
        assert flag in result.stdout


def test_render_in_a_real_process(tfjob_exe: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [tfjob_exe, "render", "trainer/", "-m", "trainer.task", "--scale-tier", "BASIC_GPU", *LEGACY, "--", "--epochs", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["trainingInput"]["scaleTier"] == "BASIC_GPU"
    assert trainer_args(body["trainingInput"]["args"]) == ["--epochs", "2"]
