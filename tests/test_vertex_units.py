"""Pure parts of the Vertex AI backend, and the pieces that wait: states, backoff, regions, logs, redaction."""

from __future__ import annotations

from tfjob._internal import job_from_keywords
from tfjob.runtime.store import JobStore

import os
import random
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from helpers import cli_words

from fakes.vertex_api import FakeVertex, vertex_fixture
from tfjob.model import JobState
from tfjob.backends.vertex.options import VertexOptions
from tfjob.errors import UsageError
from tfjob.backends.vertex.auth import is_google_endpoint, resolve_credentials
from tfjob.backends.vertex.errors import redact
from tfjob.backends.vertex.follow import job_status, parse_state
from tfjob.model import parse_time
from tfjob.runtime.lifecycle import poll
from tfjob.backends.vertex.logs import build_filter, task_label, vertex_task_name
from tfjob.backends.vertex.retry import Backoff, call_with_retry
from tfjob.backends.vertex.staging import bucket_serves_region, check_bucket_region


@pytest.mark.parametrize(
    "value, state",
    [
        ("JOB_STATE_QUEUED", JobState.QUEUED),
        ("JOB_STATE_PENDING", JobState.PENDING),
        ("JOB_STATE_RUNNING", JobState.RUNNING),
        ("JOB_STATE_SUCCEEDED", JobState.SUCCEEDED),
        ("JOB_STATE_FAILED", JobState.FAILED),
        ("JOB_STATE_CANCELLING", JobState.CANCELLING),
        ("JOB_STATE_CANCELLED", JobState.CANCELLED),
        ("JOB_STATE_EXPIRED", JobState.FAILED),
        (4, JobState.SUCCEEDED),
        (None, JobState.QUEUED),
    ],
)
def test_state_mapping(value: Any, state: JobState) -> None:
    assert parse_state(value) is state


def test_state_mapping_covers_every_vertex_state() -> None:
    from google.cloud import aiplatform_v1

    from tfjob.backends.vertex.follow import VERTEX_STATES

    members = aiplatform_v1.types.JobState.__members__
    assert set(VERTEX_STATES) == set(members)
    assert all(parse_state(int(members[name])) is VERTEX_STATES[name] for name in members)


def test_time_with_nanoseconds() -> None:
    assert parse_time("2026-01-02T03:04:05.123456789Z") == pytest.approx(1767323045.123456)
    assert parse_time("2026-01-02T03:04:05Z") == 1767323045.0
    assert parse_time(None) is None


def test_job_status_carries_the_error_message() -> None:
    status = job_status(
        {"name": "projects/p/locations/r/customJobs/9", "displayName": "d", "state": "JOB_STATE_FAILED",
         "error": {"code": 3, "message": "replica exited 1"}, "createTime": "2026-01-02T03:04:05Z"},
        "9",
    )  # fmt: skip
    assert (status.id, status.state, status.message, status.backend) == ("9", JobState.FAILED, "replica exited 1", "vertex")
    assert status.extra["resource_name"] == "projects/p/locations/r/customJobs/9"


def test_wait_grows_the_pause_and_resets_it_on_change() -> None:
    states = iter(["JOB_STATE_QUEUED"] * 4 + ["JOB_STATE_RUNNING"] * 2 + ["JOB_STATE_SUCCEEDED"])
    waits: list[float] = []
    changes: list[JobState] = []
    final = poll(
        lambda: {"state": next(states)},
        state_of=lambda job: parse_state(job["state"]),
        on_change=lambda job, state: changes.append(state),
        poll_interval=1.0,
        max_interval=2.0,
        sleep=waits.append,
    )
    assert final["state"] == "JOB_STATE_SUCCEEDED"
    assert changes == [JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED]
    assert waits == [1.0, 1.5, 2.0, 2.0, 1.0, 1.5]


def test_backoff_is_bounded_and_jittered() -> None:
    delays = list(Backoff(initial=1, multiplier=2, maximum=5, attempts=6, jitter=0.5).delays(random.Random(1)))
    assert len(delays) == 5
    for delay, base in zip(delays, [1, 2, 4, 5, 5]):
        assert base * 0.5 <= delay <= base
    assert len(set(delays)) == 5


def test_call_with_retry_gives_up_on_a_permanent_error() -> None:
    calls: list[int] = []

    def fn() -> None:
        calls.append(1)
        raise ValueError("permanent")

    with pytest.raises(ValueError, match="permanent"):
        call_with_retry(fn, backoff=Backoff(), sleep=lambda s: None)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "location, region, ok",
    [
        ("US-CENTRAL1", "us-central1", True),
        ("US", "us-east4", True),
        ("US", "europe-west4", False),
        ("EU", "europe-west4", True),
        ("NAM4", "us-central1", True),
        ("NAM4", "us-west1", False),
        ("EUROPE-WEST1", "europe-west4", False),
        ("ASIA", "asia-northeast1", True),
    ],
)
def test_bucket_region(location: str, region: str, ok: bool) -> None:
    assert bucket_serves_region(location, region) is ok


