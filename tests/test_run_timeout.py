"""``Job(...).run(timeout=…)`` means the same on every backend: the timeout error, and nothing
left running (issue 14: the timeout was ignored whenever the backend had its own ``run``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import SHARED
from fakes.kube_api import FakeKube, kube_fixture
from fakes.vertex_api import FakeVertex

from tfjob import Job
from tfjob.backends.base import JobState
from tfjob.errors import JobTimeoutError
from tfjob.store import JobStore


@pytest.fixture
def slow_trainer(tmp_path: Path) -> Path:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("import time\ntime.sleep(4)\nprint('done')\n")
    return pkg


def test_local(slow_trainer: Path) -> None:
    started = time.monotonic()
    with pytest.raises(JobTimeoutError, match=r"did not end within 0.5s, so it was cancelled \(CANCELLED\)"):
        Job(str(slow_trainer), "trainer.task", workers=1, grace=1.0).run(timeout=0.5)
    assert time.monotonic() - started < 4.0  # it did not wait for the trainer
    with JobStore() as store:
        (record,) = store.list()
        assert record.state is JobState.CANCELLED
        assert all(t.state is not JobState.RUNNING for t in store.tasks(record.id))


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(SHARED / "data" / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def test_kubeflow(kube: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace="default"))
    job = Job(module="trainer.task", image="img:1", workers=1, backend="kubeflow", kubeconfig=kubeconfig, name="slow")
    with pytest.raises(JobTimeoutError, match="so it was cancelled"):
        job.run(timeout=0.3)
    assert ("default", "slow") not in kube.tfjobs  # deleted: nothing runs on


@pytest.fixture
def vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVertex]:
    with FakeVertex() as server:
        monkeypatch.setenv("TFJOB_VERTEX_ANONYMOUS", "1")
        monkeypatch.setenv("TFJOB_VERTEX_POLL_INTERVAL", "0.02")
        server.script = ("JOB_STATE_QUEUED",) + ("JOB_STATE_RUNNING",) * 1000
        yield server


def test_vertex(vertex: FakeVertex) -> None:
    job = Job(
        module="trainer.task", image="gcr.io/p/t:1", workers=1, backend="vertex", project="p", region="us-central1",
        api_endpoint=vertex.endpoint,
    )  # fmt: skip
    with pytest.raises(JobTimeoutError, match="so it was cancelled"):
        job.run(timeout=0.3)
    cancels = [path for method, path, _ in vertex.requests if method == "POST" and path.endswith(":cancel")]
    assert len(cancels) == 1
