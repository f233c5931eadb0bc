"""After the job (issue 27.1, 27.2): what it wrote and the scalars it logged, from one real
TensorFlow job (one process: a SavedModel, a checkpoint, a metrics file and TensorBoard
events for a train and an eval run), read locally and from gs:// (gcp-storage-emulator),
through JobHandle, the CLI and a pipeline's view (model URI and final metrics)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from helpers import requires_tf
from fakes.gcs import storage_emulator
from tfjob.cli.main import app
from tfjob.errors import JobFailedError
from tfjob.job import Job, get_job
from tfjob.platforms import Local
from tfjob.runtime.store import JobStore
from tfjob.after.metrics import read_metrics
from tfjob.after.outputs import download, job_outputs, list_local

TRAINER = """
import argparse, json, os
import tensorflow as tf

p = argparse.ArgumentParser()
p.add_argument("--job-dir", required=True)
args = p.parse_args()
logs = os.path.join(args.job_dir, "logs")
for run, scale in (("train", 1.0), ("eval", 1.5)):
    with tf.summary.create_file_writer(os.path.join(logs, run)).as_default():
        for step in range(1, 6):
            tf.summary.scalar("loss", scale / step, step=step)
            tf.summary.scalar("accuracy", 1 - 0.1 / step, step=step)
class M(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0)
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return x * self.w
m = M()
tf.train.Checkpoint(m=m).save(os.path.join(args.job_dir, "checkpoints", "ckpt"))
tf.saved_model.save(m, os.path.join(args.job_dir, "model"))
os.makedirs(os.path.join(args.job_dir, "eval"), exist_ok=True)
with open(os.path.join(args.job_dir, "eval", "metrics.json"), "w") as f:
    json.dump({"loss": 0.3}, f)
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """(TFJOB_HOME, job id, job dir) of one real job that wrote every kind of output."""
    root = tmp_path_factory.mktemp("after")
    trainer = root / "t" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(textwrap.dedent(TRAINER))
    home, job_dir = root / "home", root / "out"
    # Recorded in a store of its own (the tests below read it as TFJOB_HOME); no environment patched.
    handle = Job(
        str(root / "t"), "trainer.task", job_dir=str(job_dir), args=["--job-dir", str(job_dir)], quiet=True,
        env={"TF_CPP_MIN_LOG_LEVEL": "2"}, backend=Local(python=sys.executable), store=JobStore(home / "jobs.db"),
    ).run()  # fmt: skip
    yield home, handle.id, job_dir


