"""Small trainers that behave like real programs written by others, run through ``tfjob submit``.

Each stands for a family of real programs (TensorFlow's tutorials, the Kubeflow operator's
examples, Google's cloudml-samples): they do their own dispatch, parse their own arguments
strictly, are files with hyphens in their names, or have no chief. What they see must be
what the platform of the dialect gives them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import BIN, need_module

TFJOB = str(BIN / "tfjob")

MASTER_DISPATCH = """\
import json, os, sys
# Google's census TF-core sample: dispatch on TF_CONFIG's task type, `master` included.
config = json.loads(os.environ.get("TF_CONFIG", "{}"))
task = config.get("task", {})
out = os.environ["OUT"]
os.makedirs(out, exist_ok=True)
if task.get("type") in ("master", "chief"):
    import time
    others = sum(len(v) for k, v in config["cluster"].items() if k not in ("master", "chief"))
    deadline = time.time() + 60
    while len(os.listdir(out)) < others and time.time() < deadline:  # the others report first
        time.sleep(0.05)
    open(os.path.join(out, "trained-by-" + task["type"]), "w").close()
elif task.get("type") in ("ps", "worker"):
    open(os.path.join(out, task["type"] + str(task["index"])), "w").close()
"""

STRICT_ARGS = """\
import argparse
# Kubeflow's dist-mnist: argparse without parse_known_args; an unknown flag exits 2.
parser = argparse.ArgumentParser()
parser.add_argument("--train_steps", type=int, required=True)
args = parser.parse_args()
print("steps", args.train_steps)
"""

HYPHENATED = """\
import json, os, sys
print("ran", os.path.basename(sys.argv[0]), json.loads(os.environ.get("TF_CONFIG", "{}")).get("task"))
"""


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _submit(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([TFJOB, "submit", *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize(
    "flags, primary",
    [(["--dialect", "ai-platform", "--use-master"], "master"), (["--dialect", "ai-platform", "--use-chief"], "chief"),
     (["--dialect", "vertex"], "chief"), (["--dialect", "kubeflow"], "chief")],
)  # fmt: skip
def test_a_program_that_dispatches_on_master_trains(tmp_path: Path, flags: list[str], primary: str) -> None:
    # Issue 15.6: under --use-master the chief must see `master`, as AI Platform writes it;
    # rewritten to `chief`, this program took no branch and "succeeded" having trained nothing.
    src = _tree(tmp_path / "src", {"sample/__init__.py": "", "sample/task.py": MASTER_DISPATCH})
    out = tmp_path / "out"
    done = _submit(str(src), "-m", "sample.task", "--workers", "2", "--ps", "1", *flags, env={"OUT": str(out)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / f"trained-by-{primary}").exists()
    assert {p.name for p in out.iterdir()} >= {"ps0", "worker0", "worker1"}  # every task ran the module


@pytest.mark.parametrize("dialect, passes_job_dir", [("vertex", False), ("kubeflow", False), ("ai-platform", True)])
def test_a_strict_argument_parser_gets_job_dir_only_where_the_platform_passes_it(
    tmp_path: Path, dialect: str, passes_job_dir: bool
) -> None:
    # Issue 15.8: Vertex AI and the Kubeflow operator pass no --job-dir; AI Platform does.
    src = _tree(tmp_path / "src", {"mnist/__init__.py": "", "mnist/task.py": STRICT_ARGS})
    done = _submit(
        str(src), "-m", "mnist.task", "--workers", "1", "--dialect", dialect, "--job-dir", str(tmp_path / "jd"), "--", "--train_steps", "3"
    )
    if passes_job_dir:
        # What the platform would do to this program: it exits 2 on the unknown flag.
        assert done.returncode == 1 and "unrecognized arguments: --job-dir" in done.stderr
    else:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "steps 3" in done.stderr


@pytest.mark.parametrize("dialect", ["vertex", "ai-platform", "kubeflow"])
def test_hyphenated_modules_and_scripts_run_as_python_runs_them(tmp_path: Path, dialect: str) -> None:
    # Issue 15.9: `python -m multi_worker_strategy-with-keras` runs; Kubeflow's examples are scripts.
    src = _tree(tmp_path / "src", {"multi_worker_strategy-with-keras.py": HYPHENATED, "dist-mnist.py": HYPHENATED})
    as_module = _submit(str(src), "-m", "multi_worker_strategy-with-keras", "--workers", "1", "--dialect", dialect)
    assert as_module.returncode == 0, as_module.stderr[-3000:]
    assert "ran multi_worker_strategy-with-keras.py" in as_module.stderr
    as_script = _submit(str(src), "--script", "dist-mnist.py", "--workers", "1", "--dialect", dialect)
    assert as_script.returncode == 0, as_script.stderr[-3000:]
    assert "ran dist-mnist.py" in as_script.stderr


def test_a_script_is_refused_where_the_platform_runs_a_module(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"dist-mnist.py": HYPHENATED})
    done = subprocess.run(
        [TFJOB, "render", str(src), "--script", "dist-mnist.py", "--backend", "vertex"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pythonModule" in done.stderr


MWMS_WORKER0_CHIEF = """\
import json, os, sys
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf
# TensorFlow's multi-worker Keras tutorial: workers only, worker 0 is the chief and saves.
config = json.loads(os.environ["TF_CONFIG"])
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer="sgd", loss="mse")
x = tf.random.stateless_uniform((64, 2), seed=(1, 2))
y = tf.reduce_sum(x, axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8 * strategy.num_replicas_in_sync).repeat()
model.fit(ds, steps_per_epoch=2, epochs=1, verbose=0)
task = config["task"]
is_chief = task["type"] == "worker" and task["index"] == 0
out = os.environ["OUT"] if is_chief else os.path.join(os.environ["OUT"], "tmp-" + str(task["index"]))
model.save(os.path.join(out, "model"))
print("replicas", strategy.num_replicas_in_sync, "chief" if is_chief else "worker", flush=True)
"""


@pytest.mark.tf
@pytest.mark.slow
def test_multi_worker_with_worker_0_as_chief_runs_without_a_chief(tmp_path: Path) -> None:
    # Issue 15.7: the layout of TensorFlow's multi-worker tutorials and Kubeflow's examples.
    need_module("tensorflow", "pip install -e '.[tf]'")
    src = _tree(tmp_path / "src", {"mw/__init__.py": "", "mw/task.py": MWMS_WORKER0_CHIEF})
    out = tmp_path / "out"
    done = _submit(str(src), "-m", "mw.task", "--no-chief", "--workers", "2", "--dialect", "kubeflow", env={"OUT": str(out)}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SUCCEEDED: worker-0 exited with code 0" in done.stderr
    assert "replicas 2 chief" in done.stderr  # two replicas in sync: no third, uncounted chief
    assert (out / "model").is_dir()
    refused = _submit(str(src), "-m", "mw.task", "--no-chief", "--workers", "2")
    assert refused.returncode == 2 and "--dialect kubeflow" in refused.stderr


PS_TUTORIAL = """\
# The layout of TensorFlow's parameter-server tutorial run as separate processes: workers
# and parameter servers start a server and join it; the chief coordinates model.fit with
# the callbacks the tutorial uses (TensorBoard, ModelCheckpoint, BackupAndRestore).
import os
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    os.environ["GRPC_FAIL_FAST"] = "use_caller"
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc", start=True)
    server.join()
