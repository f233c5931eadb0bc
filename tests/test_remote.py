"""``tfjob.remote`` end to end: a function run as a local cluster returns the chief's value or
re-raises the function's exception with its remote traceback; on Vertex AI (dry run and the
local stand-in with gcp-storage-emulator) and JobSet (render) it ships a package holding the
pickled call and its requirements, staged once; a by-value function is refused in one line
for an image of another Python, before anything is submitted."""

from __future__ import annotations

import base64
import io
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import tfjob
from helpers import requires_tf
from local_helpers import assert_no_survivors, job_processes, no_leftover_jobs  # noqa: F401 - the fixture
from tfjob import JobSet, SpecError, Vertex
from tfjob.runtime.store import JobStore
from tfjob.functions import RemoteTraceback

from test_vertex_e2e import emulator, fake  # noqa: F401 - fixtures

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def train(steps: int, lr: float = 0.05) -> dict[str, Any]:
    """The same function on every cluster: parameter servers when the cluster has them, else
    every worker in one MultiWorkerMirroredStrategy."""
    import numpy as np
    import tensorflow as tf

    if lr <= 0:
        raise ValueError("bad lr")
    task = tfjob.task()
    tf.keras.utils.set_random_seed(0)
    if "ps" in task.cluster.jobs:
        strategy: Any = tf.distribute.ParameterServerStrategy(tfjob.cluster_resolver())
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=tfjob.cluster_resolver())
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        model.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse")
    rng = np.random.default_rng(0)
    x = rng.random((64, 4), dtype=np.float32)
    y = x @ np.array([[1.0], [2.0], [-1.0], [0.5]], dtype=np.float32)
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8), epochs=2, steps_per_epoch=steps, verbose=0)
    return {"task": task.role, "workers": strategy.num_replicas_in_sync, "loss": [float(v) for v in history.history["loss"]]}


@requires_tf
@pytest.mark.slow
@pytest.mark.tf
def test_multi_worker_returns_the_chiefs_value() -> None:
    remote = tfjob.remote(workers=2, strategy="multi-worker", quiet=True)(train)
    result = remote.run(4)
    assert result["task"] == "chief" and result["workers"] == 3  # chief + 2 workers in one all-reduce
    assert len(result["loss"]) == 2
    with JobStore() as store:
        (record,) = store.list()
    assert record.spec["module"] == "tfjob_function.run" and record.name.startswith("train-")
    assert_no_survivors(job_processes(record.id))


def test_the_functions_exception_is_re_raised_with_its_remote_traceback() -> None:
    remote = tfjob.Job.from_function(train, quiet=True)
    with pytest.raises(ValueError, match="bad lr") as raised:
        remote.run(4, lr=0.0)
    assert str(raised.value) == "bad lr"
    cause = raised.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "ValueError: bad lr" in cause.text and "in train" in cause.text and "tfjob_function/run.py" in cause.text
    assert any("task chief-0 of job train-" in note for note in getattr(raised.value, "__notes__", []))
    # The same from another process's handle: get_job(ID).result().
    with JobStore() as store:
        (record,) = store.list()
    with pytest.raises(ValueError, match="bad lr") as again:
        tfjob.get_job(record.id).result()
    assert str(again.value) == "bad lr"


def only_a_worker_fails(seconds: float) -> str:
    """Raises on worker 0 at once; the chief waits long enough for that failure to end the job."""
    import time

    task = tfjob.task()
    if task.role == "worker":
        raise KeyError(f"worker {task.index} has no shard")
    time.sleep(seconds)
    return "the chief's value"


def test_a_workers_exception_that_ends_the_job_comes_back_as_its_own_type() -> None:
    """Every task runs the call (multi-worker): a worker's call raising ends the job before the
    chief's has returned; the caller gets the worker's exception, its traceback and its task."""
    remote = tfjob.remote(workers=1, strategy="multi-worker", quiet=True)(only_a_worker_fails)
    with pytest.raises(KeyError, match="worker 0 has no shard") as raised:
        remote.run(120)
    cause = raised.value.__cause__
    assert isinstance(cause, RemoteTraceback) and "in only_a_worker_fails" in cause.text
    assert any("task worker-0 of job only-a-worker-fails-" in note for note in getattr(raised.value, "__notes__", []))
    with JobStore() as store:
        (record,) = store.list()
    assert_no_survivors(job_processes(record.id))
    with pytest.raises(KeyError, match="worker 0 has no shard"):
        tfjob.get_job(record.id).result()


