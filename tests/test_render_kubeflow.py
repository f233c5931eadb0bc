"""The Kubeflow TFJob renderer: golden manifests, the CRD's schema, the operator's webhook rules.

Golden files live in tests/golden/kubeflow/; regenerate them with
``pytest --update-golden`` (and review the diff). Every rendered manifest is checked
against the TFJob CRD's openAPIV3Schema (training-operator 1.9, vendored in
tests/data/crds) made strict: a field the schema does not know would be pruned
silently by the API server, so here it is an error.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from helpers import CRDS, ROOT, cli_words, golden_text, need_module
from tfjob.backends import get_backend
from tfjob.backends.kubeflow.options import TFJobOptions
from tfjob.cli.main import app
from tfjob.errors import SpecError, UsageError
from tfjob.description.machines import MACHINES
from tfjob.backends.kubeflow.render import (
    find_tfjob_problems,
    render_tfjob,
    suggest_k8s_name,
    validate_tfjob,
)
from tfjob.description.request import build_spec

GOLDEN = ROOT / "tests" / "golden" / "kubeflow"
CRD = CRDS / "kubeflow.org_tfjobs.yaml"
IMAGE = "us-docker.pkg.dev/proj/trainers/census:1.0"


def _strict(schema: Any) -> Any:
    """The schema with unknown fields forbidden wherever the API server would prune them."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def crd_validator() -> Any:
    jsonschema = need_module("jsonschema", "pip install -e '.[test]'")
    crd = yaml.safe_load(CRD.read_text())
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1" and crd["spec"]["names"]["kind"] == "TFJob"
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"]))


def _schema_errors(validator: Any, manifest: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(manifest)]


# -- the jobs rendered to golden files ------------------------------------------------
CASES: dict[str, tuple[dict[str, Any], TFJobOptions]] = {
    "chief-only": (dict(name="census-single", module="trainer.task", image=IMAGE), TFJobOptions()),
    "parameter-server": (
        dict(
            name="census-ps",
            module="trainer.task",
            image=IMAGE,
            workers=2,
            ps=1,
            args=("--train-steps", "1000"),
            job_dir="gs://bucket/census/out",
        ),
        TFJobOptions(namespace="ml-team", restart_policy="OnFailure", strategy="parameter-server"),
    ),
    "gpu-evaluator": (
        dict(
            name="resnet-gpu",
            module="trainer.task",
            image=IMAGE,
            workers=3,
            evaluators=1,
            chief_machine_type="n1-standard-8",
            worker_machine_type="n1-standard-8",
            evaluator_machine_type="n1-highmem-4",
            accelerator="type=nvidia-tesla-t4,count=2",
            env={"TF_CPP_MIN_LOG_LEVEL": "1", "DATA": "gs://bucket/data"},
            labels={"team": "vision", "cost-center": "r-and-d"},
            timeout=7200.0,
            service_account="trainer",
        ),
        TFJobOptions(restart_policy="Never", strategy="multi-worker"),
    ),
    "standard-1": (dict(name="census-tier", module="trainer.task", image=IMAGE, scale_tier="STANDARD_1"), TFJobOptions()),
    # Issue 16.7/16.8: explicit resources per role, a pod template, a queue and a run policy.
    "pod-template-queue": (
        dict(
            name="census-kueue",
            module="trainer.task",
            image=IMAGE,
            workers=2,
            ps=1,
            worker_accelerator="type=NVIDIA_L4,count=1",
            worker_machine_type="g2-standard-8",
        ),
        TFJobOptions(
            cpu=["2", "worker=4"],
            memory=["4Gi"],
            restart_policy=["ExitCode", "ps=OnFailure"],
            pod_template=str(Path(__file__).parent / "data" / "k8s" / "pod_template.yaml"),
            clean_pod_policy="all",
            backoff_limit=5,
            ttl_seconds_after_finished=3600,
            suspend=True,
            queue="team-a",
            priority_class="high-priority",
            min_available=4,
        ),
    ),  # fmt: skip
    "custom-container": (
        dict(
            name="own-entrypoint",
            image=IMAGE,
            workers=2,
            worker_image="us-docker.pkg.dev/proj/trainers/worker:2",
            args=("--epochs", "3"),
        ),
        TFJobOptions(namespace="default"),
    ),
}