else:
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(min_shard_bytes=256 << 10, max_shards=2)
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    features = tf.random.stateless_uniform((16, 10), seed=(3, 4))
    labels = tf.random.stateless_uniform((16,), seed=(5, 6))
    data = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(4).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
        model.compile(tf.keras.optimizers.legacy.SGD(), loss="mse", steps_per_execution=5)
    out = os.environ["OUT"]
    model.fit(data, epochs=2, steps_per_epoch=10, callbacks=[
        tf.keras.callbacks.TensorBoard(log_dir=os.path.join(out, "log")),
        tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(out, "ckpt")),
        tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(out, "backup")),
    ])
    print("coordinated by", resolver.task_type, "over", len(resolver.cluster_spec().as_dict()["ps"]), "ps", flush=True)
"""


@pytest.mark.tf
@pytest.mark.slow
def test_the_parameter_server_tutorials_program_trains_with_its_callbacks(tmp_path: Path) -> None:
    # A program that starts its own servers, as the tutorial does, and writes TensorBoard
    # summaries: TensorFlow 2.21 no longer brings TensorBoard, the tf extra does (as the
    # platforms' TensorFlow images have it).
    need_module("tensorflow", "pip install -e '.[tf]'")
    src = _tree(tmp_path / "src", {"ps_tutorial.py": PS_TUTORIAL})
    out = tmp_path / "out"
    done = _submit(str(src), "--script", "ps_tutorial.py", "--workers", "2", "--ps", "2", env={"OUT": str(out)}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "coordinated by chief over 2 ps" in done.stderr
    assert "SUCCEEDED: chief-0 exited with code 0" in done.stderr
    assert list((out / "log").rglob("events.out.tfevents.*")), "no TensorBoard summaries written"
    assert (out / "ckpt").is_dir()
