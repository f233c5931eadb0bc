"""Preemptions of real TensorFlow training, rehearsed locally (issue 29.4).

Each job is preempted on a condition of its training (the chief's log shows a checkpoint),
not at a fixed time, so that a slow machine changes how long a test takes, not what it
proves: a parameter-server worker restarted in place by its policy while the chief trains
on; the chief lost and the whole job started again from its checkpoint (--max-restarts);
TensorFlow's parameter-server tutorial layout through a worker preemption; a
MultiWorkerMirroredStrategy job, whose workers cannot leave and rejoin, recovered by a
whole-job restart. Every process is gone at the end and the job's history shows each
preemption and restart.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import BIN, requires_tf
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import assert_no_survivors

from tfjob.cli.main import app
from tfjob.model import JobState
from tfjob.scaffold import init_template
from tfjob.runtime.store import JobStore

pytestmark = [requires_tf, pytest.mark.slow, pytest.mark.tf]

TFJOB = str(BIN / "tfjob")
#: Seconds a step of the tests may wait for training to reach a point (the machine may be busy).
PATIENCE = 400.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    return env


class Run:
    """A `tfjob submit` running in the background, its output in a file."""

    def __init__(self, tmp_path: Path, argv: list[str]) -> None:
        self.out_path = tmp_path / "submit.log"
        self._out = open(self.out_path, "w")
        self.proc = subprocess.Popen(
            [TFJOB, "submit", *argv], env=_env(), stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.job_id = self._wait(lambda: self._only_id(), "the job in the store")

    def _only_id(self) -> str | None:
        with JobStore() as store:
            records = store.list()
        return records[0].id if records else None

    def _wait(self, found, what: str):
        deadline = time.monotonic() + PATIENCE
        while True:
            value = found()
            if value:
                return value
            if self.proc.poll() is not None:
                raise AssertionError(f"tfjob ended (rc={self.proc.returncode}) before {what}:\n{self.output()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {PATIENCE:g}s:\n{self.output()[-4000:]}")
            time.sleep(0.2)

    def output(self) -> str:
        return self.out_path.read_text(errors="replace")

    def log(self, task: str) -> str:
        path = Path(os.environ["TFJOB_HOME"]) / "jobs" / self.job_id / f"{task}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_log(self, task: str, pattern: str) -> re.Match[str]:
        return self._wait(lambda: re.search(pattern, self.log(task), re.M), f"{pattern!r} in {task}'s log")

    def preempt(self, task: str, grace: str = "60s") -> None:
        result = CliRunner().invoke(app, ["preempt", self.job_id, task, "--grace", grace])
        assert result.exit_code == 0, result.stderr

    def end(self, timeout: float = PATIENCE) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=60)
            raise AssertionError(f"the job did not end within {timeout:g}s:\n{self.output()[-4000:]}") from None
        finally:
            self._out.close()

    def record(self):
        with JobStore() as store:
            return store.get(self.job_id), {t.name: t for t in store.tasks(self.job_id)}, [m for _, _, m in store.events(self.job_id)]

    def processes(self) -> list[tuple[int, int | None]]:
        """Every process of every run of every task (from the manifest each start rewrites: the last ones)."""
        with JobStore() as store:
            return [(t.pid, t.proc_start) for t in store.tasks(self.job_id) if t.pid]


def _metrics(job_dir: Path) -> dict:
    return json.loads((job_dir / "eval" / "metrics.json").read_text())


def _census(tmp_path: Path, template: str, cluster: list[str], flags: list[str], steps: int) -> tuple[Run, Path]:
    trainer = init_template(tmp_path / "census", template)
    job_dir = tmp_path / "job"
    run = Run(tmp_path, [
        str(trainer), "-m", "trainer.task", *cluster, "--job-dir", str(job_dir), "--grace", "2",
        "--restart-delay", "0.2s", *flags, "--", "--train-steps", str(steps), "--steps-per-checkpoint", "10",
    ])  # fmt: skip
    return run, job_dir


def test_a_parameter_server_worker_preempted_mid_training_is_restarted_and_the_chief_trains_to_the_end(tmp_path: Path) -> None:
    steps = 300
    run, job_dir = _census(tmp_path, "census-ps", ["--workers", "2", "--ps", "1"], [], steps)
    run.wait_log("chief-0", r"step 10: checkpoint")
    first = run.processes()
    run.preempt("worker-0")
    assert run.end() == 0, run.output()[-4000:]
    record, tasks, history = run.record()
    assert record.state is JobState.SUCCEEDED
    # The chief ran every epoch of an uninterrupted run (its last checkpoint was written), from step 0.
    # TensorFlow's ClusterCoordinator runs a step at least once: the step the preempted worker
    # was running may have reached the ps before it died, and is run again elsewhere, so the
    # optimizer's count is the uninterrupted run's, or one more (one step in flight per worker).
    metrics = _metrics(job_dir)
    assert metrics["resumed_from_step"] == 0 and steps <= metrics["global_step"] <= steps + 1, metrics
    assert f"step {metrics['global_step']}: checkpoint" in run.log("chief-0")  # the last epoch's
    assert (tasks["worker-0"].restarts, tasks["worker-1"].restarts, tasks["chief-0"].restarts) == (1, 0, 0)
    assert [r.reason for r in tasks["worker-0"].restart_history] == ["preempted"]
    assert any(m.startswith("preempting worker-0 (tfjob preempt): SIGTERM now") for m in history)
    assert any(m.startswith("worker-0 restarted at 127.0.0.1:") for m in history)
    assert_no_survivors(first + run.processes())


def test_the_chief_preempted_checkpoints_and_the_job_resumes_from_it_on_its_second_attempt(tmp_path: Path) -> None:
    steps = 300
    run, job_dir = _census(
        tmp_path, "census-ps", ["--workers", "1", "--ps", "1"], ["--restart-policy", "Never", "--max-restarts", "1"], steps
    )
    run.wait_log("chief-0", r"step 10: checkpoint")
    first = run.processes()
    run.preempt("chief-0")
    saved = int(run.wait_log("chief-0", r"SIGTERM \(preempted\): step (\d+): checkpoint").group(1))
    assert run.end() == 0, run.output()[-4000:]
    record, tasks, history = run.record()
    assert record.state is JobState.SUCCEEDED and len(record.extra["attempts"]) == 1
    metrics = _metrics(job_dir)
    # Resumed from the checkpoint written in the grace period: no step before it ran again.
    assert metrics["resumed_from_step"] == saved >= 10 and metrics["global_step"] == steps
    assert f"at step {saved}" in run.log("chief-0")
    assert (job_dir / "model" / "saved_model.pb").is_file()
    assert tasks["chief-0"].restarts == 1 and [r.reason for r in tasks["chief-0"].restart_history] == ["job restart"]
    assert any(
        m.startswith("restarting the whole job (1/1 of --max-restarts) after: task chief-0 exited with code 143 after its preemption")
        for m in history
    )
    assert_no_survivors(first + run.processes())


def test_a_multi_worker_job_is_recovered_by_a_whole_job_restart_from_its_checkpoint(tmp_path: Path) -> None:
    steps = 200
    run, job_dir = _census(tmp_path, "census-multiworker", ["--workers", "1"], ["--restart-policy", "Never", "--max-restarts", "1"], steps)
    run.wait_log("chief-0", r"step 10: checkpoint")
    first = run.processes()
    run.preempt("worker-0", grace="10s")
    assert run.end() == 0, run.output()[-4000:]
    record, tasks, history = run.record()
    assert record.state is JobState.SUCCEEDED and len(record.extra["attempts"]) == 1
    metrics = _metrics(job_dir)
    assert metrics["global_step"] == steps and metrics["resumed_from_step"] >= 10 and metrics["resumed_from_step"] % 10 == 0
    assert {name: t.restarts for name, t in tasks.items()} == {"chief-0": 1, "worker-0": 1}
    # Either the preempted worker's end or the chief's failed collective ends the attempt first.
    # The launcher's answer names the request it answers (its token).
    assert any(
        re.fullmatch(r"preempting worker-0 \(tfjob preempt\): SIGTERM now, SIGKILL after 10s \(request [0-9a-f]+\)", m) for m in history
    )
    assert any(m.startswith("restarting the whole job (1/1 of --max-restarts) after: task ") for m in history)
    assert_no_survivors(first + run.processes())


PS_TUTORIAL = """\
# The layout of TensorFlow's parameter-server tutorial as separate processes (as in
# test_fidelity_trainers), trained long enough to lose a worker in the middle.
import os
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    os.environ["GRPC_FAIL_FAST"] = "use_caller"
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc", start=True)
    print("serving", flush=True)
    server.join()