def test_bucket_region_error_names_both_and_the_fix() -> None:
    with (
        pytest.raises(UsageError, match=r"staging bucket gs://b is in EUROPE-WEST1, but the job runs in us-central1: .*--staging-bucket"),
        cli_words(),
    ):
        check_bucket_region("b", "EUROPE-WEST1", "us-central1")


@pytest.mark.parametrize(
    "name, label",
    [("workerpool0-0", "chief-0"), ("workerpool1-3", "worker-3"), ("workerpool2-1", "ps-1"), ("workerpool3-0", "evaluator-0"),
     ("master-replica-0", "chief-0"), ("worker-replica-2", "worker-2"), ("", "job")],
)  # fmt: skip
def test_task_labels(name: str, label: str) -> None:
    assert task_label(name) == label
    if name.startswith("workerpool"):
        assert vertex_task_name(label) == name


def test_log_filter_and_bad_task() -> None:
    assert build_filter("12", "worker-1", "2026-01-01T00:00:00Z") == (
        'resource.type="ml_job" AND resource.labels.job_id="12" AND '
        'resource.labels.task_name="workerpool1-1" AND timestamp>="2026-01-01T00:00:00Z"'
    )
    with pytest.raises(UsageError, match=r"--task 'w1' is not a task name; write it like chief-0, worker-1"), cli_words():
        build_filter("12", "w1")


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer ya29.a0AfH6SMB-xyz_123",
        '{"access_token": "ya29.zzz", "expires_in": 3599}',
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n"}',
        "refresh 1//0gAbCdEfGhIjKlMnOpQrStUvWxYz",
        "client_secret=GOCSPX-abcdef",
    ],
)
def test_redact(text: str) -> None:
    out = redact(text)
    assert "[redacted]" in out
    for secret in ("ya29.", "MIIEv", "1//0gAb", "GOCSPX"):
        assert secret not in out


@pytest.mark.parametrize(
    "endpoint, google",
    [(None, True), ("us-central1-aiplatform.googleapis.com", True), ("https://logging.googleapis.com", True),
     ("http://127.0.0.1:8080", False), ("localhost:9000", False), ("http://googleapis.com.evil.example", False)],
)  # fmt: skip
def test_google_endpoints(endpoint: str | None, google: bool) -> None:
    assert is_google_endpoint(endpoint) is google


def test_credentials_given_are_used_as_they_are() -> None:
    from google.auth.credentials import AnonymousCredentials

    given = AnonymousCredentials()
    assert resolve_credentials(given) is given


def test_no_credentials_says_how_to_get_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tfjob.errors import AuthError

    monkeypatch.setenv("HOME", str(tmp_path))  # no gcloud ADC file
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # no metadata server either
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    with pytest.raises(AuthError, match=r"no Google Cloud credentials found: run `gcloud auth application-default login`"):
        resolve_credentials(None)


def _bad_key(tmp_path: Path, kind: str) -> str:
    path = tmp_path / f"key-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        return "/dev/zero"
    elif kind == "large":
        path.write_bytes(b" " * (1024 * 1024))
    else:
        path.write_text({"list": "[1]", "not-json": "foo", "half-a-key": '{"type": "service_account"}'}[kind])
    return str(path)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("fifo", r"which is not a regular file"),  # google-auth alone would wait on it forever
        ("device", r"which is not a regular file"),  # … or read /dev/zero until memory ran out
        ("large", r"which is 1048576 bytes: no key file is larger than 64 KiB"),
        ("list", r"which is JSON but no key file \(a key is an object with a \"type\"\)"),  # google-auth: AttributeError
        ("not-json", r"which cannot be used \(File .* is not a valid json file: Expecting value: line 1 column 1"),
        ("half-a-key", r"which cannot be used \(Failed to load service account credentials from .*: .*missing fields"),
    ],
)
def test_a_credentials_file_that_is_no_key_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str, reason: str) -> None:
    from tfjob.errors import AuthError

    named = _bad_key(tmp_path, kind)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", named)
    with pytest.raises(AuthError, match=rf"^GOOGLE_APPLICATION_CREDENTIALS names {re.escape(named)}, {reason}") as caught:
        resolve_credentials(None)
    message = str(caught.value)
    assert "\n" not in message and message.endswith("or unset it and run `gcloud auth application-default login`")


# -- following, in-process against the local stand-in ------------------------------------
@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeVertex]:
    yield from vertex_fixture(monkeypatch, tmp_path_factory.mktemp("adc"))


