"""The Vertex AI client over real HTTP (``responses``): calls, paging, retries, lost creates, errors.

Every request goes through google-cloud-aiplatform's own REST transport; every
create body is parsed strictly with the library's protobuf types.
"""

from __future__ import annotations

import json
import random
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from helpers import cli_words
import requests
import responses
from reliability import Reliability
from responses.registries import OrderedRegistry

from tfjob.errors import AuthError, BackendError, JobNotFoundError, UsageError
from tfjob.backends.vertex.client import VertexClient
from tfjob.backends.vertex.retry import Backoff
from tfjob.backends.vertex.render import SUBMISSION_LABEL, render_custom_job
from tfjob.description.request import build_spec

BASE = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
JOBS = f"{BASE}/customJobs"
SUB = "0f0e0d0c0b0a09080706050403020100"
TOKEN = "ya29.SECRET-ACCESS-TOKEN-abc123"
BODY = render_custom_job(
    build_spec(dict(name="job", module="trainer.task", workers=4, ps=2, accelerator="type=NVIDIA_TESLA_T4,count=1")),
    package_uris=["gs://b/tfjob/packages/abc/trainer-0.0.0.tar.gz"],
    submission_id=SUB,
)


def job(job_id: str, state: str = "JOB_STATE_QUEUED", **extra: Any) -> dict[str, Any]:
    return {"name": f"projects/p/locations/us-central1/customJobs/{job_id}", "displayName": "job", "state": state,
            "labels": {SUBMISSION_LABEL: SUB, "tfjob": "0-1-0"}, **extra}  # fmt: skip


