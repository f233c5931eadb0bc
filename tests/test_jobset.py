"""JobSet (issue 16.10): the manifest is valid against the JobSet v0.12 CRD, and every pod's
bootstrap derives from the JobSet's variables the TF_CONFIG the TFJob operator would have
set for the same job (a table over roles and indices, the real bootstrap, TF's resolver)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import CRDS, cli_words, golden_text, need_module
from tfjob.backends.kubeflow.options import TFJobOptions
from tfjob.cluster import render_kubeflow_cluster, render_task_env
from tfjob.cluster.jobset import jobset_task_env
from tfjob.errors import ClusterConfigError, SpecError
from tfjob.backends.kubeflow.render_jobset import render_jobset
from tfjob.description.request import build_spec
from test_render_kubeflow import _strict

CRD = CRDS / "jobset.x-k8s.io_jobsets.yaml"
IMAGE = "us-docker.pkg.dev/proj/trainers/census:1.0"
SHAPES = {
    "chief-only": dict(),
    "ps": dict(workers=2, ps=1),
    "ps-evaluator": dict(workers=3, ps=2, evaluators=1),
    "multi-worker": dict(workers=4),
    "no-chief": dict(workers=3, chief=False),
}


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema = need_module("jsonschema", "pip install -e '.[test]'")
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"]))


def _pod_env(manifest: dict[str, Any], role: str, index: int) -> dict[str, str]:
    """What Kubernetes gives the container of pod ``role-index``: its static values, the
    downward API's labels, and the Indexed Job's JOB_COMPLETION_INDEX."""
    name = manifest["metadata"]["name"]
    (job,) = [j for j in manifest["spec"]["replicatedJobs"] if j["name"] == role]
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    labels = {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/replicatedjob-name": role, "jobset.sigs.k8s.io/job-index": "0"}
    env = {"JOB_COMPLETION_INDEX": str(index)}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            path = item["valueFrom"]["fieldRef"]["fieldPath"]
            env[item["name"]] = labels[path[len("metadata.labels['") : -2]]
    return env


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_manifest_is_valid_against_the_jobset_crd(shape: str, validator: Any) -> None:
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, **SHAPES[shape]))
    manifest = render_jobset(spec, TFJobOptions(namespace="ml", strategy="parameter-server" if "ps" in SHAPES[shape] else None))
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(manifest)]
    assert errors == []
    jobs = manifest["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == [p.role for p in spec.pools]
    assert all(j["template"]["spec"]["completionMode"] == "Indexed" for j in jobs)
    assert manifest["spec"]["successPolicy"]["targetReplicatedJobs"] == ["chief" if spec.has_chief else "worker"]


def test_restart_policies_per_replicated_job_pass_the_crd(validator: Any) -> None:
    # Issue 29: the same policy as a TFJob's, said with what a Job has.
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, workers=2, ps=1))
    options = TFJobOptions(restart_policy=["ExitCode", "worker=OnFailure", "ps=Never"], backoff_limit=4, max_restarts=1)
    manifest = render_jobset(spec, options)
    assert [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(manifest)] == []
    jobs = {j["name"]: j["template"]["spec"] for j in manifest["spec"]["replicatedJobs"]}
    assert {r: (j["backoffLimit"], j["template"]["spec"]["restartPolicy"]) for r, j in jobs.items()} == {
        "chief": (4, "Never"),
        "worker": (4, "OnFailure"),
        "ps": (0, "Never"),
    }
    (rule,) = jobs["chief"]["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == list(range(1, 128))
    assert "podFailurePolicy" not in jobs["worker"] and manifest["spec"]["failurePolicy"] == {"maxRestarts": 1}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_pod_gets_the_tf_config_the_tfjob_operator_would_set(shape: str) -> None:
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, **SHAPES[shape]))
    manifest = render_jobset(spec, TFJobOptions(namespace="ml"))
    counts = {p.role: p.replicas for p in spec.pools}
    tfjob_cluster = render_kubeflow_cluster("census", "ml", counts)
    for role, index in spec.tasks():
        derived = jobset_task_env(_pod_env(manifest, role, index))
        operator = render_task_env(tfjob_cluster, role, index, "kubeflow")
        assert set(derived) == set(operator), (role, index)  # a one-replica job: no TF_CONFIG in both
        if not operator:
            continue
        ours, theirs = json.loads(derived["TF_CONFIG"]), json.loads(operator["TF_CONFIG"])
        # The same job, roles, order and task; only the hosts are the JobSet's pod hostnames.
        hosts = {r: [f"census-{r}-0-{i}.census:2222" for i in range(n)] for r, n in counts.items()}
        theirs["cluster"] = {r: hosts[r] for r in theirs["cluster"]}
        assert ours == theirs, (role, index)


def test_tensorflows_resolver_reads_the_derived_tf_config() -> None:
    tf = need_module("tensorflow", "pip install -e '.[tf]'")
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, workers=2, ps=1))
    env = jobset_task_env(_pod_env(render_jobset(spec, TFJobOptions()), "worker", 1))
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver
    import unittest.mock

    with unittest.mock.patch.dict(os.environ, {"TF_CONFIG": env["TF_CONFIG"]}):
        r = resolver()
        assert (r.task_type, r.task_id) == ("worker", 1)
        assert r.cluster_spec().as_dict() == {
            "chief": ["census-chief-0-0.census:2222"],
            "worker": ["census-worker-0-0.census:2222", "census-worker-0-1.census:2222"],
            "ps": ["census-ps-0-0.census:2222"],
        }


def test_the_real_bootstrap_exports_it_to_the_trainer(tmp_path: Path) -> None:
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("")
    (tmp_path / "probe" / "task.py").write_text("import os\nprint(os.environ['TF_CONFIG'])\n")
    spec = build_spec(dict(name="census", module="probe.task", image=IMAGE, workers=2, ps=1))
    env = _pod_env(render_jobset(spec, TFJobOptions()), "ps", 0)
    done = subprocess.run(
        [sys.executable, "-m", "tfjob.container.bootstrap", "--module", "probe.task", "--"],
        cwd=tmp_path, env={**os.environ, **env, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tf_config = json.loads(done.stdout)
    assert tf_config["task"] == {"type": "ps", "index": 0} and tf_config["cluster"]["ps"] == ["census-ps-0-0.census:2222"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"JOB_COMPLETION_INDEX": "2"}, "is not an index of the 2 worker tasks"),
        ({"REPLICATED_JOB_NAME": "launcher"}, "is not one of this job's roles"),
        ({"TFJOB_JOBSET_ROLES": "chief=1,worker=x"}, "is not role=count pairs"),
        ({"TFJOB_JOBSET_ROLES": "w" * 500}, "is longer than 200 characters"),
        ({"JOB_INDEX": "1"}, "tfjob runs one Job per role"),
        ({"JOBSET_NAME": "Bad_Name"}, "is not a JobSet name"),
        ({"TFJOB_JOBSET_PORT": "99999"}, "is not a port"),
    ],
)
def test_a_pod_environment_tfjob_did_not_render_is_refused(change: dict[str, str], message: str) -> None:
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, workers=2))
    env = {**_pod_env(render_jobset(spec, TFJobOptions()), "worker", 0), **change}
    with pytest.raises(ClusterConfigError, match=message):
        jobset_task_env(env)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(clean_pod_policy="All"), "--clean-pod-policy is a TFJob run policy"),
        (
            dict(restart_policy=["worker=Always"]),
            "--restart-policy Always: the pods of a JobSet's Jobs may only restart Never or OnFailure",
        ),
    ],
)
def test_tfjob_only_run_policies_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message), cli_words():
        render_jobset(build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1)), TFJobOptions(**options))


def test_a_name_too_long_for_the_pod_hostnames_is_refused_with_a_fix() -> None:
    spec = build_spec(dict(name="a" * 52, module="trainer.task", image=IMAGE, workers=12))
    with pytest.raises(SpecError, match=r"too long for its pods' hostnames .* use --display-name a{51}$"), cli_words():
        render_jobset(spec, TFJobOptions())


# -- the jobset backend through the Kubernetes stand-in -----------------------------------------
from click.testing import CliRunner  # noqa: E402

from fakes.kube_api import FakeKube, kube_fixture  # noqa: E402
from tfjob.cli.main import app  # noqa: E402

TFJOB_CRD = CRDS / "kubeflow.org_tfjobs.yaml"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from kube_fixture(TFJOB_CRD, tmp_path, monkeypatch)


def _argv(kubeconfig: str, name: str, *more: str) -> list[str]:
    return ["submit", "--backend", "jobset", "--kubeconfig", kubeconfig, "--image", IMAGE, "-m", "trainer.task",
            "--workers", "2", "--ps", "1", "--display-name", name, *more]  # fmt: skip


def test_submit_status_logs_cancel_list_through_the_stand_in(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    runner = CliRunner()
    result = runner.invoke(app, [*_argv(kubeconfig, "census"), "--async", "--", "--train-steps", "10"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "default/census\n"
    (stored,) = fake.jobsets.values()
    assert stored["kind"] == "JobSet" and [j["name"] for j in stored["spec"]["replicatedJobs"]] == ["chief", "worker", "ps"]

    fake.advance_jobset("default", "census", "Created")
    pending = json.loads(runner.invoke(app, ["status", "default/census", "--json"]).stdout)
    assert pending["state"] == "PENDING" and pending["backend"] == "jobset"
    assert [t["name"] for t in pending["tasks"]] == ["chief-0", "worker-0", "worker-1", "ps-0"]

    fake.advance_jobset("default", "census", "Running")
    fake.write_log("default", fake.jobset_pod_name("census", "worker-1"), "worker one at step 5\n")
    running = json.loads(runner.invoke(app, ["status", "default/census", "--json"]).stdout)
    assert running["state"] == "RUNNING"
    logs = runner.invoke(app, ["logs", "default/census", "--task", "worker-1"])
    assert logs.exit_code == 0, logs.stderr
    assert logs.stdout == "[worker-1] worker one at step 5\n"
    listed = json.loads(runner.invoke(app, ["list", "--backend", "jobset", "--json"]).stdout)
    assert [(j["id"], j["backend"]) for j in listed] == [("default/census", "jobset")]

    assert runner.invoke(app, ["cancel", "default/census"]).exit_code == 0
    assert fake.jobsets == {} and not fake.pods
    assert json.loads(runner.invoke(app, ["status", "default/census", "--json"]).stdout)["state"] == "CANCELLED"


def test_a_blocking_submit_ends_as_the_jobset_ends(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    fake.script("default", "ok", lambda: [fake.advance_jobset("default", "ok", c) for c in ("Created", "Running", "Completed")])
    done = CliRunner().invoke(app, _argv(kubeconfig, "ok"))
    assert done.exit_code == 0, done.stderr
    assert "tfjob: job default/ok SUCCEEDED" in done.stderr

    def fail() -> None:
        for condition in ("Created", "Running"):
            fake.advance_jobset("default", "bad", condition)
        fake.write_log("default", fake.jobset_pod_name("bad", "worker-1"), "Traceback …\nValueError: bad shard\n")
        fake.advance_jobset("default", "bad", "Failed", failed_task="worker-1", exit_code=3)

    fake.script("default", "bad", fail)
    failed = CliRunner().invoke(app, [*_argv(kubeconfig, "bad"), "--quiet"])
    assert failed.exit_code == 1
    assert failed.stderr.count("\n") == 1 and failed.stderr.startswith("error: job default/bad FAILED") and "worker-1" in failed.stderr
    shown = CliRunner().invoke(app, ["status", "default/bad"])
    assert "failed    worker-1" in shown.stdout and "ValueError: bad shard" in shown.stdout  # its last lines


def test_a_cluster_without_jobset_is_one_line_with_the_install_command(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    fake.crd_installed = False
    result = CliRunner().invoke(app, _argv(kubeconfig, "x"))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "the JobSet resource (jobsets.jobset.x-k8s.io/v1alpha2) is not installed" in result.stderr


# -- Kubeflow Trainer v2: the TensorFlow runtime and the TrainJob --------------------------------
from tfjob.backends.kubeflow.render_trainjob import render_trainjob_list  # noqa: E402

TRAINER_CRDS = {
    "TrainJob": CRDS / "trainer.kubeflow.org_trainjobs.yaml",
    "ClusterTrainingRuntime": CRDS / "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_runtime_and_the_trainjob_are_valid_against_trainer_v2_crds(shape: str) -> None:
    jsonschema = need_module("jsonschema", "pip install -e '.[test]'")
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, **SHAPES[shape]))
    runtime, trainjob = render_trainjob_list(spec, TFJobOptions(namespace="ml"))["items"]
    for obj in (runtime, trainjob):
        crd = yaml.safe_load(TRAINER_CRDS[obj["kind"]].read_text())
        schema = _strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
        assert errors == [], obj["kind"]
    role = "worker" if spec.count("worker") else "chief"
    assert trainjob["spec"]["trainer"]["numNodes"] == runtime["spec"]["mlPolicy"]["numNodes"] == spec.count(role)
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = [j for j in jobs if j["name"] == "node"]
    assert node["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert node["template"]["spec"]["template"]["spec"]["containers"][0]["name"] == "node"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_trainer_v2_pods_get_the_same_tf_config_as_jobset_pods(shape: str) -> None:
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, **SHAPES[shape]))
    runtime = render_trainjob_list(spec, TFJobOptions())["items"][0]
    jobset = {"metadata": {"name": "census"}, "spec": runtime["spec"]["template"]["spec"]}
    plain = render_jobset(spec, TFJobOptions())
    renamed = {"worker" if spec.count("worker") else "chief": "node"}
    for role, index in spec.tasks():
        env = _pod_env_named(jobset, renamed.get(role, role), index)
        ours = jobset_task_env(env)
        theirs = jobset_task_env(_pod_env(plain, role, index))
        if theirs:
            a, b = json.loads(ours["TF_CONFIG"]), json.loads(theirs["TF_CONFIG"])
            assert a["task"] == b["task"] and list(a["cluster"]) == list(b["cluster"])
            assert all(len(a["cluster"][r]) == len(b["cluster"][r]) for r in a["cluster"])
        else:
            assert ours == {}


def _pod_env_named(manifest: dict[str, Any], job_name: str, index: int) -> dict[str, str]:
    (job,) = [j for j in manifest["spec"]["replicatedJobs"] if j["name"] == job_name]
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    labels = {
        "jobset.sigs.k8s.io/jobset-name": "census",
        "jobset.sigs.k8s.io/replicatedjob-name": job_name,
        "jobset.sigs.k8s.io/job-index": "0",
    }
    env = {"JOB_COMPLETION_INDEX": str(index)}
    for item in container["env"]:
        env[item["name"]] = (
            item["value"] if "value" in item else labels[item["valueFrom"]["fieldRef"]["fieldPath"][len("metadata.labels['") : -2]]
        )
    return env


def _trainjob_argv(kubeconfig: str, name: str, *more: str) -> list[str]:
    return ["submit", "--backend", "trainjob", "--kubeconfig", kubeconfig, "--image", IMAGE, "-m", "trainer.task",
            "--workers", "2", "--ps", "1", "--display-name", name, *more]  # fmt: skip


def test_trainjob_submit_status_logs_cancel_through_the_stand_in(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    runner = CliRunner()
    result = runner.invoke(app, [*_trainjob_argv(kubeconfig, "census"), "--async"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "default/census\n"
    assert list(fake.runtimes) == ["tfjob-tensorflow-census"] and list(fake.trainjobs) == [("default", "census")]
    fake.advance_trainjob("default", "census", "Created")
    fake.advance_trainjob("default", "census", "Running")
    status = json.loads(runner.invoke(app, ["status", "default/census", "--json"]).stdout)
    assert status["state"] == "RUNNING" and status["backend"] == "trainjob"
    # Trainer's `node` job is the workers: tasks are named by their role.
    assert [t["name"] for t in status["tasks"]] == ["chief-0", "worker-0", "worker-1", "ps-0"]
    fake.write_log("default", fake.jobset_pod_name("census", "node-1"), "worker one here\n")
    logs = runner.invoke(app, ["logs", "default/census", "--task", "worker-1"])
    assert logs.exit_code == 0, logs.stderr
    assert logs.stdout == "[worker-1] worker one here\n"
    again = runner.invoke(app, [*_trainjob_argv(kubeconfig, "census"), "--async"])
    assert again.exit_code == 2 and "a TrainJob named 'census' already exists" in again.stderr
    assert runner.invoke(app, ["cancel", "default/census"]).exit_code == 0
    assert fake.trainjobs == {} and fake.runtimes == {} and not fake.pods


def test_a_trainjob_ends_as_trainer_says(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    fake.script("default", "ok", lambda: [fake.advance_trainjob("default", "ok", c) for c in ("Created", "Running", "Complete")])
    done = CliRunner().invoke(app, _trainjob_argv(kubeconfig, "ok"))
    assert done.exit_code == 0, done.stderr
    assert "tfjob: job default/ok SUCCEEDED" in done.stderr

    def fail() -> None:
        for condition in ("Created", "Running"):
            fake.advance_trainjob("default", "bad", condition)
        fake.advance_trainjob("default", "bad", "Failed", failed_task="node-0", exit_code=2)

    fake.script("default", "bad", fail)
    failed = CliRunner().invoke(app, [*_trainjob_argv(kubeconfig, "bad"), "--quiet"])
    assert failed.exit_code == 1 and "worker-0" in failed.stderr, failed.stderr


# -- golden manifests --------------------------------------------------------------------------
GOLDEN = Path(__file__).parent / "golden" / "jobset"


@pytest.mark.parametrize("kind", ["jobset", "trainjob"])
def test_golden_manifests(kind: str) -> None:
    spec = build_spec(dict(name="census", module="trainer.task", image=IMAGE, workers=2, ps=1, evaluators=1, worker_accelerator="type=NVIDIA_L4,count=1",
                      worker_machine_type="g2-standard-8", labels={"team": "ml"}, timeout=3600.0))  # fmt: skip
    # --max-restarts: the whole set started again up to twice (failurePolicy.maxRestarts), issue 29.
    options = TFJobOptions(
        namespace="ml", strategy="parameter-server", queue="team-a", cpu=["2", "worker=8"], memory=["8Gi"], max_restarts=2
    )
    manifest = render_jobset(spec, options) if kind == "jobset" else render_trainjob_list(spec, options)
    text = yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)
    path = GOLDEN / f"{kind}.yaml"
    assert golden_text(path, text) == text


@pytest.mark.parametrize("backend", ["jobset", "trainjob"])
def test_a_job_without_an_image_is_refused_naming_its_own_backend(backend: str) -> None:
    from tfjob import Job

    job = Job("gs://b/t.tar.gz", "trainer.task", workers=1, backend=backend)
    with pytest.raises(SpecError, match=f"backend='{backend}' runs container images, and the chief and worker pools have none"):
        job.render()