def _submit_container_job(fake: FakeVertex) -> str:
    from tfjob.backends.vertex.backend import submit_job
    from tfjob.description.request import build_spec

    spec = build_spec(dict(name="c", image="gcr.io/p/t:1", module="trainer.task", workers=1))
    return submit_job(spec, VertexOptions(project="p", region="us-central1", api_endpoint=fake.endpoint), store=JobStore())


@pytest.mark.parametrize("cancel", [False, True])
def test_interrupt_while_following(fake: FakeVertex, cancel: bool) -> None:
    from tfjob.backends.vertex.service import follow_job
    from tfjob.runtime.store import JobStore

    fake.script = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING")
    job_id = _submit_container_job(fake)
    said: list[str] = []

    def sleep(_: float) -> None:
        if fake.jobs[job_id]["state"] == "JOB_STATE_RUNNING":
            raise KeyboardInterrupt

    from tfjob.errors import JobCancelledError

    # As on every backend: cancelled on Ctrl-C is JobCancelledError; otherwise the interrupt goes on.
    with pytest.raises(JobCancelledError if cancel else KeyboardInterrupt, match="cancel" if cancel else "^$"):
        follow_job(job_id, VertexOptions(cancel_on_interrupt=cancel, poll_interval=0.01), echo=said.append, sleep=sleep, store=JobStore())
    assert said[:2] == [f"job {job_id} QUEUED", f"job {job_id} RUNNING"]
    with JobStore() as store:
        state = store.get(job_id).state
    if cancel:
        assert said[-1] == f"asked Vertex AI to cancel job {job_id}"
        assert state is JobState.CANCELLING
    else:
        assert "keeps running on Vertex AI" in said[-1]
        assert state is JobState.RUNNING


def test_status_of_an_ended_job_needs_no_call(fake: FakeVertex) -> None:
    from tfjob.backends.vertex.service import fetch_status, follow_job

    job_id = _submit_container_job(fake)
    follow_job(job_id, VertexOptions(poll_interval=0.01), sleep=lambda s: None, store=JobStore())
    before = len(fake.requests)
    assert fetch_status(job_id, store=JobStore()).state is JobState.SUCCEEDED
    assert len(fake.requests) == before


