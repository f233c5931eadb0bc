"""``tfjob.remote(image=…)`` on the local backend: every task of the function's job is a container
of that image (podman, rootful, the store of :mod:`podman_ci`), here tfjob's base image as the
session builds it (conftest's ``base_image``: Debian's Python, the same minor version as the
host's, so a function pickled by value loads there). The cluster is 1 chief + 1 worker (no
parameter servers: both call the function, as ``multi-worker``).

``.run()`` returns the chief's value, computed in its container (its role and index from
``tfjob.task()``, its host name the platform's); an exception in the function comes back as its
own type with the remote traceback; the handle reads the result again from another process; no
container or network of the job outlives it; the result file is the one job's, in a directory
of its own (the one path mounted writable)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tfjob
from helpers import need_in_ci
from tfjob.functions import RemoteTraceback
from tfjob.functions.result import result_uri
from tfjob.functions.retention import prune
from tfjob.runtime.store import JobStore

pytestmark = [pytest.mark.containers, pytest.mark.slow]

#: The base image's Python: the stand-in's (Debian bookworm's python3, as TensorFlow 2.18's image has 3.11).
IMAGE_PYTHON = (3, 11)
need_in_ci(
    sys.version_info[:2] == IMAGE_PYTHON,
    f"a function pickled by value loads only on its own Python, and the base image's is {IMAGE_PYTHON[0]}.{IMAGE_PYTHON[1]}",
)


def where(n: int) -> dict[str, Any]:
    """What the task is and where it runs, and a value computed there."""
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    task = tfjob.task()
    print("where", task.role, task.index, flush=True)
    return {
        "role": task.role,
        "index": task.index,
        "cluster": task.cluster.as_dict(),
        "host": socket.gethostname(),
        "python": list(sys.version_info[:2]),
        "uid": os.getuid(),
        "value": sum(i * i for i in range(n)),
    }


@pytest.fixture
def engine(podman_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's podman is the session's (its configuration and store): the local backend
    starts the engine from here."""
    for name in ("CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF"):
        monkeypatch.setenv(name, podman_env[name])
    return podman_env


def _left(env: dict[str, str], job_id: str) -> list[str]:
    """The containers and networks labelled with the job that are still there."""
    out = []
    for kind in ("ps -a", "network ls"):
        done = subprocess.run(
            ["podman", *kind.split(), "-q", "--filter", f"label=tfjob.job={job_id}"], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        out += done.stdout.split()
    return out


def test_a_function_runs_as_containers_of_the_image_and_its_value_comes_back(
    base_image: str, engine: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    # tfjob's base image has no cloudpickle: the package brings the caller's (it used to be a
    # requirement, which every task pip-installed from an index at its start).
    lacks = subprocess.run(["podman", "run", "--rm", "--entrypoint", "python", base_image, "-c", "import cloudpickle"],
                           capture_output=True, text=True, env=engine, timeout=300)  # fmt: skip
    assert lacks.returncode == 1 and "No module named 'cloudpickle'" in lacks.stderr, lacks.stderr
    remote = tfjob.remote(image=base_image, workers=1, container_engine="podman", name="where")(where)
    built = remote.package(10)
    assert built.by_value and built.requirements == ()  # a test module's function: its code goes, and Python 3.11 must load it
    value = remote.run(10)
    assert value["role"] == "chief" and value["index"] == 0 and value["value"] == 285
    assert value["cluster"] == {"chief": ["workerpool0-0:2222"], "worker": ["workerpool1-0:2222"]}
    assert value["python"] == list(sys.version_info[:2]) and value["uid"] == 1000  # the image's user, not this process's
    assert value["host"] == "workerpool0-0"  # Vertex AI's host name of the chief (the default dialect), on the job's network
    out = capfd.readouterr().err
    assert "[chief-0] where chief 0" in out and "SUCCEEDED: chief-0 exited with code 0" in out
    assert re.search(r"^worker-0 +(SUCCEEDED|STOPPED)", out, re.M), out  # it ran (the job ends with its chief)
    with JobStore() as store:
        (record,) = store.list()
    assert record.state.value == "SUCCEEDED" and record.spec["image"] == base_image
    assert _left(engine, record.id) == []
    # Read back again, as another process would (the handle of the job's id).
    assert tfjob.get_job(record.id).result() == value
    uri = result_uri(record.spec["args"])
    assert uri is not None and Path(uri).is_file()
    # The containers wrote into the job's own directory: nothing else of $TFJOB_HOME is mounted.
    assert record.spec["job_dir"] == str(Path(uri).parent.parent)
    own = Path(record.spec["job_dir"])
    assert own.parent == Path(os.environ["TFJOB_HOME"]) / "functions" / "tfjob-results"
    assert own.stat().st_uid == 1000  # podman's :U gave it (it alone) to the image's user
    # Pruned as any result once a day old and named by no record (or by one beyond the newest kept).
    then = time.time() - 2 * 24 * 3600
    for path in [own, *own.rglob("*")]:
        os.utime(path, (then, then))
    assert prune(JobStore()) == []  # its record keeps it
    with JobStore() as store:
        store.remove(record.id)
    assert own in prune(JobStore()) and not own.exists()


def test_the_functions_exception_comes_back_as_its_own_type(base_image: str, engine: dict[str, str]) -> None:
    remote = tfjob.remote(image=base_image, workers=1, container_engine="podman", quiet=True)(where)
    with pytest.raises(ValueError, match="n must be >= 0, not -1") as raised:
        remote.run(-1)
    cause = raised.value.__cause__
    assert isinstance(cause, RemoteTraceback) and "in where" in cause.text and "tfjob_function/run.py" in cause.text
    with JobStore() as store:
        (record,) = store.list()
    assert record.state.value == "FAILED"
    # Both tasks run the call and both raise: whichever ended the job first is the one named
    # (the chief's outcome when it wrote one first, else the worker's, kept beside it).
    notes = getattr(raised.value, "__notes__", [])
    assert any(f"task {task} of job {record.id}" in note for note in notes for task in ("chief-0", "worker-0")), notes
    assert _left(engine, record.id) == []
    with pytest.raises(ValueError, match="n must be >= 0"):
        tfjob.get_job(record.id).result()
