"""End to end: the real CLI against a local Vertex AI stand-in and gcp-storage-emulator.

The CLI runs as a subprocess with ``--api-endpoint http://127.0.0.1:PORT``, real
application-default credentials (a service-account key whose token endpoint is the
stand-in) and ``STORAGE_EMULATOR_HOST``; the package really lands in the emulator and
the job really goes through its states on the fake service.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from fakes.gcs import storage_emulator
from fakes.vertex_api import FakeVertex, vertex_fixture
from helpers import write_trainer
from tfjob.model import JobState
from tfjob.cli.main import app
from tfjob.runtime.store import JobStore

from test_render_vertex import strict_roundtrip


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """gcp-storage-emulator in this process, with bucket ``b`` (location US)."""
    with storage_emulator(monkeypatch, "p", "b") as client:
        yield client


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeVertex]:
    yield from vertex_fixture(monkeypatch, tmp_path_factory.mktemp("adc"))


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path)


def submit_cmd(exe: str, trainer: Path, fake: FakeVertex, *extra: str) -> list[str]:
    return [exe, "submit", str(trainer), "--module-name", "trainer.task", "--backend", "vertex", "--project", "p",
            "--region", "us-central1", "--staging-bucket", "gs://b", "--workers", "4", "--ps", "2",
            "--api-endpoint", fake.endpoint, *extra]  # fmt: skip


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ), timeout=120)


def test_submit_stages_once_and_follows_the_job(emulator: Any, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    first = run(submit_cmd(tfjob_exe, trainer, fake))
    assert first.returncode == 0, first.stderr
    job_id = first.stdout.strip()
    states = [line.rsplit(" ", 1)[1] for line in first.stderr.splitlines() if line.startswith(f"tfjob: job {job_id} ")]
    assert states == ["QUEUED", "PENDING", "RUNNING", "SUCCEEDED"]

    second = run(submit_cmd(tfjob_exe, trainer, fake))
    assert second.returncode == 0, second.stderr
    assert "is staged already" in second.stderr and "nothing to upload" in second.stderr

    # Two objects, each staged once: the trainer's sdist and tfjob's bootstrap wheel.
    blobs = sorted(emulator.list_blobs("b"), key=lambda b: b.name.rsplit("/", 1)[1], reverse=True)
    assert [b.name.rsplit("/", 1)[1] for b in blobs] == ["trainer-0.0.0.tar.gz", "tfjob_bootstrap-0.1.0-py3-none-any.whl"]
    assert all(b.name.startswith("tfjob/packages/") for b in blobs)
    with JobStore() as store:
        records = [store.get(job_id), store.get(second.stdout.strip())]
    assert [r.extra["bytes_uploaded"] for r in records] == [blobs[0].size + blobs[1].size, 0]
    assert [r.state for r in records] == [JobState.SUCCEEDED, JobState.SUCCEEDED]
    assert records[0].options == {"project": "p", "region": "us-central1", "api_endpoint": fake.endpoint}

    bodies = fake.created_bodies()
    assert len(bodies) == 2
    for body in bodies:
        assert strict_roundtrip(body) == body
        assert [p["replicaCount"] for p in body["jobSpec"]["workerPoolSpecs"]] == ["1", "4", "2"]
        assert body["jobSpec"]["workerPoolSpecs"][1]["pythonPackageSpec"]["packageUris"] == [f"gs://b/{b.name}" for b in blobs]
    assert bodies[0]["labels"]["tfjob-submission-id"] != bodies[1]["labels"]["tfjob-submission-id"]


def test_failed_job_exits_1_with_the_server_message(emulator: Any, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.script = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED")
    fake.failure_message = "The replica workerpool1-2 exited with a non-zero status of 1. Termination reason: Error."
    out = run(submit_cmd(tfjob_exe, trainer, fake))
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: job ")
    assert "FAILED: The replica workerpool1-2 exited with a non-zero status of 1." in out.stderr.splitlines()[-1]
    assert "Traceback" not in out.stderr


def test_bucket_in_another_region_fails_before_anything_is_created(emulator: Any, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    cmd = submit_cmd(tfjob_exe, trainer, fake)
    cmd[cmd.index("us-central1")] = "europe-west4"
    out = run(cmd)
    assert out.returncode == 2, out.stderr
    assert "error: staging bucket gs://b is in US, but the job runs in europe-west4" in out.stderr
    assert fake.created_bodies() == []
    assert list(emulator.list_blobs("b")) == []


def test_missing_bucket_and_missing_project(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    runner = CliRunner()
    base = ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--api-endpoint", fake.endpoint]
    no_project = runner.invoke(app, [*base, "--staging-bucket", "gs://b"])
    assert no_project.exit_code == 2
    assert "error: --project is needed for --backend vertex" in no_project.stderr
    no_bucket = runner.invoke(app, [*base, "--project", "p", "--staging-bucket", "gs://nope"])
    assert no_bucket.exit_code == 2
    assert "error: staging bucket gs://nope does not exist; create it in us-central1" in no_bucket.stderr
    assert fake.created_bodies() == []


def test_status_logs_and_cancel_from_the_cli(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    fake.script = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING")
    runner = CliRunner()
    base = ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--staging-bucket", "gs://b",
            "--workers", "2", "--api-endpoint", fake.endpoint, "--async"]  # fmt: skip
    submitted = runner.invoke(app, base)
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.stdout.strip()
    fake.add_log(job_id, "workerpool0-0", "chief starting", 1)
    fake.add_log(job_id, "workerpool1-1", "worker 1 step 10", 2)
    fake.add_log("other", "workerpool0-0", "another job", 3)

    logs = runner.invoke(app, ["logs", job_id])
    assert logs.exit_code == 0, logs.output
    assert logs.stdout.splitlines() == ["[chief-0] chief starting", "[worker-1] worker 1 step 10"]
    one = runner.invoke(app, ["logs", job_id, "--task", "worker-1"])
    assert one.stdout.splitlines() == ["[worker-1] worker 1 step 10"]
    tail = runner.invoke(app, ["logs", job_id, "--tail", "1"])
    assert tail.stdout.splitlines() == ["[worker-1] worker 1 step 10"]

    status = runner.invoke(app, ["status", job_id, "--json"])
    assert status.exit_code == 0, status.output
    assert '"state": "QUEUED"' in status.stdout and '"backend": "vertex"' in status.stdout

    cancel = runner.invoke(app, ["cancel", job_id])
    assert cancel.exit_code == 0, cancel.output
    assert fake.jobs[job_id]["state"] == "JOB_STATE_CANCELLING"
    assert runner.invoke(app, ["wait", job_id]).exit_code == 130
    with JobStore() as store:
        assert store.get(job_id).state is JobState.CANCELLED


def test_logs_follow_until_the_job_ends(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    from tfjob.backends.vertex.backend import submit_job
    from tfjob.backends.vertex.service import fetch_logs
    from tfjob.backends.vertex.options import VertexOptions
    from tfjob.description.request import build_spec

    spec = build_spec(dict(name="follow", module="trainer.task", package=str(trainer), workers=1))
    job_id = submit_job(
        spec, VertexOptions(project="p", region="us-central1", staging_bucket="gs://b", api_endpoint=fake.endpoint), store=JobStore()
    )
    fake.add_log(job_id, "workerpool0-0", "epoch 1", 1)
    arrived: list[str] = []

    def sleep(_: float) -> None:
        # Each pause of the follower: new lines arrive while the job moves on.
        n = len(arrived)
        fake.add_log(job_id, "workerpool1-0", f"line {n}", 2 + n)
        arrived.append("x")

    lines = list(fetch_logs(job_id, follow=True, sleep=sleep, store=JobStore()))
    assert lines[0] == "[chief-0] epoch 1"
    assert lines[1:] == [f"[worker-0] line {i}" for i in range(len(arrived))]
    assert fake.jobs[job_id]["state"] == "JOB_STATE_SUCCEEDED"


@pytest.mark.parametrize("cancel_on_interrupt", [False, True])
def test_ctrl_c_while_waiting(emulator: Any, fake: FakeVertex, trainer: Path, tfjob_exe: str, cancel_on_interrupt: bool) -> None:
    fake.script = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING")  # runs until cancelled
    cmd = submit_cmd(tfjob_exe, trainer, fake, *(["--cancel-on-interrupt"] if cancel_on_interrupt else []))
    # Ctrl-C as a terminal delivers it: started from a background job (`.ci/run &`) the
    # command would inherit SIGINT ignored, as any program does.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:  # the job's states arrive here as they change
            seen.append(line)
            if " RUNNING" in line:
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:  # never left waiting on the job after the test
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    job_id = next(iter(fake.jobs))
    if cancel_on_interrupt:
        assert f"asked Vertex AI to cancel job {job_id}" in err
        assert fake.jobs[job_id]["state"] == "JOB_STATE_CANCELLING"
    else:
        assert f"job {job_id} keeps running on Vertex AI" in err and f"`tfjob cancel {job_id}`" in err
        assert fake.jobs[job_id]["state"] == "JOB_STATE_RUNNING"
        assert not any(path.endswith(":cancel") for _, path, _ in fake.requests)
    assert "Traceback" not in err


def test_python_api_run_raises_with_the_job_message(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    from tfjob import Job, Vertex
    from tfjob.errors import JobFailedError

    job = Job(str(trainer), "trainer.task", workers=1,
              backend=Vertex(project="p", region="us-central1", staging_bucket="gs://b", api_endpoint=fake.endpoint))  # fmt: skip
    handle = job.run()
    assert handle.state is JobState.SUCCEEDED
    fake.script = ("JOB_STATE_QUEUED", "JOB_STATE_FAILED")
    fake.failure_message = "out of memory on workerpool0-0"
    with pytest.raises(JobFailedError, match=r"FAILED: out of memory on workerpool0-0"):
        job.run()


def test_credentials_given_to_the_backend_are_the_only_ones_used(fake: FakeVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Job(backend=Vertex(credentials=…))``: every call of the job's life (create,
    follow, status, cancel) carries them, and application-default credentials are never
    looked up — here they would fail, naming a file that does not exist."""
    from google.oauth2.credentials import Credentials

    from tfjob import Job, Vertex
    from tfjob.backends.vertex.backend import VertexBackend

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-adc.json"))
    given = Credentials(token="ya29.given-by-the-pipeline")
    job = Job(
        image="gcr.io/p/t:1",
        module="trainer.task",
        backend=Vertex(project="p", region="us-central1", api_endpoint=fake.endpoint, credentials=given),
    )
    assert isinstance(job.backend, VertexBackend) and job.backend.credentials is given
    handle = job.run()
    assert handle.status().state.value == "SUCCEEDED" and handle.backend_name == "vertex"
    handle.cancel()  # ended: no call
    from tfjob import get_job

    again = get_job(handle.id[:6], backend=VertexBackend(credentials=given))  # another process would do this
    assert again == handle and again.status().state.value == "SUCCEEDED"
    sent = {auth for (_, path, _), auth in zip(fake.requests, fake.authorizations) if path.startswith("/v1/")}
    assert sent == {"Bearer ya29.given-by-the-pipeline"}
    # The registry's backend (no credentials given) looks up application-default ones: the file named is missing.
    from tfjob.errors import AuthError

    with pytest.raises(
        AuthError,
        match=r"^GOOGLE_APPLICATION_CREDENTIALS names .*no-such-adc\.json, which cannot be used \(File .* was not found\); point it at",
    ):
        Job(
            image="gcr.io/p/t:1", module="trainer.task", backend=Vertex(project="p", region="us-central1", api_endpoint=fake.endpoint)
        ).submit()