def _render_case(case: str) -> dict[str, Any]:
    values, options = CASES[case]
    return render_tfjob(build_spec(dict(**values)), options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_manifest_matches_its_golden_file(case: str) -> None:
    manifest = _render_case(case)
    path = GOLDEN / f"{case}.yaml"
    text = yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)
    assert yaml.safe_load(golden_text(path, text)) == manifest
    assert path.read_text() == text


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_manifest_passes_the_crd_schema_and_the_webhook_rules(case: str, crd_validator: Any) -> None:
    manifest = _render_case(case)
    assert _schema_errors(crd_validator, manifest) == []
    assert find_tfjob_problems(manifest) == []


def test_the_strict_schema_catches_wrong_types_and_unknown_fields(crd_validator: Any) -> None:
    manifest = _render_case("parameter-server")
    wrong = copy.deepcopy(manifest)
    wrong["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "2"
    assert any("replicas" in e for e in _schema_errors(crd_validator, wrong))
    typo = copy.deepcopy(manifest)
    typo["spec"]["runPolicy"]["cleanPodPolicyy"] = "All"
    assert any("cleanPodPolicyy" in e for e in _schema_errors(crd_validator, typo))
    bad_quantity = copy.deepcopy(manifest)
    bad_quantity["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "15 GB"
    assert _schema_errors(crd_validator, bad_quantity)


def test_a_parameter_server_job_has_each_replica_type_with_the_bootstrap_command() -> None:
    manifest = _render_case("parameter-server")
    assert manifest["apiVersion"] == "kubeflow.org/v1" and manifest["kind"] == "TFJob"
    assert manifest["metadata"]["namespace"] == "ml-team"
    specs = manifest["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 2, "PS": 1}
    for rspec in specs.values():
        assert rspec["restartPolicy"] == "OnFailure"
        (container,) = rspec["template"]["spec"]["containers"]
        assert container["name"] == "tensorflow" and container["image"] == IMAGE
        assert container["command"] == ["tfjob-bootstrap"]
        # The operator passes no --job-dir, so neither does tfjob (issue 15.8).
        assert container["args"] == ["--module", "trainer.task", "--strategy", "parameter-server", "--", "--train-steps", "1000"]
        assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert manifest["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert "activeDeadlineSeconds" not in manifest["spec"]["runPolicy"]


def test_resources_come_from_the_machine_table_and_gpus_are_limits() -> None:
    manifest = _render_case("gpu-evaluator")
    specs = manifest["spec"]["tfReplicaSpecs"]
    n1_8, highmem_4 = MACHINES["n1-standard-8"], MACHINES["n1-highmem-4"]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]["resources"]
    assert worker["requests"] == {"cpu": str(n1_8.vcpus), "memory": f"{round(n1_8.memory_gb * 1024)}Mi"}
    assert worker["limits"] == {**worker["requests"], "nvidia.com/gpu": 2}
    evaluator = specs["Evaluator"]["template"]["spec"]["containers"][0]["resources"]
    assert evaluator["limits"] == {"cpu": "4", "memory": f"{round(highmem_4.memory_gb * 1024)}Mi", "nvidia.com/gpu": 2}
    # Parameter servers get no accelerator unless asked: --accelerator covers chief, workers, evaluators.
    ps_job = render_tfjob(build_spec(dict(name="j", module="m", image=IMAGE, workers=1, ps=1, accelerator="NVIDIA_TESLA_T4")))
    assert "nvidia.com/gpu" not in ps_job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_timeout_env_labels_and_service_account_reach_the_manifest() -> None:
    manifest = _render_case("gpu-evaluator")
    assert manifest["spec"]["runPolicy"]["activeDeadlineSeconds"] == 7200
    assert manifest["metadata"]["labels"] == {
        "team": "vision",
        "cost-center": "r-and-d",
        "app.kubernetes.io/managed-by": "tfjob",
    }
    chief = manifest["spec"]["tfReplicaSpecs"]["Chief"]["template"]
    assert chief["metadata"]["labels"] == {"team": "vision", "cost-center": "r-and-d"}
    assert chief["spec"]["serviceAccountName"] == "trainer"
    assert chief["spec"]["containers"][0]["env"] == [
        {"name": "DATA", "value": "gs://bucket/data"},
        {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "1"},
    ]
    fractional = render_tfjob(build_spec(dict(name="j", module="m", image=IMAGE, timeout=90.2)))
    assert fractional["spec"]["runPolicy"]["activeDeadlineSeconds"] == 91


def test_a_custom_container_keeps_its_entrypoint_and_each_pool_its_image() -> None:
    manifest = _render_case("custom-container")
    chief = manifest["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert "command" not in chief and chief["args"] == ["--epochs", "3"]
    with_dir = render_tfjob(build_spec(dict(name="j", image=IMAGE, args=("--epochs", "3"), job_dir="gs://b/out")))
    container = with_dir["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--epochs", "3"]  # the operator passes no --job-dir
    assert chief["image"] == IMAGE and worker["image"] == "us-docker.pkg.dev/proj/trainers/worker:2"


def test_restart_policy_defaults_to_exit_code_and_accepts_any_case() -> None:
    spec = build_spec(dict(name="j", module="m", image=IMAGE, workers=1))
    default = render_tfjob(spec, TFJobOptions())
    assert {r["restartPolicy"] for r in default["spec"]["tfReplicaSpecs"].values()} == {"ExitCode"}
    always = render_tfjob(spec, TFJobOptions(restart_policy="always"))
    assert {r["restartPolicy"] for r in always["spec"]["tfReplicaSpecs"].values()} == {"Always"}
    with (
        pytest.raises(
            UsageError,
            match=r"--restart-policy 'Nevr' is not a restart policy \(did you mean 'Never'\?\); choose one of Never, OnFailure, ExitCode, Always",
        ),
        cli_words(),
    ):
        render_tfjob(spec, TFJobOptions(restart_policy="Nevr"))


# -- what cannot be a TFJob -----------------------------------------------------------
def test_without_an_image_the_error_says_to_pass_one() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", package="trainer/", workers=1))
    with (
        pytest.raises(SpecError, match=r"--backend kubeflow runs container images, and the chief and worker pools have none: pass --image"),
        cli_words(),
    ):
        render_tfjob(spec)


def test_the_manifest_alone_does_not_ship_a_package() -> None:
    # The backends ship it (a ConfigMap, tests/test_k8s_shipping.py); the bare renderer never drops it silently.
    spec = build_spec(dict(name="j", module="trainer.task", package="trainer/", image=IMAGE))
    with pytest.raises(SpecError, match=r"the manifest alone cannot ship PACKAGE_PATH: the Kubernetes backends do"):
        render_tfjob(spec)


def test_tpus_are_a_usage_error() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, scale_tier="BASIC_TPU"))
    with (
        pytest.raises(
            SpecError,
            match=r"the worker pool asks for TPU_V2 on cloud-tpu: Cloud TPUs cannot run in a Kubeflow TFJob; use --backend vertex",
        ),
        cli_words(),
    ):
        render_tfjob(spec)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("Census_Job.v2", "census-job-v2"),
        ("2024-run", "job-2024-run"),
        ("trailing-", "trailing"),
        # Room is left for the operator's service names: NAME-chief-0 must fit 63 characters.
        ("x" * 70, "x" * 55),
    ],
)
def test_a_name_kubernetes_refuses_gets_a_suggestion_that_works(name: str, suggestion: str) -> None:
    spec = build_spec(dict(name=name, module="m", image=IMAGE))
    with pytest.raises(SpecError, match=rf"--display-name '{name[:20]}.*use --display-name {suggestion}$"), cli_words():
        render_tfjob(spec)
    assert suggest_k8s_name(name, 55) == suggestion
    render_tfjob(build_spec(dict(name=suggestion, module="m", image=IMAGE)))


