"""Capacity on Kubernetes (issue 37.1): a pod no node fits and a job Kueue has not admitted,
diagnosed on `tfjob status` through the fake Kubernetes API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from helpers import CRDS
from fakes.kube_api import FakeKube, kube_fixture
from tfjob.backends.kubeflow.status import parse_jobset_state
from tfjob.cli.main import app
from tfjob.model import JobState

GPU = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
       "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available."}  # fmt: skip


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def submit(fake: FakeKube, tmp_path: Path, name: str, *extra: str) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    argv = ["submit", "--backend", "kubeflow", "--kubeconfig", kubeconfig, "--image", "r/x:1", "-m", "trainer.task",
            "--workers", "1", "--display-name", name, "--async", *extra]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output


def test_a_gpu_pod_no_node_fits_is_diagnosed(fake: FakeKube, tmp_path: Path) -> None:
    submit(fake, tmp_path, "big")
    fake.advance("default", "big", "Created")
    fake.pods[("default", fake.pod_name("big", "worker-0"))].obj["status"]["conditions"] = [GPU]
    shown = CliRunner().invoke(app, ["status", "default/big"])
    assert shown.exit_code == 0, shown.output
    assert "diagnosis (worker-0): no node can take the pod: not enough nvidia.com/gpu" in shown.stdout
    assert "fix: no node of the cluster fits the pod: add nodes with free nvidia.com/gpu" in shown.stdout
    data = json.loads(CliRunner().invoke(app, ["status", "default/big", "--json"]).stdout)
    assert [d["code"] for d in data["diagnoses"]] == ["no-node-fits"]


def test_a_job_kueue_has_not_admitted_is_diagnosed(fake: FakeKube, tmp_path: Path) -> None:
    submit(fake, tmp_path, "queued", "--queue", "team-a")
    tfjob = fake.tfjobs[("default", "queued")]
    tfjob.setdefault("status", {})["conditions"] = [
        {"type": "Suspended", "status": "True", "reason": "TFJobSuspended", "message": "TFJob queued is suspended."}
    ]
    data = json.loads(CliRunner().invoke(app, ["status", "default/queued", "--json"]).stdout)
    assert data["state"] == "QUEUED" and "Kueue has not admitted the TFJob yet (LocalQueue team-a)" in data["message"]
    [d] = data["diagnoses"]
    assert d["code"] == "queue-not-admitted" and "kueue.x-k8s.io/queue-name" in d["fix"]


def test_a_suspended_job_without_a_queue_says_its_own_words() -> None:
    jobset = {"metadata": {"name": "j"}, "status": {"conditions": [{"type": "Suspended", "status": "True", "message": "by hand"}]}}
    assert parse_jobset_state(jobset) == (JobState.QUEUED, "by hand")
