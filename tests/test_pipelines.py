"""tfjob as a Kubeflow Pipelines v2 step (tfjob.pipelines): a two-step pipeline compiled, a
failing job failing its step by task, and a terminated step cancelling its job. The real
two-step run through ``kfp.local`` (the census template trained on the local backend, 1 chief
+ 2 workers + 1 ps, then a step that loads the SavedModel and reads the metrics) is the
README's pipeline, run and checked by tests/test_readme.py (the census model trained once)."""

# No `from __future__ import annotations`: KFP reads the components' annotations as types.
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, List, NamedTuple

import pytest

from helpers import need_module, write_trainer
import yaml


kfp = need_module("kfp", "pip install -e '.[test]'")
from kfp import compiler, dsl, local  # noqa: E402
from kfp.dsl import Input, Metrics, Model  # noqa: E402

from tfjob.pipelines.components import train_op  # noqa: E402

#: The step runs in this interpreter's environment (tfjob, kfp, TensorFlow are here): no pip.
TRAIN = train_op(base_image="python:3.11", install_kfp_package=False)


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def evaluate(model: Input[Model], metrics: Input[Metrics], job_id: str) -> NamedTuple(
    "Outputs", [("prediction", float), ("accuracy", float)]
):
    """The next step: loads the SavedModel by its URI and reads the metrics artifact."""
    import os
    from collections import namedtuple

    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import tensorflow as tf

    ROW = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States"

    loaded = tf.saved_model.load(model.path)
    probability = float(loaded.signatures["predict_csv"](csv_row=tf.constant([ROW]))["probabilities"].numpy()[0])
    print(f"job {job_id}: the model at {model.uri} predicts {probability:.4f}; metrics {metrics.metadata}")
    return namedtuple("Outputs", ["prediction", "accuracy"])(probability, float(metrics.metadata["accuracy"]))


@dsl.pipeline(name="census-train-evaluate")
def census_pipeline(package: str, job_dir: str, train_steps: str = "6") -> NamedTuple(
    "Outputs", [("job_id", str), ("backend", str), ("prediction", float), ("accuracy", float)]
):
    train = TRAIN(
        package=package,
        module="trainer.task",
        backend="local",
        workers=2,
        ps=1,
        job_dir=job_dir,
        args=["--train-steps", train_steps, "--eval-steps", "2", "--batch-size", "16"],
    )
    check = evaluate(model=train.outputs["model"], metrics=train.outputs["metrics"], job_id=train.outputs["job_id"])
    outputs = NamedTuple("Outputs", [("job_id", str), ("backend", str), ("prediction", float), ("accuracy", float)])
    return outputs(train.outputs["job_id"], train.outputs["backend"], check.outputs["prediction"], check.outputs["accuracy"])


@pytest.fixture
def local_runner(tmp_path: Path) -> Path:
    """kfp.local running every step as a subprocess of this interpreter (no venv, no pip)."""
    root = tmp_path / "pipeline-root"
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(root), raise_on_error=True)
    return root