@pytest.fixture
def home(finished: tuple[Path, str, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.setenv("TFJOB_HOME", str(finished[0]))
    return finished[1], finished[2]


@requires_tf
def test_outputs_name_the_model_the_checkpoint_and_the_logs(home: tuple[str, Path]) -> None:
    job_id, job_dir = home
    found = get_job(job_id).outputs()
    assert found.reachable and found.root == str(job_dir)
    assert found.model_uri == str(job_dir / "model")
    assert found.checkpoint_uri == str(job_dir / "checkpoints" / "ckpt-1")
    assert found.tensorboard_uri == str(job_dir / "logs")
    kinds = {f.path: f.kind for f in found.files}
    assert kinds["model/saved_model.pb"] == "saved_model" and kinds["model/variables/variables.index"] == "saved_model"
    assert kinds["checkpoints/checkpoint"] == "checkpoint" and kinds["eval/metrics.json"] == "metrics"
    assert sum(1 for k in kinds.values() if k == "tensorboard") == 2
    assert all(f.size == (job_dir / f.path).stat().st_size and f.modified for f in found.files)


@requires_tf
def test_metrics_are_the_last_values_per_run_read_without_tensorflow(home: tuple[str, Path]) -> None:
    job_id, _ = home
    metrics = get_job(job_id).metrics()
    assert metrics.final == {"eval": {"accuracy": pytest.approx(0.98), "loss": pytest.approx(0.3)},
                             "train": {"accuracy": pytest.approx(0.98), "loss": pytest.approx(0.2)}}  # fmt: skip
    assert [p.step for p in metrics.series["train"]["loss"]] == [1, 2, 3, 4, 5]
    assert metrics.flat()["eval/loss"] == pytest.approx(0.3)
    # TensorBoard's reader, not TensorFlow's: a fresh interpreter reads them without importing it.
    code = "import sys; from tfjob.after.metrics import read_metrics; m = read_metrics('x', sys.argv[1]); print(sorted(m.final)); print('tensorflow' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code, metrics.log_dir], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["['eval', 'train']", "False"]


@requires_tf
def test_the_cli_lists_plots_and_downloads(home: tuple[str, Path], tmp_path: Path) -> None:
    job_id, job_dir = home
    runner = CliRunner()
    listed = runner.invoke(app, ["outputs", job_id])
    assert listed.exit_code == 0, listed.output
    assert f"model       {job_dir / 'model'}" in listed.output and "saved_model  model/saved_model.pb" in listed.output
    data = json.loads(runner.invoke(app, ["outputs", job_id, "--json"]).output)
    assert data["model_uri"] == str(job_dir / "model") and data["total_size"] > 0
    got = runner.invoke(app, ["outputs", job_id, "--download", str(tmp_path / "copy")])
    assert (
        got.exit_code == 0
        and (tmp_path / "copy" / "model" / "saved_model.pb").read_bytes() == (job_dir / "model" / "saved_model.pb").read_bytes()
    )
    shown = runner.invoke(app, ["metrics", job_id, "--plot", str(tmp_path / "curves.png")])
    assert shown.exit_code == 0, shown.output
    assert any(line.split() == ["eval", "loss", "5", "0.3"] for line in shown.output.splitlines()), shown.output
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    status = json.loads(runner.invoke(app, ["status", job_id, "--output", "json"]).stdout)
    assert status["outputs"]["model_uri"] == str(job_dir / "model") and "files" not in status["outputs"]
    assert status["metrics"]["eval"]["loss"] == pytest.approx(0.3) and status["diagnoses"] == []
    bad = runner.invoke(app, ["metrics", job_id, "--plot", str(tmp_path / "curves.gif")])
    assert bad.exit_code == 2 and bad.output.strip().splitlines() == [
        f"error: --plot {str(tmp_path / 'curves.gif')!r} must name a .png or .svg file"
    ]


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with storage_emulator(monkeypatch) as client:
        yield client.create_bucket("outs")


@requires_tf
def test_a_gs_job_dir_reads_the_same(home: tuple[str, Path], bucket: Any, tmp_path: Path) -> None:
    _, job_dir = home
    for rel, _, _ in list_local(str(job_dir))[0]:
        bucket.blob(f"runs/j1/{rel}").upload_from_filename(str(job_dir / rel))
    found = job_outputs("j1", "vertex", "gs://outs/runs/j1", client=bucket.client)
    local = job_outputs("j0", "local", str(job_dir))
    assert [(f.path, f.size, f.kind) for f in found.files] == [(f.path, f.size, f.kind) for f in local.files]
    assert found.model_uri == "gs://outs/runs/j1/model" and found.tensorboard_uri == "gs://outs/runs/j1/logs"
    assert read_metrics("j1", found.tensorboard_uri, client=bucket.client).final == read_metrics("j0", local.tensorboard_uri).final
    written = download(found, tmp_path / "d", client=bucket.client)
    assert (tmp_path / "d" / "eval" / "metrics.json").read_text() == (job_dir / "eval" / "metrics.json").read_text()
    assert len(written) == len(found.files)


def test_a_kubernetes_path_job_dir_is_said_unreachable() -> None:
    found = job_outputs("ml/j", "kubeflow", "/mnt/out")
    assert not found.reachable and "inside the Kubernetes cluster" in found.note and "gs:// --job-dir" in found.note
    with pytest.raises(Exception, match="inside the Kubernetes cluster"):
        download(found, "/tmp/never")
    assert "no job dir" in job_outputs("j", "local", None).note


def _browser() -> str:
    from cdp import chromium

    return chromium()


def _check_page(path: Path, shot: Path) -> Any:
    from cdp import load

    loaded = load(_browser(), path)
    shot.write_bytes(loaded.screenshot)
    print(f"report screenshot: {shot}")
    assert loaded.errors == []
    # Self-contained: the page itself is the only request (figures are inline SVG).
    assert [u for u in loaded.requests if not u.startswith("data:")] == [path.resolve().as_uri()]
    assert loaded.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
    return loaded


@requires_tf
def test_the_report_of_a_job_renders_in_chromium(home: tuple[str, Path], tmp_path: Path) -> None:
    job_id, job_dir = home
    page = tmp_path / "report.html"
    made = CliRunner().invoke(app, ["report", job_id, "-o", str(page)])
    assert made.exit_code == 0, made.output
    text = page.read_text()
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/', "").replace(
        "http://www.w3.org/1999/xlink", ""
    )
    loaded = _check_page(page, tmp_path / "report.png")
    assert loaded.title == f"tfjob report: {job_id}"
    for said in (f"Job {job_id} SUCCEEDED", "chief-0", "exit 0", "Metrics", "eval\tloss\t5\t0.3", str(job_dir / "model"), "Spec"):
        assert said in loaded.text, said


def test_the_report_of_a_failed_job_shows_the_diagnosis_and_last_lines(tmp_path: Path) -> None:
    trainer = tmp_path / "t" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text(
        "import json, os, time\n"
        "if json.loads(os.environ['TF_CONFIG'])['task']['type'] in ('chief', 'master'):\n"
        "    time.sleep(1)\n"
        "    import census_feature_utils\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(JobFailedError, match="census_feature_utils") as failed:
        Job(str(tmp_path / "t"), "trainer.task", workers=2, quiet=True, backend=Local(python=sys.executable, grace=1)).run()
    page = tmp_path / "failed.html"
    assert CliRunner().invoke(app, ["report", failed.value.job_id, "-o", str(page)]).exit_code == 0
    loaded = _check_page(page, tmp_path / "failed.png")
    for said in ("FAILED", "Diagnosis", "module 'census_feature_utils' is not installed", "Last lines of chief-0",
                 "ModuleNotFoundError: No module named 'census_feature_utils'", "worker-1", "STOPPED", "signal SIGTERM"):  # fmt: skip
        assert said in loaded.text, (said, loaded.text[:3000])


#: Starts a command with SIGINT ignored, as a test runner's worker, `nohup` or a script's `&` leaves it.
_SIGINT_IGNORED = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"


def _tensorboard(tfjob_exe: str, job_id: str, sigint: str = "default") -> Any:
    import subprocess
    import sys

    argv = [tfjob_exe, "tensorboard", job_id, "--port", "0"]
    if sigint == "ignored":
        argv = [sys.executable, "-c", _SIGINT_IGNORED, *argv]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ctrl_c(proc: Any) -> None:
    """SIGINT, then the command must end (generously bounded: a loaded machine); never left running."""
    import signal
    import subprocess

    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("tfjob tensorboard outlived Ctrl-C") from None


@requires_tf
@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_tensorboard_serves_the_job_logs_and_ends_with_its_command(home: tuple[str, Path], tfjob_exe: str, sigint: str) -> None:
    import urllib.request

    job_id, _ = home
    proc = _tensorboard(tfjob_exe, job_id, sigint)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        runs = json.loads(urllib.request.urlopen(url.rstrip("/") + "/data/runs", timeout=60).read())
        assert sorted(runs) == ["eval", "train"]
    finally:
        _ctrl_c(proc)
    assert proc.returncode == 0 and "TensorBoard stopped" in proc.stderr.read()


def test_a_study_gets_its_trials_table_history_and_parameter_plots(tmp_path: Path) -> None:
    from helpers import ROOT
    from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec
    from tfjob.tune import Tuning, check_result
    import io

    study = StudySpec(
        MetricSpec("loss", "MINIMIZE"),
        (ParameterSpec("learning_rate", "DOUBLE", 1e-4, 1e-1, scale="UNIT_LOG_SCALE"), ParameterSpec("optimizer", "CATEGORICAL", values=("adam", "sgd"))),
        max_trials=4, parallel_trials=2, max_failed_trials=1,
    )  # fmt: skip
    toy = ROOT / "tests" / "data" / "tune_trainers" / "toy"
    result = check_result(
        Tuning(Job(str(toy), "toy.task", job_dir=str(tmp_path / "out"), name="toy-study"), study, seed=0).run(io.StringIO(), cores=2)
    )
    metrics = get_job(result.id).metrics()
    assert sorted(p.step for p in metrics.series["study"]["loss"]) == [1, 2, 3, 4]
    assert min(p.value for p in metrics.series["study"]["loss"]) == result.best.metric  # type: ignore[union-attr]
    runner = CliRunner()
    shown = runner.invoke(app, ["metrics", result.id, "--plot", str(tmp_path / "study.png")])
    assert shown.exit_code == 0, shown.output
    assert "4 of 4 trials" in shown.stdout and f"best trial {result.best.id}" in shown.stdout  # type: ignore[union-attr]
    assert (tmp_path / "study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = tmp_path / "study.html"
    assert runner.invoke(app, ["report", result.id, "-o", str(page)]).exit_code == 0
    loaded = _check_page(page, tmp_path / "study-report.png")
    assert "Study" in loaded.text and "4 of 4 trials" in loaded.text
    assert page.read_text().count("<svg") >= 1 and "optimisation history" in page.read_text()


@requires_tf
def test_a_vertex_jobs_gs_outputs_metrics_and_tensorboard(home: tuple[str, Path], bucket: Any, tfjob_exe: str) -> None:
    """A Vertex AI job as the store knows it (its job dir gs://…): outputs, metrics and
    TensorBoard read the bucket (the emulator), with no call to Vertex AI."""
    import urllib.request

    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore

    _, job_dir = home
    for rel, _, _ in list_local(str(job_dir))[0]:
        bucket.blob(f"census/{rel}").upload_from_filename(str(job_dir / rel))
    job_id = "projects/p/locations/us-central1/customJobs/42"
    with JobStore() as store:
        store.add(JobRecord(id=job_id, backend="vertex", name="census", state=JobState.SUCCEEDED, spec={"job_dir": "gs://outs/census"}))
    runner = CliRunner()
    listed = runner.invoke(app, ["outputs", job_id, "--json"])
    assert json.loads(listed.stdout)["model_uri"] == "gs://outs/census/model", listed.output
    shown = runner.invoke(app, ["metrics", job_id])
    assert shown.exit_code == 0 and "log dir  gs://outs/census/logs" in shown.stdout, shown.output
    proc = _tensorboard(tfjob_exe, job_id)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        runs = json.loads(urllib.request.urlopen(url.rstrip("/") + "/data/runs", timeout=60).read())
        assert sorted(runs) == ["eval", "train"]
    finally:
        _ctrl_c(proc)
    assert proc.returncode == 0


def test_the_report_timeline_shows_restarts() -> None:
    from tfjob.model import JobState, JobStatus, TaskRestart, TaskStatus
    from tfjob.after.report import ReportData, render_report

    t0 = 1_800_000_000.0
    worker = TaskStatus("worker-0", JobState.SUCCEEDED, exit_code=0, started=t0, ended=t0 + 60, restarts=2,
                        restart_history=[TaskRestart(t0 + 10, signal=15, reason="preempted"), TaskRestart(t0 + 30, exit_code=1, reason="exited")])  # fmt: skip
    chief = TaskStatus("chief-0", JobState.SUCCEEDED, exit_code=0, started=t0, ended=t0 + 61)
    page = render_report(ReportData(JobStatus("j1", "local", "j", JobState.SUCCEEDED, started=t0, ended=t0 + 61, tasks=[chief, worker])))
    assert "preempted signal 15" in page and "exited exit 1" in page
    assert page.count('stroke="#000"') == 2  # one mark per restart on the worker's bar
    assert "<script" not in page