else:
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    features = tf.random.stateless_uniform((16, 10), seed=(3, 4))
    labels = tf.random.stateless_uniform((16,), seed=(5, 6))
    data = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(4).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
        model.compile(tf.keras.optimizers.legacy.SGD(), loss="mse", steps_per_execution=5)
    out = os.environ["OUT"]
    said = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: print("epoch", epoch + 1, "done", flush=True))
    model.fit(data, epochs=8, steps_per_epoch=40, callbacks=[
        tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(out, "ckpt")),
        tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(out, "backup")),
        said,
    ])
    print("trained", int(model.optimizer.iterations.numpy()), "steps", flush=True)
"""


def test_the_parameter_server_tutorial_layout_trains_through_a_worker_preemption(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ps_tutorial.py").write_text(PS_TUTORIAL)
    run = Run(
        tmp_path,
        [str(src), "--script", "ps_tutorial.py", "--workers", "2", "--ps", "1", "--grace", "2", "--env", f"OUT={tmp_path / 'out'}"],
    )
    run.wait_log("chief-0", r"^epoch 1 done")
    first = run.processes()
    run.preempt("worker-1")
    assert run.end() == 0, run.output()[-4000:]
    # Every step ran: the coordinator gave the lost worker's closures to the other, and to it again
    # once restarted (at least once each: a closure cut short may have applied part of its steps).
    trained = re.search(r"^trained (\d+) steps", run.log("chief-0"), re.M)
    assert trained and int(trained.group(1)) >= 320, run.log("chief-0")[-3000:]
    record, tasks, history = run.record()
    assert record.state is JobState.SUCCEEDED and tasks["worker-1"].restarts == 1
    assert any(m.startswith("worker-1 restarted at 127.0.0.1:") for m in history)
    assert_no_survivors(first + run.processes())
