"""The migration guides in docs/migrate/ run as written: their blocks in order, in one
directory, with the project's stand-ins (the Kubernetes API with the TFJob, JobSet and
Trainer v2 CRDs; the Vertex AI REST stand-in and the Cloud Storage emulator). A block after
``<!-- file: NAME -->`` is written to NAME; one after ``<!-- not run: … -->`` is skipped; a
``text`` block after ``prints`` is what the block before it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
from helpers import BIN, ROOT, requires_tf
from fakes.kube_api import FakeKube, kube_fixture
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test

from tfjob.errors import SpecError
from tfjob.config.migrate import import_tfjob

GUIDES = ROOT / "docs" / "migrate"
CRDS = ROOT / "tests" / "data" / "crds"
_FENCE = re.compile(r"(?:<!-- (?P<marker>file|not run): ?(?P<arg>[^>]*?) ?-->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.S)


@dataclass
class Step:
    lang: str
    code: str
    marker: str | None
    arg: str


def steps(guide: str) -> list[Step]:
    text = (GUIDES / guide).read_text()
    return [Step(m["lang"], m["code"], m["marker"], m["arg"] or "") for m in _FENCE.finditer(text)]


def run_guide(guide: str, work: Path, env: dict[str, str]) -> list[tuple[Step, subprocess.CompletedProcess[str] | None]]:
    """Every block of ``guide`` in order; a ``text`` block is paired with the run before it."""
    done: list[tuple[Step, subprocess.CompletedProcess[str] | None]] = []
    for number, step in enumerate(steps(guide)):
        if step.marker == "file":
            (work / step.arg).parent.mkdir(parents=True, exist_ok=True)
            (work / step.arg).write_text(step.code)
            continue
        if step.marker == "not run" or step.lang not in ("sh", "python"):
            done.append((step, None))
            continue
        if step.lang == "python":
            script = work.parent / f"{guide.replace('.', '_')}_{number}.py"
            script.write_text(step.code)
            argv = [str(BIN / "python"), str(script)]
        else:
            argv = ["bash", "-euo", "pipefail", "-c", step.code]
        result = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (
            f"{guide} block failed:\n{step.code}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr[-3000:]}"
        )
        done.append((step, result))
    return done


def printed_as_documented(done: list[tuple[Step, subprocess.CompletedProcess[str] | None]]) -> int:
    """Every ``text`` block equals what the run before it printed (stderr, then stdout)."""
    checked = 0
    for (_, before), (step, _) in zip(done, done[1:]):
        if step.lang == "text" and before is not None:
            assert (before.stderr + before.stdout).strip() == step.code.strip()
            checked += 1
    return checked


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", TFJOB_POLL_INTERVAL="0.02", **extra)
    return env


# --- Kubeflow TFJob v1 → tfjob import → Trainer v2 / JobSet / TFJob --------------------------


def test_the_kubeflow_tfjob_guide_runs_as_written(kube: FakeKube, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace="default")
    done = run_guide("kubeflow-tfjob.md", work, environment(KUBECONFIG=str(kubeconfig)))
    assert printed_as_documented(done) == 1
    # What reached the cluster: the TrainJob with its TensorFlow runtime, the JobSet, the TFJob.
    assert list(kube.trainjobs) == [("default", "mnist")] and len(kube.runtimes) == 1
    assert ("default", "mnist") in kube.jobsets
    tfjobs = list(kube.tfjobs.values())
    assert len(tfjobs) == 1
    jobsets = [kube.jobsets[("default", "mnist")]]
    replicas = tfjobs[0]["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in replicas.items()} == {"Chief": 1, "Worker": 2, "PS": 1}
    assert replicas["Worker"]["restartPolicy"] == "OnFailure" and tfjobs[0]["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    worker = replicas["Worker"]["template"]["spec"]["containers"][0]
    assert worker["image"] == "registry.example/mnist:1" and worker["resources"]["limits"]["memory"] == "8Gi"
    assert worker["args"][-3:] == ["--", "--epochs", "5"] and "/opt/model.py" in worker["args"]
    assert {"name": "LOG_LEVEL", "value": "info"} in worker["env"]
    assert {j["name"] for j in jobsets[0]["spec"]["replicatedJobs"]} == {"chief", "worker", "ps"}


_CHIEF = {
    "replicas": 1,
    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i:1", "command": ["python", "-m", "trainer.task"]}]}},
}


def _tfjob(**replicas: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"}, "spec": {"tfReplicaSpecs": replicas}}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"apiVersion": "batch/v1", "kind": "Job"}, r"is a batch/v1/Job, not a Kubeflow TFJob"),
        (["a"], r"must be a TFJob manifest \(a mapping\), not list"),
        (_tfjob(Gpu=_CHIEF), r"'Gpu' is not a TFJob replica type"),
        (_tfjob(Chief={**_CHIEF, "replicas": 2}), r"Chief.replicas is 2: a job has exactly one chief"),
        (
            _tfjob(
                Chief={
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i", "command": ["/bin/train"]}]}},
                }
            ),
            r"'/bin/train' is not Python",
        ),
        (
            _tfjob(
                Chief=_CHIEF,
                Worker={
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i:1", "command": ["python", "w.py"]}]}},
                },
            ),
            r"the replicas run different programs",
        ),
        (
            _tfjob(Chief={"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}),
            r"has no command or args",
        ),
    ],
)
def test_a_manifest_tfjob_cannot_run_is_one_line(document: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        import_tfjob(document)


def test_the_import_command_is_one_line_on_mistakes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfjob.cli.main import app

    (tmp_path / "big.yaml").write_text("a: " + "x" * (2 * 1024 * 1024))
    (tmp_path / "job.yaml").write_text("apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {}\n")
    for argv, message in (
        (["import", str(tmp_path / "none.yaml")], "no such file"),
        (["import", str(tmp_path / "big.yaml")], "larger than"),
        (["import", str(tmp_path / "job.yaml")], "spec.tfReplicaSpecs must be a mapping of replica types"),
    ):
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.output
    no_chief = import_tfjob(_tfjob(Worker={**_CHIEF, "replicas": 3}), backend="jobset")
    assert no_chief.argv[:2] == ["--module-name", "trainer.task"] and "--no-chief" in no_chief.argv


# --- gcloud ai-platform jobs submit training + config.yaml → Vertex AI --------------------------


def test_the_ai_platform_guide_runs_as_written_against_the_vertex_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.gcs import storage_emulator
    from fakes.vertex_api import FakeVertex, write_service_account
    from test_render_vertex import strict_roundtrip

    work = tmp_path / "work"
    work.mkdir()
    with storage_emulator(monkeypatch, "my-project", "my-bucket") as client:
        with FakeVertex(projects=("my-project",)) as vertex:
            env = environment(
                TFJOB_API_ENDPOINT=vertex.endpoint,
                GOOGLE_APPLICATION_CREDENTIALS=str(write_service_account(tmp_path / "adc.json", f"{vertex.endpoint}/token", "my-project")),
            )
            done = run_guide("ai-platform.md", work, env)
            bodies = vertex.created_bodies()
        staged = sorted(blob.name.rsplit("/", 1)[1] for blob in client.list_blobs("my-bucket"))
    submitted = [run for step, run in done if run is not None and "tfjob submit" in step.code][0]
    states = [line.rsplit(" ", 1)[1] for line in submitted.stderr.splitlines() if line.startswith("tfjob: job ")]
    assert states[-1] == "SUCCEEDED", submitted.stderr
    assert staged == ["tfjob_bootstrap-0.1.0-py3-none-any.whl", "trainer-0.0.0.tar.gz"]
    assert len(bodies) == 1
    body = bodies[0]
    assert strict_roundtrip(body) == body  # a valid aiplatform_v1 CustomJob
    assert body["displayName"] == "census_20240101"
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["machineType"] for p in pools] == ["n1-highcpu-16", "n1-highcpu-8", "n1-highmem-8"]
    assert [p["replicaCount"] for p in pools] == ["1", "4", "2"]
    assert body["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"] == "gs://my-bucket/census"
    assert body["jobSpec"]["scheduling"]["timeout"] == "7200s"
    for pool in pools:
        package = pool["pythonPackageSpec"]
        assert package["pythonModule"] == "tfjob.container.bootstrap"
        # The arguments after -- replace the file's args, as gcloud's flags replaced the file's values.
        assert package["args"][-3:] == ["--", "--train-steps", "1000"] and "--eval-steps" not in package["args"]
        assert package["executorImageUri"].endswith("/tf-cpu.2-15.py310:latest")  # --runtime-version 2.15


# --- tensorflow_cloud.run(...) → Job(...) and tfjob submit --------------------------------------


@requires_tf
@pytest.mark.tf
@pytest.mark.slow
def test_the_tensorflow_cloud_guide_runs_as_written(tmp_path: Path) -> None:
    from test_render_vertex import strict_roundtrip

    work = tmp_path / "work"
    work.mkdir()
    done = run_guide("tensorflow-cloud.md", work, environment())
    python = [run for step, run in done if run is not None and step.lang == "python"][0]
    # The local run trained for real: one model over the chief and the worker.
    assert "[chief-0] trained on 2 replicas" in python.stdout + python.stderr, python.stderr[-3000:]
    job_id, state = python.stdout.strip().splitlines()[-2].split()
    assert state == "SUCCEEDED"
    from_python = json.loads(python.stdout.strip().splitlines()[-1])
    from_cli = json.loads((work / "vertex-request.json").read_text())
    for body in (from_python, from_cli):
        assert strict_roundtrip(body) == body
        assert body["labels"]["team"] == "census"
        body["labels"].pop("tfjob-submission-id")
        body.pop("displayName")  # a default name, by the second
        pools = body["jobSpec"]["workerPoolSpecs"]
        assert [p["replicaCount"] for p in pools] == ["1", "2"]
        for pool in pools:
            assert pool["machineSpec"] == {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1}
            assert pool["pythonPackageSpec"]["pythonModule"] == "tfjob.container.bootstrap"
            assert pool["pythonPackageSpec"]["args"][-3:] == ["--", "--epochs", "2"]
    assert from_python == from_cli  # the Python API and the command line render one request