def test_list_filters_on_the_tfjob_label(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob.backends.vertex.service import list_jobs

    ours = _submit_container_job(fake)
    fake.create("p", "us-central1", {"displayName": "not ours", "jobSpec": {}})
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("TFJOB_API_ENDPOINT", fake.endpoint)
    from tfjob.runtime.settings import load_settings

    assert [s.id for s in list_jobs(store=JobStore(), settings=load_settings())] == [ours]  # the project the edge resolved
    query = [path for method, path, _ in fake.requests if method == "GET" and path.endswith("/customJobs")]
    assert query


def test_big_upload_shows_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from fakes.gcs import storage_emulator
    from tfjob.backends.vertex.staging import stage_packages, storage_client
    from tfjob.backends.vertex.submission import file_package

    with storage_emulator(monkeypatch):
        client = storage_client("p", None)
        client.create_bucket("b")
        wheel = tmp_path / "big-1.0-py3-none-any.whl"
        wheel.write_bytes(random.Random(3).randbytes(5 * 1024 * 1024))
        package = file_package(wheel, "gs://b/tfjob/packages")
        bar = io.StringIO()
        report = stage_packages([package], region="us-central1", client=client, progress=bar)
        assert report.bytes_uploaded == 5 * 1024 * 1024 and report.uploaded == [package.uri]
        assert "uploading big-1.0-py3-none-any.whl 100% (5.2/5.2 MB)" in bar.getvalue()
        blob = client.bucket("b").get_blob(package.uri.split("gs://b/", 1)[1])
        assert blob.size == 5 * 1024 * 1024
        again = stage_packages([package], region="us-central1", client=client, progress=bar)
        assert (again.bytes_uploaded, again.skipped) == (0, [package.uri])


@pytest.mark.parametrize(
    ("flag", "job_dir", "configured", "expected"),
    [
        ("gs://flag/pfx", "gs://jobdir/out", "gs://conf", ("flag", "pfx", "--staging-bucket")),
        (None, "gs://jobdir/out", "gs://conf", ("jobdir", "", "--job-dir")),
        (None, "/local/out", "gs://conf/p", ("conf", "p", "config")),
        (None, None, None, None),
    ],
)
def test_staging_bucket_order(
    flag: str | None, job_dir: str | None, configured: str | None, expected: tuple[str, str, str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--staging-bucket, then the --job-dir bucket, then the configured bucket (issue 6)."""
    from tfjob.backends.vertex.submission import resolve_bucket

    if configured:
        monkeypatch.setenv("TFJOB_STAGING_BUCKET", configured)
    job = job_from_keywords("trainer", "trainer.task", {"staging_bucket": flag, "job_dir": job_dir, "backend": "vertex"})
    assert resolve_bucket(job.spec, job.options) == expected


def test_cli_list_remote_asks_vertex_and_the_store_view_stays_offline(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from click.testing import CliRunner

    from tfjob.cli.main import app

    ours = _submit_container_job(fake)
    fake.create("p", "us-central1", {"displayName": "not ours", "jobSpec": {}})
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("TFJOB_API_ENDPOINT", fake.endpoint)
    runner = CliRunner()
    remote = runner.invoke(app, ["list", "--remote", "--backend", "vertex", "--json"])
    assert remote.exit_code == 0, remote.stderr
    assert [j["id"] for j in json.loads(remote.stdout)] == [ours]
    calls = len(fake.requests)
    stored = runner.invoke(app, ["list", "--backend", "vertex", "--json"])
    assert [j["id"] for j in json.loads(stored.stdout)] == [ours]
    assert len(fake.requests) == calls  # the store view asks no service
    bad = runner.invoke(app, ["list", "--remote"])
    assert bad.exit_code == 2 and bad.stderr == "error: --remote needs --backend vertex or --backend kubeflow\n"


@pytest.mark.parametrize(
    "message, blamed",
    [
        ("The replica workerpool1-0 exited with a non-zero status of 3. Termination reason: Error. To find out more "
         "about why your job exited please check the logs: https://console.cloud.google.com/logs/viewer?x=1", ("worker-0", 3)),
        ("The replica workerpool0-0 ran out-of-memory and exited with a non-zero status of 137(SIGKILL).", ("chief-0", 137)),
        ("The replica workerpool2-11 exited with a non-zero status of 1.", ("ps-11", 1)),
        ("Internal error occurred for the current attempt.", None),
        ("The replica workerpool7-0 exited with a non-zero status of 1.", None),
    ],
)  # fmt: skip
def test_the_replica_a_failure_blames_is_the_failed_task(message: str, blamed: tuple[str, int] | None) -> None:
    from tfjob.backends.vertex.follow import failed_replica

    assert failed_replica(message) == blamed
    status = job_status({"state": "JOB_STATE_FAILED", "error": {"code": 3, "message": message}}, "9")
    assert status.failed_task == (blamed[0] if blamed else None)
    assert status.extra.get("task_exit_code") == (blamed[1] if blamed else None)


def test_the_poll_interval_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The settings are resolved at the edge (load_settings) and given to the backend's calls.
    from tfjob.backends.vertex.connect import poll_interval
    from tfjob.model import SubmitOptions
    from tfjob.runtime.settings import Settings, load_settings

    monkeypatch.setenv("TFJOB_HOME", str(tmp_path))
    monkeypatch.delenv("TFJOB_POLL_INTERVAL", raising=False)
    assert poll_interval(None, load_settings()) == 5.0
    (tmp_path / "config.yaml").write_text("poll_interval: 0.5\n")
    assert poll_interval(None, load_settings()) == 0.5
    assert poll_interval() == poll_interval(None, Settings()) == 5.0  # no settings given: none read here
    monkeypatch.setenv("TFJOB_POLL_INTERVAL", "2")
    settings = load_settings()
    assert poll_interval(None, settings) == 2.0 and poll_interval(SubmitOptions(poll_interval=0.1), settings) == 0.1  # the flag wins
    for bad in ("fast", "0", "-1", "86400"):
        monkeypatch.setenv("TFJOB_POLL_INTERVAL", bad)
        with pytest.raises(UsageError, match=r"^the poll_interval setting .* must be seconds in \(0, 3600\]$"):
            poll_interval(None, load_settings())


def test_the_trainers_tensorflow_pin_is_read_within_bounds(tmp_path: Path) -> None:
    from tfjob.backends.vertex.submission import MAX_PROJECT_FILE_BYTES, declared_tf_version
    from tfjob.errors import ConfigFileError

    (tmp_path / "requirements.txt").write_bytes(b"# \xe9\ntensorflow==2.15.1\n")
    assert declared_tf_version(tmp_path) == (2, 15)
    (tmp_path / "setup.py").write_text("#\n" * (MAX_PROJECT_FILE_BYTES // 2 + 1))
    with pytest.raises(ConfigFileError, match=r"^the trainer's '.*setup\.py' is larger than 1024 KiB; a project file is smaller$"):
        declared_tf_version(tmp_path)


def test_a_well_known_credentials_file_that_is_no_key_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tfjob.errors import AuthError

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    (tmp_path / "application_default_credentials.json").write_text("[1, 2]")
    with pytest.raises(
        AuthError,
        match=r"^the application-default credentials file .*application_default_credentials\.json, which is JSON but no key file.*run `gcloud auth application-default login` again$",
    ):
        resolve_credentials(None)
