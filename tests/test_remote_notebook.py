"""A function as a distributed job from a Jupyter notebook, run headless by nbclient in a real
kernel: the cell's ``@tfjob.remote(workers=2, ps=1)`` function trains a Keras model with
``ParameterServerStrategy`` on a local 1 + 2 + 1 cluster and the cell gets its evaluation
metrics back; the tasks' lines stream into the cell with their task prefixes; no process
outlives the job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import requires_tf
from local_helpers import assert_no_survivors, job_processes, no_leftover_jobs  # noqa: F401 - the fixture

pytestmark = [requires_tf, pytest.mark.slow, pytest.mark.tf]

SETUP = """\
import tfjob
"""

TRAIN = """\
@tfjob.remote(workers=2, ps=1)
def train(steps, lr=0.05):
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    print("training on", tfjob.task().role, flush=True)
    strategy = tf.distribute.ParameterServerStrategy(tfjob.cluster_resolver())
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        model.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse", metrics=["mae"])
    rng = np.random.default_rng(0)
    x = rng.random((64, 4), dtype=np.float32)
    y = x @ np.array([[1.0], [2.0], [-1.0], [0.5]], dtype=np.float32)

    def dataset_fn(input_context):
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)

    history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=2, steps_per_epoch=steps, verbose=0)
    predicted = model(x)
    return {
        "task": tfjob.task().role,
        "loss": [float(v) for v in history.history["loss"]],
        "mse": float(tf.reduce_mean((predicted - y) ** 2)),
        "mae": float(tf.reduce_mean(tf.abs(predicted - y))),
        "devices": sorted({v.device for v in model.variables}),
    }

metrics = train.run(16)
print("METRICS", json.dumps(metrics))
"""

PENDING = """\
handle = train.submit(4)
print("SUBMITTED", handle.id, flush=True)
"""


def notebook(*cells: str) -> object:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def outputs(cell: object) -> str:
    return "".join(o.get("text", "") for o in cell["outputs"] if o.get("output_type") == "stream")  # type: ignore[index]


def run_notebook(nb: object, cwd: Path) -> None:
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()


def test_a_notebook_cell_trains_with_parameter_servers_and_gets_its_metrics_back(tmp_path: Path) -> None:
    nb = notebook("import json\n" + SETUP, TRAIN, PENDING)
    run_notebook(nb, tmp_path)
    trained, submitted = outputs(nb.cells[1]), outputs(nb.cells[2])  # type: ignore[attr-defined]
    metrics = json.loads(trained.split("METRICS ", 1)[1].splitlines()[0])
    assert metrics["task"] == "chief"
    assert metrics["loss"][-1] < metrics["loss"][0]  # it trained
    assert 0 <= metrics["mse"] < metrics["loss"][0] and metrics["mae"] >= 0
    assert metrics["devices"] and all("/job:ps" in d for d in metrics["devices"])  # the variables live on the ps
    # The tasks' lines came into the cell, named by task; the pickling was said.
    assert "train pickled by value" in trained and "requirements found from its imports: cloudpickle==" in trained
    assert "[chief-0] training on chief" in trained
    assert "job train-" in trained and "SUCCEEDED" in trained
    # .submit() returned at once; the handle's result comes from another process (this one).
    job_id = submitted.split("SUBMITTED ", 1)[1].split()[0]
    import tfjob

    second = tfjob.get_job(job_id).result()
    assert second["task"] == "chief" and len(second["loss"]) == 2
    from tfjob import JobStore

    with JobStore() as store:
        ids = [r.id for r in store.list()]
    assert len(ids) == 2
    for jid in ids:
        assert_no_survivors(job_processes(jid))