def test_a_name_too_long_for_the_task_services_is_refused() -> None:
    # The operator names a service per task, {job}-{type}-{index}: it must fit 63 characters too.
    name = "n" * 54
    render_tfjob(build_spec(dict(name=name, module="m", image=IMAGE, workers=2)))
    with (
        pytest.raises(SpecError, match=r"too long for its task services \(n{54}-evaluator-0 has 66 characters.*use --display-name n{51}$"),
        cli_words(),
    ):
        render_tfjob(build_spec(dict(name=name, module="m", image=IMAGE, evaluators=1)))


def test_a_google_service_account_is_refused_with_the_fix() -> None:
    spec = build_spec(dict(name="j", module="m", image=IMAGE, service_account="sa@proj.iam.gserviceaccount.com"))
    with (
        pytest.raises(SpecError, match=r"--service-account 'sa@proj.iam.gserviceaccount.com' is not a Kubernetes service account name"),
        cli_words(),
    ):
        render_tfjob(spec)


def test_labels_must_end_alphanumeric_on_kubernetes() -> None:
    spec = build_spec(dict(name="j", module="m", image=IMAGE, labels={"team": "ml-"}))
    with pytest.raises(SpecError, match=r"label team='ml-' is not valid on Kubernetes.*use team=ml$"):
        render_tfjob(spec)


