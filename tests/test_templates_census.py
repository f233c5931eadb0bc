"""The census trainers really train: alone, in a hand-made cluster, and through ``tfjob submit``.

Every run is a real TensorFlow process (tf-keras, ``TF_USE_LEGACY_KERAS=1``) on a
trainer copied by ``tfjob init``. Each test checks what a user relies on: a
checkpoint in the job dir, ``eval/metrics.json`` with finite values, and a
SavedModel that a fresh process loads and predicts one raw row with; killing the
chief and submitting again resumes where the checkpoint left off.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import requires_tf
from tfjob.hypertune import parse_metric_lines
from tfjob.scaffold import init_template

pytestmark = requires_tf

#: Loads the SavedModel in a new interpreter and predicts one raw CSV row through both signatures.
_PREDICT = r"""
import json, sys
import tensorflow as tf
model_dir, row = sys.argv[1], sys.argv[2]
model = tf.saved_model.load(model_dir)
by_csv = model.signatures["predict_csv"](csv_row=tf.constant([row]))
names = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
         "relationship", "race", "gender", "capital_gain", "capital_loss", "hours_per_week", "native_country"]
values = dict(zip(names, [v.strip() for v in row.split(",")]))
serving = model.signatures["serving_default"]
inputs = {}
for name, spec in serving.structured_input_signature[1].items():
    value = float(values[name]) if spec.dtype == tf.float32 else values[name]
    inputs[name] = tf.constant([value], dtype=spec.dtype)
by_name = serving(**inputs)
print(json.dumps({"csv": float(by_csv["probabilities"][0]), "named": float(by_name["probabilities"][0]),
                  "class": by_csv["classes"][0].numpy().decode()}))
"""


@pytest.fixture(autouse=True)
def metric_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the trainers report for tuning: kept inside the test, not in /tmp/hypertune."""
    path = tmp_path / "hypertune" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    return path


