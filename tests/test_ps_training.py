"""A real parameter-server job through tfjob-bootstrap processes (legacy ``master`` TF_CONFIGs).

Three processes on free 127.0.0.1 ports, each given the TF_CONFIG AI Platform (runtime
1.x) would write: the cluster's primary replica is ``master``. Training only works if
the bootstrap renames it ``chief`` (TF2 strategies reject ``master``) and runs
``tf.distribute.Server`` for the ps and the worker. The chief's model variables must
live on the ps. Every process must be gone at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import requires_tf

pytestmark = [requires_tf, pytest.mark.slow, pytest.mark.tf]

TRAINER = """\
import json
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)  # the same start on every run: "the loss fell" is then not luck
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
strategy = tf.distribute.ParameterServerStrategy(resolver)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")

rng = np.random.default_rng(0)
x = rng.random((64, 4), dtype=np.float32)
y = x @ np.array([[1.0], [2.0], [-1.0], [0.5]], dtype=np.float32)


def dataset_fn(input_context):
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)


history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=3, steps_per_epoch=16, verbose=0)
print(json.dumps({
    "task": resolver.task_type,
    "loss": [float(v) for v in history.history["loss"]],
    "devices": sorted({v.device for v in model.variables}),
    "argv": sys.argv[1:],
}), flush=True)
"""


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def test_parameter_server_training_through_bootstrap_with_master_tf_configs(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "trainer").mkdir(parents=True)
    (src / "trainer" / "__init__.py").write_text("")
    (src / "trainer" / "task.py").write_text(TRAINER)
    chief, worker, ps = (f"127.0.0.1:{p}" for p in _free_ports(3))
    cluster = {"master": [chief], "worker": [worker], "ps": [ps]}
    job = {"scale_tier": "CUSTOM", "python_module": "trainer.task", "runtime_version": "1.15"}

    base_env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    base_env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    try:
        # Servers first, the chief last: the order a platform does not promise either,
        # but it keeps the chief's connection wait short on a 2-core machine.
        for name, task_type in (("ps-0", "ps"), ("worker-0", "worker"), ("master-0", "master")):
            tf_config = {"cluster": cluster, "task": {"type": task_type, "index": 0}, "job": job, "environment": "cloud"}
            logs[name] = tmp_path / f"{name}.log"
            with open(logs[name], "wb") as log:
                procs[name] = subprocess.Popen(
                    # A chief-only trainer: the bootstrap serves ps and workers, and gives TensorFlow 2
                    # its chief rather than AI Platform's master — both explicit choices.
                    [
                        sys.executable,
                        "-m",
                        "tfjob.container.bootstrap",
                        "--module",
                        "trainer.task",
                        "--strategy",
                        "parameter-server",
                        "--tf-config",
                        "tf2",
                        "--check-port",
                        "--",
                        "--steps",
                        "4",
                    ],
                    cwd=src,
                    env={**base_env, "TF_CONFIG": json.dumps(tf_config)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, as the local launcher does
                )
        code = procs["master-0"].wait(timeout=420)
        chief_log = logs["master-0"].read_text()
        assert code == 0, chief_log[-3000:]
        # The ps and the worker serve until stopped: they never exit on their own.
        assert procs["ps-0"].poll() is None, logs["ps-0"].read_text()[-2000:]
        assert procs["worker-0"].poll() is None, logs["worker-0"].read_text()[-2000:]

        report = json.loads(chief_log.strip().splitlines()[-1])
        assert report["task"] == "chief"  # master was renamed for TensorFlow 2
        assert report["argv"] == ["--steps", "4"]
        assert len(report["loss"]) == 3 and all(v == v for v in report["loss"])  # three epochs, no NaN
        assert report["loss"][-1] < report["loss"][0]
        assert report["devices"] and all(d.startswith("/job:ps/replica:0/task:0") for d in report["devices"])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    # SIGTERM ended the servers the default way (the bootstrap restores it for join()).
    assert procs["ps-0"].returncode == -signal.SIGTERM
    assert procs["worker-0"].returncode == -signal.SIGTERM
    for name, proc in procs.items():
        with pytest.raises(ProcessLookupError, match="No such process"):
            os.killpg(proc.pid, 0)  # nothing of that task's process group is left