def test_a_bad_namespace_or_strategy_is_a_usage_error() -> None:
    spec = build_spec(dict(name="j", module="m", image=IMAGE))
    with pytest.raises(SpecError, match=r"--namespace 'ML_Team' is not a DNS-1035 label.*; use --namespace ml-team$"), cli_words():
        render_tfjob(spec, TFJobOptions(namespace="ML_Team"))
    with (
        pytest.raises(
            UsageError, match=r"--strategy 'mirrored' is not known.*; choose one of module, parameter-server, auto, multi-worker$"
        ),
        cli_words(),
    ):
        render_tfjob(spec, TFJobOptions(strategy="mirrored"))


# -- the operator's webhook rules -----------------------------------------------------
def _valid() -> dict[str, Any]:
    return _render_case("parameter-server")


def test_two_chiefs_are_refused() -> None:
    manifest = _valid()
    manifest["spec"]["tfReplicaSpecs"]["Master"] = copy.deepcopy(manifest["spec"]["tfReplicaSpecs"]["Chief"])
    with pytest.raises(
        SpecError,
        match=r"TFJob 'census-ps' would be refused by the training operator: spec.tfReplicaSpecs has Chief and Master: at most one Chief or Master role",
    ):
        validate_tfjob(manifest)


def test_a_replica_without_a_tensorflow_container_is_refused() -> None:
    manifest = _valid()
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    with pytest.raises(SpecError, match=r"spec.tfReplicaSpecs.Worker.template.spec.containers must have a container named 'tensorflow'"):
        validate_tfjob(manifest)
    manifest["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"] = []
    problems = find_tfjob_problems(manifest)
    assert "spec.tfReplicaSpecs.PS.template.spec.containers must be specified" in problems
    assert len(problems) == 2