def error(code: int, message: str, status: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": details or []}}


def strict_create_callback(reply: dict[str, Any]) -> Any:
    def callback(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        from google.cloud import aiplatform_v1
        from google.protobuf import json_format

        json_format.ParseDict(json.loads(request.body or "{}"), aiplatform_v1.types.CustomJob()._pb)
        return 200, {}, json.dumps(reply)

    return callback


class Recorder:
    """An injected sleep: records the waits, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(sleep: Recorder | None = None, credentials: Any = None, **kw: Any) -> VertexClient:
    from google.oauth2.credentials import Credentials

    return VertexClient(
        "p",
        "us-central1",
        credentials=credentials or Credentials(token=TOKEN),
        backoff=kw.pop("backoff", Backoff(initial=1.0, multiplier=2.0, maximum=4.0, attempts=4, jitter=0.5)),
        sleep=sleep or Recorder(),
        rng=random.Random(7),
        **kw,
    )


@pytest.fixture
def http() -> Any:
    with responses.RequestsMock(registry=OrderedRegistry) as mock:
        yield mock


def test_create_sends_a_strict_body_with_credentials(http: responses.RequestsMock) -> None:
    http.add_callback(responses.POST, JOBS, callback=strict_create_callback(job("1")))
    created = make_client().create_custom_job(BODY, SUB)
    assert created["name"].endswith("/customJobs/1")
    request = http.calls[0].request
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    sent = json.loads(request.body)
    assert [p["replicaCount"] for p in sent["jobSpec"]["workerPoolSpecs"]] == ["1", "4", "2"]
    assert sent["labels"][SUBMISSION_LABEL] == SUB


def test_get_and_cancel(http: responses.RequestsMock) -> None:
    http.add(responses.GET, f"{JOBS}/42", json=job("42", "JOB_STATE_RUNNING"))
    http.add(responses.POST, f"{JOBS}/42:cancel", json={})
    client = make_client()
    assert client.get_custom_job("42")["state"] == "JOB_STATE_RUNNING"
    client.cancel_custom_job("projects/p/locations/us-central1/customJobs/42")
    assert http.calls[1].request.url.split("?")[0] == f"{JOBS}/42:cancel"


def test_list_follows_every_page_with_the_filter(http: responses.RequestsMock) -> None:
    http.add(responses.GET, JOBS, json={"customJobs": [job("1"), job("2")], "nextPageToken": "t2"})
    http.add(responses.GET, JOBS, json={"customJobs": [job("3")], "nextPageToken": "t3"})
    http.add(responses.GET, JOBS, json={"customJobs": [job("4")]})
    jobs = make_client().list_custom_jobs(filter="labels.tfjob:*", page_size=2)
    assert [j["name"].rsplit("/", 1)[1] for j in jobs] == ["1", "2", "3", "4"]
    queries = [parse_qs(urlparse(c.request.url).query) for c in http.calls]
    assert [q.get("pageToken", [""])[0] for q in queries] == ["", "t2", "t3"]
    assert all(q["filter"] == ["labels.tfjob:*"] and q["pageSize"] == ["2"] for q in queries)


def test_list_stops_at_the_limit(http: responses.RequestsMock) -> None:
    http.add(responses.GET, JOBS, json={"customJobs": [job("1"), job("2")], "nextPageToken": "t2"})
    assert len(make_client().list_custom_jobs(page_size=2, limit=2)) == 2
    assert len(http.calls) == 1


@pytest.mark.reliability
@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_errors_are_retried_with_bounded_jittered_backoff(
    http: responses.RequestsMock, status: int, reliability: Reliability
) -> None:
    reliability.fault(f"vertex {status}", 2)
    for _ in range(2):
        http.add(responses.GET, f"{JOBS}/9", json=error(status, "try later", "UNAVAILABLE"), status=status)
    http.add(responses.GET, f"{JOBS}/9", json=job("9", "JOB_STATE_RUNNING"))
    sleep = Recorder()
    assert make_client(sleep).get_custom_job("9")["state"] == "JOB_STATE_RUNNING"
    assert len(sleep.waits) == 2
    assert 0.5 <= sleep.waits[0] <= 1.0 and 1.0 <= sleep.waits[1] <= 2.0


@pytest.mark.reliability
def test_retries_are_bounded(http: responses.RequestsMock, reliability: Reliability) -> None:
    reliability.fault("vertex 503", 4)
    for _ in range(4):
        http.add(responses.GET, f"{JOBS}/9", json=error(503, "backend down", "UNAVAILABLE"), status=503)
    sleep = Recorder()
    with pytest.raises(BackendError, match=r"Vertex AI answered 503 after 4 attempts while trying to get: backend down"):
        make_client(sleep).get_custom_job("9")
    assert len(sleep.waits) == 3
    assert all(w <= 4.0 for w in sleep.waits)


@pytest.mark.reliability
def test_connection_reset_is_retried(http: responses.RequestsMock, reliability: Reliability) -> None:
    reliability.fault("vertex reset")
    http.add(responses.GET, f"{JOBS}/9", body=requests.ConnectionError("Connection reset by peer"))
    http.add(responses.GET, f"{JOBS}/9", json=job("9"))
    sleep = Recorder()
    assert make_client(sleep).get_custom_job("9")["name"].endswith("/9")
    assert len(sleep.waits) == 1


def test_unreachable_endpoint_says_which(http: responses.RequestsMock) -> None:
    for _ in range(4):
        http.add(responses.GET, f"{JOBS}/9", body=requests.ConnectionError("Connection refused"))
    with pytest.raises(BackendError, match=r"cannot reach us-central1-aiplatform.googleapis.com after 4 attempts"):
        make_client().get_custom_job("9")


@pytest.mark.reliability
def test_lost_create_is_found_by_its_label_not_created_twice(http: responses.RequestsMock, reliability: Reliability) -> None:
    reliability.fault("vertex lost create")
    http.add(responses.POST, JOBS, body=requests.ConnectionError("Connection reset by peer"))
    http.add(responses.GET, JOBS, json={"customJobs": [job("77")]})
    created = make_client().create_custom_job(BODY, SUB)
    assert created["name"].endswith("/77")
    assert [c.request.method for c in http.calls] == ["POST", "GET"]
    query = parse_qs(urlparse(http.calls[1].request.url).query)
    assert query["filter"] == [f'labels.{SUBMISSION_LABEL}="{SUB}"']


@pytest.mark.reliability
def test_failed_create_not_found_by_label_is_sent_again(http: responses.RequestsMock, reliability: Reliability) -> None:
    reliability.fault("vertex 503")
    http.add(responses.POST, JOBS, json=error(503, "unavailable", "UNAVAILABLE"), status=503)
    http.add(responses.GET, JOBS, json={})
    http.add_callback(responses.POST, JOBS, callback=strict_create_callback(job("78")))
    sleep = Recorder()
    assert make_client(sleep).create_custom_job(BODY, SUB)["name"].endswith("/78")
    assert [c.request.method for c in http.calls] == ["POST", "GET", "POST"]
    assert json.loads(http.calls[0].request.body) == json.loads(http.calls[2].request.body)
    assert len(sleep.waits) == 1


@pytest.mark.reliability
def test_throttled_create_is_retried_without_lookup(http: responses.RequestsMock, reliability: Reliability) -> None:
    reliability.fault("vertex 429")
    http.add(responses.POST, JOBS, json=error(429, "quota", "RESOURCE_EXHAUSTED"), status=429)
    http.add_callback(responses.POST, JOBS, callback=strict_create_callback(job("79")))
    assert make_client().create_custom_job(BODY, SUB)["name"].endswith("/79")
    assert [c.request.method for c in http.calls] == ["POST", "POST"]


def test_label_filter_refused_falls_back_to_the_display_name(http: responses.RequestsMock) -> None:
    http.add(responses.POST, JOBS, body=requests.ConnectionError("reset"))
    http.add(responses.GET, JOBS, json=error(400, "Unsupported filter", "INVALID_ARGUMENT"), status=400)
    http.add(responses.GET, JOBS, json={"customJobs": [job("5", labels={}), job("80")]})
    assert make_client().create_custom_job(BODY, SUB)["name"].endswith("/80")
    assert parse_qs(urlparse(http.calls[2].request.url).query)["filter"] == ['display_name="job"']


def test_400_shows_the_server_field_message(http: responses.RequestsMock) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": "job_spec.worker_pool_specs[1].machine_spec.machine_type", "description": "Machine type n1-standard-3 is not supported."}]}]  # fmt: skip
    http.add(responses.POST, JOBS, json=error(400, "Request contains an invalid argument.", "INVALID_ARGUMENT", details), status=400)
    with pytest.raises(UsageError, match=r"Vertex AI refused the request: Request contains an invalid argument\. "
                       r"\[job_spec.worker_pool_specs\[1\].machine_spec.machine_type: Machine type n1-standard-3 is not supported\.\]"):  # fmt: skip
        make_client().create_custom_job(BODY, SUB)
    assert len(http.calls) == 1


def test_403_names_the_permission_role_and_project(http: responses.RequestsMock) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED", "domain": "aiplatform.googleapis.com",
                "metadata": {"permission": "aiplatform.customJobs.create", "resource": "projects/p/locations/us-central1"}}]  # fmt: skip
    http.add(
        responses.POST,
        JOBS,
        json=error(403, "Permission 'aiplatform.customJobs.create' denied on resource", "PERMISSION_DENIED", details),
        status=403,
    )
    with pytest.raises(AuthError, match=r"permission denied in project 'p', region 'us-central1': the caller lacks "
                       r"aiplatform.customJobs.create \(grant it, e.g. with role roles/aiplatform.user, on project p\)"):  # fmt: skip
        make_client().create_custom_job(BODY, SUB)


def test_403_api_disabled_says_how_to_enable(http: responses.RequestsMock) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com",
                "metadata": {"service": "aiplatform.googleapis.com"}}]  # fmt: skip
    http.add(
        responses.GET,
        f"{JOBS}/1",
        json=error(403, "Vertex AI API has not been used in project p before or it is disabled.", "PERMISSION_DENIED", details),
        status=403,
    )
    with pytest.raises(AuthError, match=r"`gcloud services enable aiplatform.googleapis.com --project p`"):
        make_client().get_custom_job("1")


def test_404_on_the_project_or_region(http: responses.RequestsMock) -> None:
    http.add(responses.POST, JOBS, json=error(404, "Project 'p' not found.", "NOT_FOUND"), status=404)
    with (
        pytest.raises(UsageError, match=r"project 'p', region 'us-central1' was not found by Vertex AI: check --project .* and --region"),
        cli_words(),
    ):
        make_client().create_custom_job(BODY, SUB)


def test_404_on_a_job(http: responses.RequestsMock) -> None:
    http.add(responses.GET, f"{JOBS}/123", json=error(404, "CustomJob does not exist.", "NOT_FOUND"), status=404)
    with pytest.raises(JobNotFoundError, match=r"no Vertex AI job 123 in project 'p'"):
        make_client().get_custom_job("123")


def test_expired_credentials_say_how_to_refresh(http: responses.RequestsMock) -> None:
    from google.oauth2.credentials import Credentials

    refresh = "1//0refresh-token-that-must-not-leak-xyz"
    http.add(responses.POST, "https://oauth2.googleapis.com/token",
             json={"error": "invalid_grant", "error_description": "Token has been expired or revoked."}, status=400)  # fmt: skip
    creds = Credentials(
        token=None, refresh_token=refresh, token_uri="https://oauth2.googleapis.com/token", client_id="cid", client_secret="csecret"
    )
    with pytest.raises(
        AuthError, match=r"credentials were refused \(expired or revoked\): run `gcloud auth application-default login`"
    ) as info:
        make_client(credentials=creds).get_custom_job("1")
    assert refresh not in str(info.value) and "csecret" not in str(info.value)


def test_401_is_an_auth_error(http: responses.RequestsMock) -> None:
    http.add(responses.GET, f"{JOBS}/1", json=error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED"), status=401)
    with pytest.raises(AuthError, match=r"expired or revoked"):
        make_client().get_custom_job("1")


def test_no_token_in_any_message(http: responses.RequestsMock, capsys: pytest.CaptureFixture[str]) -> None:
    # A server (or proxy) that echoes the Authorization header back in its error.
    http.add(responses.GET, f"{JOBS}/1", json=error(403, f"denied for Authorization: Bearer {TOKEN}", "PERMISSION_DENIED"), status=403)
    http.add(responses.GET, f"{JOBS}/2", json=error(400, f"bad token {TOKEN}", "INVALID_ARGUMENT"), status=400)
    seen: list[str] = []
    client = make_client(on_retry=lambda e, d, a: seen.append(str(e)))
    for job_id in ("1", "2"):
        with pytest.raises((AuthError, UsageError), match=r"\[redacted\]") as info:
            client.get_custom_job(job_id)
        assert TOKEN not in str(info.value)
        assert "[redacted]" in str(info.value)
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err


def test_strict_body_refuses_an_unknown_field() -> None:
    from google.protobuf import json_format

    with pytest.raises(json_format.ParseError, match=r"workerPools"):
        make_client().create_custom_job({**BODY, "workerPools": []}, SUB)