def _executor_output(root: Path, task: str) -> dict[str, Any]:
    found = sorted(root.glob(f"*/{task}/executor_output.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def test_the_pipeline_compiles_to_a_spec_with_typed_outputs(tmp_path: Path) -> None:
    path = tmp_path / "census.yaml"
    compiler.Compiler().compile(census_pipeline, str(path))
    spec = yaml.safe_load(path.read_text())
    assert spec["pipelineInfo"]["name"] == "census-train-evaluate"
    train = spec["components"]["comp-tfjob-train"]
    outputs = train["outputDefinitions"]
    assert outputs["artifacts"]["model"]["artifactType"] == {"schemaTitle": "system.Model", "schemaVersion": "0.0.1"}
    assert outputs["artifacts"]["metrics"]["artifactType"] == {"schemaTitle": "system.Metrics", "schemaVersion": "0.0.1"}
    assert outputs["parameters"] == {"job_id": {"parameterType": "STRING"}, "backend": {"parameterType": "STRING"}}
    inputs = train["inputDefinitions"]["parameters"]
    assert inputs["module"]["parameterType"] == "STRING" and inputs["workers"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["args"]["parameterType"] == "LIST" and inputs["options"]["parameterType"] == "STRUCT"
    assert inputs["backend"]["defaultValue"] == "local" and inputs["require_model"]["defaultValue"] is True
    # The evaluation step is fed the training step's artifacts (no path or layout in between).
    tasks = spec["root"]["dag"]["tasks"]
    fed = tasks["evaluate"]["inputs"]["artifacts"]
    assert fed["model"]["taskOutputArtifact"] == {"outputArtifactKey": "model", "producerTask": "tfjob-train"}
    assert fed["metrics"]["taskOutputArtifact"] == {"outputArtifactKey": "metrics", "producerTask": "tfjob-train"}
    assert tasks["tfjob-train"]["inputs"]["parameters"]["workers"]["runtimeValue"]["constant"] == 2
    # The step's program is tfjob's: the executor runs the component, which calls run_step.
    executor = spec["deploymentSpec"]["executors"]["exec-tfjob-train"]["container"]
    # KFP's executor, less its executor-input JSON (tfjob.pipelines.executor).
    assert executor["image"] == "python:3.11" and "-m tfjob.pipelines.executor " in " ".join(executor["command"])
    assert "from tfjob.pipelines.step import build_job, run_step" in executor["command"][-1]
    assert "pip install" not in " ".join(executor["command"])  # install_kfp_package=False, no packages


def test_the_default_component_installs_what_it_is_told(tmp_path: Path) -> None:
    op = train_op(packages_to_install=["tfjob[kfp]==0.1.0"])
    path = tmp_path / "op.yaml"
    compiler.Compiler().compile(op, str(path))
    container = yaml.safe_load(path.read_text())["deploymentSpec"]["executors"]["exec-tfjob-train"]["container"]
    assert container["image"] == "python:3.11-slim"
    assert "'tfjob[kfp]==0.1.0'" in " ".join(container["command"])


PROBE = Path(__file__).resolve().parent / "data" / "trainers" / "probe"


@dsl.pipeline(name="probe")
def probe_pipeline(job_dir: str, probe_args: List[str]) -> None:
    TRAIN(package=str(PROBE), module="probe.task", workers=2, ps=1, job_dir=job_dir, args=probe_args, require_model=False)


def test_a_failed_job_fails_its_step_naming_the_failing_task(
    tmp_path: Path, local_runner: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RuntimeError, match="tfjob-train"):
        probe_pipeline(job_dir=str(tmp_path / "job"), probe_args=["--exit", "worker-0=3", "--wait-tasks", "9"])
    log = capsys.readouterr().out
    error = [line.strip() for line in log.splitlines() if line.strip().startswith("error: job ")]
    assert len(error) == 1, log[-3000:]
    assert "FAILED" in error[0] and "worker-0" in error[0] and "code 3" in error[0], error
    assert "Traceback" not in log
    # Quiet unless asked: not KFP's ~200 lines of executor-input JSON (TFJOB_KFP_VERBOSE=1 shows them).
    assert "Got executor_input" not in log and '"inputs": {' not in log


_DRIVER = """
import sys
from kfp import dsl, local
from tfjob.pipelines.components import train_op

TRAIN = train_op(base_image="python:3.11", install_kfp_package=False)

@dsl.pipeline(name="hang")
def hang(job_dir: str) -> None:
    TRAIN(package=sys.argv[1], module="probe.task", workers=2, ps=1, job_dir=job_dir, args=["--hang", "all"], require_model=False)

local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=sys.argv[3], raise_on_error=True)
hang(job_dir=sys.argv[2])
"""


def test_terminating_the_step_cancels_its_job(tmp_path: Path) -> None:
    from local_helpers import assert_no_survivors, job_processes, only_job_id, wait_for_reports

    from tfjob import get_job

    job_dir = tmp_path / "job"
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(PROBE), str(job_dir), str(tmp_path / "root")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_reports(job_dir, 4, timeout=120)  # every task is up: the job runs
        job_id = only_job_id()
        tasks = job_processes(job_id, job_dir)
        # The step's process: the interpreter running KFP's executor (not the shell that started it).
        step = [pid for pid in _descendants(driver.pid) if _argv(pid)[1:3] == ["-m", "tfjob.pipelines.executor"]]
        assert len(step) == 1, step
        os.kill(step[0], signal.SIGTERM)  # what a cancelled run does to its step's process
        out, _ = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode != 0, out[-3000:]
    assert f"the step was terminated, so job {job_id} was cancelled (CANCELLED)" in out, out[-3000:]
    assert get_job(job_id).state.value == "CANCELLED"
    assert_no_survivors(tasks)


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [p for p, parent in parents.items() if parent == pid]
        found += children
        frontier += children
    return found


# --- Vertex AI Pipelines: the CLI's CustomJob, heterogeneous pools, through the op's payload ---

from test_vertex_e2e import emulator  # noqa: E402,F401  (gcp-storage-emulator with bucket b)


def _small_trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "trainer").parent


def _vertex_job(trainer: Path, **vertex: Any) -> Any:
    from tfjob import Job, Replicas, Vertex

    return Job(
        str(trainer),
        "trainer.task",
        backend=Vertex(project="p", region="us-central1", staging_bucket="gs://b", **vertex),
        chief=Replicas(machine_type="n1-highcpu-16"),
        workers=Replicas(2, machine_type="n1-highcpu-8"),
        ps=Replicas(1, machine_type="n1-highmem-8"),
        evaluators=Replicas(1, machine_type="n1-standard-4"),
        job_dir="gs://b/census",
        args=["--train-steps", "200"],
        timeout=3600,
    )


def test_a_vertex_pipeline_runs_the_job_the_cli_renders_with_its_pools_and_staged_packages(
    emulator: Any,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    from google.cloud.aiplatform_v1.types import CustomJob, CustomJobSpec

    from tfjob.pipelines.components import GCPC_CUSTOM_JOB_LAUNCHER, custom_training_job_op
    from tfjob.pipelines.vertex import custom_training_job_args

    trainer = _small_trainer(tmp_path)
    job = _vertex_job(trainer)
    args = custom_training_job_args(job)

    # Staged for real: the trainer's sdist and the bootstrap wheel are in the bucket.
    staged = sorted(f"gs://b/{blob.name}" for blob in emulator.list_blobs("b"))
    assert sorted(uri.rsplit("/", 1)[1] for uri in staged) == ["tfjob_bootstrap-0.1.0-py3-none-any.whl", "trainer-0.0.0.tar.gz"]
    # The same pools `tfjob render`/`submit --dry-run` shows (the same staging places).
    assert args["worker_pool_specs"] == job.render()["jobSpec"]["workerPoolSpecs"]
    assert (args["project"], args["location"], args["base_output_directory"], args["timeout"]) == (
        "p",
        "us-central1",
        "gs://b/census",
        "3600s",
    )

    @dsl.pipeline(name="census-on-vertex")
    def on_vertex() -> None:
        custom_training_job_op(args)()

    path = tmp_path / "vertex.yaml"
    compiler.Compiler().compile(on_vertex, str(path))
    spec = yaml.safe_load(path.read_text())
    container = spec["deploymentSpec"]["executors"]["exec-tfjob-custom-job"]["container"]
    assert container["command"] == ["python3", "-u", "-m", GCPC_CUSTOM_JOB_LAUNCHER]
    argv = container["args"]
    assert argv[:2] == ["--type", "CustomJob"] and argv[argv.index("--project") + 1] == "p"
    assert argv[argv.index("--gcp_resources") + 1] == "{{$.outputs.parameters['gcp_resources'].output_file}}"
    payload = json.loads(argv[argv.index("--payload") + 1])

    # The embedded payload is a valid Vertex AI CustomJob / CustomJobSpec (unknown fields refused).
    job_spec = CustomJobSpec.from_json(json.dumps(payload["job_spec"]), ignore_unknown_fields=False)
    CustomJob.from_json(json.dumps(payload), ignore_unknown_fields=False)
    pools = job_spec.worker_pool_specs
    assert [p.machine_spec.machine_type for p in pools] == ["n1-highcpu-16", "n1-highcpu-8", "n1-highmem-8", "n1-standard-4"]
    assert [p.replica_count for p in pools] == [1, 2, 1, 1]
    for pool in pools:  # the bootstrap is every pool's entry point, from the staged packages
        assert pool.python_package_spec.python_module == "tfjob.container.bootstrap"
        assert sorted(pool.python_package_spec.package_uris) == staged
        assert list(pool.python_package_spec.args)[-3:] == ["--", "--train-steps", "200"]
    assert job_spec.base_output_directory.output_uri_prefix == "gs://b/census"
    assert job_spec.scheduling.timeout.total_seconds() == 3600
    assert payload["labels"]["tfjob-submission-id"] == args["labels"]["tfjob-submission-id"]


def test_vertex_op_arguments_refuse_what_the_op_cannot_carry(tmp_path: Path) -> None:
    from tfjob.errors import SpecError
    from tfjob.pipelines.vertex import custom_training_job_args

    trainer = _small_trainer(tmp_path)
    with pytest.raises(SpecError, match="enable_dashboard_access=True has no CustomTrainingJobOp argument"):
        custom_training_job_args(_vertex_job(trainer, enable_dashboard_access=True), stage=False)
    from tfjob import Job

    with pytest.raises(SpecError, match="needs a job for backend='vertex', not 'local'"):
        custom_training_job_args(Job(str(trainer), "trainer.task", workers=1), stage=False)
    dry = custom_training_job_args(_vertex_job(trainer), stage=False)  # names the URIs, uploads nothing
    assert dry["worker_pool_specs"][1]["pythonPackageSpec"]["packageUris"][0].startswith("gs://b/tfjob/packages/")


@pytest.mark.parametrize("verbose", ["", "1"])
def test_the_steps_executor_leaves_out_the_executor_input_unless_asked(tmp_path: Path, verbose: str) -> None:
    """tfjob.pipelines.executor is KFP's executor, less its executor-input JSON (TFJOB_KFP_VERBOSE=1: with it)."""
    component = tmp_path / "component.py"
    component.write_text("from kfp.dsl import *\n\ndef hello() -> str:\n    print('hello from the step')\n    return 'hi'\n")
    executor_input = {"inputs": {}, "outputs": {"parameters": {"Output": {"outputFile": str(tmp_path / "out")}},
                                                "outputFile": str(tmp_path / "executor_output.json")}}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tfjob.pipelines.executor", "kfp.dsl.executor_main", "--component_module_path", str(component),
         "--executor_input", json.dumps(executor_input), "--function_to_execute", "hello"],
        env={**os.environ, "_KFP_RUNTIME": "true", "TFJOB_KFP_VERBOSE": verbose}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello from the step" in done.stdout and "Wrote executor output file" in done.stdout
    assert ("Got executor_input" in done.stdout) == bool(verbose)
    assert json.loads((tmp_path / "executor_output.json").read_text())["parameterValues"] == {"Output": "hi"}