def test_a_bad_name_is_refused() -> None:
    manifest = _valid()
    manifest["metadata"]["name"] = "Census.PS"
    with pytest.raises(SpecError, match=r"metadata.name 'Census.PS' is not a DNS-1035 label of at most 63 characters \(try 'census-ps'\)"):
        validate_tfjob(manifest)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda m: m["spec"]["tfReplicaSpecs"].update(Wroker=m["spec"]["tfReplicaSpecs"].pop("Worker")),
         r"spec.tfReplicaSpecs.Wroker: 'Wroker' is not a replica type \(did you mean 'Worker'\?\)"),
        (lambda m: m["spec"]["tfReplicaSpecs"]["PS"].update(restartPolicy="Sometimes"),
         r"spec.tfReplicaSpecs.PS.restartPolicy 'Sometimes' is not one of Never, OnFailure, ExitCode, Always"),
        (lambda m: m["spec"]["tfReplicaSpecs"]["Chief"].update(replicas=2),
         r"spec.tfReplicaSpecs.Chief.replicas is 2: a Chief runs at most 1 replica"),
        (lambda m: m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].pop("image"),
         r"spec.tfReplicaSpecs.Worker.template.spec.containers\[0\].image is required"),
        (lambda m: m["spec"]["runPolicy"].update(cleanPodPolicy="Finished"),
         r"spec.runPolicy.cleanPodPolicy 'Finished' is not one of None, Running, All"),
        (lambda m: m["spec"]["runPolicy"].update(managedBy="me"),
         r"spec.runPolicy.managedBy 'me' is not one of kubeflow.org/training-operator"),
        (lambda m: m["spec"].update(tfReplicaSpecs={}), r"spec.tfReplicaSpecs is required"),
        (lambda m: m.update(kind="PyTorchJob"), r"apiVersion/kind is 'kubeflow.org/v1'/'PyTorchJob', not kubeflow.org/v1/TFJob"),
    ],
)  # fmt: skip
def test_each_webhook_rule_is_enforced(change: Any, problem: str) -> None:
    manifest = _valid()
    change(manifest)
    with pytest.raises(SpecError, match=problem):
        validate_tfjob(manifest)


# -- through the backend registry and the CLI -----------------------------------------
def test_the_backend_renders_the_same_manifest_without_loading_kubernetes() -> None:
    code = (
        "import sys; from tfjob.backends import get_backend; from tfjob.backends.kubeflow.options import TFJobOptions; from tfjob.description.request import build_spec;"
        f"m = get_backend('kubeflow').render(build_spec(dict(name='j', module='m', image={IMAGE!r})), TFJobOptions());"
        "assert m['kind'] == 'TFJob';"
        # ('google' and 'google.cloud' are namespace packages any Python with google-cloud-* preloads.)
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('kubernetes', 'tensorflow', 'urllib3')"
        " or k.startswith(('google.cloud.', 'google.auth', 'google.api'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert get_backend("kubeflow").render(build_spec(dict(name="j", module="m", image=IMAGE)), TFJobOptions()) == render_tfjob(
        build_spec(dict(name="j", module="m", image=IMAGE))
    )


_PS_ARGS = [
    "--backend", "kubeflow", "--image", IMAGE, "--module-name", "trainer.task",
    "--workers", "2", "--ps", "1", "--display-name", "census-ps", "--namespace", "ml-team",
    "--restart-policy", "OnFailure", "--strategy", "parameter-server", "--job-dir", "gs://bucket/census/out",
    "--", "--train-steps", "1000",
]  # fmt: skip


def test_cli_dry_run_prints_the_yaml_manifest() -> None:
    result = CliRunner().invoke(app, ["submit", *_PS_ARGS[:-3], "--dry-run", "--output", "yaml", *_PS_ARGS[-3:]])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == _render_case("parameter-server")


def test_cli_render_without_an_image_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(app, ["render", "--backend", "kubeflow", "--module-name", "trainer.task", "--display-name", "j"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: --backend kubeflow runs container images, and the chief pool has none: pass --image")


def test_cli_render_as_a_real_process(tfjob_exe: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [tfjob_exe, "render", *_PS_ARGS[:-3], "--output", "yaml", *_PS_ARGS[-3:]],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout) == _render_case("parameter-server")
    bad = subprocess.run(
        [tfjob_exe, "render", "--backend", "kubeflow", "--image", IMAGE, "-m", "m", "--display-name", "Bad_Name"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == (
        "error: --display-name 'Bad_Name' is not a DNS-1035 label (lower-case letters, digits and '-', starting with a "
        "letter, not ending with '-'), as Kubernetes requires for a TFJob; use --display-name bad-name"
    )
