"""Per-pool arguments and variables, and a container's own command (issue 16.5): what real
Vertex AI jobs set, rendered on every backend that has the field, run locally per task,
read back from a CustomJob, and refused in one line where a platform has no field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfjob._internal import job_from_keywords
from tfjob.backends.kubeflow.options import KubernetesOptions, TFJobOptions
from tfjob.backends.vertex.options import VertexOptions
from tfjob.cli.main import app
from tfjob.config.job import parse_job_config
from tfjob.errors import SpecError
from tfjob.job import Job
from tfjob.platforms import Local, Replicas
from tfjob.backends.aiplatform.render import render_training_input
from tfjob.backends.kubeflow.render_jobset import render_jobset
from tfjob.backends.kubeflow.render import render_tfjob
from tfjob.backends.vertex.render import render_custom_job
from tfjob.description.request import build_spec

IMAGE = "gcr.io/p/t:1"
PER_POOL = dict(
    workers=2, ps=1, args=("--steps", "10"), env={"A": "job"},
    worker_args=("--steps", "10", "--shard", "auto"), ps_env={"A": "ps", "GRPC_VERBOSITY": "ERROR"},
)  # fmt: skip


def _strict(body: dict[str, Any]) -> None:
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    json_format.ParseDict(body, aiplatform_v1.types.CustomJob()._pb)


def test_vertex_pools_carry_their_own_args_and_env_and_read_back_the_same() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, **PER_POOL))
    body = render_custom_job(spec, VertexOptions(region="us-central1"))
    _strict(body)
    chief, worker, ps = (p["containerSpec"] for p in body["jobSpec"]["workerPoolSpecs"])
    assert chief["args"] == ["--steps", "10"] and worker["args"] == ["--steps", "10", "--shard", "auto"]
    assert ps["env"] == [{"name": "A", "value": "ps"}, {"name": "GRPC_VERBOSITY", "value": "ERROR"}]
    assert chief["env"] == [{"name": "A", "value": "job"}]
    values = parse_job_config(json.loads(json.dumps(body)), "custom_job.json").values
    again = job_from_keywords(None, None, {**{**values, "backend": "vertex"}}).spec
    assert [(again.args_for(r), again.env_for(r)) for r in ("chief", "worker", "ps")] == [
        (spec.args_for(r), spec.env_for(r)) for r in ("chief", "worker", "ps")
    ]


def test_kubernetes_containers_carry_them_too() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, **PER_POOL))
    worker = render_tfjob(spec, TFJobOptions())["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["args"][-4:] == ["--steps", "10", "--shard", "auto"]
    jobset = render_jobset(spec, KubernetesOptions())
    (ps,) = [j for j in jobset["spec"]["replicatedJobs"] if j["name"] == "ps"]
    env = ps["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "A", "value": "ps"} in env and {"name": "GRPC_VERBOSITY", "value": "ERROR"} in env


def test_a_containers_own_command_on_vertex_kubeflow_and_locally() -> None:
    spec = build_spec(dict(name="j", image=IMAGE, workers=1, command=("python", "-m", "trainer.task"), args=("--epochs", "2")))
    pool = render_custom_job(spec, VertexOptions(region="us-central1"))["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]
    assert pool["command"] == ["python", "-m", "trainer.task"] and pool["args"] == ["--epochs", "2"]
    container = render_tfjob(spec, TFJobOptions())["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "trainer.task"] and container["args"] == ["--epochs", "2"]
    from tfjob.runtime.engine import Engine
    from tfjob.backends.local.plan import build_cluster, build_task_plans

    plans = build_task_plans(
        spec, build_cluster(spec, [7001, 7002]), dialect="vertex", strategy="module", python="python", source_root=None,
        environ={}, job_id="j1", engine=Engine("podman", "/usr/bin/podman"),
    )  # fmt: skip
    argv = plans[1].argv
    assert argv[argv.index("--entrypoint") + 1] == "python"
    assert argv[argv.index(IMAGE) + 1 :] == ["-m", "trainer.task", "--epochs", "2"]


def test_each_local_task_runs_with_its_pools_args_and_env(tmp_path: Path) -> None:
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("")
    (tmp_path / "probe" / "task.py").write_text(
        "import json, os, sys\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "out = os.path.join(os.environ['OUT'], f\"{task['type']}-{task['index']}.json\")\n"
        "json.dump({'args': sys.argv[1:], 'A': os.environ.get('A')}, open(out, 'w'))\n"
        "import time\n"
        "deadline = time.time() + 60\n"  # the chief ends the job: it waits for the others to write
        "while task['type'] == 'chief' and len(os.listdir(os.environ['OUT'])) < 3 and time.time() < deadline:\n"
        "    time.sleep(0.05)\n"
    )
    (tmp_path / "out").mkdir()
    handle = Job(
        package=str(tmp_path), module="probe.task", args=["--x", "1"], env={"OUT": str(tmp_path / "out"), "A": "job"},
        workers=Replicas(1, args=["--x", "2"]), evaluators=Replicas(1, env={"A": "eval"}), quiet=True, backend=Local(),
    ).run(timeout=120)  # fmt: skip
    assert handle.result().state.value == "SUCCEEDED"
    seen = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "out").glob("*.json")}
    assert seen["chief-0"] == {"args": ["--x", "1"], "A": "job"}
    assert seen["worker-0"] == {"args": ["--x", "2"], "A": "job"}
    assert seen["evaluator-0"] == {"args": ["--x", "1"], "A": "eval"}


def test_a_tuning_trial_appends_its_parameters_to_every_pools_args() -> None:
    from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec
    from tfjob.backends.local.tuning import build_trial_spec
    from tfjob.tuning.trials import Trial

    spec = build_spec(dict(name="j", module="trainer.task", workers=1, args=("--a",), worker_args=("--b",)))
    study = StudySpec(MetricSpec("acc", "MAXIMIZE"), (ParameterSpec("lr", "DOUBLE", 0.1, 0.2),))
    trial = build_trial_spec(spec, study, Trial(id="1", params={"lr": 0.15}), Path("/tmp/m"))
    assert trial.args_for("chief")[-1].startswith("--lr") and trial.args_for("worker")[:1] == ("--b",)
    assert trial.args_for("worker")[-1].startswith("--lr")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(module="trainer.task", image=IMAGE, command=("python",)), "^command replaces a container image's entrypoint"),
        (dict(module="trainer.task", command=("python",)), "^command replaces a container image's entrypoint"),
        (dict(image=IMAGE, command=("",)), "must be a list of non-empty strings"),
        (dict(module="trainer.task", ps_args=("--x",)), "^ps_args is set but the job has no ps pool$"),
        (dict(module="trainer.task", workers=1, worker_env={"TF_CONFIG": "{}"}), "^worker_env='TF_CONFIG' is set by the platform"),
        (dict(module="trainer.task", workers=1, worker_args="--x"), "^worker_args='--x' must be a list of arguments$"),
    ],
)
def test_mistakes_are_one_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(dict(name="j", **kwargs))


def test_ai_platform_has_no_field_for_them() -> None:
    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1, worker_args=("--b",)))
    with pytest.raises(SpecError, match="per-pool args or env .* has no equivalent in legacy AI Platform"):
        render_training_input(spec, VertexOptions())


def test_command_from_the_cli_in_gclouds_spelling() -> None:
    result = CliRunner().invoke(
        app,
        [
            "render",
            "--backend",
            "vertex",
            "--image",
            IMAGE,
            "--command",
            "python,-m,trainer.task",
            "--project",
            "p",
            "--region",
            "us-central1",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] == ["python", "-m", "trainer.task"]


def test_another_backends_default_options_render_a_tfjob() -> None:
    """A setting left out is None on every backend, so another backend's defaults carried into
    a TFJob's options (``options_as``) never read as a given ``--max-restarts``."""
    from tfjob.backends.local.options import LocalOptions
    from tfjob.model import options_as

    spec = build_spec(dict(name="j", module="trainer.task", image=IMAGE, workers=1))
    for options in (VertexOptions(), LocalOptions()):
        assert options_as(TFJobOptions, options).max_restarts is None
        assert render_tfjob(spec, options)["kind"] == "TFJob"
