"""Kubernetes pods as users need them (issue 16.7, 16.8): --cpu/--memory/--gpu per role,
--pod-template merged per role, prefixed labels through the template, Kueue's queue label,
run policy; every mistake one line, every result valid against the TFJob CRD."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import cli_words
from click.testing import CliRunner

from tfjob.backends.kubeflow.options import TFJobOptions
from tfjob.cli.main import app
from tfjob.errors import TfjobError
from tfjob.backends.kubeflow.render import render_tfjob
from tfjob.backends.kubeflow.pod import merge
from tfjob.description.request import build_spec

IMAGE = "gcr.io/p/t:1"


def _job(**options: Any) -> dict[str, Any]:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=2, ps=1))
    return render_tfjob(spec, TFJobOptions(**options))


def _container(manifest: dict[str, Any], rtype: str) -> dict[str, Any]:
    return manifest["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]["containers"][0]


def test_explicit_resources_replace_the_machine_types_amounts_by_role() -> None:
    manifest = _job(cpu=["500m", "worker=4"], memory="2Gi", gpu={"worker": "1"})
    assert _container(manifest, "Chief")["resources"]["limits"] == {"cpu": "500m", "memory": "2Gi"}
    assert _container(manifest, "Worker")["resources"] == {
        "requests": {"cpu": "4", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "2Gi", "nvidia.com/gpu": 1},
    }  # fmt: skip
    only_cpu = _job(cpu="1")
    assert _container(only_cpu, "PS")["resources"]["requests"] == {"cpu": "1", "memory": "15360Mi"}  # the machine's memory


def test_a_machine_type_without_known_amounts_runs_with_explicit_ones() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, chief_machine_type="c4-standard-6"))
    with pytest.raises(TfjobError, match="or give --cpu and --memory"), cli_words():
        render_tfjob(spec, TFJobOptions())
    manifest = render_tfjob(spec, TFJobOptions(cpu="8", memory="30Gi"))
    assert _container(manifest, "Chief")["resources"]["limits"] == {"cpu": "8", "memory": "30Gi"}


def test_the_gpu_type_picks_gke_nodes() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, worker_accelerator="type=NVIDIA_TESLA_T4,count=2"))
    pod = render_tfjob(spec, TFJobOptions())["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2


def test_merge_rules() -> None:
    ours = {"containers": [{"name": "tensorflow", "env": [{"name": "A", "value": "1"}]}], "volumes": [{"name": "v"}], "x": 1}
    theirs = {
        "containers": [{"name": "tensorflow", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}, {"name": "side", "image": "s"}],
        "volumes": [{"name": "w"}], "tolerations": [{"key": "k"}], "x": 2,
    }  # fmt: skip
    assert merge(ours, theirs) == {
        "containers": [{"name": "tensorflow", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}, {"name": "side", "image": "s"}],
        "volumes": [{"name": "v"}, {"name": "w"}], "tolerations": [{"key": "k"}], "x": 2,
    }  # fmt: skip
    assert ours["x"] == 1 and len(ours["containers"][0]["env"]) == 1  # nothing of ours changed


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("spec:\n  containers: [{name: tensorflow, command: [sh]}]\n", r"containers\[tensorflow\].command is tfjob's"),
        ("spec:\n  containers: [{name: tensorflow, image: x}]\n", r"containers\[tensorflow\].image is tfjob's"),
        ("spec:\n  containers: [{name: side}]\n", "a sidecar in spec.containers needs a name and an image"),
        ("metadata:\n  labels: {training.kubeflow.org/job-name: x}\n", "is the operator's; leave it out"),
        ("metadata:\n  labels: {'bad key!': x}\n", "is not a Kubernetes key"),
        ("metadata:\n  labels: {a: 'not valid!'}\n", "is not a Kubernetes label value"),
        ("workers:\n  spec: {}\n", "'workers' is neither a pod template key"),
        ("evaluator:\n  spec: {}\n", "names evaluator, but the job has no evaluator pool"),
        ("[1, 2]\n", "must be a pod template"),
        ("spec: 3\n", "spec must be a mapping"),
    ],
)
def test_a_bad_pod_template_is_one_error_naming_the_key(tmp_path: Path, template: str, message: str) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(template)
    with pytest.raises(TfjobError, match=message):
        _job(pod_template=str(path))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(cpu="two"), "--cpu 'two' is not a Kubernetes quantity"),
        (dict(memory=["4Gi", "4Gi"]), "--memory is given twice for every role"),
        (dict(cpu="chef=2"), "'chef' is not a role"),
        (dict(gpu="worker=-1"), "--gpu '-1' must be a whole number of GPUs"),
        (dict(restart_policy=["ps=Sometimes"]), "--restart-policy 'Sometimes' is not a restart policy"),
        (dict(clean_pod_policy="some"), "--clean-pod-policy 'some' is not one of None, Running, All"),
        (dict(backoff_limit=-1), "--backoff-limit -1 must be a whole number"),
        (dict(min_available=9), "--min-available 9 must be from 1 to the job's 4 tasks"),
        (dict(queue="Team A"), "--queue 'Team A' is not a queue name"),
        (dict(priority_class="High_Priority"), "--priority-class 'High_Priority' is not a PriorityClass name"),
    ],
)
def test_bad_kubernetes_options_are_one_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(TfjobError, match=message), cli_words():
        _job(**options)


def test_from_the_cli_with_a_queue_and_a_template(tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text("metadata:\n  labels: {app.kubernetes.io/part-of: census}\n")
    result = CliRunner().invoke(
        app,
        ["render", "--backend", "kubeflow", "--image", IMAGE, "-m", "trainer.task", "--workers", "2", "--cpu", "2", "--memory", "4Gi",
         "--pod-template", str(template), "--queue", "team-a", "--suspend", "--ttl", "600", "-o", "yaml"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "kueue.x-k8s.io/queue-name: team-a" in result.stdout and "app.kubernetes.io/part-of: census" in result.stdout
    assert "suspend: true" in result.stdout and "ttlSecondsAfterFinished: 600" in result.stdout
    other = CliRunner().invoke(
        app, ["render", "--backend", "vertex", "--image", IMAGE, "-m", "t.m", "--queue", "q", "--project", "p", "--region", "us-central1"]
    )
    assert other.exit_code == 2 and "kubeflow" in other.stderr


def test_prefixed_kubernetes_labels_go_to_kubernetes_and_are_refused_by_google_cloud() -> None:
    labels = {"app.kubernetes.io/part-of": "census", "kueue.x-k8s.io/queue-name": "team-a", "team": "ml"}
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, labels=labels))
    manifest = render_tfjob(spec, TFJobOptions())
    assert {k: manifest["metadata"]["labels"][k] for k in labels} == labels
    from tfjob.errors import SpecError
    from tfjob.backends.vertex.options import VertexOptions
    from tfjob.backends.vertex.render import render_custom_job

    with pytest.raises(SpecError, match=r"label key 'app.kubernetes.io/part-of' is a Kubernetes label: Vertex AI label keys"):
        render_custom_job(spec, VertexOptions(region="us-central1"))
    with pytest.raises(SpecError, match=r"label 'app.kubernetes.io/managed-by' is set by tfjob"):
        build_spec(dict(name="j", module="trainer.task", image=IMAGE, labels={"app.kubernetes.io/managed-by": "me"}))
    with pytest.raises(SpecError, match=r"a Kubernetes label value is up to 63"):
        build_spec(dict(name="j", module="trainer.task", image=IMAGE, labels={"app.kubernetes.io/part-of": "not ok"}))