def _metric_env() -> list[str]:
    # The local backend gives tasks the platform's CLOUD_ML_* variables, not the caller's: pass it on.
    return ["--env", f"CLOUD_ML_HP_METRIC_FILE={os.environ['CLOUD_ML_HP_METRIC_FILE']}"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1", **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def latest_checkpoint_step(job_dir: Path) -> int:
    """The step of the newest checkpoint, read from TensorFlow's ``checkpoint`` state file."""
    state = (job_dir / "checkpoints" / "checkpoint").read_text()
    match = re.search(r'^model_checkpoint_path: "(?:.*/)?ckpt-(\d+)"', state, re.M)
    assert match, state
    return int(match.group(1))


def readme_blocks(text: str, language: str) -> list[str]:
    """The code blocks of a README in ``language``, continuation lines joined."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)
    return [block.replace("\\\n", " ") for block in blocks]


def readme_commands(text: str) -> list[str]:
    """Every shell command of a README's ``sh`` blocks, in order."""
    return [line.strip() for block in readme_blocks(text, "sh") for line in block.splitlines() if line.strip()]


def assert_trained(job_dir: Path, steps: int, predict: bool = True) -> dict[str, float]:
    """A checkpoint at ``steps``, finite evaluation metrics, and a SavedModel that predicts one row."""
    assert latest_checkpoint_step(job_dir) == steps
    assert list((job_dir / "checkpoints").glob(f"ckpt-{steps}.index"))
    metrics = json.loads((job_dir / "eval" / "metrics.json").read_text())
    assert metrics["global_step"] == steps
    for name in ("loss", "accuracy", "auc"):
        assert math.isfinite(metrics[name]), metrics
    assert 0.0 <= metrics["accuracy"] <= 1.0
    assert (job_dir / "model" / "saved_model.pb").is_file()
    if not predict:
        return metrics
    row = (job_dir / "data" / "adult.test.csv").read_text().splitlines()[0].rsplit(",", 1)[0]
    done = subprocess.run(
        [sys.executable, "-c", _PREDICT, str(job_dir / "model"), row], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    prediction = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0.0 < prediction["csv"] < 1.0
    assert prediction["named"] == pytest.approx(prediction["csv"], rel=1e-5)
    assert prediction["class"] in (">50K", "<=50K")
    return metrics


def _run_trainer(trainer: Path, args: list[str], tf_config: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    env = _env(TF_CONFIG=json.dumps(tf_config)) if tf_config else _env()
    return subprocess.run(
        [sys.executable, "-m", "trainer.task", *args], cwd=trainer, env=env, capture_output=True, text=True, timeout=timeout
    )


# -- the trainer on its own ------------------------------------------------------------------


@pytest.mark.slow
def test_ps_trainer_as_one_process_trains_exports_and_resumes(tmp_path: Path) -> None:
    trainer = init_template(tmp_path / "census", "census-ps")
    job_dir = tmp_path / "job"
    first = _run_trainer(trainer, ["--job-dir", str(job_dir), "--train-steps", "12", "--steps-per-checkpoint", "5"])
    assert first.returncode == 0, first.stderr[-3000:]
    assert "step 10: checkpoint" in first.stderr and "step 12: checkpoint" in first.stderr
    assert assert_trained(job_dir, 12)["resumed_from_step"] == 0
    again = _run_trainer(trainer, ["--job-dir", str(job_dir), "--train-steps", "15", "--steps-per-checkpoint", "5"])
    assert again.returncode == 0, again.stderr[-3000:]
    assert "at step 12" in again.stderr
    record = json.loads((job_dir / "eval" / "metrics.json").read_text())
    assert (record["resumed_from_step"], record["global_step"]) == (12, 15)


@pytest.mark.parametrize(
    "template, cluster, message",
    [
        ("census-ps", {"chief": 1, "worker": 2}, "it needs at least one worker and one ps"),
        ("census-multiworker", {"chief": 1, "worker": 1, "ps": 1}, "has 1 ps task(s): submit without --ps"),
    ],
)
def test_a_cluster_of_the_wrong_shape_is_refused(template: str, cluster: dict[str, int], message: str, tmp_path: Path) -> None:
    trainer = init_template(tmp_path / "t", template)
    spec = {role: [f"127.0.0.1:{_free_port()}" for _ in range(n)] for role, n in cluster.items()}
    # A worker, which would otherwise serve forever, must stop at once too.
    done = _run_trainer(trainer, ["--job-dir", str(tmp_path / "jd")], {"cluster": spec, "task": {"type": "worker", "index": 0}}, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "jd").exists()


@pytest.mark.slow
def test_ps_trainer_in_a_hand_made_cluster_with_an_evaluator(tmp_path: Path) -> None:
    """ps and workers run the trainer itself (as on a prebuilt image, without the tfjob bootstrap)."""
    trainer = init_template(tmp_path / "census", "census-ps")
    job_dir = tmp_path / "job"
    cluster = {role: [f"127.0.0.1:{_free_port()}" for _ in range(n)] for role, n in (("chief", 1), ("worker", 2), ("ps", 1))}
    args = ["--job-dir", str(job_dir), "--train-steps", "30", "--steps-per-checkpoint", "10"]
    procs: dict[str, subprocess.Popen] = {}
    try:
        for role, index in (("ps", 0), ("worker", 0), ("worker", 1), ("evaluator", 0), ("chief", 0)):
            tf_config = {"cluster": cluster, "task": {"type": role, "index": index}}
            procs[f"{role}-{index}"] = subprocess.Popen(
                [sys.executable, "-m", "trainer.task", *args],
                cwd=trainer,
                env=_env(TF_CONFIG=json.dumps(tf_config), CLOUD_ML_HP_METRIC_FILE=str(tmp_path / f"{role}.metrics")),
                stdout=subprocess.DEVNULL,
                stderr=open(tmp_path / f"{role}-{index}.log", "w"),
            )
        assert procs["chief-0"].wait(timeout=240) == 0, (tmp_path / "chief-0.log").read_text()[-3000:]
        assert procs["evaluator-0"].wait(timeout=120) == 0, (tmp_path / "evaluator-0.log").read_text()[-3000:]
        # Servers never return: the job ends when the chief ends.
        assert all(procs[name].poll() is None for name in ("ps-0", "worker-0", "worker-1"))
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
    assert_trained(job_dir, 30)
    evaluated = json.loads((job_dir / "eval" / "evaluator.json").read_text())
    assert evaluated["global_step"] == 30 and math.isfinite(evaluated["loss"])
    reports = [json.loads(line) for line in (tmp_path / "chief.metrics").read_text().splitlines()]
    assert {tag for r in reports for tag in r} >= {"accuracy", "auc", "loss"}
    assert {r["global_step"] for r in reports} == {"30"}
    assert not (tmp_path / "evaluator.metrics").exists()  # one final value per trial: the chief's


# -- end to end through `tfjob submit` ---------------------------------------------------------


def _submit(
    tfjob_exe: str, trainer: Path, job_dir: Path, *cluster: str, steps: list[str], timeout: float = 300
) -> subprocess.CompletedProcess:
    cmd = [
        tfjob_exe,
        "submit",
        str(trainer),
        "--module-name",
        "trainer.task",
        *cluster,
        "--job-dir",
        str(job_dir),
        *_metric_env(),
        "--",
        *steps,
    ]
    return subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_submit_census_ps_with_workers_and_ps(tfjob_exe: str, tmp_path: Path, metric_file: Path) -> None:
    trainer = tmp_path / "census"
    assert subprocess.run([tfjob_exe, "init", str(trainer)], capture_output=True, timeout=60).returncode == 0
    done = _submit(tfjob_exe, trainer, tmp_path / "job", "--workers", "2", "--ps", "1", steps=["--train-steps", "40"])
    assert done.returncode == 0, done.stderr[-4000:]
    assert re.search(r"chief-0\s+SUCCEEDED", done.stderr)
    metrics = assert_trained(tmp_path / "job", 40)
    assert metrics["resumed_from_step"] == 0
    # The evaluation went to hyperparameter tuning too, in cloudml-hypertune's format.
    reported = {r["tag"]: r for r in parse_metric_lines(metric_file.read_text())}
    assert reported["accuracy"]["value"] == pytest.approx(metrics["accuracy"])
    assert (reported["accuracy"]["global_step"], reported["accuracy"]["trial"]) == (40, "0")


@pytest.mark.slow
def test_submit_census_multiworker_as_its_readme_says(tfjob_exe: str, tmp_path: Path) -> None:
    """The multi-worker README's local command: a chief and one worker, both training."""
    trainer = tmp_path / "census-mw"
    init = subprocess.run([tfjob_exe, "init", str(trainer), "--template", "census-multiworker"], capture_output=True, timeout=60)
    assert init.returncode == 0
    command = shlex.split(readme_commands((trainer / "README.md").read_text())[0])
    assert command[:2] == ["tfjob", "submit"] and command[command.index("--workers") + 1] == "1" and "--ps" not in command
    cut = command.index("--")
    done = subprocess.run(
        [tfjob_exe, *command[1:cut], *_metric_env(), *command[cut:]], cwd=trainer, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert re.search(r"worker-0\s+SUCCEEDED", done.stderr)  # both replicas trained to the end
    job_dir = tmp_path / "census-job"
    assert assert_trained(job_dir, int(command[command.index("--train-steps") + 1]))["resumed_from_step"] == 0
    # The non-chief worker saved too, into a scratch directory it then deleted.
    assert sorted(p.name for p in job_dir.iterdir()) == ["checkpoints", "data", "eval", "logs", "model"]


@pytest.mark.slow
def test_killing_the_chief_then_resubmitting_resumes_from_the_checkpoint(tfjob_exe: str, tmp_path: Path) -> None:
    from tfjob.runtime.store import JobStore

    trainer = init_template(tmp_path / "census", "census-ps")
    job_dir = tmp_path / "job"
    cmd = [
        tfjob_exe,
        "submit",
        str(trainer),
        "-m",
        "trainer.task",
        "--workers",
        "1",
        "--ps",
        "1",
        "--job-dir",
        str(job_dir),
        "--grace",
        "1",
        *_metric_env(),
    ]
    log = open(tmp_path / "first.log", "w")
    first = subprocess.Popen([*cmd, "--", "--train-steps", "1000000", "--steps-per-checkpoint", "10"], env=_env(), stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 180
        while not (job_dir / "checkpoints" / "checkpoint").exists():
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 180 s"
            time.sleep(0.2)
        store = JobStore()
        try:
            (record,) = store.list()
            tasks = {t.name: t for t in store.tasks(record.id)}
        finally:
            store.close()
        os.kill(tasks["chief-0"].pid, signal.SIGKILL)
        assert first.wait(timeout=60) == 1
    finally:
        if first.poll() is None:  # a failed assertion: stop the job the way Ctrl-C would
            first.send_signal(signal.SIGINT)
            try:
                first.wait(timeout=60)
            except subprocess.TimeoutExpired:
                first.kill()
                first.wait()
    assert "chief-0" in (tmp_path / "first.log").read_text()
    for task in tasks.values():  # the job took its workers and ps down with it
        with pytest.raises(ProcessLookupError, match="No such process"):
            os.kill(task.pid, 0)
    reached = latest_checkpoint_step(job_dir)
    assert reached >= 10 and reached % 10 == 0
    again = _submit(
        tfjob_exe,
        trainer,
        job_dir,
        "--workers",
        "1",
        "--ps",
        "1",
        steps=["--train-steps", str(reached + 10), "--steps-per-checkpoint", "10"],
    )
    assert again.returncode == 0, again.stderr[-4000:]
    assert f"at step {reached}" in again.stderr
    metrics = assert_trained(job_dir, reached + 10, predict=False)
    assert metrics["resumed_from_step"] == reached


# -- the README's examples ----------------------------------------------------------------------
# The census-ps README's local command is the project README's first command (the same 1+4+2 job
# of 200 steps): tests/test_readme.py runs it once and checks this README's examples on that job.


@pytest.mark.parametrize("template, replicas", [("census-ps", ["1", "4", "2"]), ("census-multiworker", ["1", "3"])])
def test_readme_vertex_command_renders(template: str, replicas: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from tfjob.cli.main import app

    trainer = init_template(tmp_path / "census", template)
    (command,) = [c for c in readme_commands((trainer / "README.md").read_text()) if "--backend vertex" in c]
    args = shlex.split(command.replace("PROJECT", "my-project").replace("BUCKET", "my-bucket"))
    cut = args.index("--")
    monkeypatch.chdir(trainer)
    result = CliRunner().invoke(app, [*args[1:cut], "--dry-run", *args[cut:]])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == replicas
    # Every pool starts through the bootstrap, which runs the template's module with its arguments.
    assert {p["pythonPackageSpec"]["pythonModule"] for p in pools} == {"tfjob.container.bootstrap"}
    chief_args = pools[0]["pythonPackageSpec"]["args"]
    assert chief_args[:2] == ["--module", "trainer.task"]
    assert chief_args[chief_args.index("--") + 1 :][:2] == ["--train-steps", "2000"]
