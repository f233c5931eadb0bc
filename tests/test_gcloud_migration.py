"""gcloud commands carry over without edits (issue 16.5): the positional JOB name with
--package-path, --python-package-uris, --worker-pool-spec (one per pool, in order), and
--persistent-resource-id; each renders the same request as tfjob's own flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import write_trainer
from click.testing import CliRunner

from tfjob.cli.main import app

VERTEX = ["--backend", "vertex", "--project", "p", "--region", "us-central1", "--staging-bucket", "gs://b", "--dry-run"]


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "src", "print('x')\n").parent


def _body(*argv: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["submit", *argv, *VERTEX])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    body.pop("labels")  # the submission id differs per call
    return body


def test_worker_pool_specs_render_what_tfjobs_own_flags_render(trainer: Path) -> None:
    gcloud = _body(
        "--display-name", "j",
        "--worker-pool-spec", f"machine-type=n1-standard-8,python-module=trainer.task,local-package-path={trainer}",
        "--worker-pool-spec", "machine-type=a2-highgpu-1g,replica-count=2,accelerator-type=NVIDIA_TESLA_A100,accelerator-count=1,disk-type=pd-standard,disk-size=200",
        "--worker-pool-spec", "",
        "--worker-pool-spec", "machine-type=n1-standard-4",
    )  # fmt: skip
    own = _body(
        str(trainer), "-m", "trainer.task", "--display-name", "j", "--chief-machine-type", "n1-standard-8",
        "--workers", "2", "--worker-machine-type", "a2-highgpu-1g", "--worker-accelerator", "type=NVIDIA_TESLA_A100,count=1",
        "--evaluators", "1", "--evaluator-machine-type", "n1-standard-4",
    )  # fmt: skip
    pools = gcloud["jobSpec"]["workerPoolSpecs"]
    assert pools[1].pop("diskSpec") == {"bootDiskType": "pd-standard", "bootDiskSizeGb": 200}
    assert gcloud == own


def test_one_container_image_in_every_pool_is_the_jobs_image() -> None:
    body = _body(
        "--display-name", "c",
        "--worker-pool-spec", "machine-type=n1-standard-4,container-image-uri=gcr.io/p/t:1",
        "--worker-pool-spec", "machine-type=n1-standard-4,replica-count=3,container-image-uri=gcr.io/p/t:1",
    )  # fmt: skip
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert [p["containerSpec"]["imageUri"] for p in pools] == ["gcr.io/p/t:1"] * 2 and pools[1]["replicaCount"] == "3"


def test_the_positional_job_name_and_python_package_uris_as_gcloud_takes_them(trainer: Path) -> None:
    named = _body("my_job_7", "--package-path", str(trainer), "-m", "trainer.task", "--persistent-resource-id", "pool-a")
    assert named["displayName"] == "my_job_7" and named["jobSpec"]["persistentResourceId"] == "pool-a"
    staged = _body("-m", "trainer.task", "--python-package-uris", "gs://b/t-1.tar.gz,gs://b/extra-2.whl")
    spec = staged["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    # The user's packages in their order, then tfjob's bootstrap wheel (the pools' entry point).
    assert spec["packageUris"][:2] == ["gs://b/t-1.tar.gz", "gs://b/extra-2.whl"]
    assert spec["packageUris"][2].endswith("/tfjob_bootstrap-0.1.0-py3-none-any.whl") and len(spec["packageUris"]) == 3
    assert spec["pythonModule"] == "tfjob.container.bootstrap" and spec["args"][:2] == ["--module", "trainer.task"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--worker-pool-spec", "machine-type=n1-standard-4", "--workers", "2"],
            "--worker-pool-spec describes the cluster, and so does --workers; give one",
        ),
        (
            ["--worker-pool-spec", "machine-type=n1-standard-4,extra-packages=a.whl"],
            "extra-packages is not taken: give built packages with --packages",
        ),
        (["--worker-pool-spec", "machine-type=n1-standard-4,replica-count=2"], "pool 0 is the chief and runs exactly 1 replica"),
        (["--worker-pool-spec", "replica-count=1"], "#1 has no machine-type"),
        (["--worker-pool-spec", "machine-typ=n1-standard-4"], "'machine-typ' is not a pool key (did you mean 'machine-type'?)"),
        (["--worker-pool-spec", ""], "is the chief's pool (pool 0) and cannot be left empty"),
        (
            [
                "--worker-pool-spec",
                "machine-type=n1-standard-4,python-module=a.b",
                "--worker-pool-spec",
                "machine-type=n1-standard-4,python-module=c.d",
            ],
            "python-module 'c.d' differs from pool #1's 'a.b'",
        ),
        (["--worker-pool-spec", "machine-type=n1-standard-4,replica-count=x"], "replica-count 'x' must be a whole number"),
        (["--worker-pool-spec", "m"] * 5, "is given 5 times; Vertex AI has 4 pools"),
        (["--worker-pool-spec", "machine-type=" + "n" * 5000], "is longer than 4096 characters"),
        (["-m", "t.task", "--python-package-uris", "./t.tar.gz"], "is not a gs:// URI"),
        (
            ["-m", "t.task", "--python-package-uris", "gs://b/t.tar.gz", "--packages", "x.whl"],
            "leave out PACKAGE_PATH, --package-path and --packages",
        ),
    ],
)
def test_mistakes_in_gcloud_spellings_are_one_line(argv: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["submit", *argv, *VERTEX])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_a_positional_that_exists_is_still_a_trainer_directory(trainer: Path) -> None:
    result = CliRunner().invoke(app, ["submit", str(trainer), "--package-path", str(trainer / "trainer"), "-m", "trainer.task", *VERTEX])
    assert result.exit_code == 2 and "give the trainer directory once" in result.stderr
