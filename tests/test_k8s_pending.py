"""Why is it Pending? (issue 16.9): the scheduler's, the kubelet's and the eviction's
reasons reach `tfjob status` and the follow loop, through the Kubernetes stand-in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from helpers import CRDS
from fakes.kube_api import FakeKube, kube_fixture
from tfjob.cli.main import app
from tfjob.backends.kubeflow.status import MAX_REASON_CHARS, pod_reason

CRD = CRDS / "kubeflow.org_tfjobs.yaml"
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available."}  # fmt: skip


def _pod(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "j-worker-0", "labels": {}}, "status": status}


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ({"phase": "Pending", "conditions": [UNSCHEDULABLE]}, "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."),
        ({"phase": "Pending", "containerStatuses": [{"name": "tensorflow", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"r/x:1\""}}}]},
         'ImagePullBackOff: Back-off pulling image "r/x:1"'),
        ({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, "CrashLoopBackOff"),
        ({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}, "Evicted: The node was low on resource: memory."),
        ({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "state": {"running": {}}, "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]},
         "OOMKilled: the container used more memory than its limit (raise --memory)"),
        ({"phase": "Pending", "containerStatuses": [{"name": "tensorflow", "state": {"waiting": {"reason": "ContainerCreating"}}}]}, None),
        ({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "state": {"running": {}}}]}, None),
    ],
)  # fmt: skip
def test_the_reason_of_a_pod(status: dict[str, Any], reason: str | None) -> None:
    said = pod_reason(_pod(status))
    assert said == reason or (reason is not None and said is not None and said.startswith(reason))


def test_a_long_message_is_bounded() -> None:
    said = pod_reason(_pod({"conditions": [{**UNSCHEDULABLE, "message": "x " * 10000}]}))
    assert said is not None and len(said) == MAX_REASON_CHARS


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRD, tmp_path, monkeypatch)


def test_the_follow_loop_says_why_a_job_is_pending(fake: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))

    def unschedulable() -> None:
        fake.advance("default", "big", "Created")
        pod = fake.pods[("default", fake.pod_name("big", "worker-1"))].obj
        pod["status"]["conditions"] = [UNSCHEDULABLE]

    def schedulable() -> None:
        fake.pods[("default", fake.pod_name("big", "worker-1"))].obj["status"]["conditions"] = []
        fake.advance("default", "big", "Running")

    fake.script("default", "big", unschedulable, lambda: None, schedulable, lambda: fake.advance("default", "big", "Succeeded"))
    from tfjob.job import Job
    from tfjob.platforms import TFJob

    Job(backend=TFJob(kubeconfig=kubeconfig), image="r/x:1", module="trainer.task", workers=2, name="big", poll_interval=0.01).run()
    waiting = [line for line in capsys.readouterr().err.splitlines() if "waiting:" in line]
    # Said once while it lasts, not on every poll.
    assert waiting == [
        "tfjob: job default/big waiting: worker-1 Unschedulable: 0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available."
    ]


def test_status_shows_the_reason_per_task(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    argv = ["submit", "--backend", "kubeflow", "--kubeconfig", kubeconfig, "--image", "r/x:1", "-m", "trainer.task",
            "--workers", "1", "--display-name", "pull", "--async"]  # fmt: skip
    assert CliRunner().invoke(app, argv).exit_code == 0
    fake.advance("default", "pull", "Created")
    pod = fake.pods[("default", fake.pod_name("pull", "worker-0"))].obj
    pod["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ErrImagePull", "message": "not found"}}
    shown = CliRunner().invoke(app, ["status", "default/pull"])
    assert shown.exit_code == 0, shown.stderr
    assert "waiting   worker-0 ErrImagePull: not found" in shown.stdout
    assert "WHY" in shown.stdout and "ErrImagePull: not found" in shown.stdout.split("tasks", 1)[1]
    data = json.loads(CliRunner().invoke(app, ["status", "default/pull", "--json"]).stdout)
    assert [t["reason"] for t in data["tasks"]] == [None, "ErrImagePull: not found"]