def _members(sdist: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(sdist), mode="r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _check_package(files: dict[str, bytes]) -> None:
    import pickletools

    assert {"tfjob_function/function.pkl", "tfjob_function/run.py", "tfjob_function/__init__.py"} <= set(files)
    pickletools.dis(files["tfjob_function/function.pkl"], out=io.StringIO())  # a pickle (read, not loaded)
    requires = files["PKG-INFO"].decode()
    assert "Requires-Dist: numpy" in requires
    # cloudpickle travels with the package, this process's own: the task asks no index for it.
    assert "cloudpickle" not in requires
    assert files["tfjob_function/_vendor/cloudpickle/__init__.py"] == (Path(cloudpickle.__file__).parent / "__init__.py").read_bytes()
    assert "tensorflow" not in requires  # the image brings its TensorFlow


def test_vertex_dry_run_and_stand_in_ship_the_pickled_function_once(emulator: Any, fake: Any) -> None:  # noqa: F811
    settings = Vertex(project="p", region="us-central1", staging_bucket="gs://b", api_endpoint=fake.endpoint,
                      executor_image=f"us-docker.pkg.dev/p/r/trainer-py3{sys.version_info[1]}:1")  # fmt: skip
    remote = tfjob.remote(workers=2, ps=1, backend=settings, quiet=True)(train)
    body = remote.render(16)
    pools = body["jobSpec"]["workerPoolSpecs"]
    args = pools[0]["pythonPackageSpec"]["args"]
    assert "tfjob_function.run" in args and any(a.startswith("gs://b/tfjob/functions/tfjob-results/") for a in args)
    assert not list(emulator.list_blobs("b"))  # a dry run uploads nothing

    first, second = remote.submit(16), remote.submit(16)
    with JobStore() as store:
        uploaded = [store.get(h.id).extra["bytes_uploaded"] for h in (first, second)]
    assert uploaded[0] > 0 and uploaded[1] == 0  # the unchanged call is staged already
    (sdist,) = [b for b in emulator.list_blobs("b") if b.name.endswith("tfjob_function-0.0.0.tar.gz")]
    _check_package(_members(sdist.download_as_bytes()))
    created = fake.created_bodies()
    assert len(created) == 2
    results = [next(a for a in b["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["args"] if a.startswith("gs://")) for b in created]
    assert results[0] != results[1]  # each call its own result


def test_jobset_render_ships_the_pickled_function_in_its_configmap() -> None:
    remote = tfjob.remote(workers=2, ps=1, image="tfjob:0.1.0", job_dir="gs://b/fn", backend=JobSet(namespace="ml"), quiet=True)(train)
    manifests = remote.render(16)["items"]
    (configmap,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    (name, data) = next(iter(configmap["binaryData"].items()))
    assert name == "tfjob_function-0.0.0.tar.gz"
    _check_package(_members(base64.b64decode(data)))
    assert "gs://b/fn/tfjob-results/" in json.dumps(manifests)


@pytest.mark.parametrize(
    ("backend", "image", "said"),
    [
        (
            Vertex(project="p", region="us-central1", staging_bucket="gs://b"),
            None,
            "prebuilt TensorFlow image (executor_image not given) runs Python 3.10",
        ),
        (JobSet(namespace="ml"), "python:3.9-slim", "runs Python 3.9"),
        (JobSet(namespace="ml"), "registry.example/trainer:1", "runs a Python tfjob does not know"),
    ],
)
def test_a_by_value_function_on_an_image_of_another_python_is_refused_in_one_line(backend: Any, image: str | None, said: str) -> None:
    remote = tfjob.remote(workers=1, backend=backend, image=image, job_dir="gs://b/fn", quiet=True)(lambda lr: lr * 2)
    with pytest.raises(SpecError, match="pickled by value") as refused:
        remote.submit(0.1)
    message = str(refused.value)
    assert "\n" not in message and said in message and f"only Python {PY}" in message
    with JobStore() as store:
        assert not store.list()  # nothing was submitted


def test_the_runner_writes_to_cloud_storage_and_the_caller_reads_it_back(emulator: Any, tmp_path: Path) -> None:  # noqa: F811
    """What a Vertex AI chief does with its result (gs://), through the storage emulator: the
    package's runner, run as the bootstrap runs it, writes; the handle's reader unpickles."""
    import subprocess

    from tfjob.functions.result import load_outcome, read_result

    remote = tfjob.remote(quiet=True)(lambda a, b: {"sum": a + b})
    built = remote.package(2, b=3)
    uri = "gs://b/fn/tfjob-results/one.pkl"
    env = {**os.environ, "TFJOB_TASK_TYPE": "chief", "TFJOB_TASK_INDEX": "0", "TFJOB_IS_CHIEF": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tfjob_function.run", "--result", uri],
        cwd=built.directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data = read_result(uri, lambda: emulator)
    assert data is not None and load_outcome(data, uri) == {"ok": True, "task": "chief-0", "value": {"sum": 5}}
    assert read_result("gs://b/fn/tfjob-results/none.pkl", lambda: emulator) is None  # not written (yet)


def test_requirements_given_replace_the_found_ones_and_cloudpickle_is_shipped() -> None:
    given = tfjob.remote(requirements=["pandas>=2"], quiet=True)(train).package(1)
    assert given.requirements == ("pandas>=2",) and not given.found
    assert given.cloudpickle == cloudpickle.__version__
    assert (given.directory / "tfjob_function" / "_vendor" / "cloudpickle" / "cloudpickle.py").is_file()
    assert (given.directory / "requirements.txt").read_text().splitlines() == list(given.requirements)
    found = tfjob.remote(quiet=True)(train).package(1)
    assert "numpy" in found.found and "pandas>=2" not in found.requirements
    again = tfjob.remote(quiet=True)(train).package(1)
    assert again.directory == found.directory and again.digest == found.digest  # an unchanged call: the same package
    with pytest.raises(SpecError, match="requirements"):
        tfjob.remote(requirements=["not a requirement!"], quiet=True)(train).package(1)


def test_an_argument_that_cannot_be_pickled_is_refused_before_anything_runs() -> None:
    import threading

    with pytest.raises(SpecError, match="cannot be pickled.*open files, clients and locks inside it"):
        tfjob.remote(quiet=True)(train).submit(threading.Lock())
    with JobStore() as store:
        assert not store.list()


def test_a_type_checker_sees_the_functions_parameters_and_its_return_value(tmp_path: Path) -> None:
    """``RemoteFunction`` carries the function's signature: ``run``'s arguments are checked and its
    value typed; the decorator's settings are typed as ``Job``'s."""
    import subprocess

    from helpers import ROOT

    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "tfjob").symlink_to(ROOT / "sdk")
    snippet = tmp_path / "notebook.py"
    snippet.write_text(
        "import tfjob\n"
        "\n"
        "\n"
        "@tfjob.remote(workers=tfjob.Replicas(2), ps=1)\n"
        "def train(steps: int, lr: float = 0.1) -> dict[str, float]:\n"
        '    return {"loss": lr * steps}\n'
        "\n"
        "\n"
        "metrics: dict[str, float] = train.run(3, lr=0.2)\n"
        "again: dict[str, float] = tfjob.Job.from_function(train.fn, workers=2).submit(4).result()\n"
        'train.run("3")\n'
        'tfjob.remote(workers="3")\n'
        "role: str = tfjob.task().role\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", "--hide-error-context", str(snippet)],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path / "path")}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    found = [line.split(": error: ", 1)[1] for line in proc.stdout.splitlines() if ": error: " in line]
    assert found == [
        'Argument 1 to "run" of "RemoteFunction" has incompatible type "str"; expected "int"  [arg-type]',
        'No overload variant of "remote" matches argument type "str"  [call-overload]',
    ], proc.stdout + proc.stderr


def test_the_local_backends_other_interpreter_is_asked_its_version(tmp_path: Path) -> None:
    other = tmp_path / "python3.9"
    other.write_text("#!/bin/sh\necho 3.9\n")
    other.chmod(0o755)
    remote = tfjob.remote(backend=tfjob.Local(python=str(other)), quiet=True)(lambda: 1)
    with pytest.raises(SpecError, match=r"python=.*python3\.9 runs Python 3\.9"):
        remote.submit()
    with JobStore() as store:
        assert not store.list()


def test_the_vertex_prebuilt_images_python_is_the_one_their_names_say() -> None:
    from tfjob.backends.vertex.render import PREBUILT_TF_VERSIONS, prebuilt_image
    from tfjob.functions.interpreter import VERTEX_PREBUILT_PYTHON, image_python

    for version in (*PREBUILT_TF_VERSIONS, None):
        for gpu in (False, True):
            assert image_python(prebuilt_image(version, gpu, "europe-west4")) == VERTEX_PREBUILT_PYTHON
    assert image_python("tfjob:0.1.0") == image_python("registry.example/tfjob:0.1.0-gpu") == (3, 11)
    assert image_python("python:3.12-slim") == (3, 12) and image_python("numpy3.9:1") is None


def test_without_cloudpickle_the_call_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob.errors import BackendUnavailableError

    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # an import of it raises ImportError
    with pytest.raises(BackendUnavailableError, match=r"pip install 'tfjob\[remote\]'$"):
        tfjob.remote(quiet=True)(train).submit(1)
