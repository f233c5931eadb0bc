"""``tfjob submit/status/logs/cancel/list`` with ``--backend kubeflow``, against the fake API server.

Through ``click.testing.CliRunner``, and once as real processes. Every error is one
``error: …`` line on stderr with exit 2 (usage) or 1 (failure), never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from helpers import CRDS
from fakes.kube_api import FakeKube, kube_fixture
from tfjob.cli.main import app

IMAGE = "registry.example/trainers/census:1"
CRD = CRDS / "kubeflow.org_tfjobs.yaml"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRD, tmp_path, monkeypatch)


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    return str(fake.write_kubeconfig(tmp_path / "kubeconfig"))


def _submit_args(kubeconfig: str, name: str = "cli-job", *more: str) -> list[str]:
    return [
        "submit", "--backend", "kubeflow", "--kubeconfig", kubeconfig, "--image", IMAGE,
        "--module-name", "trainer.task", "--workers", "2", "--display-name", name, *more,
    ]  # fmt: skip


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_submit_async_status_logs_cancel_and_list(fake: FakeKube, kubeconfig: str) -> None:
    runner = CliRunner()
    result = runner.invoke(app, [*_submit_args(kubeconfig), "--async", "--", "--train-steps", "10"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "default/cli-job\n"
    body = fake.bodies[0]
    assert body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] == [
        "--module", "trainer.task", "--", "--train-steps", "10",
    ]  # fmt: skip

    fake.advance("default", "cli-job", "Created")
    fake.advance("default", "cli-job", "Running")
    fake.write_log("default", "cli-job-worker-1", "worker one says hi\n")
    status = runner.invoke(app, ["status", "default/cli-job", "--json"])
    assert status.exit_code == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["backend"] == "kubeflow" and data["state"] == "RUNNING"
    assert [t["name"] for t in data["tasks"]] == ["chief-0", "worker-0", "worker-1"]
    assert [e["state"] for e in data["events"]] == ["PENDING", "RUNNING"]

    logs = runner.invoke(app, ["logs", "default/cli", "--task", "worker-1"])  # a unique prefix is enough
    assert logs.exit_code == 0, logs.stderr
    assert logs.stdout == "[worker-1] worker one says hi\n"

    listed = runner.invoke(app, ["list", "--backend", "kubeflow", "--json"])
    assert [(j["id"], j["state"]) for j in json.loads(listed.stdout)] == [("default/cli-job", "RUNNING")]

    cancel = runner.invoke(app, ["cancel", "default/cli-job"])
    assert cancel.exit_code == 0, cancel.stderr
    assert fake.tfjobs == {}
    final = runner.invoke(app, ["status", "default/cli-job", "--json"])
    assert json.loads(final.stdout)["state"] == "CANCELLED"


def test_submit_waits_for_the_end_and_exits_0(fake: FakeKube, kubeconfig: str) -> None:
    # The first look at the job finds it finished, so the test never waits.
    fake.script("default", "cli-job", lambda: [fake.advance("default", "cli-job", c) for c in ("Created", "Running", "Succeeded")])
    result = CliRunner().invoke(app, _submit_args(kubeconfig))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "default/cli-job\n"
    assert "tfjob: job default/cli-job SUCCEEDED: TFJob default/cli-job successfully completed." in result.stderr


def test_a_failed_job_exits_1_with_one_line_naming_the_task(fake: FakeKube, kubeconfig: str) -> None:
    def fail() -> None:
        for condition in ("Created", "Running"):
            fake.advance("default", "cli-job", condition)
        fake.advance("default", "cli-job", "Failed", failed_task="worker-0", exit_code=2)

    fake.script("default", "cli-job", fail)
    result = CliRunner().invoke(app, [*_submit_args(kubeconfig), "--quiet"])
    assert result.exit_code == 1
    assert _one_error_line(result.stderr) == (
        "error: job default/cli-job FAILED: TFJob default/cli-job has failed because 1 Worker replica(s) failed. "
        "(task worker-0 exited with code 2)"
    )


@pytest.mark.parametrize(
    ("setup", "code", "message"),
    [
        (lambda f: f.inject(403, method="POST", message="no"), 1, "error: forbidden to create TFJob cli-job in namespace 'default': no;"),
        (lambda f: f.tfjobs.setdefault(("default", "cli-job"), {"metadata": {"name": "cli-job"}}), 2,
         "error: a TFJob named 'cli-job' already exists in namespace 'default';"),
        (lambda f: setattr(f, "crd_installed", False), 1, "error: the TFJob resource (tfjobs.kubeflow.org/v1) is not installed"),
    ],
)  # fmt: skip
def test_api_errors_are_one_line(fake: FakeKube, kubeconfig: str, setup: object, code: int, message: str) -> None:
    setup(fake)  # type: ignore[operator]
    result = CliRunner().invoke(app, [*_submit_args(kubeconfig), "--async"])
    assert result.exit_code == code
    assert _one_error_line(result.stderr).startswith(message)


def test_no_kubeconfig_is_a_usage_error(fake: FakeKube) -> None:
    result = CliRunner().invoke(
        app, ["submit", "--backend", "kubeflow", "--image", IMAGE, "-m", "trainer.task", "--display-name", "j", "--async"]
    )
    assert result.exit_code == 2
    assert _one_error_line(result.stderr).startswith("error: no kubeconfig for --backend kubeflow: pass --kubeconfig FILE")
    assert fake.requests == []


def test_submit_and_status_as_real_processes(fake: FakeKube, kubeconfig: str, tfjob_exe: str, tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": kubeconfig, "HOME": str(tmp_path)}
    submit = subprocess.run(
        [tfjob_exe, "submit", "--backend", "kubeflow", "--namespace", "ml", "--image", IMAGE, "-m", "trainer.task",
         "--ps", "1", "--workers", "1", "--display-name", "proc-job", "--async"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert submit.returncode == 0, submit.stderr
    assert submit.stdout == "ml/proc-job\n"
    assert set(fake.tfjobs) == {("ml", "proc-job")}
    fake.advance("ml", "proc-job", "Created")
    status = subprocess.run([tfjob_exe, "status", "ml/proc-job", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["state"] == "PENDING" and [t["name"] for t in data["tasks"]] == ["chief-0", "worker-0", "ps-0"]