def test_real_credentials_flow_never_prints_the_token(
    emulator: Any, fake: FakeVertex, trainer: Path, tfjob_exe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Application-default credentials (a service-account key whose token endpoint is the local
    stand-in) are really used, and no output of the CLI shows the token or the key."""
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    adc = tmp_path / "sa.json"
    adc.write_text(json.dumps({
        "type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": pem,
        "client_email": "trainer@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": f"{fake.endpoint}/token",
    }))  # fmt: skip
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    fake.token = "ya29.a0-SECRET-token-used-by-the-cli"
    # A service (or proxy) that echoes the Authorization header in an error must not leak it either.
    fake.fail(r"GET .*/customJobs/\d+$", 403, message="denied for request with header Authorization: {authorization}")
    out = run(submit_cmd(tfjob_exe, trainer, fake))
    assert out.returncode == 1, out.stderr
    assert "error: permission denied in project 'p', region 'us-central1': the caller lacks aiplatform.customJobs.get" in out.stderr
    # The credentials were really sent (a self-signed JWT or the token from /token).
    sent = {a.split(" ", 1)[1] for a in fake.authorizations if a.startswith("Bearer ")}
    assert sent and "" not in sent
    job_id = out.stderr.split("submitted Vertex AI job ")[1].split()[0]
    status = CliRunner().invoke(app, ["status", job_id])
    everything = out.stdout + out.stderr + status.output
    body_lines = [line for line in pem.splitlines() if "PRIVATE KEY" not in line]
    for secret in (*sent, fake.token, *body_lines[:3]):
        assert secret not in everything


def test_stream_logs_prints_the_jobs_lines_inline_until_it_ends(emulator: Any, fake: FakeVertex, trainer: Path) -> None:
    # gcloud's --stream-logs: a blocking submit shows the job's log lines as `tfjob logs --follow` does.
    create = fake.create

    def create_with_logs(project: str, region: str, body: dict[str, Any]) -> dict[str, Any]:
        job = create(project, region, body)
        job_id = job["name"].rsplit("/", 1)[1]
        fake.add_log(job_id, "workerpool0-0", "epoch 1 loss 0.7", 1)
        fake.add_log(job_id, "workerpool1-1", "worker 1 ready", 2)
        return job

    fake.create = create_with_logs  # type: ignore[method-assign]
    result = CliRunner().invoke(
        app,
        ["submit", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--project", "p", "--staging-bucket", "gs://b",
         "--workers", "2", "--api-endpoint", fake.endpoint, "--stream-logs"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["[chief-0] epoch 1 loss 0.7", "[worker-1] worker 1 ready"]
    assert lines[2] == next(iter(fake.jobs))  # the id, last, as without --stream-logs
    assert "SUCCEEDED" in result.stderr
    bad = CliRunner().invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--stream-logs", "--detach"])
    assert bad.exit_code == 2 and "drop --async/--detach" in bad.stderr
